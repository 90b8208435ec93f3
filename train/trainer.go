package train

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/gdattn/gdattn/checkpoint"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/npy"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Config configures a [Trainer]. Zero fields mean the documented
// defaults; [DefaultConfig] returns them filled in.
type Config struct {
	// Optimizer is "adam" (default) or "adamw".
	Optimizer string
	// LR is the constant learning rate used when Schedule is nil; it must
	// then be > 0.
	LR float64
	// Schedule, if non-nil, gives the absolute learning rate of every update
	// and LR is ignored.
	Schedule Schedule
	// Beta1, Beta2 and Eps are Adam's constants (defaults 0.9, 0.999, 1e-8).
	Beta1, Beta2, Eps float64
	// WeightDecay is AdamW's decoupled decay (w -= lr*WeightDecay*w per
	// update) for "adamw", and an L2 penalty added to the gradient
	// (g += WeightDecay*w, as torch.optim.Adam) for "adam". Default 0.
	WeightDecay float64
	// Decay, if non-nil, reports whether the parameter with this name and
	// shape is decayed (nanoGPT decays only matrices: shape.Dims() >= 2).
	// Nil decays every parameter.
	Decay func(name string, shape tensor.Shape) bool
	// ClipNorm clips the gradients by their global L2 norm over all
	// parameters before the update; 0 disables clipping.
	ClipNorm float64
	// Progress receives progress output; nil is silent. A terminal gets a
	// progress bar, any other writer a plain line every ProgressEvery steps:
	//	label step 120/2000 loss 1.2345 lr 0.001 12.3 step/s eta 2m31s
	Progress io.Writer
	// ProgressEvery is the number of steps between plain progress lines
	// (default 100). The last step (Total) is always reported.
	ProgressEvery int
	// Total is the planned number of steps, for the bar and the ETA (0:
	// unknown).
	Total int
	// Label prefixes progress output.
	Label string
	// ParamDtypeMoments keeps Adam's moments in each parameter's dtype, as
	// torch.optim does: float32 for float32 parameters (half the optimiser
	// memory: two 4-byte moments per parameter instead of two 8-byte ones),
	// float64 for float64 ones. The update is still computed in float64,
	// from the stored moments, and each new moment is rounded to float32
	// when stored. False (the default) keeps them in float64 for every
	// parameter. [State] and checkpoints hold the moments as float64 either
	// way (exact for float32 moments, so resuming is exact); restoring
	// float64 moments into float32 storage rounds them. When the update runs
	// on a device ([graph.DeviceUpdater]), the device keeps the moments and
	// this setting applies to them where it can ([graph.MomentDtyper];
	// graph/cuda's executor does, and its updates agree with the host's in
	// either setting).
	ParamDtypeMoments bool
	// HostOptimizer makes the update run on the host even when the
	// machine's executor is a [graph.DeviceUpdater] (which it then uses by
	// default).
	HostOptimizer bool
}

// DefaultConfig returns the defaults: Adam, LR 1e-3, betas (0.9,
// 0.999), eps 1e-8, no decay, no clipping, silent.
func DefaultConfig() Config {
	return Config{Optimizer: "adam", LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, ProgressEvery: 100}
}

// State is the resumable state of a [Trainer]: the number of updates made
// and Adam's first and second moments, keyed by parameter name (each slice
// has the parameter's size, row-major). It is package checkpoint's
// OptimState, so a state read from a checkpoint (Checkpoint.Optim) goes
// straight to [Trainer.SetState].
type State = checkpoint.OptimState

// Trainer runs a gradient [Machine] and updates its parameters in place
// with Adam or AdamW, after a NaN/Inf guard and optional gradient clipping.
//
// Usage, per minibatch: feed the inputs with [SetValue], then call Step.
// Step numbers are 1-based in errors and progress output: "step 3" is the
// third update. The update is computed in float64 (moments are float64 for
// either dtype unless Config.ParamDtypeMoments) and written back rounded to
// the parameter's dtype, in place
// in the parameter's value, so the compiled machine sees it on its next run.
// A Trainer is not safe for concurrent use.
type Trainer struct {
	m        *graph.Machine
	cfg      Config
	sched    Schedule
	decouple bool
	params   G.Nodes
	names    []string
	decay    []bool
	mv       []moments
	grads    []gradView // this step's gradients: views of the machine's, not copies
	step     int
	prog     *progress
	dev      graph.DeviceUpdater // non-nil: the update runs on the machine's device
	// mmax[i] and vmax[i] are the largest |first moment| and second moment
	// of parameter i, for the update guard's bound.
	mmax, vmax []float64
	broken     error // a device update wrote non-finite values
}

// NewTrainer returns a trainer for m, which must compute gradients, after
// validating cfg.
func NewTrainer(m *graph.Machine, cfg Config) (*Trainer, error) {
	if m == nil || !m.HasGrad() {
		return nil, errors.New("train: machine is nil or computes no gradients (give NewMachine a loss and parameters)")
	}
	def := DefaultConfig()
	if cfg.Optimizer == "" {
		cfg.Optimizer = def.Optimizer
	}
	if cfg.Beta1 == 0 {
		cfg.Beta1 = def.Beta1
	}
	if cfg.Beta2 == 0 {
		cfg.Beta2 = def.Beta2
	}
	if cfg.Eps == 0 {
		cfg.Eps = def.Eps
	}
	if cfg.ProgressEvery == 0 {
		cfg.ProgressEvery = def.ProgressEvery
	}
	t := &Trainer{m: m, cfg: cfg, params: m.Params()}
	switch cfg.Optimizer {
	case "adam":
	case "adamw":
		t.decouple = true
	default:
		return nil, fmt.Errorf("train: Optimizer %q: want \"adam\" or \"adamw\"", cfg.Optimizer)
	}
	for _, c := range []struct {
		name string
		v    float64
	}{{"Beta1", cfg.Beta1}, {"Beta2", cfg.Beta2}} {
		if !(c.v > 0 && c.v < 1) {
			return nil, fmt.Errorf("train: %s %v: want 0 < %s < 1", c.name, c.v, c.name)
		}
	}
	if !(cfg.Eps > 0) || math.IsInf(cfg.Eps, 0) {
		return nil, fmt.Errorf("train: Eps %v: want a finite value > 0", cfg.Eps)
	}
	if !(cfg.WeightDecay >= 0) || math.IsInf(cfg.WeightDecay, 0) {
		return nil, fmt.Errorf("train: WeightDecay %v: want a finite value >= 0", cfg.WeightDecay)
	}
	if !(cfg.ClipNorm >= 0) || math.IsInf(cfg.ClipNorm, 0) {
		return nil, fmt.Errorf("train: ClipNorm %v: want a finite value >= 0 (0 disables clipping)", cfg.ClipNorm)
	}
	if cfg.ProgressEvery < 0 || cfg.Total < 0 {
		return nil, fmt.Errorf("train: ProgressEvery %d, Total %d: want values >= 0", cfg.ProgressEvery, cfg.Total)
	}
	t.sched = cfg.Schedule
	if t.sched == nil {
		if !(cfg.LR > 0) || math.IsInf(cfg.LR, 0) {
			return nil, fmt.Errorf("train: LR %v: want a finite value > 0 (or set Schedule)", cfg.LR)
		}
		t.sched = ConstantLR(cfg.LR)
	}
	if lr := t.sched(0); !(lr >= 0) || math.IsInf(lr, 0) {
		return nil, fmt.Errorf("train: Schedule gives learning rate %v at step 0: check its arguments", lr)
	}
	for _, p := range t.params {
		t.names = append(t.names, p.Name())
		t.decay = append(t.decay, cfg.WeightDecay > 0 && (cfg.Decay == nil || cfg.Decay(p.Name(), p.Shape())))
	}
	if du, ok := m.Executor().(graph.DeviceUpdater); ok && !cfg.HostOptimizer && du.UpdatesOnDevice() {
		t.dev = du
		if md, ok := du.(graph.MomentDtyper); ok {
			if err := md.SetParamDtypeMoments(cfg.ParamDtypeMoments); err != nil {
				return nil, fmt.Errorf("train: device moments: %w", err)
			}
		}
	}
	for _, p := range t.params {
		n := p.Shape().TotalSize()
		if cfg.ParamDtypeMoments && t.dev == nil && p.Dtype() == tensor.Float32 {
			t.mv = append(t.mv, moments{m32: make([]float32, n), v32: make([]float32, n)})
		} else {
			t.mv = append(t.mv, moments{m64: make([]float64, n), v64: make([]float64, n)})
		}
	}
	t.mmax = make([]float64, len(t.params))
	t.vmax = make([]float64, len(t.params))
	if cfg.Progress != nil {
		t.prog = newProgress(cfg, isTerminal(cfg.Progress))
	}
	return t, nil
}

// SyncParams makes the parameters' host values current when the updates run
// on a device that keeps them there (graph/cuda's ExecOptions.ResidentParams):
// call it before reading parameter values yourself or running another
// machine on the same parameters. [Trainer.Save] and [Trainer.State] call
// it themselves. Otherwise it does nothing.
//
// The Trainer is the one place that moves parameters between host and
// device: a program that saves or evaluates through it never reads stale
// host values.
func (t *Trainer) SyncParams() error {
	if t.dev == nil {
		return nil
	}
	if err := t.dev.SyncParams(); err != nil {
		return fmt.Errorf("train: syncing the parameters from the device: %w", err)
	}
	return nil
}

// OnDevice reports whether the trainer's updates run on the machine's
// device (see [graph.DeviceUpdater]).
func (t *Trainer) OnDevice() bool { return t.dev != nil }

// Machine returns the trainer's machine.
func (t *Trainer) Machine() *graph.Machine { return t.m }

// StepCount returns the number of updates made so far.
func (t *Trainer) StepCount() int { return t.step }

// LR returns the learning rate the next update will use.
func (t *Trainer) LR() float64 { return t.sched(t.step) }

// Step makes one update on the minibatch already fed to the machine's
// inputs: it runs the machine, reads the loss and every gradient, and
// returns an error without touching the parameters if any of them is NaN or
// ±Inf (naming the step and "loss" or the parameter); otherwise it clips the
// gradients, updates the parameters in place and returns the loss. With a
// graph.DeviceUpdater whose gradients stay on the device, the guard and the
// clipping norm use its GradStats instead of host copies.
func (t *Trainer) Step() (float64, error) {
	if t.broken != nil {
		return math.NaN(), t.broken
	}
	n := t.step + 1
	if t.prog != nil {
		t.prog.begin(t.step)
	}
	if ds, ok := t.dev.(graph.DeviceStepper); ok && ds.StepsOnDevice() {
		if lr := t.sched(t.step); lr >= 0 && !math.IsInf(lr, 0) {
			loss, err := t.deviceStep(ds, n, lr)
			if err != nil {
				return loss, err
			}
			t.step = n
			if t.prog != nil {
				t.prog.report(n, loss, lr)
			}
			return loss, nil
		}
	}
	loss, err := t.runLoss(n)
	if err != nil {
		return loss, err
	}
	norm, err := t.gradients(n)
	if err != nil {
		return loss, err
	}
	lr := t.sched(t.step)
	if !(lr >= 0) || math.IsInf(lr, 0) {
		return loss, fmt.Errorf("train: step %d: schedule gives learning rate %v; parameters not updated", n, lr)
	}
	if t.dev != nil {
		err = t.deviceUpdate(n, lr, norm)
	} else {
		err = t.hostUpdate(n, lr)
	}
	if err != nil {
		return loss, err
	}
	t.step = n
	if t.prog != nil {
		t.prog.report(n, loss, lr)
	}
	return loss, nil
}

// moments are one parameter's Adam moments: float64 (m64, v64) or, with
// Config.ParamDtypeMoments for a float32 parameter, float32 (m32, v32).
type moments struct {
	m64, v64 []float64
	m32, v32 []float32
}

// get copies the moments into m and v (float64, the parameter's size).
func (mv moments) get(m, v []float64) {
	if mv.m32 == nil {
		copy(m, mv.m64)
		copy(v, mv.v64)
		return
	}
	for j := range mv.m32 {
		m[j], v[j] = float64(mv.m32[j]), float64(mv.v32[j])
	}
}

// set stores m and v (rounded to float32 for float32 moments) and returns
// the largest |m| and v stored.
func (mv moments) set(m, v []float64) (mmax, vmax float64) {
	if mv.m32 == nil {
		copy(mv.m64, m)
		copy(mv.v64, v)
		for j := range m {
			mmax = max(mmax, math.Abs(m[j]))
			vmax = max(vmax, v[j])
		}
		return mmax, vmax
	}
	for j := range m {
		mv.m32[j], mv.v32[j] = float32(m[j]), float32(v[j])
		mmax = max(mmax, math.Abs(float64(mv.m32[j])))
		vmax = max(vmax, float64(mv.v32[j]))
	}
	return mmax, vmax
}

func (mv moments) len() int { return len(mv.m64) + len(mv.m32) }

// updateView is adamUpdateScaled on a gradient view and moments of either
// dtype.
func updateView[T float32 | float64](w []T, g gradView, scale float64, mv moments, h adamHyper) (float64, float64) {
	switch {
	case mv.m32 != nil && g.f32 != nil:
		return adamUpdateScaled(w, g.f32, scale, mv.m32, mv.v32, h)
	case mv.m32 != nil:
		return adamUpdateScaled(w, g.f64, scale, mv.m32, mv.v32, h)
	case g.f32 != nil:
		return adamUpdateScaled(w, g.f32, scale, mv.m64, mv.v64, h)
	}
	return adamUpdateScaled(w, g.f64, scale, mv.m64, mv.v64, h)
}

// checkView is adamCheckScaled on a gradient view and moments of either
// dtype.
func checkView[T float32 | float64](w []T, g gradView, scale float64, mv moments, h adamHyper) (int, string) {
	switch {
	case mv.m32 != nil && g.f32 != nil:
		return adamCheckScaled(w, g.f32, scale, mv.m32, mv.v32, h)
	case mv.m32 != nil:
		return adamCheckScaled(w, g.f64, scale, mv.m32, mv.v32, h)
	case g.f32 != nil:
		return adamCheckScaled(w, g.f32, scale, mv.m64, mv.v64, h)
	}
	return adamCheckScaled(w, g.f64, scale, mv.m64, mv.v64, h)
}

// deviceUpdate makes update n with learning rate lr through t.dev: the
// clipping factor is computed from norm, the gradients' global norm from
// the device, or, when norm < 0, from the gradients read on the host
// exactly as ClipGlobalNorm computes it.
func (t *Trainer) deviceUpdate(n int, lr, norm float64) error {
	scale := 1.0
	if t.cfg.ClipNorm > 0 {
		if norm < 0 {
			norm = globalNorm(t.grads)
		}
		if norm > t.cfg.ClipNorm {
			scale = t.cfg.ClipNorm / norm
		}
	}
	u := t.deviceHypers(n, lr)
	u.GradScale = scale
	if err := t.dev.AdamUpdate(u); err != nil {
		return fmt.Errorf("train: step %d: device update: %w", n, err)
	}
	// The device wrote the update where the host cannot check it before;
	// check the new values where they are: on the device when it keeps
	// them there (their host values are stale: scanning those would check
	// nothing, at the cost of a pass over every parameter), else the
	// values it copied back.
	if pc, ok := t.dev.(graph.ParamChecker); ok {
		counts, onDev, err := pc.NonFiniteParams()
		if err != nil {
			return fmt.Errorf("train: step %d: checking the updated parameters: %w", n, err)
		}
		if onDev {
			return t.checkDeviceCounts(n, lr, counts)
		}
	}
	for i, p := range t.params {
		f32, f64, err := valueView(p.Value())
		if err != nil {
			continue
		}
		j := -1
		if f64 != nil {
			j = firstNonFinite(f64)
		} else {
			for k, x := range f32 {
				if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
					j = k
					break
				}
			}
		}
		if j >= 0 {
			t.broken = fmt.Errorf("train: step %d: the device update made %q non-finite at element %d (learning rate %v); the device moments cannot be rolled back: restore a checkpoint", n, t.names[i], j, lr)
			return t.broken
		}
	}
	return nil
}

// State returns a deep copy of the optimiser state. With a device update
// (OnDevice) it first syncs the parameters to the host (so that the state
// and the parameters' host values describe the same step) and reads the
// moments from the device; a failure of either is returned.
func (t *Trainer) State() (State, error) {
	if t.dev != nil {
		if err := t.SyncParams(); err != nil {
			return State{}, err
		}
		for i := range t.params {
			if err := t.dev.Moments(i, t.mv[i].m64, t.mv[i].v64); err != nil {
				return State{}, fmt.Errorf("train: reading the moments of %q from the device: %w", t.names[i], err)
			}
		}
	}
	st := State{Step: t.step, M: map[string][]float64{}, V: map[string][]float64{}}
	for i, name := range t.names {
		m, v := make([]float64, t.mv[i].len()), make([]float64, t.mv[i].len())
		t.mv[i].get(m, v)
		st.M[name], st.V[name] = m, v
	}
	return st, nil
}

// Save writes a checkpoint of the trainer's model to dir with
// [checkpoint.Save]: every parameter of the machine's scope, the optimiser
// state (so training can resume exactly: [checkpoint.Read], then
// Checkpoint.Apply and [Trainer.SetState]), config (the caller's model
// config, marshalled with encoding/json; may be nil) and the optional extra
// arrays. Parameters kept on a device are synced first, so the checkpoint
// never holds stale values. It holds the model's lock (graph.Scope.Lock)
// throughout, so a save while another goroutine trains the model holds the
// parameters and the optimiser state of one step; the caller must not hold
// it.
func (t *Trainer) Save(dir string, config any, extra map[string]*npy.Array) error {
	s := t.m.Scope()
	s.Lock()
	defer s.Unlock()
	st, err := t.State()
	if err != nil {
		return err
	}
	return checkpoint.Save(dir, s, config, checkpoint.SaveOptions{Optim: &st, Extra: extra, Locked: true})
}

// SetState restores a state saved by State (or loaded from a checkpoint):
// it must hold exactly the trainer's parameters, with matching sizes. The
// state is copied; on error the trainer is unchanged.
func (t *Trainer) SetState(st State) error {
	if st.Step < 0 {
		return fmt.Errorf("train: SetState: Step %d < 0", st.Step)
	}
	if err := st.Validate(); err != nil {
		return fmt.Errorf("train: SetState: %w", err)
	}
	for _, kv := range []struct {
		what string
		m    map[string][]float64
	}{{"M", st.M}, {"V", st.V}} {
		if len(kv.m) != len(t.names) {
			var extra []string
			for name := range kv.m {
				if !contains(t.names, name) {
					extra = append(extra, name)
				}
			}
			if len(extra) > 0 {
				return fmt.Errorf("train: SetState: %s has unknown parameter(s) %q", kv.what, extra)
			}
		}
		for i, name := range t.names {
			vs, ok := kv.m[name]
			if !ok {
				return fmt.Errorf("train: SetState: %s lacks parameter %q", kv.what, name)
			}
			if len(vs) != t.mv[i].len() {
				return fmt.Errorf("train: SetState: %s[%q] has %d values, want %d", kv.what, name, len(vs), t.mv[i].len())
			}
			if t.mv[i].m32 != nil {
				for j, x := range vs {
					if math.Abs(x) > math.MaxFloat32 {
						return fmt.Errorf("train: SetState: %s[%q][%d] = %v overflows the parameter's float32 moments", kv.what, name, j, x)
					}
				}
			}
		}
	}
	if t.dev != nil {
		for i, name := range t.names {
			if err := t.dev.SetMoments(i, st.M[name], st.V[name]); err != nil {
				return fmt.Errorf("train: SetState: moments of %q: %w", name, err)
			}
		}
	}
	for i, name := range t.names {
		t.mmax[i], t.vmax[i] = t.mv[i].set(st.M[name], st.V[name])
	}
	t.step = st.Step
	t.broken = nil
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// progress prints training progress: a bar on a terminal, plain lines
// otherwise.
type progress struct {
	w        io.Writer
	every    int
	total    int
	label    string
	bar      *progressbar.ProgressBar
	now      func() time.Time
	last     time.Time // time of the last line (or of the first step's start)
	lastStep int       // step count at last
}

func newProgress(cfg Config, terminal bool) *progress {
	p := &progress{w: cfg.Progress, every: cfg.ProgressEvery, total: cfg.Total, label: cfg.Label, now: time.Now}
	if terminal {
		max := int64(cfg.Total)
		if max == 0 {
			max = -1 // spinner
		}
		p.bar = progressbar.NewOptions64(max,
			progressbar.OptionSetWriter(cfg.Progress),
			progressbar.OptionSetDescription(cfg.Label),
			progressbar.OptionSetWidth(20),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("step"),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(cfg.Progress) }),
		)
	}
	return p
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// begin starts the rate clock at the first step a progress meets.
func (p *progress) begin(step int) {
	if p.last.IsZero() {
		p.last, p.lastStep = p.now(), step
	}
}

func (p *progress) report(step int, loss, lr float64) {
	t := p.now()
	if p.bar != nil {
		p.bar.Describe(fmt.Sprintf("%s loss %.4f lr %.3g", p.label, loss, lr))
		p.bar.Add(1)
		return
	}
	if step%p.every != 0 && step != p.total {
		return
	}
	var b strings.Builder
	if p.label != "" {
		b.WriteString(p.label)
		b.WriteByte(' ')
	}
	fmt.Fprintf(&b, "step %d", step)
	if p.total > 0 {
		fmt.Fprintf(&b, "/%d", p.total)
	}
	fmt.Fprintf(&b, " loss %.4f lr %.3g", loss, lr)
	if dt := t.Sub(p.last).Seconds(); dt > 0 && step > p.lastStep {
		rate := float64(step-p.lastStep) / dt
		fmt.Fprintf(&b, " %.1f step/s", rate)
		if p.total > step {
			eta := time.Duration(float64(p.total-step) / rate * float64(time.Second))
			fmt.Fprintf(&b, " eta %v", eta.Round(time.Second))
		}
	}
	b.WriteByte('\n')
	io.WriteString(p.w, b.String())
	p.last, p.lastStep = t, step
}
