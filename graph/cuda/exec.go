package cuda

import (
	"errors"
	"fmt"
	"log"
	"reflect"
	"sort"
	"strings"
	"unsafe"

	"github.com/gdattn/gdattn/graph"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// ExecOptions configures [NewExecutorWith]. The zero value runs every op that
// has a device implementation on the device and logs the fallback ops of each
// program once with the standard logger.
type ExecOptions struct {
	// HostOnly runs every op through the CPU fallback (inputs downloaded,
	// Gorgonia's op.Do on the host, result uploaded): a reference path for
	// tests and for isolating a suspect device kernel.
	HostOnly bool
	// HostOps forces the ops whose report name (as in Placements, e.g.
	// "ops.MatMulOp MatMul" or "ops.KernelOp") starts with one of these
	// prefixes onto the CPU fallback: to isolate a suspect device kernel.
	HostOps []string
	// ResidentParams keeps the machine's parameters (those with gradients)
	// in device memory across device updates: after an update by a
	// train.Trainer using this executor, the parameters are neither copied
	// back to the host nor uploaded again by the next Run; SyncParams
	// (train.Trainer.SyncParams) copies them to the host. Saves two
	// parameter-sized transfers per training step; the price is that host
	// values go stale: call SyncParams before reading parameters, saving a
	// checkpoint or running another machine on the graph, and
	// InvalidateParams after writing them on the host between device
	// updates. Without device updates (a host optimiser, evaluation runs)
	// every Run uploads them as usual.
	ResidentParams bool
	// DeviceGrads leaves the parameters' gradients in device memory after
	// Run (they are not downloaded; SyncGrads does): a train.Trainer on
	// the executor then takes its NaN/Inf guard and clipping norm from
	// device statistics (GradStats) and never copies the gradients to the
	// host. Gradients the caller also lists in Outputs, and Trace, still
	// download.
	DeviceGrads bool
	// NoMemoryPlan gives every node its own device buffer for the
	// executor's life instead of laying the node buffers out in one arena
	// by liveness (memplan.go): the plan's reference, for comparisons and
	// for debugging a suspected overlap. Results are the same either way.
	NoMemoryPlan bool
	// NoFusion launches every elementwise node on its own instead of
	// running each chain of elementwise nodes whose intermediate results
	// have no other reader as one launch of the fused kernel ew_chain
	// (fuse.go). Results are the same bit for bit either way.
	NoFusion bool
	// GraphCapture gives the executor a device stream of its own and,
	// from the second RunStep on, captures the step's launches (forward,
	// backward, gradient statistics, clip factor, NaN/Inf guard and the
	// Adam update, which reads its per-step numbers from device memory)
	// once into a CUDA graph that each later RunStep replays with one
	// graph launch. RunStep falls back to ordinary launches, for good,
	// when the program has ops on the host, with MachineOptions.Trace, or
	// when a capture fails, and captures again when the clip norm or
	// Adam's β1, β2, ε or weight-decay mode change (GraphStatus says
	// which). Run and
	// AdamUpdate never capture. NewExecutorWith's factory fails when the
	// backend cannot capture (no streams, or a CUDA driver without the
	// graph API); a Backend that wraps another (e.g. to count its
	// allocations) exposes it with a method Unwrap() Backend, and the
	// stream is the wrapped one's while allocations still go through the
	// wrapper. Results are the same bit for bit either way.
	GraphCapture bool
	// Logf receives the one-line report of the ops that run on the host,
	// once per program. Nil means log.Printf; use a no-op func to silence it.
	Logf func(format string, args ...any)
}

// NewExecutor returns a [graph.ExecutorFactory] that runs a graph.Machine's
// program on b with the default options:
//
//	b, err := cuda.Open(0)
//	...
//	m, err := graph.NewMachine(s, loss, graph.MachineOptions{Executor: cuda.NewExecutor(b)})
//
// The backend must outlive every machine built with the factory; closing a
// machine frees its device memory but not the backend.
func NewExecutor(b Backend) graph.ExecutorFactory {
	return NewExecutorWith(b, ExecOptions{})
}

// NewExecutorWith is [NewExecutor] with options.
func NewExecutorWith(b Backend, opts ExecOptions) graph.ExecutorFactory {
	return func(p *graph.Program) (graph.Executor, error) {
		if b == nil {
			return nil, errors.New("cuda: executor: backend is nil")
		}
		return newExec(b, p, opts)
	}
}

// Exec runs one graph.Machine's program with every node's value resident in
// device memory. Each Run uploads the current host values of the graph's
// input and parameter nodes, runs the ops in order (on the device where a
// kernel exists, otherwise through the CPU fallback), and downloads the loss,
// the machine's Outputs and the parameters' gradients (every node with
// MachineOptions.Trace) into host values bound to those nodes, so they read
// exactly as after a TapeMachine run. Other intermediate nodes are not
// downloaded. An Exec is what machine.Executor() returns for a machine built
// with [NewExecutor]; it is not safe for concurrent use.
//
// Ops on the device (op*.go, kernels in kernels/*.cu): Gorgonia's matrix,
// matrix-vector and batched products (Backend.Gemm), elementwise unary and
// binary ops (a scalar operand broadcast), repeat (its broadcasts), sums
// along axes, transposes, concatenation, slices, reshapes (free: they share
// their input's buffer) and size constants; gdattn's ops (package ops,
// lowered by a type switch on their exported types, see lower):
// ops.MatMul, BatchedMatMul, ConcatLast, Slice (and its gradient),
// SoftMax/LogSoftMax (and their gradient), the kernel-weight op for the
// five kernels and its gradients (dot-product kernels on Gemm), the fused
// attention head and expectation ops with their gradients, the sparse
// embedding's gather and scatter-add (centered too: GatherCentered's mean
// row and its gradient's fill), the tied output layer's three products
// (ops.TiedLogits, on Gemm) and the sparse cross-entropy with its gradient.
// A chain of elementwise nodes whose intermediate results nobody else
// reads runs as one launch (fuse.go; ExecOptions.NoFusion turns it off).
// Any other op (a new fused op, an op with int outputs, a shape the
// lowering does not expect) runs through the CPU fallback: its inputs are
// downloaded, Gorgonia's op.Do runs on the host and the result is uploaded,
// so every graph runs correctly and only speed depends on coverage.
// Placements and FallbackOps say which ops run where; a one-line report of
// the host ops is logged once per program (ExecOptions.Logf).
//
// The values are those of the TapeMachine up to rounding: the kernels
// accumulate in float64 like the host ops, Gemm sums in its own order
// (float32 results agree within about 1e-6 relative, float64 within 1e-13
// on the test models).
type Exec struct {
	b      Backend
	prog   *graph.Program
	opts   ExecOptions
	vals   []*value
	byNode map[*G.Node]*value
	read   []*value // downloaded after each Run
	allocs []Ptr
	bytes  int64 // allocated by alloc
	plan   MemoryPlan
	closed bool
	ran    bool
	runs   int
	pass   int // launchOps passes: what value.fbPass counts
	// fbFresh: the program has ops on the device and on the host, whose
	// host copies are therefore allocated afresh on every pass (fallback).
	fbFresh bool
	shared  map[any]*shared  // buffers of fused ops (op_fused.go)
	upd     updState         // device update and statistics (exec_update.go)
	cnt     *countingBackend // b, counting launches and waits (Counters)
	// ResidentParams state: params holds the values of the machine's
	// parameters; devNewer says a device update made the device copies
	// the current ones.
	params   map[*value]bool
	devNewer bool
	gr       graphState // GraphCapture state (exec_graph.go)
}

// value is one node's device buffer and how it is computed.
type value struct {
	n     *G.Node
	shape tensor.Shape
	dt    tensor.Dtype
	size  int   // elements (1 for a scalar)
	bytes int64 // size·element size
	ptr   Ptr
	kind  valueKind
	ins   []*value
	dev   devOp // device implementation (kindOp), nil for the fallback
	alias bool  // ptr is ins[0].ptr (a reshape): nothing to compute
	// inPlace lists inputs of the output's size whose buffer the device op
	// may write its output over: the op reads each element of such an
	// input before writing the same element of the output (and nothing
	// else of it afterwards). The memory plan shares the first one whose
	// last reader is this op (memplan.go); none: never.
	inPlace []*value
	shares  *value // the value whose buffer this one overwrites (set by the plan)
	// Fused elementwise chains (fuse.go): ew describes an elementwise
	// device op a chain may take in, rep a repeat whose reader may read
	// its input instead; fused says the value is computed inside its
	// chain's last node (no launch, no buffer); chainIns lists what the
	// last node's fused kernel reads (nil outside chains).
	ew       *ewNode
	rep      *repeatMap
	fused    bool
	chainIns []*value
	host     G.Value // host value bound to the node for reading, if any
	// fb is the host copy of the value that the CPU fallback hands to the
	// host ops reading it, downloaded once per pass (fbPass, see
	// Exec.fallback).
	fb     G.Value
	fbPass int
	cval   G.Value // a constant's value
	what   string  // op description for reports
}

type valueKind int

const (
	kindInput valueKind = iota // a parameter or input: uploaded every Run
	kindConst                  // an op without inputs: computed once on the host
	kindOp                     // computed every Run
)

func newExec(b Backend, p *graph.Program, opts ExecOptions) (x *Exec, err error) {
	if p == nil || len(p.Nodes) == 0 {
		return nil, errors.New("cuda: executor: empty program")
	}
	if opts.HostOnly {
		// The host path has no device updates and keeps nothing resident.
		opts.ResidentParams, opts.DeviceGrads = false, false
	}
	x = &Exec{prog: p, opts: opts, byNode: map[*G.Node]*value{}}
	if opts.GraphCapture && !opts.HostOnly {
		if b, err = x.openStream(b); err != nil {
			return nil, err
		}
	}
	cb := &countingBackend{Backend: b}
	x.b, x.cnt = cb, cb
	ex := x // the error returns below set x to nil
	defer func() {
		if err != nil {
			_ = ex.closeStream()
			ex.free()
		}
	}()
	for _, n := range p.Nodes {
		v := &value{n: n, shape: n.Shape().Clone(), dt: n.Dtype()}
		v.size = v.shape.TotalSize()
		if v.shape.IsScalar() || v.size == 0 {
			v.size = 1
		}
		v.bytes = int64(v.size) * int64(v.dt.Size())
		children, err := childrenOf(n)
		if err != nil {
			return nil, err
		}
		for _, c := range children {
			cv, ok := x.byNode[c]
			if !ok {
				return nil, fmt.Errorf("cuda: executor: node %q reads %q, which comes later in the program", n.Name(), c.Name())
			}
			v.ins = append(v.ins, cv)
		}
		switch {
		case n.Op() == nil:
			v.kind = kindInput
		case len(v.ins) == 0:
			v.kind = kindConst
			cv, err := doOp(n.Op(), nil)
			if err != nil {
				return nil, fmt.Errorf("cuda: executor: constant %q: %w", n.Name(), err)
			}
			v.cval = cv
		default:
			v.kind = kindOp
			v.what = opName(n.Op())
			if !opts.HostOnly && !forcedHost(v.what, opts.HostOps) {
				if err := lowerSafe(x, v); err != nil {
					return nil, fmt.Errorf("cuda: executor: node %q (%v): %w", n.Name(), n.Op(), err)
				}
			}
		}
		x.vals = append(x.vals, v)
		x.byNode[n] = v
	}
	if err := x.planReads(); err != nil {
		return nil, err
	}
	if !opts.NoFusion {
		x.fuseChains()
	}
	if opts.NoMemoryPlan {
		err = x.allocUnplanned()
	} else {
		err = x.allocPlanned()
	}
	if err != nil {
		return nil, err
	}
	for _, v := range x.vals {
		if v.kind == kindConst {
			if err := x.upload(v, v.cval); err != nil {
				return nil, fmt.Errorf("cuda: executor: constant %q: %w", v.n.Name(), err)
			}
		}
	}
	x.params = map[*value]bool{}
	for _, p := range p.Params {
		x.params[x.byNode[p]] = true
	}
	x.fbFresh = x.count(true) > 0 && x.count(false) > 0
	if fb := x.FallbackOps(); len(fb) > 0 {
		logf := opts.Logf
		if logf == nil {
			logf = log.Printf
		}
		logf("cuda: executor on %s: %d of %d ops run on the host: %s", b.Name(), x.count(false), x.count(true)+x.count(false), strings.Join(fb, ", "))
	}
	return x, nil
}

// forcedHost reports whether op name what starts with one of prefixes.
func forcedHost(what string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(what, p) {
			return true
		}
	}
	return false
}

// lowerSafe is lower with a panic (a lowering that met an op it misreads:
// a bug, or an op changed under it) turned into an error naming the op,
// rather than a crash or a silently wrong program.
func lowerSafe(x *Exec, v *value) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("lowering to the device panicked: %v", r)
		}
	}()
	return lower(x, v)
}

// planReads lists the values downloaded after each Run.
func (x *Exec) planReads() error {
	seen := map[*value]bool{}
	add := func(n *G.Node) error {
		v, ok := x.byNode[n]
		if !ok {
			return fmt.Errorf("cuda: executor: node %q is not in the program", n.Name())
		}
		if v.kind != kindInput && !seen[v] {
			seen[v] = true
			x.read = append(x.read, v)
		}
		return nil
	}
	if x.prog.Loss != nil {
		if err := add(x.prog.Loss); err != nil {
			return err
		}
	}
	for _, n := range x.prog.Outputs {
		if err := add(n); err != nil {
			return err
		}
	}
	if !x.opts.DeviceGrads {
		for _, n := range x.prog.Grads {
			if err := add(n); err != nil {
				return err
			}
		}
	}
	if x.prog.Trace {
		for _, v := range x.vals {
			if err := add(v.n); err != nil {
				return err
			}
		}
	}
	if len(x.prog.Grads) != len(x.prog.Params) {
		return fmt.Errorf("cuda: executor: %d gradient nodes for %d parameters", len(x.prog.Grads), len(x.prog.Params))
	}
	return nil
}

func (x *Exec) alloc(bytes int64) (Ptr, error) {
	if bytes <= 0 {
		bytes = 8
	}
	p, err := x.b.Alloc(bytes)
	if err != nil {
		return 0, err
	}
	x.allocs = append(x.allocs, p)
	x.bytes += bytes
	return p, nil
}

// DeviceBytes returns the device memory the executor holds: the node
// buffers (one arena laid out by liveness, see [Exec.MemoryPlan]; with
// ExecOptions.NoMemoryPlan one buffer per node, reshapes sharing their
// input's), the fused ops' scratch buffers and, after the first device
// update, the Adam moments and the update's statistics. Everything is
// allocated up front and held until Close, so this is also the executor's
// peak.
func (x *Exec) DeviceBytes() int64 { return x.bytes }

func (x *Exec) free() {
	for _, p := range x.allocs {
		_ = x.b.Free(p)
	}
	x.allocs, x.bytes = nil, 0
}

// Run uploads the inputs and parameters, runs the program and downloads the
// values the machine's callers read.
func (x *Exec) Run() error {
	if err := x.enqueue(); err != nil {
		return err
	}
	if err := x.b.Sync(); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	if err := x.download(); err != nil {
		return err
	}
	x.ran = true
	x.runs++
	return nil
}

// enqueue uploads the inputs and parameters and queues the program's ops
// (Run without the wait and the downloads; RunStep queues the update after
// it).
func (x *Exec) enqueue() error {
	if err := x.uploadInputs(); err != nil {
		return err
	}
	return x.launchOps()
}

// uploadInputs uploads the inputs and the parameters (those not newer on
// the device), then the host data of the device ops that have some
// (preparer).
func (x *Exec) uploadInputs() error {
	if x.closed {
		return errors.New("cuda: executor is closed")
	}
	for _, v := range x.vals {
		if v.kind != kindInput || (x.devNewer && x.params[v]) {
			continue
		}
		hv := v.n.Value()
		if hv == nil {
			return fmt.Errorf("cuda: input %q has no value", v.n.Name())
		}
		if err := x.upload(v, hv); err != nil {
			return fmt.Errorf("cuda: input %q: %w", v.n.Name(), err)
		}
	}
	for _, v := range x.vals {
		p, ok := v.dev.(preparer)
		if !ok || v.kind != kindOp || v.fused {
			continue
		}
		if err := p.prepare(x); err != nil {
			return fmt.Errorf("cuda: op %v (node %q): %w", v.n.Op(), v.n.Name(), err)
		}
	}
	return nil
}

// launchOps queues the program's ops.
func (x *Exec) launchOps() error {
	x.pass++ // the host copies of the previous pass are stale (Exec.fallback)
	for _, v := range x.vals {
		if v.kind != kindOp || v.alias || v.fused {
			continue
		}
		var err error
		if v.dev != nil {
			err = v.dev.run(x, v)
		} else {
			err = x.fallback(v)
		}
		if err != nil {
			return fmt.Errorf("op %v (node %q): %w", v.n.Op(), v.n.Name(), err)
		}
	}
	return nil
}

// download copies the read values to the host and binds them to their nodes.
func (x *Exec) download() error {
	for _, v := range x.read {
		if v.host == nil {
			v.host = newHostValue(v.dt, v.shape)
		}
		if err := x.copyOut(v, v.host); err != nil {
			return fmt.Errorf("cuda: download %q: %w", v.n.Name(), err)
		}
	}
	for _, v := range x.read {
		if err := G.UnsafeLet(v.n, v.host); err != nil {
			return fmt.Errorf("cuda: bind %q: %w", v.n.Name(), err)
		}
	}
	if x.opts.DeviceGrads && !x.prog.Trace {
		return nil
	}
	return x.bindGrads()
}

// bindGrads makes the downloaded gradients readable with p.Grad(): copied
// into the parameter's dual value when a TapeMachine bound one, else
// through the gradient node, bound to its host value by download.
func (x *Exec) bindGrads() error {
	for i, p := range x.prog.Params {
		gn := x.prog.Grads[i]
		gv, err := p.Grad()
		if err == nil && gv != nil && (p.Deriv() == nil || gv != p.Deriv().Value()) {
			if err := copyValue(gv, x.byNode[gn].host); err != nil {
				return fmt.Errorf("cuda: gradient of %q: %w", p.Name(), err)
			}
			continue
		}
		if p.Deriv() != gn {
			return fmt.Errorf("cuda: gradient of %q: the parameter's gradient node is not the program's", p.Name())
		}
	}
	return nil
}

// fallback runs v's op on the host: its inputs' host copies (value.fb)
// are handed to op.Do and the result is uploaded.
//
// Each input's host copy is downloaded once per pass over the program and
// shared by every host op that reads it in that pass, as Gorgonia's
// machine hands every reader of a node the node's one value. Ops rely on
// that: the sparse cross-entropy made by ops.SparseCrossEntropyOverwrite
// writes its softmax over its logits argument in place, and its gradient
// op, seeing the same buffer, takes it for the softmax of this run; were
// the logits downloaded afresh into that buffer for the gradient op, it
// would read logits as the softmax and return a wrong gradient
// (TestExecutorHostXentOverwrite). A device buffer does not change between
// its node's op and its last reader (the memory plan reuses it only after
// that), so a copy downloaded earlier in the pass is current for every
// reader that did not write it, and a host op that writes an input
// argument hands its write to the host ops reading that input after it,
// as on Gorgonia's machine (device ops read the device buffer, unwritten).
//
// From one pass to the next the host copies are reused when every op runs
// on the host (HostOnly), as Gorgonia's machine reuses its values, but
// allocated afresh when some ops run on the device (Exec.fbFresh): the
// fused ops' gradient ops (ops.KernelGradOp, ops.HeadGradOp,
// ops.ExpectationGradOp, ...) cache what they compute by the identity of
// their argument buffers and count on their forward op, which runs before
// them in every pass on Gorgonia's machine, to invalidate that cache. With
// the forward op on the device (ExecOptions.HostOps naming the gradient
// op) nothing invalidates it, and a host copy reused from the previous
// pass, the same buffer holding the new minibatch's values, would return
// the previous pass's gradients (TestExecutorHostOpEachRun). A buffer an
// op's cache still holds is never handed out again, so a new one cannot
// match it.
func (x *Exec) fallback(v *value) error {
	args := make([]G.Value, len(v.ins))
	for i, in := range v.ins {
		if in.fb == nil || !in.fb.Shape().Eq(hostShape(in.shape)) || (x.fbFresh && in.fbPass != x.pass) {
			in.fb, in.fbPass = newHostValue(in.dt, in.shape), 0
		}
		if in.fbPass != x.pass {
			if err := x.copyOut(in, in.fb); err != nil {
				return fmt.Errorf("download input %d: %w", i, err)
			}
			in.fbPass = x.pass
		}
		args[i] = in.fb
	}
	out, err := doOp(v.n.Op(), args)
	if err != nil {
		return err
	}
	return x.upload(v, out)
}

// doOp calls op.Do, turning a panic into an error.
func doOp(op G.Op, args []G.Value) (out G.Value, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("op panicked: %v", r)
		}
	}()
	return op.Do(args...)
}

// upload copies a host value into v's device buffer (a view, e.g. a slice
// or a lazily transposed tensor an op returned, is materialised first).
func (x *Exec) upload(v *value, hv G.Value) error {
	if d, ok := hv.(*tensor.Dense); ok && (d.IsMaterializable() || d.RequiresIterator()) {
		m, ok := d.Materialize().(G.Value)
		if !ok {
			return fmt.Errorf("cannot materialise a %T view", hv)
		}
		hv = m
	}
	p, n, err := hostBytes(hv)
	if err != nil {
		return err
	}
	if n != v.bytes {
		return fmt.Errorf("host value has %d bytes (shape %v), node %v needs %d", n, hv.Shape(), v.shape, v.bytes)
	}
	return x.b.CopyHtoD(v.ptr, p, n)
}

// copyOut copies v's device buffer into the host value hv (same size).
func (x *Exec) copyOut(v *value, hv G.Value) error {
	p, n, err := hostBytes(hv)
	if err != nil {
		return err
	}
	if n != v.bytes {
		return fmt.Errorf("host value has %d bytes, device buffer %d", n, v.bytes)
	}
	return x.b.CopyDtoH(p, v.ptr, n)
}

// hostShape is the shape a host value of a node of shape s has.
func hostShape(s tensor.Shape) tensor.Shape {
	if s.IsScalar() {
		return tensor.ScalarShape()
	}
	return s
}

// newHostValue allocates a zero host value for a node: *G.F64 / *G.F32 for
// scalars (as Gorgonia's ops expect), a dense tensor otherwise.
func newHostValue(dt tensor.Dtype, s tensor.Shape) G.Value {
	if s.IsScalar() {
		switch dt {
		case tensor.Float64:
			return G.NewF64(0)
		case tensor.Float32:
			return G.NewF32(0)
		}
	}
	return tensor.New(tensor.Of(dt), tensor.WithShape(s.Clone()...))
}

// childrenOf returns the nodes n's op reads, in argument order (repeated
// inputs repeated), through Gorgonia's exported graph API: ExprGraph.From
// (gonum's graph.Directed) lists a node's children, in v0.9.18 as an
// ordered iterator over the node's argument list. TestChildrenOrder pins
// the order on a non-commutative op and a repeated input.
func childrenOf(n *G.Node) (G.Nodes, error) {
	if n.Op() == nil {
		return nil, nil
	}
	g := n.Graph()
	if g == nil {
		return nil, fmt.Errorf("cuda: executor: node %q belongs to no graph", n.Name())
	}
	it := g.From(n.ID())
	if it == nil {
		return nil, fmt.Errorf("cuda: executor: node %q is not in its graph", n.Name())
	}
	var out G.Nodes
	for it.Next() {
		c, ok := it.Node().(*G.Node)
		if !ok {
			return nil, fmt.Errorf("cuda: executor: node %q has a child of type %T", n.Name(), it.Node())
		}
		out = append(out, c)
	}
	return out, nil
}

// hostBytes returns the address and size in bytes of a host value's
// elements, materialising views.
func hostBytes(hv G.Value) (unsafe.Pointer, int64, error) {
	switch v := hv.(type) {
	case *G.F64:
		return unsafe.Pointer(v), 8, nil
	case *G.F32:
		return unsafe.Pointer(v), 4, nil
	case *tensor.Dense:
		if v.IsMaterializable() || v.RequiresIterator() {
			return nil, 0, errors.New("host tensor is a view")
		}
		rv := reflect.ValueOf(v.Data())
		if rv.Kind() != reflect.Slice {
			// A 0-d tensor holds a single element.
			return nil, 0, fmt.Errorf("unsupported tensor data %T", v.Data())
		}
		if rv.Len() == 0 {
			return nil, 0, errors.New("empty tensor")
		}
		return rv.UnsafePointer(), int64(rv.Len()) * int64(rv.Type().Elem().Size()), nil
	case interface{ Pointer() unsafe.Pointer }:
		if m, ok := hv.(interface{ MemSize() uintptr }); ok {
			return v.Pointer(), int64(m.MemSize()), nil
		}
	}
	return nil, 0, fmt.Errorf("unsupported host value %T", hv)
}

// copyValue copies src's elements into dst (same dtype and size).
func copyValue(dst, src G.Value) error {
	dp, dn, err := hostBytes(dst)
	if err != nil {
		return err
	}
	sp, sn, err := hostBytes(src)
	if err != nil {
		return err
	}
	if dn != sn {
		return fmt.Errorf("sizes differ: %d and %d bytes", dn, sn)
	}
	copy(unsafe.Slice((*byte)(dp), dn), unsafe.Slice((*byte)(sp), sn))
	return nil
}

// Close frees the program's device memory (not the backend). Idempotent.
func (x *Exec) Close() error {
	if x.closed {
		return nil
	}
	x.closed = true
	// The stream first: its Close waits for its queued work, which may
	// still use the buffers.
	err := x.closeStream()
	x.free()
	return err
}

// Placement describes where one op of the program runs.
type Placement struct {
	Op     string // the op as printed by Gorgonia (shape details removed)
	Device bool   // runs on the device (or is a free reshape of a device buffer)
	Count  int    // nodes with this op
}

// Placements lists the program's ops (inputs and constants excluded) by
// op, device ones first, then by name.
func (x *Exec) Placements() []Placement {
	m := map[Placement]int{}
	for _, v := range x.vals {
		if v.kind != kindOp {
			continue
		}
		m[Placement{Op: v.what, Device: v.dev != nil || v.alias}]++
	}
	out := make([]Placement, 0, len(m))
	for p, c := range m {
		p.Count = c
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Device != out[j].Device {
			return out[i].Device
		}
		return out[i].Op < out[j].Op
	})
	return out
}

// FallbackOps lists the distinct ops of the program that run on the host.
func (x *Exec) FallbackOps() []string {
	var out []string
	for _, p := range x.Placements() {
		if !p.Device {
			out = append(out, fmt.Sprintf("%s ×%d", p.Op, p.Count))
		}
	}
	return out
}

// count returns the number of op nodes on the device (dev) or the host.
func (x *Exec) count(dev bool) int {
	c := 0
	for _, v := range x.vals {
		if v.kind == kindOp && (v.dev != nil || v.alias) == dev {
			c++
		}
	}
	return c
}

// opName is an op's name for reports: its type and printed form with sizes
// dropped, e.g. "gorgonia.linAlgBinOp A × Bᵀ" or "ops.ReshapeOp ReshapeCopy".
func opName(op G.Op) string {
	t := strings.TrimPrefix(fmt.Sprintf("%T", op), "*")
	s := op.String()
	if i := strings.IndexAny(s, "({=["); i > 0 && !strings.HasPrefix(s, "Kernel") {
		s = s[:i]
	}
	if strings.HasPrefix(t, "gorgonia.constant") {
		s = "const"
	}
	return t + " " + strings.TrimSpace(s)
}
