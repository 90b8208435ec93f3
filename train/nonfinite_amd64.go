//go:build amd64 && !purego

package train

// finiteRun32 returns the length of the leading run of 32-element blocks
// of x[:n] that hold only finite values (AVX2; a multiple of 32): the
// scan firstNonFinite resumes from.
//
//go:noescape
func finiteRun32(x *float32, n int) int
