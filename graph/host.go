package graph

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"unsafe"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/graph/internal/gops"
)

// ViewOp is implemented by ops whose output is their single input's data
// under another shape (a reshape of a contiguous tensor). The host executor
// binds such a node to a view of its input instead of running the op,
// which copies: in the host executor no op writes into memory it did not
// allocate for its own node, so the view cannot be clobbered (the aliasing
// that makes Gorgonia's own views unsafe on its TapeMachine, see
// docs/gorgonia-bugs.md, does not arise). ViewShape returns the output's
// shape; the caller does not modify it.
type ViewOp interface {
	G.Op
	ViewShape() tensor.Shape
}

// IntoDoer is implemented by ops that can compute their output into a
// given value: DoInto(p, inputs...) returns what Do returns, written into
// p's memory when p fits (else into a new value). The host executor passes
// each such node its own value of the previous Run. gdattn's hot ops
// implement it (package ops); Gorgonia's G.UsePreallocDoer is used the same
// way for Gorgonia's own ops.
type IntoDoer interface {
	DoInto(p G.Value, inputs ...G.Value) (G.Value, error)
}

// AccumOp is implemented by ops whose result can be added into another
// tensor in place instead of being computed into a buffer of its own: the
// gradient of a lookup (ops.ScatterOp), a (V, D) tensor of which only the
// rows of the ids looked up differ from zero. AddTo sets dst, a value of the
// op's output shape and dtype, to the elementwise sum of dst and the op's
// result on inputs (what Do(inputs...) returns): dst[i] + r[i] when
// dstFirst, r[i] + dst[i] otherwise, each element the one IEEE addition
// Gorgonia's Add computes, except that elements where r[i] is +0 may be
// left as they are (x + (+0) is x for every x but −0 and a signalling NaN).
// It returns false, with dst untouched, where dst is not a value it can
// add into; an error (bad input) also leaves dst untouched.
//
// The host executor runs an elementwise addition of such an op's result
// and a [NoNegZeroOp]'s as one AddTo into the other operand's buffer, when
// the addition alone reads both (as it would consume one, see consumable):
// the op itself then does not run and makes no buffer of its own. The
// values are those of the unfused addition bit for bit.
type AccumOp interface {
	G.Op
	AddTo(dst G.Value, dstFirst bool, inputs ...G.Value) (bool, error)
}

// NoNegZeroOp is implemented by ops whose results never hold −0 or a
// signalling NaN, so that adding +0 to any element of a result gives the
// element back, bit for bit (ops.TiedLogitsOp: products whose chains of
// multiply-adds start from +0). NoNegativeZero reports it.
type NoNegZeroOp interface {
	NoNegativeZero() bool
}

// overwritingOps are the dynamic types of the Gorgonia ops whose
// UsePreallocDo overwrites the given value with the op's result: the
// elementwise binary ops, repeat (broadcasts) and the matrix products
// (tensor.WithReuse). Other Gorgonia ops implement UsePreallocDo with other
// meanings — col2im, the max-pool gradient and sliceIncr add into the
// given value — so the host executor runs them with Do. The types are
// unexported in gorgonia.org/gorgonia (pinned by go.mod): they are taken
// from the ops that G.Add, G.Mul and G.Broadcast build.
var overwritingOps = sync.OnceValue(func() map[reflect.Type]bool {
	g := G.NewGraph()
	a := G.NewMatrix(g, tensor.Float64, G.WithShape(2, 2), G.WithName("a"))
	b := G.NewMatrix(g, tensor.Float64, G.WithShape(2, 2), G.WithName("b"))
	col := G.NewMatrix(g, tensor.Float64, G.WithShape(2, 1), G.WithName("col"))
	types := map[reflect.Type]bool{}
	add := func(n *G.Node, err error) {
		if err == nil && n != nil && n.Op() != nil {
			types[reflect.TypeOf(n.Op())] = true
		}
	}
	add(G.Add(a, b))
	add(G.Mul(a, b))
	if _, rep, err := G.Broadcast(a, col, G.NewBroadcastPattern(nil, []byte{1})); err == nil {
		add(rep, nil)
	}
	return types
})

// hostExec runs a [Program] on the CPU without Gorgonia's TapeMachine:
// every node keeps its own output buffer from one Run to the next, and an
// op that can write into a given buffer (G.UsePreallocDoer) writes into its
// node's buffer of the previous Run instead of allocating a new one. The
// values are those of the TapeMachine bit for bit: the same ops run in the
// same order on the same inputs; only where their results live differs.
//
// Nodes whose values callers read after Run (the loss, Outputs, the
// gradients unless MachineOptions.ReuseGrads) get a fresh value every Run,
// as on the TapeMachine, so a value a caller kept from an earlier Run is
// never overwritten.
//
// Some Gorgonia ops run differently, for the same bits: an elementwise
// addition of two plain tensors in one pass (addDense), written into the
// buffer of an input that only it reads where it can (consumable); the
// elementwise unary ops in place on a copy in the node's previous value
// (unaryInto); the sum of an [AccumOp]'s result and a [NoNegZeroOp]'s as
// the first op's AddTo into the second's buffer (accumulate).
type hostExec struct {
	prog  *Program
	steps []hostStep
	vals  []G.Value // current value of every node, by position in prog.Nodes
	args  []G.Value // scratch for the arguments of one op
	grads []hostGrad
	// readers counts the op nodes reading each node (by position).
	readers []int
}

type hostStep struct {
	n     *G.Node
	pos   int   // position in prog.Nodes
	ins   []int // positions of its inputs
	input bool  // a parameter or input: read from the node every Run
	konst bool  // an op without inputs: computed once
	done  bool  // konst and computed
	view  tensor.Shape
	// reuse: the op writes into this node's previous value (set after a
	// first Run shows the op's result aliases none of its inputs).
	pre   func(p G.Value, inputs ...G.Value) (G.Value, error)
	add   bool // a Gorgonia elementwise tensor addition: see addDense
	bin   byte // '-' or '*': a Gorgonia elementwise subtraction or product: see binDense
	unary bool // a Gorgonia elementwise unary op on a tensor: see unaryInto
	rep   int  // a Gorgonia repeat op: 1 + the axis it repeats along (0: another op); see repeatInto
	grad  bool // a gradient node: read by callers after Run
	// accum, on an addition: 1 + the input whose op (an AccumOp, run
	// deferred) adds into the other's buffer; see accumulate.
	accum    int
	deferred bool // an AccumOp node that the addition reading it runs
	fresh    bool // read by callers after Run: never reused
	shared   bool // aliases another node's memory, or is aliased by a fresh node: never reused
	checked  bool // the first result was checked for aliasing
}

type hostGrad struct {
	p    *G.Node
	pos  int // the gradient node's position
	node *G.Node
}

// NewHostExecutor returns the [ExecutorFactory] of the host executor that
// [NewMachine] uses by default (without MachineOptions.Executor and
// without Trace): the program runs on the calling goroutine, op by op, and
// each intermediate node reuses its buffer across Runs where its op can
// write into a given buffer; reshapes are views. It computes the same
// values as Gorgonia's TapeMachine, bit for bit.
func NewHostExecutor() ExecutorFactory {
	return func(p *Program) (Executor, error) { return newHostExec(p) }
}

func newHostExec(p *Program) (*hostExec, error) {
	if p == nil || len(p.Nodes) == 0 {
		return nil, errors.New("graph: host executor: empty program")
	}
	x := &hostExec{prog: p, vals: make([]G.Value, len(p.Nodes)), readers: make([]int, len(p.Nodes))}
	pos := make(map[*G.Node]int, len(p.Nodes))
	fresh := map[*G.Node]bool{}
	if p.Loss != nil {
		fresh[p.Loss] = true
	}
	for _, n := range p.Outputs {
		fresh[n] = true
	}
	if !p.ReuseGrads {
		for _, n := range p.Grads {
			fresh[n] = true
		}
	}
	for i, n := range p.Nodes {
		st := hostStep{n: n, pos: i, fresh: fresh[n] || p.Trace}
		pos[n] = i
		if n.Op() == nil {
			st.input = true
			x.steps = append(x.steps, st)
			continue
		}
		it := n.Graph().From(n.ID())
		for it.Next() {
			c, ok := it.Node().(*G.Node)
			if !ok {
				return nil, fmt.Errorf("graph: host executor: node %q has a child of type %T", n.Name(), it.Node())
			}
			ci, ok := pos[c]
			if !ok {
				return nil, fmt.Errorf("graph: host executor: node %q reads %q, which comes later in the program", n.Name(), c.Name())
			}
			st.ins = append(st.ins, ci)
		}
		st.konst = len(st.ins) == 0
		for _, j := range st.ins {
			x.readers[j]++
		}
		st.add = len(st.ins) == 2 && isAddOp(n.Op())
		if len(st.ins) == 2 {
			st.rep = gops.RepeatAxis(n.Op()) + 1
		}
		if len(st.ins) == 2 && !st.add {
			st.bin = binOpKind(n.Op())
		}
		if v, ok := n.Op().(ViewOp); ok && len(st.ins) == 1 && !st.fresh {
			st.view = v.ViewShape()
		}
		if !st.fresh && !st.konst {
			st.unary = len(st.ins) == 1 && isUnaryOp(n.Op())
			if pd, ok := n.Op().(IntoDoer); ok {
				st.pre = pd.DoInto
			} else if pd, ok := n.Op().(G.UsePreallocDoer); ok && overwritingOps()[reflect.TypeOf(n.Op())] {
				st.pre = pd.UsePreallocDo
			}
		}
		x.steps = append(x.steps, st)
	}
	x.planAccum()
	for i, g := range p.Grads {
		gi, ok := pos[g]
		if !ok {
			return nil, fmt.Errorf("graph: host executor: gradient node %q is not in the program", g.Name())
		}
		x.steps[gi].grad = true
		x.grads = append(x.grads, hostGrad{p: p.Params[i], pos: gi, node: g})
	}
	return x, nil
}

// Run executes the program once.
func (x *hostExec) Run() error {
	for i := range x.steps {
		st := &x.steps[i]
		if st.input {
			v := st.n.Value()
			if v == nil {
				return fmt.Errorf("input %q has no value (feed it with graph.SetValue)", st.n.Name())
			}
			x.vals[st.pos] = v
			continue
		}
		if st.done || st.deferred {
			continue
		}
		if st.accum > 0 {
			v, ok, err := x.accumulate(st)
			if err != nil {
				return err
			}
			if ok {
				x.vals[st.pos] = v
				if st.n.Value() != v {
					if err := G.UnsafeLet(st.n, v); err != nil {
						return fmt.Errorf("op %v (node %q): binding its value: %w", st.n.Op(), st.n.Name(), err)
					}
				}
				continue
			}
		}
		v, err := x.exec(st)
		if err != nil {
			return fmt.Errorf("op %v (node %q): %w", st.n.Op(), st.n.Name(), err)
		}
		x.vals[st.pos] = v
		if st.konst {
			st.done = true
		}
		// Bind the value to the node when it is not bound already (another
		// machine on the same graph may have bound its own since).
		if st.n.Value() != v {
			if err := G.UnsafeLet(st.n, v); err != nil {
				return fmt.Errorf("op %v (node %q): binding its value: %w", st.n.Op(), st.n.Name(), err)
			}
		}
	}
	return x.bindGrads()
}

// consumable returns the input j of the addition st whose buffer the sum
// may overwrite: an intermediate node that st alone reads, that owns its
// memory (no view, no alias) and whose value nobody reads after Run, while
// st's own value is not one a caller keeps across Runs (not fresh). Its
// op then writes its next value into the memory st's value lives in, which
// is what reusing st's buffer would do. This saves the sum's buffer: a
// (V, d') table's gradient, the tied layer's dYᵀh plus the lookup's
// scatter, lives in one buffer instead of two.
func (x *hostExec) consumable(st *hostStep) (int, bool) {
	for j := range st.ins {
		if x.consumableIn(st, j) {
			return j, true
		}
	}
	return 0, false
}

// consumableIn reports whether the addition st may overwrite its input j's
// buffer (see consumable).
func (x *hostExec) consumableIn(st *hostStep, j int) bool {
	if st.fresh || st.shared || x.prog.Trace || len(st.ins) != 2 || st.ins[0] == st.ins[1] {
		return false
	}
	pos := st.ins[j]
	a := &x.steps[pos]
	return x.readers[pos] == 1 && !a.input && !a.konst && !a.grad && a.view == nil && !a.shared && !a.fresh && a.checked
}

// planAccum finds the additions of an [AccumOp]'s result y and a
// [NoNegZeroOp]'s x that alone read y: y is then deferred to the addition
// (accumulate), which adds it into x's buffer when it may consume x.
func (x *hostExec) planAccum() {
	if x.prog.Trace {
		return
	}
	for i := range x.steps {
		st := &x.steps[i]
		if !st.add || len(st.ins) != 2 || st.ins[0] == st.ins[1] {
			continue
		}
		for j := range st.ins {
			y, o := &x.steps[st.ins[j]], &x.steps[st.ins[1-j]]
			if y.input || y.konst || y.fresh || y.grad || y.view != nil || o.input || o.konst || x.readers[y.pos] != 1 {
				continue
			}
			if _, ok := y.n.Op().(AccumOp); !ok {
				continue
			}
			if nz, ok := o.n.Op().(NoNegZeroOp); !ok || !nz.NoNegativeZero() {
				continue
			}
			st.accum = j + 1
			y.deferred = true
			break
		}
	}
}

// accumulate runs the addition st = x + y (either order) of an AccumOp's
// result y, deferred to here: as y.AddTo into x's buffer, which st then
// takes as its value (ok), when st may consume x; otherwise y runs now,
// with the error and value it would have had at its own place, and the
// caller runs st as usual (ok false, err nil).
func (x *hostExec) accumulate(st *hostStep) (G.Value, bool, error) {
	j := st.accum - 1
	y := &x.steps[st.ins[j]]
	if x.consumableIn(st, 1-j) {
		dst := x.vals[st.ins[1-j]]
		args := x.args[:0]
		for _, i := range y.ins {
			args = append(args, x.vals[i])
		}
		x.args = args[:0]
		var ok bool
		err := gorgoniaCall("do", func() {
			var e error
			if ok, e = y.n.Op().(AccumOp).AddTo(dst, j == 1, args...); e != nil {
				panic(e)
			}
		})
		if err != nil {
			return nil, false, fmt.Errorf("op %v (node %q): %w", y.n.Op(), y.n.Name(), err)
		}
		if ok {
			// The sum aliases x on purpose, as a consumed input: no alias
			// check (it would mark the node shared).
			st.checked = true
			return dst, true, nil
		}
	}
	v, err := x.exec(y)
	if err != nil {
		return nil, false, fmt.Errorf("op %v (node %q): %w", y.n.Op(), y.n.Name(), err)
	}
	x.vals[y.pos] = v
	if y.n.Value() != v {
		if err := G.UnsafeLet(y.n, v); err != nil {
			return nil, false, fmt.Errorf("op %v (node %q): binding its value: %w", y.n.Op(), y.n.Name(), err)
		}
	}
	return nil, false, nil
}

// exec computes one op node's value.
func (x *hostExec) exec(st *hostStep) (G.Value, error) {
	args := x.args[:0]
	for _, j := range st.ins {
		args = append(args, x.vals[j])
	}
	x.args = args[:0]
	if st.view != nil {
		if v, ok := x.viewOf(st, args[0]); ok {
			return x.checkAlias(st, v, args), nil
		}
	}
	prev := x.vals[st.pos]
	if st.add {
		into := prev
		if st.pre == nil || st.shared || !st.checked {
			into = nil
		}
		if j, ok := x.consumable(st); ok {
			// The sum aliases input j on purpose: no alias check (it would
			// mark the node shared).
			if v, ok := addDense(args[j], args[0], args[1]); ok && v == args[j] {
				st.checked = true
				return v, nil
			}
		}
		if v, ok := addDense(into, args[0], args[1]); ok {
			return x.checkAlias(st, v, args), nil
		}
	}
	if st.bin != 0 {
		into := prev
		if st.pre == nil || st.shared || !st.checked {
			into = nil
		}
		if v, ok := binDense(st.bin, into, args[0], args[1]); ok {
			return x.checkAlias(st, v, args), nil
		}
	}
	if st.rep > 0 {
		into := prev
		if st.fresh || st.shared || !st.checked {
			into = nil
		}
		if v, ok := repeatInto(into, args[0], args[1], st.rep-1, st.n.Shape()); ok {
			return x.checkAlias(st, v, args), nil
		}
	}
	if st.unary && !st.shared && st.checked && prev != nil {
		if v, ok := unaryInto(st.n.Op(), prev, args[0]); ok {
			return x.checkAlias(st, v, args), nil
		}
	}
	if st.pre != nil && !st.shared && st.checked && prev != nil {
		if v, err := st.pre(prev, args...); err == nil {
			return x.checkAlias(st, v, args), nil
		}
		// As the TapeMachine does: an op that cannot write into the given
		// value computes a fresh one.
	}
	v, err := doOp(st.n.Op(), args)
	if err != nil {
		return nil, err
	}
	return x.checkAlias(st, v, args), nil
}

// checkAlias finds results that share memory with an input (a view of
// it): such a node never writes into its previous value (that would write
// into the input), and the node owning the memory no longer reuses its
// buffer either when the view is read by callers after Run (a fresh
// node), so a value a caller kept is never overwritten.
func (x *hostExec) checkAlias(st *hostStep, v G.Value, args []G.Value) G.Value {
	if st.checked {
		return v
	}
	st.checked = true
	lo, hi, ok := span(v)
	if !ok {
		st.shared = true
		return v
	}
	for j, a := range args {
		alo, ahi, ok := span(a)
		if ok && !(alo < hi && lo < ahi) {
			continue
		}
		st.shared = true
		if st.fresh {
			x.markOwners(st.ins[j], lo, hi)
		}
	}
	return v
}

// markOwners stops the node at pos, and the inputs it views, from reusing
// their buffers when they overlap [lo, hi).
func (x *hostExec) markOwners(pos int, lo, hi uintptr) {
	st := &x.steps[pos]
	if alo, ahi, ok := span(x.vals[pos]); ok && !(alo < hi && lo < ahi) {
		return
	}
	st.shared = true
	for _, j := range st.ins {
		x.markOwners(j, lo, hi)
	}
}

// viewOf returns a's data under st's view shape, reusing the view of the
// previous Run when a's data has not moved.
func (x *hostExec) viewOf(st *hostStep, a G.Value) (G.Value, bool) {
	d, ok := a.(*tensor.Dense)
	if !ok || d.IsView() || !d.IsNativelyAccessible() || d.Shape().TotalSize() != st.view.TotalSize() {
		return nil, false
	}
	if prev, ok := x.vals[st.pos].(*tensor.Dense); ok && prev.Dtype() == d.Dtype() && prev.Uintptr() == d.Uintptr() && prev.DataSize() == d.DataSize() {
		return prev, true
	}
	return tensor.New(tensor.WithShape(st.view.Clone()...), tensor.WithBacking(d.Data())), true
}

// span is the address range of a value's elements.
func span(v G.Value) (lo, hi uintptr, ok bool) {
	switch t := v.(type) {
	case *G.F64:
		p := uintptr(unsafe.Pointer(t))
		return p, p + 8, true
	case *G.F32:
		p := uintptr(unsafe.Pointer(t))
		return p, p + 4, true
	case *tensor.Dense:
		p := t.Uintptr()
		return p, p + uintptr(t.MemSize()), true
	}
	return 0, 0, false
}

// isAddOp reports whether op is Gorgonia's elementwise addition.
func isAddOp(op G.Op) bool { return gops.BinSymbol(op) == "+" }

// binOpKind returns '-' for Gorgonia's elementwise subtraction, '*' for its
// elementwise product (⊙: G.Mul of two tensors and G.HadamardProd), 0 for
// any other op.
func binOpKind(op G.Op) byte {
	switch gops.BinSymbol(op) {
	case "-":
		return '-'
	case "⊙":
		return '*'
	}
	return 0
}

// isUnaryOp reports whether op is one of Gorgonia's elementwise unary ops
// that can run in place (G.UnsafeDoer).
func isUnaryOp(op G.Op) bool {
	_, ok := op.(G.UnsafeDoer)
	return ok && gops.KindOf(op) == gops.ElemUnary
}

// unaryInto computes a Gorgonia elementwise unary op into the node's
// previous value: a's data copied into prev, then the op in place on prev
// (UnsafeDo). Gorgonia's Do clones a and applies the same kernel in place
// on the clone, so the bits are the same; only where the result lives
// differs. ok is false where prev or a is not a plain dense tensor of a's
// dtype and shape, or the op did not write into prev; the caller then runs
// the op.
func unaryInto(op G.Op, prev, a G.Value) (G.Value, bool) {
	da, ok1 := a.(*tensor.Dense)
	dp, ok2 := prev.(*tensor.Dense)
	if !ok1 || !ok2 || da == dp || !plainDense(da) || !plainDense(dp) || da.Dtype() != dp.Dtype() || !da.Shape().Eq(dp.Shape()) {
		return nil, false
	}
	switch ad := da.Data().(type) {
	case []float32:
		copy(dp.Data().([]float32), ad)
	case []float64:
		copy(dp.Data().([]float64), ad)
	default:
		return nil, false
	}
	var v G.Value
	err := gorgoniaCall("do", func() {
		var e error
		if v, e = op.(G.UnsafeDoer).UnsafeDo(dp); e != nil {
			panic(e)
		}
	})
	if err != nil || v != G.Value(dp) {
		return nil, false
	}
	return v, true
}

// repeatInto computes a Gorgonia repeat op along axis whose input a has
// size 1 along that axis: the broadcast of a to shape, shape[axis] the
// number of repeats n (which it checks), each element a copy, as
// tensor.Repeat makes them. It writes into into when that is a plain dense
// tensor of shape and a's dtype, into a new tensor otherwise. ok is false
// for anything else (another size along the axis, other shapes or types);
// the caller then runs the op.
func repeatInto(into, a, n G.Value, axis int, shape tensor.Shape) (G.Value, bool) {
	da, ok := a.(*tensor.Dense)
	if !ok || !plainDense(da) || axis < 0 || axis >= len(shape) {
		return nil, false
	}
	as := da.Shape()
	if len(as) != len(shape) || as[axis] != 1 {
		return nil, false
	}
	for i := range as {
		if i != axis && as[i] != shape[i] {
			return nil, false
		}
	}
	var reps float64
	switch v := n.Data().(type) {
	case float64:
		reps = v
	case float32:
		reps = float64(v)
	case int:
		reps = float64(v)
	default:
		return nil, false
	}
	if reps != float64(shape[axis]) {
		return nil, false
	}
	outer, inner := 1, 1
	for _, d := range shape[:axis] {
		outer *= d
	}
	for _, d := range shape[axis+1:] {
		inner *= d
	}
	dst, ok := into.(*tensor.Dense)
	if !ok || !plainDense(dst) || dst.Dtype() != da.Dtype() || !dst.Shape().Eq(shape) {
		dst = tensor.New(tensor.Of(da.Dtype()), tensor.WithShape(shape.Clone()...))
	}
	switch src := da.Data().(type) {
	case []float32:
		broadcastAxis(dst.Data().([]float32), src, outer, shape[axis], inner)
	case []float64:
		broadcastAxis(dst.Data().([]float64), src, outer, shape[axis], inner)
	default:
		return nil, false
	}
	return dst, true
}

// broadcastAxis sets out (outer, r, inner) to r copies of src (outer,
// inner) along the middle axis.
func broadcastAxis[F float32 | float64](out, src []F, outer, r, inner int) {
	if inner == 1 {
		for o, v := range src[:outer] {
			row := out[o*r : (o+1)*r]
			for j := range row {
				row[j] = v
			}
		}
		return
	}
	for o := 0; o < outer; o++ {
		row := src[o*inner : (o+1)*inner]
		for j := 0; j < r; j++ {
			copy(out[(o*r+j)*inner:(o*r+j+1)*inner], row)
		}
	}
}

// addDense computes a + b for two plain dense tensors of the same float
// dtype and shape in one pass: into into's memory when into is such a
// tensor of that shape, else into a new tensor. It gives the bits of
// Gorgonia's addition, which clones a (or copies it into the reused
// value) and then adds b element by element (a[i] + b[i], the same
// operands in the same order), without the copy. ok is false where the
// arguments are anything else (scalars, views, masks, mixed dtypes); the
// caller then runs the op.
func addDense(into, a, b G.Value) (G.Value, bool) { return binDense('+', into, a, b) }

// binDense is addDense for the elementwise op kind: '+' (a[i] + b[i]), '-'
// (a[i] − b[i]) or '*' (a[i]·b[i]), each element the one IEEE operation
// Gorgonia's op computes, a the first operand (Gorgonia clones a, or copies
// it into the reused value, and then applies b to it element by element).
func binDense(kind byte, into, a, b G.Value) (G.Value, bool) {
	da, ok1 := a.(*tensor.Dense)
	db, ok2 := b.(*tensor.Dense)
	if !ok1 || !ok2 || !plainDense(da) || !plainDense(db) || da.Dtype() != db.Dtype() || !da.Shape().Eq(db.Shape()) {
		return nil, false
	}
	var dst *tensor.Dense
	if di, ok := into.(*tensor.Dense); ok && plainDense(di) && di.Dtype() == da.Dtype() && di.Shape().Eq(da.Shape()) {
		dst = di
	}
	switch av := da.Data().(type) {
	case []float32:
		return binSlices(kind, dst, da, av, db.Data().([]float32))
	case []float64:
		return binSlices(kind, dst, da, av, db.Data().([]float64))
	}
	return nil, false
}

func binSlices[F float32 | float64](kind byte, dst, da *tensor.Dense, a, b []F) (G.Value, bool) {
	if len(a) != len(b) || (kind != '+' && kind != '-' && kind != '*') {
		return nil, false
	}
	var out []F
	if dst != nil {
		out = dst.Data().([]F)
	} else {
		out = make([]F, len(a))
		dst = tensor.New(tensor.WithShape(da.Shape().Clone()...), tensor.WithBacking(out))
	}
	binVec(kind, out[:len(a)], a, b)
	return dst, true
}

// binVec sets out[i] = a[i] + b[i], a[i] − b[i] or a[i]·b[i] for kind '+',
// '-' or '*' (equal lengths; out may be a or b), the bulk in AVX2 where the
// CPU has it: each element the one IEEE operation, as the loop computes it.
func binVec[F float32 | float64](kind byte, out, a, b []F) {
	i := 0
	if haveAddAVX2 && len(a) >= 32 {
		switch o := any(out).(type) {
		case []float32:
			f := mulF32
			switch kind {
			case '+':
				f = addF32
			case '-':
				f = subF32
			}
			f(&o[0], &any(a).([]float32)[0], &any(b).([]float32)[0], len(a))
			i = len(a) &^ 31
		case []float64:
			f := mulF64
			switch kind {
			case '+':
				f = addF64
			case '-':
				f = subF64
			}
			f(&o[0], &any(a).([]float64)[0], &any(b).([]float64)[0], len(a))
			i = len(a) &^ 15
		}
	}
	b = b[:len(a)]
	out = out[:len(a)]
	switch kind {
	case '+':
		for ; i < len(a); i++ {
			out[i] = a[i] + b[i]
		}
	case '-':
		for ; i < len(a); i++ {
			out[i] = a[i] - b[i]
		}
	default:
		for ; i < len(a); i++ {
			out[i] = a[i] * b[i]
		}
	}
}

// plainDense reports whether t is a contiguous row-major tensor without a
// mask whose data covers its shape exactly.
func plainDense(t *tensor.Dense) bool {
	return t != nil && !t.IsView() && !t.IsMaterializable() && !t.IsMasked() && t.DataOrder().IsRowMajor() && t.Shape().TotalSize() == t.DataSize()
}

// doOp runs op.Do, turning a panic that is not a runtime error into an
// error (Gorgonia's ops report some failures by panicking).
func doOp(op G.Op, args []G.Value) (v G.Value, err error) {
	err = gorgoniaCall("do", func() {
		var e error
		if v, e = op.Do(args...); e != nil {
			panic(e)
		}
	})
	return v, err
}

// bindGrads makes each parameter's gradient readable with p.Grad(): when a
// TapeMachine on the same graph bound the parameter a dual value, the
// gradient is written into it (0 + g, what the TapeMachine's accumulation
// into freshly zeroed gradients gives); otherwise p.Grad() reads the
// gradient node, bound by Run.
func (x *hostExec) bindGrads() error {
	for _, g := range x.grads {
		gv, err := g.p.Grad()
		if err != nil || gv == nil {
			continue
		}
		src := x.vals[g.pos]
		if d := g.p.Deriv(); d != nil && gv == d.Value() {
			continue
		}
		if err := addInto(gv, src); err != nil {
			return fmt.Errorf("gradient of %q: %w", g.p.Name(), err)
		}
	}
	return nil
}

// addInto sets dst to 0 + src element by element.
func addInto(dst, src G.Value) error {
	switch d := dst.(type) {
	case *G.F64:
		s, ok := src.(*G.F64)
		if !ok {
			return fmt.Errorf("gradient %T into %T", src, dst)
		}
		*d = 0 + *s
		return nil
	case *G.F32:
		s, ok := src.(*G.F32)
		if !ok {
			return fmt.Errorf("gradient %T into %T", src, dst)
		}
		*d = 0 + *s
		return nil
	case tensor.Tensor:
		s, ok := src.(tensor.Tensor)
		if !ok || s.Shape().TotalSize() != d.Shape().TotalSize() {
			return fmt.Errorf("gradient %v into %v", src.Shape(), dst.Shape())
		}
		if sd, ok := s.(*tensor.Dense); ok && sd.IsView() {
			s = sd.Materialize()
		}
		switch dd := d.Data().(type) {
		case []float64:
			sd, ok := s.Data().([]float64)
			if !ok {
				return fmt.Errorf("gradient of dtype %v into %v", s.Dtype(), d.Dtype())
			}
			for i, v := range sd[:len(dd)] {
				dd[i] = 0 + v
			}
			return nil
		case []float32:
			sd, ok := s.Data().([]float32)
			if !ok {
				return fmt.Errorf("gradient of dtype %v into %v", s.Dtype(), d.Dtype())
			}
			for i, v := range sd[:len(dd)] {
				dd[i] = 0 + v
			}
			return nil
		}
	}
	return fmt.Errorf("unsupported gradient value %T", dst)
}

// Close releases the buffers.
func (x *hostExec) Close() error {
	x.vals = nil
	return nil
}
