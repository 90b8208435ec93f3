//go:build amd64 && !purego

package train

// finiteRun32 returns the length of the leading run of 32-element blocks
// of x[:n] that hold only finite values (AVX2; a multiple of 32): the
// scan firstNonFinite resumes from.
//
//go:noescape
func finiteRun32(x *float32, n int) int

// maxAbsBits32 returns the largest sign-cleared bit pattern of the first
// n rounded down to a multiple of 32 elements of x (0 if none): AVX2, for
// maxAbs32.
//
//go:noescape
func maxAbsBits32(x *float32, n int) uint32
