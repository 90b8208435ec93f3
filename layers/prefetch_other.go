//go:build !amd64

package layers

import "unsafe"

// prefetchSpan does nothing where there is no prefetch instruction in use.
func prefetchSpan(p unsafe.Pointer, n int) {}
