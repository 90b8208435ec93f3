package cuda

import (
	"fmt"
	"sort"
)

// The node buffers of a program share one device allocation, the arena,
// laid out by liveness over the program's execution order.
//
// Every op node runs once per Run, in program order (x.vals), on one
// in-order stream; the host fallback copies synchronously. A node's buffer
// is live from the step that writes it to the last step that reads it,
// directly or through a reshape that shares its buffer (an alias: its
// readers count as the root buffer's readers). Two buffers whose live
// ranges overlap, both ends included, never overlap in the arena; so an op's
// output shares no bytes with its own inputs, and a buffer is reused only
// once its last reader has run. The one exception is chosen, not
// accidental: an op whose kernel reads each element of an input before
// writing the same element of its output lists that input in
// value.inPlace, and when the op is the input buffer's last reader (and the
// buffer is not pinned) the output takes the buffer over. Backward needs no
// special case: the forward values the gradient ops read are read by those
// ops, later in the same program, and stay live until then.
//
// The nodes of a fused elementwise chain other than its last (fuse.go,
// value.fused) have no buffer: the last node computes them in registers,
// and its live range covers the chain's external inputs (value.reads).
//
// Pinned buffers live across the whole step and between steps: inputs and
// parameters (uploaded before the first op, kept resident with
// ExecOptions.ResidentParams), constants (uploaded once), the parameters'
// gradients (read by the device update and GradStats after Run), and every
// value Run downloads (loss, Outputs, with MachineOptions.Trace every node).
//
// Layout is the greedy-by-size assignment of TensorFlow Lite's GPU
// delegate (Pisarchyk and Lee, "Efficient Memory Management for Deep Neural
// Net Inference", 2020; tensorflow/lite/delegates/gpu/common/
// memory_management/greedy_by_size_assignment.cc): buffers in
// decreasing size (then program order), each placed at the lowest offset
// that fits in a gap between the already placed buffers whose live ranges
// overlap its own (best fit: the smallest such gap), else after the last of
// them. Offsets are multiples of planAlign, the alignment of cuMemAlloc,
// which cuBLAS and vector loads expect. The arena can exceed the largest
// total live at one step (liveBytes, a lower bound of any layout) where
// fragmentation forbids a tighter fit; MemoryPlan reports both.
//
// The fused ops' shared buffers and the ops' own scratch (reduction parts,
// row statistics, fixed scalars) are allocated while lowering, before the
// plan exists, and are handed to the closures that run the op; they stay
// separate allocations held for the executor's life, counted in
// MemoryPlan's ScratchBytes.

// planAlign is the arena offsets' alignment in bytes.
const planAlign = 256

// MemoryPlan describes how an executor laid out its device memory.
type MemoryPlan struct {
	// Planned says the node buffers share one arena laid out by liveness;
	// false with ExecOptions.NoMemoryPlan (one allocation per node).
	Planned bool
	// Buffers counts the node buffers (reshapes share their input's, and
	// so do ops written in place).
	Buffers int
	// Pinned counts those live for the whole step and between steps.
	Pinned int
	// InPlace counts the ops that write their output over an input's
	// buffer (the input's last reader; value.inPlace).
	InPlace int
	// NodeBytes is the sum of the node buffers' sizes, each rounded up to
	// 256 bytes: what one allocation per node for the whole step holds.
	NodeBytes int64
	// LiveBytes is the most node-buffer bytes live at one step: the least
	// memory any layout of these buffers needs.
	LiveBytes int64
	// ArenaBytes is the size of the planned arena (NodeBytes unplanned).
	ArenaBytes int64
	// ScratchBytes is the fused ops' shared buffers and the ops' scratch,
	// allocated while lowering (not planned).
	ScratchBytes int64
}

// MemoryPlan returns the layout of the executor's device memory. Its peak
// (ArenaBytes+ScratchBytes, also DeviceBytes before the first device
// update allocates the Adam moments) holds from construction to Close.
func (x *Exec) MemoryPlan() MemoryPlan { return x.plan }

// planBlock is one node buffer to place.
type planBlock struct {
	v           *value
	size        int64 // bytes rounded up to planAlign
	first, last int   // live steps, both ends included; -1 = before the first op
	off         int64
}

// planMemory lays out the node buffers of x.vals (aliases resolved,
// x.read listed) and returns the blocks with their offsets and the plan's
// figures; it allocates nothing.
func (x *Exec) planMemory() ([]*planBlock, MemoryPlan, error) {
	n := len(x.vals)
	for _, v := range x.vals {
		v.shares = nil
	}
	root := blockOwner
	blocks := map[*value]*planBlock{}
	var order []*planBlock
	for i, v := range x.vals {
		if v.alias || v.fused {
			continue
		}
		b := &planBlock{v: v, size: alignUp(v.bytes), first: i, last: i}
		if v.kind != kindOp {
			b.first = -1 // uploaded before the first op
		}
		blocks[v] = b
		order = append(order, b)
	}
	for i, v := range x.vals {
		if v.kind != kindOp || v.alias || v.fused {
			continue
		}
		for _, in := range v.reads() {
			b, ok := blocks[root(in)]
			if !ok {
				return nil, MemoryPlan{}, fmt.Errorf("cuda: executor: memory plan: node %q reads a value outside the program", v.n.Name())
			}
			if i > b.last {
				b.last = i
			}
		}
	}
	pin := func(v *value) {
		b := blocks[root(v)]
		b.first, b.last = -1, n
	}
	for _, v := range x.vals {
		if v.kind != kindOp || x.prog.Trace {
			pin(v)
		}
	}
	for _, v := range x.read {
		pin(v)
	}
	for _, g := range x.prog.Grads {
		v, ok := x.byNode[g]
		if !ok {
			return nil, MemoryPlan{}, fmt.Errorf("cuda: executor: gradient node %q is not in the program", g.Name())
		}
		pin(v)
	}
	mp := MemoryPlan{Planned: true}
	for _, b := range order {
		mp.NodeBytes += b.size
	}
	// In place: an op that may overwrite an input (value.inPlace) takes
	// over that input's block when it is the block's last reader and the
	// block holds nothing else that must live on; the block then lives as
	// long as the op's output.
	for i, v := range x.vals {
		vb := blocks[v]
		if len(v.inPlace) == 0 || v.alias || v.kind != kindOp || v.dev == nil || vb == nil {
			continue
		}
		for _, in := range v.inPlace {
			owner := blockOwner(in)
			ib := blocks[owner]
			if ib == nil || ib.last != i || ib.first == -1 || owner.bytes != v.bytes || in.bytes != v.bytes {
				continue
			}
			ib.last = vb.last
			if vb.first == -1 {
				ib.first = -1
			}
			delete(blocks, v)
			v.shares = owner
			mp.InPlace++
			break
		}
	}
	order = order[:0]
	for _, v := range x.vals {
		if b, ok := blocks[v]; ok && !v.alias {
			order = append(order, b)
		}
	}
	mp.Buffers = len(order)
	for _, b := range order {
		if b.first == -1 && b.last == n {
			mp.Pinned++
		}
	}
	mp.LiveBytes = liveBytes(order, n)
	mp.ArenaBytes = packGreedy(order)
	return order, mp, nil
}

// blockOwner returns the value whose planned block holds v's bytes: v's
// own, its input's through reshapes (aliases) and ops written in place.
func blockOwner(v *value) *value {
	for {
		switch {
		case v.alias:
			v = v.ins[0]
		case v.shares != nil:
			v = v.shares
		default:
			return v
		}
	}
}

// alignUp rounds bytes up to a positive multiple of planAlign.
func alignUp(bytes int64) int64 {
	if bytes <= 0 {
		return planAlign
	}
	return (bytes + planAlign - 1) / planAlign * planAlign
}

// liveBytes returns the most bytes of blocks live at one step of -1..n.
func liveBytes(blocks []*planBlock, n int) int64 {
	delta := make([]int64, n+3) // step s at index s+1
	for _, b := range blocks {
		delta[b.first+1] += b.size
		delta[b.last+2] -= b.size
	}
	var cur, most int64
	for _, d := range delta {
		cur += d
		most = max(most, cur)
	}
	return most
}

// packGreedy sets the blocks' offsets (greedy by size, best fit) and
// returns the arena size.
func packGreedy(blocks []*planBlock) int64 {
	bySize := append([]*planBlock(nil), blocks...)
	sort.SliceStable(bySize, func(i, j int) bool {
		if bySize[i].size != bySize[j].size {
			return bySize[i].size > bySize[j].size
		}
		return bySize[i].first < bySize[j].first
	})
	var placed, overlap []*planBlock
	var arena int64
	for _, b := range bySize {
		overlap = overlap[:0]
		for _, p := range placed {
			if p.first <= b.last && b.first <= p.last {
				overlap = append(overlap, p)
			}
		}
		sort.Slice(overlap, func(i, j int) bool { return overlap[i].off < overlap[j].off })
		best, bestGap := int64(-1), int64(-1)
		var end int64 // end of the placed blocks below the candidate gap
		for _, p := range overlap {
			if gap := p.off - end; gap >= b.size && (bestGap < 0 || gap < bestGap) {
				best, bestGap = end, gap
			}
			end = max(end, p.off+p.size)
		}
		if best < 0 {
			best = end
		}
		b.off = best
		arena = max(arena, b.off+b.size)
		placed = append(placed, b)
	}
	return arena
}

// allocPlanned allocates the arena and points every node buffer into it
// (aliases at their input's); it records the plan in x.plan.
func (x *Exec) allocPlanned() error {
	blocks, mp, err := x.planMemory()
	if err != nil {
		return err
	}
	mp.ScratchBytes = x.bytes
	base, err := x.alloc(mp.ArenaBytes)
	if err != nil {
		return fmt.Errorf("cuda: executor: arena of %d bytes for %d node buffers: %w", mp.ArenaBytes, mp.Buffers, err)
	}
	for _, b := range blocks {
		b.v.ptr = base + Ptr(b.off)
	}
	for _, v := range x.vals {
		switch {
		case v.alias:
			v.ptr = v.ins[0].ptr
		case v.shares != nil:
			v.ptr = v.shares.ptr
		}
	}
	x.plan = mp
	return nil
}

// allocUnplanned gives every node its own allocation for the executor's
// life (ExecOptions.NoMemoryPlan); it records the figures in x.plan.
func (x *Exec) allocUnplanned() error {
	mp := MemoryPlan{ScratchBytes: x.bytes}
	for _, v := range x.vals {
		if v.alias {
			v.ptr = v.ins[0].ptr
			continue
		}
		if v.fused {
			continue
		}
		var err error
		if v.ptr, err = x.alloc(v.bytes); err != nil {
			return fmt.Errorf("cuda: executor: node %q: %w", v.n.Name(), err)
		}
		mp.Buffers++
		mp.NodeBytes += alignUp(v.bytes)
	}
	mp.ArenaBytes, mp.LiveBytes = mp.NodeBytes, mp.NodeBytes
	x.plan = mp
	return nil
}
