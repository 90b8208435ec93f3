package graph

import (
	"fmt"
	"runtime"
)

// Recover turns a panic carrying an error (as raised by G.Must inside a
// Forward body) into *err, so that graph-building code may chain G.Must calls
// and still return an error to its caller. Runtime errors (nil dereferences,
// index out of range) and non-error panics are programmer bugs and are
// re-panicked. Use it as the first deferred call:
//
//	func (l *Layer) Forward(x *G.Node) (out *G.Node, err error) {
//		defer graph.Recover(&err)
//		...
//	}
func Recover(err *error) {
	r := recover()
	if r == nil {
		return
	}
	if _, ok := r.(runtime.Error); ok {
		panic(r)
	}
	if e, ok := r.(error); ok {
		*err = e
		return
	}
	panic(fmt.Sprintf("%v", r))
}
