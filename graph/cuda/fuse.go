package cuda

// Fused elementwise chains.
//
// An elementwise node (Gorgonia's unary and binary elementwise ops, ops.GELU
// and its gradient: value.ew, set by their lowering) whose only reader is
// another elementwise node of the same size and dtype needs no buffer of its
// own: the reader can compute it per element, in a register. fuseChains
// links such nodes into chains, head to last node, and runs each chain as
// one launch of ew_chain (kernels/elem.cu) at the last node's place in the
// program; the others (value.fused) launch nothing and get no buffer.
//
// A node is taken into the chain of its reader only when nothing else can
// need its value: it is not downloaded (loss, Outputs, gradients,
// MachineOptions.Trace, which turns fusion off) and it has exactly one
// reader node, which reads it directly or through reshapes (free aliases of
// its buffer) that have no other reader; those reshapes then alias nothing
// anyone reads. Backward
// needs no special case: a forward value a gradient op reads has that op as
// a second reader, so it stays a buffer. A node that reads two fusable
// nodes continues the chain of its first; the other stays a buffer. The
// last node reads the chain's external inputs (value.chainIns), the memory
// plan keeps them live until it runs, and it may be written in place over
// one of them, since the kernel reads all of an element's inputs before it
// writes the element.
//
// A repeat (Gorgonia's broadcasts) whose readers are all elementwise nodes
// of its size is folded into their launches: the kernel reads the repeat's
// input at the index the repeat would have copied from (chain_index), and
// the repeat launches nothing and has no buffer. An elementwise node with
// such a repeat input and no chain is a chain of one. (Every elementwise
// node belongs to exactly one chain, and a chain with a folded repeat is
// always applied, so every reader of a folded repeat reads its input.)
//
// Exactness: every step computes its op in the element type, with the same
// expressions as the single-op kernels, so the values match an unfused run
// bit for bit (TestFusedChainsExact); products use CUDA's round-to-nearest
// intrinsics so that nvcc cannot contract one with the next step's sum.

// ewNode describes an elementwise node a chain may take in.
type ewNode struct {
	binary bool  // ins[0] op ins[1]; else op(ins[0])
	code   int32 // ew_unary's or ew_binary's op code, or chainGELU/chainGELUGrad
}

// Op codes of ew_chain beyond ew_unary's and ew_binary's.
const (
	chainGELU     = 16 // unary: ops.GELU
	chainGELUGrad = 5  // binary: ops.GELUGrad (x, dy)
)

// Limits of one ew_chain launch: steps (16 bits each in two int64
// arguments) and external inputs (x0..x3).
const (
	chainMaxSteps  = 8
	chainMaxInputs = 4
)

// Step kinds of ew_chain.
const (
	stepUnary = iota // r = op(r)
	stepRO           // r = r op o
	stepOR           // r = o op r
	stepRR           // r = r op r
)

// repeatMap is a repeat's index map: its output (outer, din·reps, inner)
// from its input (outer, din, inner), as the kernel repeat copies it.
type repeatMap struct{ din, reps, inner int64 }

// chain is one fused chain: r = input 0's element, then the steps.
type chain struct {
	nodes []*value // head first, last node last
	ext   []*value // the external inputs as the nodes read them
	steps []int64
	fold  map[*value]bool // repeats that may be folded into their reader
}

// reads returns what v's device op reads: its chain's external inputs for
// the last node of a fused chain, else its inputs.
func (v *value) reads() []*value {
	if v.chainIns != nil {
		return v.chainIns
	}
	return v.ins
}

// FusedChains returns the number of fused elementwise chains the executor
// runs (one launch each) and the nodes they hold (elementwise nodes and
// folded repeats).
func (x *Exec) FusedChains() (chains, nodes int) {
	for _, v := range x.vals {
		switch {
		case v.chainIns != nil:
			chains++
			nodes++
		case v.fused:
			nodes++
		}
	}
	return chains, nodes
}

// fuseChains finds the program's elementwise chains and fuses them (x.read
// must be listed).
func (x *Exec) fuseChains() {
	if x.prog.Trace {
		return
	}
	keep := map[*value]bool{} // values that must have a buffer
	for _, v := range x.read {
		keep[v] = true
	}
	for _, g := range x.prog.Grads {
		if v, ok := x.byNode[g]; ok {
			keep[v] = true
		}
	}
	readers := map[*value][]*value{} // distinct readers of each value
	for _, v := range x.vals {
		if v.kind != kindOp {
			continue
		}
		for i, in := range v.ins {
			if i > 0 && in == v.ins[i-1] {
				continue
			}
			if rs := readers[in]; len(rs) == 0 || rs[len(rs)-1] != v {
				readers[in] = append(rs, v)
			}
		}
	}
	// next[v] is the node v's chain continues with, prev its inverse;
	// fold lists the repeats read by one elementwise node alone.
	next, prev := map[*value]*value{}, map[*value]*value{}
	fold := map[*value]bool{}
	for _, v := range x.vals {
		if keep[v] || v.kind != kindOp || v.dev == nil || v.alias {
			continue
		}
		if v.rep != nil {
			// Folded into every reader, when all of them are
			// elementwise nodes of its size.
			rs := readers[v]
			fold[v] = len(rs) > 0
			for _, u := range rs {
				if !fusable(u) || u.dt != v.dt || u.size != v.size {
					fold[v] = false
				}
			}
			continue
		}
		if !fusable(v) {
			continue
		}
		// The one reader, through reshapes that have one reader each.
		rs := readers[v]
		for len(rs) == 1 && rs[0].alias && !keep[rs[0]] {
			rs = readers[rs[0]]
		}
		if len(rs) != 1 {
			continue
		}
		u := rs[0]
		if !fusable(u) || u.dt != v.dt || u.size != v.size || prev[u] != nil {
			continue
		}
		next[v], prev[u] = u, v
	}
	for _, v := range x.vals {
		if !fusable(v) || prev[v] != nil {
			continue // not the head of a chain
		}
		var c *chain
		for n := v; n != nil; n = next[n] {
			if c != nil && !c.add(n, prev[n]) {
				x.applyChain(c)
				c = nil
			}
			if c == nil {
				c = newChain(n, fold)
			}
		}
		x.applyChain(c)
	}
}

// fusable says v is an elementwise device node.
func fusable(v *value) bool {
	if v.kind != kindOp || v.ew == nil || v.dev == nil || v.alias {
		return false
	}
	if v.ew.binary {
		return len(v.ins) == 2
	}
	return len(v.ins) == 1
}

// newChain starts a chain at head, whose inputs are all external.
func newChain(head *value, fold map[*value]bool) *chain {
	c := &chain{nodes: []*value{head}, ext: []*value{head.ins[0]}, fold: fold}
	switch {
	case !head.ew.binary:
		c.steps = append(c.steps, step(stepUnary, head.ew.code, 0))
	case head.ins[1] == head.ins[0]:
		c.steps = append(c.steps, step(stepRR, head.ew.code, 0))
	default:
		c.ext = append(c.ext, head.ins[1])
		c.steps = append(c.steps, step(stepRO, head.ew.code, 1))
	}
	return c
}

// unalias returns the value whose buffer v is through reshapes.
func unalias(v *value) *value {
	for v.alias {
		v = v.ins[0]
	}
	return v
}

// add appends n, which reads the chain's last node t (directly or through
// reshapes), if the chain's limits allow; it reports whether it did.
func (c *chain) add(n, t *value) bool {
	if len(c.steps) >= chainMaxSteps || t != c.nodes[len(c.nodes)-1] {
		return false
	}
	var st int64
	var ext *value
	a, b := unalias(n.ins[0]), t
	if n.ew.binary {
		b = unalias(n.ins[1])
	}
	switch {
	case a != t && b != t:
		return false
	case !n.ew.binary:
		st = step(stepUnary, n.ew.code, 0)
	case a == t && b == t:
		st = step(stepRR, n.ew.code, 0)
	case a == t:
		ext = n.ins[1]
	default:
		ext = n.ins[0]
	}
	if ext != nil {
		k := -1
		for i, in := range c.ext {
			if in == ext {
				k = i
			}
		}
		if k < 0 {
			if len(c.ext) >= chainMaxInputs {
				return false
			}
			k = len(c.ext)
			c.ext = append(c.ext, ext)
		}
		kind := stepRO
		if a != t {
			kind = stepOR
		}
		st = step(kind, n.ew.code, k)
	}
	c.nodes = append(c.nodes, n)
	c.steps = append(c.steps, st)
	return true
}

// step encodes one step of ew_chain.
func step(kind int, code int32, operand int) int64 {
	return int64(kind) | int64(code)<<2 | int64(operand)<<7
}

// chainArg is how ew_chain reads one external input: the buffer of v, at
// i·stride, or through a folded repeat's index map.
type chainArg struct {
	v      *value
	stride int64
	rep    repeatMap // reps 0: none
}

// applyChain makes the chain's last node run the whole chain, with its
// external repeats folded, and the other nodes fused into it; a chain of
// one node without a repeat to fold stays as it is.
func (x *Exec) applyChain(c *chain) {
	last := c.nodes[len(c.nodes)-1]
	var args []chainArg
	folded := 0
	for _, e := range c.ext {
		if c.fold[e] {
			args = append(args, chainArg{v: e.ins[0], rep: *e.rep})
			folded++
			continue
		}
		stride := int64(0) // a scalar broadcast
		if e.size == last.size {
			stride = 1
		}
		args = append(args, chainArg{v: e, stride: stride})
	}
	if len(c.nodes) < 2 && folded == 0 {
		return
	}
	var p0, p1 int64
	for i, s := range c.steps {
		if i < 4 {
			p0 |= s << (16 * i)
		} else {
			p1 |= s << (16 * (i - 4))
		}
	}
	for _, n := range c.nodes[:len(c.nodes)-1] {
		n.fused = true
	}
	last.chainIns, last.inPlace = nil, nil
	for i, e := range c.ext {
		if c.fold[e] {
			e.fused = true
		}
		last.chainIns = append(last.chainIns, args[i].v)
		if args[i].stride == 1 && args[i].v.bytes == last.bytes {
			last.inPlace = append(last.inPlace, args[i].v)
		}
	}
	steps := int32(len(c.steps))
	last.dev = devFunc(func(x *Exec, v *value) error {
		la := []any{p0, p1, steps}
		for k := range chainMaxInputs {
			a := chainArg{v: args[0].v} // unused: any valid address, never read
			if k < len(args) {
				a = args[k]
			}
			la = append(la, a.v.ptr, a.stride, a.rep.din, a.rep.reps, a.rep.inner)
		}
		la = append(la, v.ptr)
		return x.launch(v, "ew_chain", int64(v.size), la...)
	})
}
