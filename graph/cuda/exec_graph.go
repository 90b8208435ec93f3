package cuda

import (
	"fmt"
	"runtime"

	"github.com/gdattn/gdattn/graph"
)

// graphState is the executor's ExecOptions.GraphCapture state.
//
// The captured region of a RunStep is the whole step on the device: the
// program's ops, the gradient statistics, step_finish (clip factor,
// NaN/Inf guard, loss) and the Adam update. Every launch there reads and
// writes the executor's fixed device buffers (the memory plan lays them
// out once, in newExec); the numbers that change every step (the update's
// step size and bias correction) are read from device memory (upd.hyp),
// and the arguments passed by value that a caller can change (clip norm,
// β1, β2, ε, decoupled weight decay) and the update's tables make the
// graph's key. What stays outside: the uploads before it (inputs,
// parameters not resident, the update's numbers), host-to-device copies
// on the same stream, ordered before the replay.
type graphState struct {
	stream Backend  // the executor's own stream (NewStream), nil without GraphCapture
	g      grapher  // the same stream's capture
	ready  bool     // a captured graph is the current step
	key    graphKey // what the graph was captured with
	steps  int      // RunSteps run with ordinary launches so far
	off    string   // why capture is off for good ("" while it may capture)
}

// graphKey is what a captured step's launches take by value.
type graphKey struct {
	clip, b1, b2, eps float64
	decoupled         bool
	groups            int // updState.gen
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
		return true, fmt.Sprintf("replaying the step captured with clip norm %v", x.gr.key.clip)
	case x.gr.off != "":
		return false, x.gr.off
	case x.count(false) > 0:
		return false, fmt.Sprintf("%d ops run on the host", x.count(false))
	case x.prog.Trace:
		return false, "the machine traces (MachineOptions.Trace)"
	}
	return false, fmt.Sprintf("capturing after %d ordinary step(s), %d run", graphWarmup, x.gr.steps)
}

// queueStep queues the step's launches: the program's ops, the gradients'
// statistics, step_finish and the update.
func (x *Exec) queueStep(lv *value, clipNorm float64, u graph.AdamUpdate) error {
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
	if err := x.launchAdam(u); err != nil {
		return fmt.Errorf("cuda: RunStep: update: %w", err)
	}
	return nil
}

// stepLaunches queues the step's launches: by replaying the captured graph
// when there is one for this key, by capturing it when the step may be
// captured, else as ordinary launches.
func (x *Exec) stepLaunches(lv *value, clipNorm float64, u graph.AdamUpdate) error {
	if x.gr.stream == nil {
		return x.queueStep(lv, clipNorm, u)
	}
	key := graphKey{clip: clipNorm, b1: u.Beta1, b2: u.Beta2, eps: u.Eps, decoupled: u.Decoupled, groups: x.upd.gen}
	if x.gr.ready && x.gr.key != key {
		x.gr.ready = false
		if err := x.gr.g.DropGraph(); err != nil {
			return fmt.Errorf("cuda: RunStep: %w", err)
		}
	}
	if !x.gr.ready {
		if x.gr.off != "" || x.count(false) > 0 || x.prog.Trace || x.gr.steps < graphWarmup {
			x.gr.steps++
			return x.queueStep(lv, clipNorm, u)
		}
		if err := x.capture(lv, clipNorm, u, key); err != nil {
			// Nothing of the step ran: run it with ordinary launches
			// and never capture again.
			x.gr.off = err.Error()
			x.gr.steps++
			return x.queueStep(lv, clipNorm, u)
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
func (x *Exec) capture(lv *value, clipNorm float64, u graph.AdamUpdate, key graphKey) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := x.gr.g.BeginCapture(); err != nil {
		return err
	}
	qerr := x.queueStep(lv, clipNorm, u)
	if err := x.gr.g.EndCapture(); err != nil {
		return err
	}
	if qerr != nil {
		_ = x.gr.g.DropGraph()
		return qerr
	}
	x.gr.ready, x.gr.key = true, key
	return nil
}
