//go:build !cudaemu && !gdcuda

package cuda

import (
	"errors"
	"fmt"
	"testing"
	"unsafe"

	"gorgonia.org/tensor"
)

// execBackend returns the backend the executor tests run on without a
// device or the emulator: hostMem, plain Go memory without kernels, so only
// the CPU fallback path (ExecOptions.HostOnly) is exercised.
func execBackend(t testing.TB) (Backend, bool) {
	t.Helper()
	return &hostMem{bufs: map[Ptr][]byte{}}, false
}

// hostMem is a Backend over Go memory that has no kernels and no Gemm: it
// tests the executor's memory handling and its fallback path.
type hostMem struct {
	bufs map[Ptr][]byte
}

func (h *hostMem) Name() string { return "host memory (test)" }

func (h *hostMem) Alloc(bytes int64) (Ptr, error) {
	b := make([]byte, bytes)
	p := Ptr(uintptr(unsafe.Pointer(&b[0])))
	h.bufs[p] = b
	return p, nil
}

// span returns the n bytes at p, which must lie inside one allocation (p
// may point into it, as the executor's arena offsets do).
func (h *hostMem) span(p Ptr, n int64) ([]byte, error) {
	for base, b := range h.bufs {
		if p >= base && int64(p-base)+n <= int64(len(b)) {
			return b[p-base:][:n], nil
		}
	}
	return nil, fmt.Errorf("hostMem: bad pointer %#x or size %d", p, n)
}

func (h *hostMem) Free(p Ptr) error {
	if _, ok := h.bufs[p]; !ok {
		return errors.New("hostMem: double free")
	}
	delete(h.bufs, p)
	return nil
}

func (h *hostMem) CopyHtoD(dst Ptr, src unsafe.Pointer, bytes int64) error {
	d, err := h.span(dst, bytes)
	if err != nil {
		return err
	}
	copy(d, unsafe.Slice((*byte)(src), bytes))
	return nil
}

func (h *hostMem) CopyDtoH(dst unsafe.Pointer, src Ptr, bytes int64) error {
	s, err := h.span(src, bytes)
	if err != nil {
		return err
	}
	copy(unsafe.Slice((*byte)(dst), bytes), s)
	return nil
}

func (h *hostMem) CopyDtoD(dst, src Ptr, bytes int64) error {
	d, err := h.span(dst, bytes)
	if err != nil {
		return err
	}
	s, err := h.span(src, bytes)
	if err != nil {
		return err
	}
	copy(d, s)
	return nil
}

func (h *hostMem) Zero(p Ptr, bytes int64) error {
	d, err := h.span(p, bytes)
	if err != nil {
		return err
	}
	clear(d)
	return nil
}

func (h *hostMem) Launch(name string, n int64, args ...any) error {
	return fmt.Errorf("hostMem: no kernels (launch of %s)", name)
}

func (h *hostMem) Gemm(dt tensor.Dtype, transA, transB bool, m, n, k int, alpha float64,
	a Ptr, lda int, sA int64, b Ptr, ldb int, sB int64,
	beta float64, c Ptr, ldc int, sC int64, batch int) error {
	return errors.New("hostMem: no Gemm")
}

func (h *hostMem) Sync() error  { return nil }
func (h *hostMem) Close() error { return nil }
