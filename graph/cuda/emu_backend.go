//go:build cudaemu

package cuda

/*
#cgo CFLAGS: -std=gnu11 -O2
#cgo LDFLAGS: -lm
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <math.h>

int gdattn_emu_dispatch(int k, void **a);

// gdattn_emu_launch points a[i] at slot i and dispatches kernel k.
static int gdattn_emu_launch(int k, uint64_t *slots, int nargs) {
	void *a[64];
	for (int i = 0; i < nargs && i < 64; i++) a[i] = &slots[i];
	return gdattn_emu_dispatch(k, a);
}
*/
import "C"

import (
	"fmt"
	"sort"
	"sync"
	"unsafe"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
	"gorgonia.org/tensor"
)

// libmExp and libmLog are the C library's exp and log, which the emulated
// kernels call: tests that evaluate a kernel's order in Go use them to
// compare with the emulator bit for bit.
func libmExp(x float64) float64 { return float64(C.exp(C.double(x))) }
func libmLog(x float64) float64 { return float64(C.log(C.double(x))) }

// emuPoison is the byte fresh emulator allocations are filled with: every
// float32 and float64 made of it is a NaN, so code that reads memory it never
// wrote shows up in the results.
const emuPoison = 0xFF

// emuAlloc is one live allocation of the emulator.
type emuAlloc struct {
	base  Ptr
	size  int64
	mem   unsafe.Pointer // from C.malloc: never moves
	bytes []byte         // the same memory as a Go slice
}

// emulator is the Backend of OpenEmulator.
type emulator struct {
	mu     sync.Mutex
	allocs []*emuAlloc // sorted by base
	slots  *[maxArgs]uint64
	closed bool
}

// OpenEmulator returns a Backend that runs on the CPU: memory is C heap
// memory, kernels are the kernels/*.cu sources compiled as C (kernels/emu.h)
// and run as one serial thread per launch, and Gemm is gonum's BLAS. It checks
// more than a GPU does: every pointer argument must lie in a live allocation,
// every copy and Gemm operand must fit inside one, and fresh allocations are
// filled with NaNs. It exists so that the executor and the kernels' arithmetic
// are tested without a GPU; it is slow.
func OpenEmulator() (Backend, error) {
	slots := (*[maxArgs]uint64)(C.calloc(maxArgs, 8))
	if slots == nil {
		return nil, fmt.Errorf("cuda: emulator: out of memory")
	}
	return &emulator{slots: slots}, nil
}

func (e *emulator) Name() string { return "emulator (CPU, serial kernels, gonum BLAS)" }

func (e *emulator) Alloc(bytes int64) (Ptr, error) {
	if bytes <= 0 {
		return 0, fmt.Errorf("cuda: Alloc(%d): size must be positive", bytes)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return 0, errClosed
	}
	mem := C.malloc(C.size_t(bytes))
	if mem == nil {
		return 0, fmt.Errorf("cuda: emulator: Alloc(%d): out of memory", bytes)
	}
	a := &emuAlloc{base: Ptr(uintptr(mem)), size: bytes, mem: mem, bytes: unsafe.Slice((*byte)(mem), bytes)}
	for i := range a.bytes {
		a.bytes[i] = emuPoison
	}
	i := sort.Search(len(e.allocs), func(i int) bool { return e.allocs[i].base > a.base })
	e.allocs = append(e.allocs, nil)
	copy(e.allocs[i+1:], e.allocs[i:])
	e.allocs[i] = a
	return a.base, nil
}

func (e *emulator) Free(p Ptr) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errClosed
	}
	i := sort.Search(len(e.allocs), func(i int) bool { return e.allocs[i].base >= p })
	if i == len(e.allocs) || e.allocs[i].base != p {
		return fmt.Errorf("cuda: Free(%#x): not the start of a live allocation", uintptr(p))
	}
	C.free(e.allocs[i].mem)
	e.allocs = append(e.allocs[:i], e.allocs[i+1:]...)
	return nil
}

// find returns the allocation holding [p, p+n) (p may be one past the end
// when n is 0) and the offset of p in it. Callers hold e.mu.
func (e *emulator) find(p Ptr, n int64) (*emuAlloc, int64, error) {
	i := sort.Search(len(e.allocs), func(i int) bool { return e.allocs[i].base > p }) - 1
	if i < 0 {
		return nil, 0, fmt.Errorf("address %#x is not in any live allocation", uintptr(p))
	}
	a := e.allocs[i]
	off := int64(p - a.base)
	if off > a.size || n < 0 || n > a.size-off {
		return nil, 0, fmt.Errorf("[%#x, +%d bytes) is not inside one live allocation (nearest: %#x, %d bytes)",
			uintptr(p), n, uintptr(a.base), a.size)
	}
	return a, off, nil
}

// span returns the n bytes at device address p as a Go slice.
func (e *emulator) span(p Ptr, n int64) ([]byte, error) {
	a, off, err := e.find(p, n)
	if err != nil {
		return nil, err
	}
	return a.bytes[off : off+n : off+n], nil
}

func (e *emulator) CopyHtoD(dst Ptr, src unsafe.Pointer, bytes int64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.usable(bytes); err != nil || bytes == 0 {
		return err
	}
	d, err := e.span(dst, bytes)
	if err != nil {
		return fmt.Errorf("cuda: CopyHtoD: %w", err)
	}
	copy(d, unsafe.Slice((*byte)(src), bytes))
	return nil
}

func (e *emulator) CopyDtoH(dst unsafe.Pointer, src Ptr, bytes int64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.usable(bytes); err != nil || bytes == 0 {
		return err
	}
	s, err := e.span(src, bytes)
	if err != nil {
		return fmt.Errorf("cuda: CopyDtoH: %w", err)
	}
	copy(unsafe.Slice((*byte)(dst), bytes), s)
	return nil
}

func (e *emulator) CopyDtoD(dst, src Ptr, bytes int64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.usable(bytes); err != nil || bytes == 0 {
		return err
	}
	d, err := e.span(dst, bytes)
	if err != nil {
		return fmt.Errorf("cuda: CopyDtoD: destination: %w", err)
	}
	s, err := e.span(src, bytes)
	if err != nil {
		return fmt.Errorf("cuda: CopyDtoD: source: %w", err)
	}
	copy(d, s)
	return nil
}

func (e *emulator) Zero(p Ptr, bytes int64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.usable(bytes); err != nil || bytes == 0 {
		return err
	}
	d, err := e.span(p, bytes)
	if err != nil {
		return fmt.Errorf("cuda: Zero: %w", err)
	}
	clear(d)
	return nil
}

// usable reports a closed emulator or a negative size. Callers hold e.mu.
func (e *emulator) usable(bytes int64) error {
	if e.closed {
		return errClosed
	}
	if bytes < 0 {
		return fmt.Errorf("cuda: negative byte count %d", bytes)
	}
	return nil
}

func (e *emulator) Launch(name string, n int64, args ...any) error {
	idx, err := lookupKernel(name)
	if err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("cuda: Launch %s: negative work-item count %d", name, n)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errClosed
	}
	k := &kernelTable[idx]
	check := func(p Ptr) error {
		_, _, err := e.find(p, 0)
		return err
	}
	if err := packArgs(k, args, e.slots[:], check); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	if rc := C.gdattn_emu_launch(C.int(idx), (*C.uint64_t)(unsafe.Pointer(e.slots)), C.int(len(args))); rc != 0 {
		return fmt.Errorf("cuda: emulator: kernel %s (index %d) missing from emu_kernels.c: run go generate ./graph/cuda", name, idx)
	}
	return nil
}

func (e *emulator) Gemm(dt tensor.Dtype, transA, transB bool, m, n, k int, alpha float64,
	a Ptr, lda int, sA int64, b Ptr, ldb int, sB int64,
	beta float64, c Ptr, ldc int, sC int64, batch int) error {
	g, err := checkGemm(dt, transA, transB, m, n, k, alpha, a, lda, sA, b, ldb, sB, beta, c, ldc, sC, batch)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errClosed
	}
	if g.noop {
		return nil
	}
	cb, err := e.span(c, g.cSpan)
	if err != nil {
		return fmt.Errorf("cuda: Gemm: C: %w", err)
	}
	var ab, bb []byte
	if !g.onlyScale {
		if ab, err = e.span(a, g.aSpan); err != nil {
			return fmt.Errorf("cuda: Gemm: A: %w", err)
		}
		if bb, err = e.span(b, g.bSpan); err != nil {
			return fmt.Errorf("cuda: Gemm: B: %w", err)
		}
	}
	tA, tB := blas.NoTrans, blas.NoTrans
	if transA {
		tA = blas.Trans
	}
	if transB {
		tB = blas.Trans
	}
	cLen := (m-1)*ldc + n
	aLen := (g.aRows-1)*lda + g.aCols
	bLen := (g.bRows-1)*ldb + g.bCols
	var impl gonum.Implementation
	for i := 0; i < batch; i++ {
		if dt == tensor.Float32 {
			cs := f32s(cb)[int64(i)*sC:][:cLen]
			if g.onlyScale {
				scaleRows32(cs, m, n, ldc, float32(beta))
				continue
			}
			impl.Sgemm(tA, tB, m, n, k, float32(alpha),
				f32s(ab)[int64(i)*sA:][:aLen], lda, f32s(bb)[int64(i)*sB:][:bLen], ldb,
				float32(beta), cs, ldc)
			continue
		}
		cs := f64s(cb)[int64(i)*sC:][:cLen]
		if g.onlyScale {
			scaleRows64(cs, m, n, ldc, beta)
			continue
		}
		impl.Dgemm(tA, tB, m, n, k, alpha,
			f64s(ab)[int64(i)*sA:][:aLen], lda, f64s(bb)[int64(i)*sB:][:bLen], ldb,
			beta, cs, ldc)
	}
	return nil
}

// scaleRows32 sets the m×n matrix c (row stride ldc) to beta·c; beta == 0
// writes zeros even over NaNs, as BLAS does.
func scaleRows32(c []float32, m, n, ldc int, beta float32) {
	for r := 0; r < m; r++ {
		row := c[r*ldc : r*ldc+n]
		for j := range row {
			if beta == 0 {
				row[j] = 0
			} else {
				row[j] *= beta
			}
		}
	}
}

// scaleRows64 is scaleRows32 for float64.
func scaleRows64(c []float64, m, n, ldc int, beta float64) {
	for r := 0; r < m; r++ {
		row := c[r*ldc : r*ldc+n]
		for j := range row {
			if beta == 0 {
				row[j] = 0
			} else {
				row[j] *= beta
			}
		}
	}
}

// f32s views b (C memory, 4-aligned) as float32s.
func f32s(b []byte) []float32 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// f64s views b (C memory, 8-aligned) as float64s.
func f64s(b []byte) []float64 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*float64)(unsafe.Pointer(&b[0])), len(b)/8)
}

func (e *emulator) Sync() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errClosed
	}
	return nil
}

func (e *emulator) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	for _, a := range e.allocs {
		C.free(a.mem)
	}
	e.allocs = nil
	C.free(unsafe.Pointer(e.slots))
	e.slots = nil
	e.closed = true
	return nil
}
