package cuda

import (
	"fmt"
	"runtime"
)

// graphState is the executor's ExecOptions.GraphCapture state.
//
// The captured region of a RunStep is the program's ops, the gradient
// statistics and step_finish (clip factor, NaN/Inf guard, loss): every
// launch there reads and writes the executor's fixed device buffers (the
// memory plan lays them out once, in newExec) and takes no argument that
// changes between steps except the clip norm, which is the graph's key.
// What stays outside: the uploads of the inputs and parameters before it
// (host-to-device copies on the same stream, so they are ordered before
// the replay) and the Adam update after it, whose step size (learning rate
// over bias correction) changes every step and is passed by value.
type graphState struct {
	stream Backend // the executor's own stream (NewStream), nil without GraphCapture
	g      grapher // the same stream's capture
	ready  bool    // a captured graph is the current step
	clip   float64 // the clip norm the graph was captured with
	steps  int     // RunSteps run with ordinary launches so far
	off    string  // why capture is off for good ("" while it may capture)
}

// graphWarmup is the number of ordinary RunSteps before the first capture:
// the first step initialises what a library may set up lazily on a stream
// (cuBLAS's workspace), which a capture must not do.
const graphWarmup = 1

// openStream gives the executor a stream of b's (of the backend b wraps,
// found through Unwrap() Backend methods, when b itself has no streams) and
// checks it can capture. The executor's allocations still go through b.
func (x *Exec) openStream(b Backend) (Backend, error) {
	var sb streamer
	for inner := b; inner != nil; {
		if s, ok := inner.(streamer); ok {
			sb = s
			break
		}
		u, ok := inner.(interface{ Unwrap() Backend })
		if !ok {
			break
		}
		inner = u.Unwrap()
	}
	if sb == nil {
		return nil, fmt.Errorf("cuda: executor: GraphCapture: backend %s has no streams", b.Name())
	}
	s, err := sb.NewStream()
	if err != nil {
		return nil, fmt.Errorf("cuda: executor: GraphCapture: %w", err)
	}
	g, ok := s.(grapher)
	if !ok {
		_ = s.Close()
		return nil, fmt.Errorf("cuda: executor: GraphCapture: backend %s cannot capture graphs", b.Name())
	}
	if err := g.CanCapture(); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("cuda: executor: GraphCapture: %w", err)
	}
	x.gr.stream, x.gr.g = s, g
	return &streamAlloc{Backend: s, alloc: b}, nil
}

// streamAlloc is a stream whose allocations go through the backend the
// executor was given (which may count them).
type streamAlloc struct {
	Backend
	alloc Backend
}

func (s *streamAlloc) Name() string                   { return s.alloc.Name() }
func (s *streamAlloc) Alloc(bytes int64) (Ptr, error) { return s.alloc.Alloc(bytes) }
func (s *streamAlloc) Free(p Ptr) error               { return s.alloc.Free(p) }

// closeStream releases the graph and the stream.
func (x *Exec) closeStream() error {
	if x.gr.stream == nil {
		return nil
	}
	err := x.gr.g.DropGraph()
	if cerr := x.gr.stream.Close(); err == nil {
		err = cerr
	}
	x.gr = graphState{off: "executor closed"}
	return err
}

// GraphStatus reports whether the next RunStep replays a captured graph
// (ExecOptions.GraphCapture) and, when it does not, why: capture is off,
// the program has ops on the host, the machine traces, the first step has
// not run yet, or a capture failed (with the error).
func (x *Exec) GraphStatus() (replays bool, why string) {
	switch {
	case x.gr.stream == nil:
		return false, "ExecOptions.GraphCapture is off"
	case x.gr.ready:
		return true, fmt.Sprintf("replaying the step captured with clip norm %v", x.gr.clip)
	case x.gr.off != "":
		return false, x.gr.off
	case x.count(false) > 0:
		return false, fmt.Sprintf("%d ops run on the host", x.count(false))
	case x.prog.Trace:
		return false, "the machine traces (MachineOptions.Trace)"
	}
	return false, fmt.Sprintf("capturing after %d ordinary step(s), %d run", graphWarmup, x.gr.steps)
}

// queueStep queues the step's launches before the update: the program's
// ops, the gradients' statistics and step_finish.
func (x *Exec) queueStep(lv *value, clipNorm float64) error {
	if err := x.launchOps(); err != nil {
		return err
	}
	if err := x.launchStats(); err != nil {
		return fmt.Errorf("cuda: RunStep: statistics: %w", err)
	}
	blk := x.upd.block
	if err := x.b.Launch("step_finish"+suffix(lv.dt), 1, int64(1), int32(len(x.prog.Params)), lv.ptr, blk+x.statsOff(), clipNorm, blk, blk+x.badOff()); err != nil {
		return fmt.Errorf("cuda: RunStep: %w", err)
	}
	return nil
}

// stepLaunches queues the step's launches before the update: by replaying
// the captured graph when there is one for clipNorm, by capturing it when
// the step may be captured, else as ordinary launches.
func (x *Exec) stepLaunches(lv *value, clipNorm float64) error {
	if x.gr.stream == nil {
		return x.queueStep(lv, clipNorm)
	}
	if x.gr.ready && x.gr.clip != clipNorm {
		x.gr.ready = false
		if err := x.gr.g.DropGraph(); err != nil {
			return fmt.Errorf("cuda: RunStep: %w", err)
		}
	}
	if !x.gr.ready {
		if x.gr.off != "" || x.count(false) > 0 || x.prog.Trace || x.gr.steps < graphWarmup {
			x.gr.steps++
			return x.queueStep(lv, clipNorm)
		}
		if err := x.capture(lv, clipNorm); err != nil {
			// Nothing of the step ran: run it with ordinary launches
			// and never capture again.
			x.gr.off = err.Error()
			x.gr.steps++
			return x.queueStep(lv, clipNorm)
		}
	}
	x.cnt.c.GraphLaunches++
	if err := x.gr.g.LaunchGraph(); err != nil {
		return fmt.Errorf("cuda: RunStep: %w", err)
	}
	return nil
}

// capture records the step's launches into the stream's graph. The OS
// thread is locked meanwhile: the GPU backend captures in thread-local
// mode.
func (x *Exec) capture(lv *value, clipNorm float64) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := x.gr.g.BeginCapture(); err != nil {
		return err
	}
	qerr := x.queueStep(lv, clipNorm)
	if err := x.gr.g.EndCapture(); err != nil {
		return err
	}
	if qerr != nil {
		_ = x.gr.g.DropGraph()
		return qerr
	}
	x.gr.ready, x.gr.clip = true, clipNorm
	return nil
}
