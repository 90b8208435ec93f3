package ops

import (
	"runtime"
	"sync"
	"weak"

	G "gorgonia.org/gorgonia"
)

// data records the nodes marked by MarkData, weakly: an entry goes when its
// node is collected.
var data = struct {
	sync.Mutex
	m map[weak.Pointer[G.Node]]struct{}
}{m: map[weak.Pointer[G.Node]]struct{}{}}

// MarkData declares nodes as data: minibatch inputs and constants, which no
// gradient is taken with respect to. Gorgonia's backward pass asks every op
// on the path from the parameters to the loss for the gradients of all its
// inputs and computes them all, read or not (a matrix product of a one-hot
// label matrix and W_e also computes the gradient of the label matrix);
// gdattn's ops (MatMul, ConcatLast, KernelWeights)
// skip the gradient of an input that IsData reports.
//
// Marking a node that depends on parameters would drop their gradients
// through it: mark only inputs and constants.
func MarkData(nodes ...*G.Node) {
	data.Lock()
	defer data.Unlock()
	for _, n := range nodes {
		if n == nil {
			continue
		}
		wp := weak.Make(n)
		if _, ok := data.m[wp]; ok {
			continue
		}
		data.m[wp] = struct{}{}
		runtime.AddCleanup(n, func(wp weak.Pointer[G.Node]) {
			data.Lock()
			delete(data.m, wp)
			data.Unlock()
		}, wp)
	}
}

// IsData reports whether n is data: marked by MarkData, a constant, or
// computed by an op from data alone.
func IsData(n *G.Node) bool {
	if n == nil {
		return false
	}
	data.Lock()
	_, ok := data.m[weak.Make(n)]
	data.Unlock()
	if ok {
		return true
	}
	if n.Op() == nil {
		return false // a parameter or an unmarked input
	}
	g := n.Graph()
	if g == nil {
		return true // a free constant, not yet in a graph
	}
	// A constant (an op without inputs) is data; an op's result is data
	// when all its inputs are.
	it := g.From(n.ID())
	for it.Next() {
		c, ok := it.Node().(*G.Node)
		if !ok || !IsData(c) {
			return false
		}
	}
	return true
}
