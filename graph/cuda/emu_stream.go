//go:build cudaemu

package cuda

import (
	"errors"
	"fmt"
	"slices"
	"unsafe"

	"gorgonia.org/tensor"
)

// emuStream is a stream of the emulator (NewStream): work runs at once, as
// on the emulator itself, except while capturing, when Launch, Gemm, Zero
// and CopyDtoD are checked and recorded, and LaunchGraph replays the
// recording in order. It emulates CUDA graph capture so that the
// executor's capture path is tested without a GPU.
type emuStream struct {
	*emulator
	capturing bool
	failed    error // first error while capturing
	rec       []func() error
	graph     []func() error
	hasGraph  bool
	closed    bool
}

// NewStream returns a stream of the emulator (see streamer).
func (e *emulator) NewStream() (Backend, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, errClosed
	}
	return &emuStream{emulator: e}, nil
}

func (s *emuStream) usableStream() error {
	if s.closed {
		return errors.New("cuda: emulator stream is closed")
	}
	return nil
}

// record checks and records one call while capturing; it returns false
// when not capturing (the caller runs the call).
func (s *emuStream) record(check func() error, run func() error) (bool, error) {
	if !s.capturing {
		return false, nil
	}
	if err := check(); err != nil {
		if s.failed == nil {
			s.failed = err
		}
		return true, err
	}
	s.rec = append(s.rec, run)
	return true, nil
}

// refuse is the error of a call that cannot be captured.
func (s *emuStream) refuse(call string) error {
	err := fmt.Errorf("cuda: %s while the stream is capturing", call)
	if s.failed == nil {
		s.failed = err
	}
	return err
}

func (s *emuStream) Launch(name string, n int64, args ...any) error {
	if err := s.usableStream(); err != nil {
		return err
	}
	args = slices.Clone(args)
	done, err := s.record(func() error {
		idx, err := lookupKernel(name)
		if err != nil {
			return err
		}
		if n < 0 {
			return fmt.Errorf("cuda: Launch %s: negative work-item count %d", name, n)
		}
		var slots [maxArgs]uint64
		s.mu.Lock()
		defer s.mu.Unlock()
		return packArgs(&kernelTable[idx], args, slots[:], func(p Ptr) error {
			_, _, err := s.find(p, 0)
			return err
		})
	}, func() error { return s.emulator.Launch(name, n, args...) })
	if done {
		return err
	}
	return s.emulator.Launch(name, n, args...)
}

func (s *emuStream) Gemm(dt tensor.Dtype, transA, transB bool, m, n, k int, alpha float64,
	a Ptr, lda int, sA int64, b Ptr, ldb int, sB int64,
	beta float64, c Ptr, ldc int, sC int64, batch int) error {
	if err := s.usableStream(); err != nil {
		return err
	}
	run := func() error {
		return s.emulator.Gemm(dt, transA, transB, m, n, k, alpha, a, lda, sA, b, ldb, sB, beta, c, ldc, sC, batch)
	}
	done, err := s.record(func() error {
		_, err := checkGemm(dt, transA, transB, m, n, k, alpha, a, lda, sA, b, ldb, sB, beta, c, ldc, sC, batch)
		return err
	}, run)
	if done {
		return err
	}
	return run()
}

func (s *emuStream) Zero(p Ptr, bytes int64) error {
	if err := s.usableStream(); err != nil {
		return err
	}
	run := func() error { return s.emulator.Zero(p, bytes) }
	done, err := s.record(func() error { return s.checkSpan(p, bytes) }, run)
	if done {
		return err
	}
	return run()
}

func (s *emuStream) CopyDtoD(dst, src Ptr, bytes int64) error {
	if err := s.usableStream(); err != nil {
		return err
	}
	run := func() error { return s.emulator.CopyDtoD(dst, src, bytes) }
	done, err := s.record(func() error {
		if err := s.checkSpan(dst, bytes); err != nil {
			return err
		}
		return s.checkSpan(src, bytes)
	}, run)
	if done {
		return err
	}
	return run()
}

// checkSpan checks that [p, p+bytes) lies in one live allocation.
func (s *emuStream) checkSpan(p Ptr, bytes int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(bytes); err != nil || bytes == 0 {
		return err
	}
	_, err := s.span(p, bytes)
	return err
}

func (s *emuStream) CopyHtoD(dst Ptr, src unsafe.Pointer, bytes int64) error {
	if err := s.usableStream(); err != nil {
		return err
	}
	if s.capturing {
		return s.refuse("CopyHtoD")
	}
	return s.emulator.CopyHtoD(dst, src, bytes)
}

func (s *emuStream) CopyDtoH(dst unsafe.Pointer, src Ptr, bytes int64) error {
	if err := s.usableStream(); err != nil {
		return err
	}
	if s.capturing {
		return s.refuse("CopyDtoH")
	}
	return s.emulator.CopyDtoH(dst, src, bytes)
}

func (s *emuStream) Sync() error {
	if err := s.usableStream(); err != nil {
		return err
	}
	if s.capturing {
		return s.refuse("Sync")
	}
	return s.emulator.Sync()
}

// CanCapture reports whether the stream can capture: the emulator always
// can.
func (s *emuStream) CanCapture() error { return s.usableStream() }

func (s *emuStream) BeginCapture() error {
	if err := s.usableStream(); err != nil {
		return err
	}
	if s.capturing {
		return errors.New("cuda: BeginCapture: the stream is already capturing")
	}
	s.capturing, s.failed, s.rec = true, nil, nil
	return nil
}

func (s *emuStream) EndCapture() error {
	if err := s.usableStream(); err != nil {
		return err
	}
	if !s.capturing {
		return errors.New("cuda: EndCapture: the stream is not capturing")
	}
	s.capturing = false
	rec, failed := s.rec, s.failed
	s.rec, s.failed = nil, nil
	if failed != nil {
		return fmt.Errorf("cuda: capture failed: %w", failed)
	}
	s.graph, s.hasGraph = rec, true
	return nil
}

func (s *emuStream) LaunchGraph() error {
	if err := s.usableStream(); err != nil {
		return err
	}
	if s.capturing {
		return s.refuse("LaunchGraph")
	}
	if !s.hasGraph {
		return errors.New("cuda: LaunchGraph: no graph captured")
	}
	for _, f := range s.graph {
		if err := f(); err != nil {
			return fmt.Errorf("cuda: graph replay: %w", err)
		}
	}
	return nil
}

func (s *emuStream) DropGraph() error {
	s.graph, s.hasGraph = nil, false
	return nil
}

// Close releases the stream (not the emulator).
func (s *emuStream) Close() error {
	s.closed = true
	s.graph, s.rec, s.hasGraph, s.capturing = nil, nil, false, false
	return nil
}
