//go:build gdcuda || cudaemu

package cuda

// The launch and Gemm checks shared by the two device builds: the CUDA
// driver (driver_cuda.go, -tags gdcuda) and the CPU emulator
// (emu_backend.go, -tags cudaemu). A build without either has no device
// and needs none of this.

import (
	"errors"
	"fmt"
	"math"

	"gorgonia.org/tensor"
)

// packArgs checks args against the parameters of kernel k and writes each
// value's bytes into the low end of its 8-byte slot (little-endian), the
// layout both the emulator dispatcher and cuLaunchKernel read. check, if not
// nil, validates pointer arguments.
func packArgs(k *kernelSig, args []any, slots []uint64, check func(Ptr) error) error {
	if len(args) != len(k.params) {
		return fmt.Errorf("cuda: kernel %s(%s) takes %d arguments, got %d", k.name, sigString(k), len(k.params), len(args))
	}
	if len(args) > len(slots) {
		return fmt.Errorf("cuda: kernel %s has %d parameters, more than the %d supported", k.name, len(args), len(slots))
	}
	for i, a := range args {
		p := k.params[i]
		bad := func() error {
			return fmt.Errorf("cuda: kernel %s argument %d (%s %s): want %v, got %T", k.name, i, p.ctype, p.name, p.kind, a)
		}
		switch p.kind {
		case argPtr:
			v, ok := a.(Ptr)
			if !ok {
				return bad()
			}
			if check != nil {
				if err := check(v); err != nil {
					return fmt.Errorf("cuda: kernel %s argument %d (%s): %w", k.name, i, p.name, err)
				}
			}
			slots[i] = uint64(v)
		case argInt32:
			switch v := a.(type) {
			case int32:
				slots[i] = uint64(uint32(v))
			case int:
				if v < math.MinInt32 || v > math.MaxInt32 {
					return fmt.Errorf("cuda: kernel %s argument %d (int %s): %d overflows int32", k.name, i, p.name, v)
				}
				slots[i] = uint64(uint32(int32(v)))
			default:
				return bad()
			}
		case argInt64:
			switch v := a.(type) {
			case int64:
				slots[i] = uint64(v)
			case int:
				slots[i] = uint64(int64(v))
			default:
				return bad()
			}
		case argFloat32:
			v, ok := a.(float32)
			if !ok {
				return bad()
			}
			slots[i] = uint64(math.Float32bits(v))
		case argFloat64:
			v, ok := a.(float64)
			if !ok {
				return bad()
			}
			slots[i] = math.Float64bits(v)
		default:
			return fmt.Errorf("cuda: kernel %s: parameter %d has unknown kind %v", k.name, i, p.kind)
		}
	}
	return nil
}

func sigString(k *kernelSig) string {
	s, _ := KernelSignature(k.name)
	return s
}

// maxArgs is the number of argument slots a launch may use.
const maxArgs = 64

// threadsPerBlock is the block size of every launch; kernels are grid-stride
// loops, so any grid size is correct.
const threadsPerBlock = 256

// maxBlocks caps the grid (the largest gridDim.y/z and the old gridDim.x
// limit); a grid-stride loop covers the rest.
const maxBlocks = 65535

// gemmShape is a validated Gemm request.
type gemmShape struct {
	dt             tensor.Dtype
	elem           int64 // element size in bytes
	transA, transB bool
	m, n, k        int
	alpha, beta    float64
	a, b, c        Ptr
	lda, ldb, ldc  int
	sA, sB, sC     int64
	batch          int
	aRows, aCols   int   // stored A (before op)
	bRows, bCols   int   // stored B (before op)
	aSpan, bSpan   int64 // bytes from an operand's first element to one past its last, over all batches
	cSpan          int64
	noop           bool // nothing to compute: m, n or batch is 0
	onlyScale      bool // k == 0: C = beta·C
}

// checkGemm validates the arguments of Backend.Gemm and computes the memory
// each operand spans.
func checkGemm(dt tensor.Dtype, transA, transB bool, m, n, k int, alpha float64,
	a Ptr, lda int, sA int64, b Ptr, ldb int, sB int64,
	beta float64, c Ptr, ldc int, sC int64, batch int) (gemmShape, error) {
	g := gemmShape{dt: dt, transA: transA, transB: transB, m: m, n: n, k: k, alpha: alpha,
		a: a, lda: lda, sA: sA, b: b, ldb: ldb, sB: sB, beta: beta, c: c, ldc: ldc, sC: sC, batch: batch}
	switch dt {
	case tensor.Float32:
		g.elem = 4
	case tensor.Float64:
		g.elem = 8
	default:
		return g, fmt.Errorf("cuda: Gemm: dtype %v is not float32 or float64", dt)
	}
	if m < 0 || n < 0 || k < 0 || batch < 0 {
		return g, fmt.Errorf("cuda: Gemm: negative size m=%d n=%d k=%d batch=%d", m, n, k, batch)
	}
	for _, v := range []int{m, n, k, lda, ldb, ldc, batch} {
		if v > math.MaxInt32 {
			return g, fmt.Errorf("cuda: Gemm: size %d overflows int32", v)
		}
	}
	if sA < 0 || sB < 0 || sC < 0 {
		return g, fmt.Errorf("cuda: Gemm: negative batch stride sA=%d sB=%d sC=%d", sA, sB, sC)
	}
	g.aRows, g.aCols = m, k
	if transA {
		g.aRows, g.aCols = k, m
	}
	g.bRows, g.bCols = k, n
	if transB {
		g.bRows, g.bCols = n, k
	}
	if lda < max(1, g.aCols) || ldb < max(1, g.bCols) || ldc < max(1, n) {
		return g, fmt.Errorf("cuda: Gemm: leading dimension too small: lda=%d (need ≥ %d), ldb=%d (need ≥ %d), ldc=%d (need ≥ %d)",
			lda, max(1, g.aCols), ldb, max(1, g.bCols), ldc, max(1, n))
	}
	if m == 0 || n == 0 || batch == 0 {
		g.noop = true
		return g, nil
	}
	g.onlyScale = k == 0
	span := func(rows, cols, ld int, stride int64) int64 {
		if rows == 0 || cols == 0 {
			return 0
		}
		return (int64(batch-1)*stride + int64(rows-1)*int64(ld) + int64(cols)) * g.elem
	}
	g.aSpan = span(g.aRows, g.aCols, lda, sA)
	g.bSpan = span(g.bRows, g.bCols, ldb, sB)
	g.cSpan = span(m, n, ldc, sC)
	if batch > 1 && sC < int64(m-1)*int64(ldc)+int64(n) {
		return g, fmt.Errorf("cuda: Gemm: batch stride sC=%d makes the %d output matrices overlap", sC, batch)
	}
	return g, nil
}

// errClosed is returned by every method of a closed Backend except Close.
var errClosed = errors.New("cuda: backend is closed")
