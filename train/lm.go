package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/gdattn/gdattn/checkpoint"
	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/internal/modelfile"
	"github.com/gdattn/gdattn/losses"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// LM is a causal language model built for minibatches of BatchSize windows
// of ContextLen token ids over a vocabulary of VocabSize ids: either a
// training graph (the logits of every next token, (B·T, C), against targets
// (B·T)) or a generation graph (the logits of the token after each window,
// (B, C)). gd.LM (GD, GD + FF) and tf.GPT satisfy it; [LMTrainer] trains
// one, [Generator] generates from one.
type LM interface {
	// Scope holds the model's graph and parameters.
	Scope() *graph.Scope
	// BatchSize is the number B of windows of a minibatch.
	BatchSize() int
	// ContextLen is the context window T.
	ContextLen() int
	// VocabSize is the number C of token ids.
	VocabSize() int
	// Generates reports whether the model is a generation graph.
	Generates() bool
	// Feed loads a training minibatch: ids (B·T) row-major (B, T) and the
	// ids to predict, targets (B·T), -1 where nothing is scored.
	Feed(ids, targets []int) error
	// FeedNext loads a generation minibatch: ids (B·T), each window's
	// context left-aligned and padded, and its length in [1, T].
	FeedNext(ids, lengths []int) error
	// LMOutputs returns the training graph's logits (B·T, C) and targets
	// (B·T), or the generation graph's next-token logits (B, C); nil where
	// the graph has none.
	LMOutputs() (logits, targets, next *G.Node)
	// SavedConfig is the model's config object in a checkpoint.
	SavedConfig() (json.RawMessage, error)
	// TextCodec turns text into the model's ids and back; nil if the model
	// has none.
	TextCodec() *data.TextCodec
	// SetTextCodec gives the model a text codec (kept in its checkpoints).
	SetTextCodec(*data.TextCodec) error
}

// LMConfig configures an [LMTrainer]: AdamW with a warmup + cosine schedule
// (nanoGPT's), global-norm clipping, and minibatches of random windows.
// Zero fields take the defaults given.
type LMConfig struct {
	// Steps is the planned number of updates (> 0): the schedule's length
	// and where [LMTrainer.Fit] stops.
	Steps int
	// Warmup is the number of linear warmup steps (< Steps).
	Warmup int
	// LR is the peak learning rate (> 0); MinLR the rate the cosine decays
	// to at Steps (0 <= MinLR <= LR).
	LR, MinLR float64
	// WeightDecay is AdamW's decoupled decay (default 0), applied to the
	// parameters Decay selects (nil: those of rank >= 2, matrices and
	// embeddings, as nanoGPT).
	WeightDecay float64
	Decay       func(name string, shape tensor.Shape) bool
	// ClipNorm clips the gradients' global norm (0: no clipping).
	ClipNorm float64
	// Seed draws the minibatches: step k (0-based) trains on the windows
	// data.SampleWindows(train, B, T+1, Seed, k), a function of (Seed, k)
	// only, so a resumed run sees the same minibatches.
	Seed uint64
	// Pad is the id that fills the unscored tail of the last evaluation
	// window (any valid id; the codec's Pad when [LMTrainer.FitText] is
	// used).
	Pad int
	// EvalEvery, when > 0, prints the validation loss and perplexity every
	// EvalEvery steps and at the last, over the first EvalBatches batches
	// of consecutive validation windows (0: all of them).
	EvalEvery, EvalBatches int
	// Dir, when not empty, is the checkpoint directory: written every
	// CkptEvery steps (0: only at the end) and after the last step, with
	// the optimiser state, the model's text codec, and Run.
	Dir       string
	CkptEvery int
	// Run is stored under "run" in the checkpoint's config (e.g. a program's
	// data and training settings); nil stores nothing. Read it back with
	// [ReadRun].
	Run any
	// Progress receives a progress line every ProgressEvery steps (default
	// max(1, min(50, Steps/10))) with the loss, rate and ETA, and the
	// validation lines; nil is silent. Label prefixes them.
	Progress      io.Writer
	ProgressEvery int
	Label         string
	// TrainExecutor and EvalExecutor, if non-nil, run the training and the
	// evaluation machines (graph/cuda's executor on a GPU); nil means
	// Gorgonia's Go VM.
	TrainExecutor, EvalExecutor graph.ExecutorFactory
	// HostOptimizer keeps the update on the host with a device executor.
	HostOptimizer bool
	// ParamDtypeMoments keeps AdamW's moments in the parameters' dtype, as
	// torch.optim and nanoGPT do ([Config].ParamDtypeMoments): for a
	// float32 model half the optimiser memory (4-byte moments instead of
	// 8-byte ones). False keeps them in float64, as the examples' tables were
	// trained. A checkpoint with either kind resumes with either (float64
	// moments are rounded into float32 storage).
	ParamDtypeMoments bool
	// Float32CrossEntropy computes the loss's softmax of float32 logits in
	// float32 arithmetic, as PyTorch's CPU cross_entropy does
	// (losses.SparseOptions.Float32: exponentials by a single-precision
	// polynomial, eight per AVX2 instruction), instead of the default's
	// float64 exponentials: a faster step whose losses and gradients differ
	// from the default's in their last bits (relative differences of
	// order 1e-6), the same on every machine. A float64 model ignores it.
	// Not stored in checkpoints; a graph/cuda executor refuses it.
	Float32CrossEntropy bool
	// EvalOnly compiles only the evaluation machine: the Score and Loss
	// methods work, Fit and Resume return an error, and the training
	// settings (Steps, LR, ...) are ignored.
	EvalOnly bool
}

var errEvalOnly = errors.New("train: lm: the trainer was built with EvalOnly")

// DecayMatrices is nanoGPT's weight-decay rule and [LMConfig]'s default:
// decay every parameter of rank >= 2 (matrices, embeddings), not vectors
// (layer norms, biases, the GD heads' Λ_m and diagonal P_m).
func DecayMatrices(_ string, shape tensor.Shape) bool { return shape.Dims() >= 2 }

// LMTrainer trains an [LM] training graph: the loss is the mean
// cross-entropy of its logits against its targets
// (losses.SparseSoftmaxCrossEntropyOverwrite: on a tied output layer the
// softmax and its gradient reuse the logits' buffer, so the logits node's
// value is not the logits after a step; in float32 arithmetic with
// [LMConfig].Float32CrossEntropy), a training machine runs it under a
// [Trainer] (AdamW, schedule, clipping, NaN/Inf guard), and a forward-only
// machine on the same parameters scores held-out windows. It is not safe
// for concurrent use.
type LMTrainer struct {
	m      LM
	cfg    LMConfig
	loss   *G.Node
	train  *graph.Machine
	eval   *graph.Machine
	tr     *Trainer
	log    io.Writer
	stopAt int // tests: end Fit after this many steps, as if killed
}

// NewLMTrainer checks m and cfg and compiles the machines.
func NewLMTrainer(m LM, cfg LMConfig) (_ *LMTrainer, err error) {
	if m == nil {
		return nil, errors.New("train: lm: model is nil")
	}
	if m.Generates() {
		return nil, errors.New("train: lm: the model is a generation graph; build a training graph (without Next)")
	}
	logits, targets, _ := m.LMOutputs()
	if m.Scope() == nil || logits == nil || targets == nil {
		return nil, errors.New("train: lm: the model has no scope, logits or targets")
	}
	switch {
	case cfg.EvalOnly:
	case cfg.Steps <= 0:
		return nil, fmt.Errorf("train: lm: Steps = %d, want > 0", cfg.Steps)
	case cfg.Warmup < 0 || cfg.Warmup >= cfg.Steps:
		return nil, fmt.Errorf("train: lm: Warmup = %d, want 0 <= Warmup < Steps = %d", cfg.Warmup, cfg.Steps)
	case !(cfg.LR > 0) || math.IsInf(cfg.LR, 0):
		return nil, fmt.Errorf("train: lm: LR = %v, want a finite value > 0", cfg.LR)
	case !(cfg.MinLR >= 0) || cfg.MinLR > cfg.LR:
		return nil, fmt.Errorf("train: lm: MinLR = %v, want 0 <= MinLR <= LR = %v", cfg.MinLR, cfg.LR)
	case cfg.EvalEvery < 0 || cfg.EvalBatches < 0 || cfg.CkptEvery < 0 || cfg.ProgressEvery < 0:
		return nil, fmt.Errorf("train: lm: EvalEvery %d, EvalBatches %d, CkptEvery %d, ProgressEvery %d: want values >= 0",
			cfg.EvalEvery, cfg.EvalBatches, cfg.CkptEvery, cfg.ProgressEvery)
	}
	if cfg.Pad < 0 || cfg.Pad >= m.VocabSize() {
		return nil, fmt.Errorf("train: lm: Pad = %d, want an id in [0, %d)", cfg.Pad, m.VocabSize())
	}
	if cfg.Decay == nil {
		cfg.Decay = DecayMatrices
	}
	if cfg.ProgressEvery == 0 {
		cfg.ProgressEvery = max(1, min(50, cfg.Steps/10))
	}
	t := &LMTrainer{m: m, cfg: cfg, log: cfg.Progress}
	if t.log == nil {
		t.log = io.Discard
	}
	defer func() {
		if err != nil {
			t.Close()
		}
	}()
	if t.loss, err = losses.SparseSoftmaxCrossEntropyWith(logits, targets, losses.SparseOptions{Overwrite: true, Float32: cfg.Float32CrossEntropy}); err != nil {
		return nil, fmt.Errorf("train: lm: %w", err)
	}
	s := m.Scope()
	if !cfg.EvalOnly {
		// ReuseGrads: the trainer reads the gradients within its Step.
		if t.train, err = graph.NewMachine(s, t.loss, graph.MachineOptions{Executor: cfg.TrainExecutor, ReuseGrads: true}); err != nil {
			return nil, fmt.Errorf("train: lm: %w", err)
		}
	}
	if t.eval, err = graph.NewMachine(s, nil, graph.MachineOptions{NoGrad: true, Outputs: G.Nodes{t.loss}, Executor: cfg.EvalExecutor}); err != nil {
		return nil, fmt.Errorf("train: lm: %w", err)
	}
	if cfg.EvalOnly {
		return t, nil
	}
	t.tr, err = NewTrainer(t.train, Config{
		Optimizer: "adamw", Schedule: WarmupCosine(cfg.LR, cfg.Warmup, cfg.Steps, cfg.MinLR),
		WeightDecay: cfg.WeightDecay, Decay: cfg.Decay, ClipNorm: cfg.ClipNorm,
		Progress: cfg.Progress, ProgressEvery: cfg.ProgressEvery, Total: cfg.Steps, Label: cfg.Label,
		HostOptimizer: cfg.HostOptimizer, ParamDtypeMoments: cfg.ParamDtypeMoments,
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// Close releases the machines.
func (t *LMTrainer) Close() error {
	var errs []error
	for _, m := range []*graph.Machine{t.train, t.eval} {
		if m != nil {
			errs = append(errs, m.Close())
		}
	}
	return errors.Join(errs...)
}

// Trainer returns the underlying [Trainer] (step count, state, sync); nil
// with EvalOnly.
func (t *LMTrainer) Trainer() *Trainer { return t.tr }

// Model returns the model being trained.
func (t *LMTrainer) Model() LM { return t.m }

// Batch returns the inputs and targets of training step step (0-based):
// B random windows of T+1 ids of the stream, a function of (Seed, step).
func (t *LMTrainer) Batch(stream []int, step int) (ids, targets []int, err error) {
	T, B := t.m.ContextLen(), t.m.BatchSize()
	w, err := data.SampleWindows(stream, B, T+1, t.cfg.Seed, step)
	if err != nil {
		return nil, nil, fmt.Errorf("train: lm: %w", err)
	}
	ids, targets = make([]int, 0, B*T), make([]int, 0, B*T)
	for b := 0; b < B; b++ {
		row := w[b*(T+1) : (b+1)*(T+1)]
		ids = append(ids, row[:T]...)
		targets = append(targets, row[1:]...)
	}
	return ids, targets, nil
}

// FitText gives the model ds's codec (so that its checkpoints hold it),
// takes Pad from it, and trains on ds's training stream, validating on its
// validation stream: see [LMTrainer.Fit].
func (t *LMTrainer) FitText(ds *data.TextData) error {
	if ds == nil || ds.Codec == nil || ds.Codec.Vocab == nil {
		return errors.New("train: lm: text data without a codec")
	}
	if err := t.m.SetTextCodec(ds.Codec); err != nil {
		return fmt.Errorf("train: lm: %w", err)
	}
	t.cfg.Pad = ds.Codec.Vocab.Pad
	return t.Fit(ds.TrainStream, ds.ValidStream)
}

// Fit trains from the trainer's current step (0, or the step of the
// checkpoint [LMTrainer.Resume] read) up to Steps: at each step the
// minibatch of [LMTrainer.Batch], one update; every EvalEvery steps the
// validation loss over valid (nil: none); every CkptEvery steps and after
// the last a checkpoint in Dir. Steps already made are not repeated, so a
// resumed run continues the interrupted one exactly: same minibatches, same
// losses and parameters, bit for bit. A NaN or ±Inf loss, gradient or
// update stops it with an error naming the step (the parameters are
// unchanged by that step).
func (t *LMTrainer) Fit(train, valid []int) error {
	if t.tr == nil {
		return errEvalOnly
	}
	c := t.cfg
	V := t.m.VocabSize()
	if err := checkStream("training", train, V); err != nil {
		return err
	}
	if err := checkStream("validation", valid, V); err != nil {
		return err
	}
	start := time.Now()
	first := t.tr.StepCount()
	for step := first; step < c.Steps; step++ {
		ids, targets, err := t.Batch(train, step)
		if err != nil {
			return err
		}
		if err := t.step(ids, targets); err != nil {
			return err
		}
		n := step + 1
		if c.EvalEvery > 0 && valid != nil && (n%c.EvalEvery == 0 || n == c.Steps) {
			vl, err := t.Loss(valid, c.EvalBatches)
			if err != nil {
				return err
			}
			fmt.Fprintf(t.log, "%s step %d/%d: validation loss %.4f (perplexity %.1f), %s\n",
				c.Label, n, c.Steps, vl, math.Exp(vl), humanDuration(time.Since(start)))
		}
		if c.Dir != "" && ((c.CkptEvery > 0 && n%c.CkptEvery == 0) || n == c.Steps) {
			if err := t.Save(c.Dir); err != nil {
				return err
			}
		}
		if n == t.stopAt {
			return nil
		}
	}
	if first < c.Steps {
		el := time.Since(start)
		fmt.Fprintf(t.log, "%s: trained steps %d..%d in %s (%s/step)\n", c.Label, first+1, c.Steps,
			humanDuration(el), humanDuration(el/time.Duration(c.Steps-first)))
	}
	return t.tr.SyncParams()
}

// checkStream returns an error naming the first id of stream outside
// [0, vocab): Fit checks whole streams before training, so a bad id is
// refused at once rather than when a window drawing it comes up.
func checkStream(what string, stream []int, vocab int) error {
	for i, id := range stream {
		if id < 0 || id >= vocab {
			return fmt.Errorf("train: lm: %s stream: id %d at position %d is outside the vocabulary [0, %d)", what, id, i, vocab)
		}
	}
	return nil
}

// humanDuration formats d with a unit that fits it: "850 µs", "12.3 ms",
// "4.56 s", "3.2 min", "1.50 h".
func humanDuration(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
	case d < time.Second:
		return fmt.Sprintf("%.3g ms", float64(d)/float64(time.Millisecond))
	case d < time.Minute:
		return fmt.Sprintf("%.3g s", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%.1f min", d.Minutes())
	}
	return fmt.Sprintf("%.2f h", d.Hours())
}

// step feeds one minibatch and makes one update, holding the model's lock
// (graph.Scope.Lock), so that a save, evaluation or prediction from another
// goroutine sees the parameters of one step.
func (t *LMTrainer) step(ids, targets []int) error {
	s := t.m.Scope()
	s.Lock()
	defer s.Unlock()
	if err := t.m.Feed(ids, targets); err != nil {
		return err
	}
	_, err := t.tr.Step()
	return err
}

// Loss is the mean loss (NLL per scored token; perplexity exp(Loss)) over
// the first maxBatches batches of consecutive windows of stream (0: all).
func (t *LMTrainer) Loss(stream []int, maxBatches int) (float64, error) {
	nll, n, err := t.ScoreStream(stream, maxBatches)
	if err != nil {
		return 0, err
	}
	return nll / float64(n), nil
}

// ScoreStream returns the summed NLL and the number of scored tokens of the
// consecutive windows of stream (data.StreamWindows: every token but the
// first scored once, given the tokens before it in its window), over the
// first maxBatches batches (0: all).
func (t *LMTrainer) ScoreStream(stream []int, maxBatches int) (float64, int, error) {
	ws, err := data.StreamWindows(stream, t.m.ContextLen(), t.cfg.Pad)
	if err != nil {
		return 0, 0, fmt.Errorf("train: lm: %w", err)
	}
	if B := t.m.BatchSize(); maxBatches > 0 && len(ws) > maxBatches*B {
		ws = ws[:maxBatches*B]
	}
	return t.ScoreWindows(ws)
}

// ScoreWindows runs the model forward on windows (of ContextLen ids; a
// target -1 is not scored), a batch at a time, and returns the summed NLL of
// their targets and how many there were. It syncs the parameters first. It
// holds the model's lock (graph.Scope.Lock) throughout.
func (t *LMTrainer) ScoreWindows(ws []data.Window) (float64, int, error) {
	s := t.m.Scope()
	s.Lock()
	defer s.Unlock()
	if t.tr != nil {
		if err := t.tr.SyncParams(); err != nil {
			return 0, 0, err
		}
	}
	T, B := t.m.ContextLen(), t.m.BatchSize()
	total, count := 0.0, 0
	for lo := 0; lo < len(ws); lo += B {
		ids := make([]int, 0, B*T)
		targets := make([]int, 0, B*T)
		n := 0
		for b := 0; b < B; b++ {
			if lo+b < len(ws) {
				w := ws[lo+b]
				if len(w.Inputs) != T || len(w.Targets) != T {
					return 0, 0, fmt.Errorf("train: lm: window %d has %d inputs and %d targets, want %d", lo+b, len(w.Inputs), len(w.Targets), T)
				}
				ids = append(ids, w.Inputs...)
				targets = append(targets, w.Targets...)
				continue
			}
			for j := 0; j < T; j++ {
				ids = append(ids, t.cfg.Pad)
				targets = append(targets, -1)
			}
		}
		for _, y := range targets {
			if y >= 0 {
				n++
			}
		}
		if n == 0 {
			continue
		}
		if err := t.m.Feed(ids, targets); err != nil {
			return 0, 0, err
		}
		if err := t.eval.Run(); err != nil {
			return 0, 0, fmt.Errorf("train: lm: %w", err)
		}
		l, err := graph.Scalar(t.loss)
		if err != nil {
			return 0, 0, err
		}
		total += l * float64(n)
		count += n
	}
	if count == 0 {
		return 0, 0, errors.New("train: lm: no token to score")
	}
	return total, count, nil
}

// Save writes a checkpoint of the model to dir: its parameters (synced from
// the device), config object (gd.LoadLM and tf.LoadGPT read it) with its
// text codec and Run, and the optimiser state, for [LMTrainer.Resume].
func (t *LMTrainer) Save(dir string) error {
	if t.tr == nil {
		return errEvalOnly
	}
	cfg, err := t.m.SavedConfig()
	if err != nil {
		return err
	}
	if t.cfg.Run != nil {
		if cfg, err = modelfile.WithRun(cfg, t.cfg.Run); err != nil {
			return fmt.Errorf("train: lm: save: %w", err)
		}
	}
	return t.tr.Save(dir, cfg, modelfile.TextArrays(t.m.TextCodec()))
}

// Resume restores the parameters and the optimiser state of the checkpoint
// in dir (written by [LMTrainer.Save]); [LMTrainer.Fit] then continues from
// its step. The checkpoint must hold exactly the model's parameters.
func (t *LMTrainer) Resume(dir string) error {
	if t.tr == nil {
		return errEvalOnly
	}
	c, err := checkpoint.Read(dir)
	if err != nil {
		return err
	}
	return t.ResumeFrom(c)
}

// ResumeFrom is [LMTrainer.Resume] from the checkpoint c, already read
// (checkpoint.Read): a program that builds the model from the same
// checkpoint (gd.LMFromCheckpoint, tf.GPTFromCheckpoint) reads it once.
func (t *LMTrainer) ResumeFrom(c *checkpoint.Checkpoint) error {
	if t.tr == nil {
		return errEvalOnly
	}
	if c == nil {
		return errors.New("train: lm: resume: nil checkpoint")
	}
	if c.Optim == nil {
		return fmt.Errorf("train: lm: checkpoint %s holds no optimiser state: it cannot be resumed", c.Dir)
	}
	if err := c.Apply(t.m.Scope(), checkpoint.LoadOptions{}); err != nil {
		return err
	}
	return t.tr.SetState(*c.Optim)
}

// ReadRun decodes, strictly, the "run" object that a checkpoint written
// with [LMConfig.Run] holds into run, and returns the key of the model's
// family in the checkpoint ("gd_lm" for gd.LM, "tf_gpt" for tf.GPT) and
// the optimiser step the checkpoint was saved at (0 when it holds no
// optimiser state): what a program needs to rebuild its run (gd.LoadLM or
// tf.LoadGPT, then NewLMTrainer and Resume) and to know whether there is
// anything left to train. It reads config.json only
// (checkpoint.ReadHeader), not the arrays.
func ReadRun(dir string, run any) (family string, step int, err error) {
	h, err := checkpoint.ReadHeader(dir)
	if err != nil {
		return "", 0, err
	}
	return DecodeRun(h, run)
}

// DecodeRun is [ReadRun] on the header of a checkpoint already read
// (checkpoint.ReadHeader, or checkpoint.Read and then Checkpoint.Header).
func DecodeRun(h *checkpoint.Header, run any) (family string, step int, err error) {
	if h == nil {
		return "", 0, errors.New("train: decode run: nil checkpoint header")
	}
	var raw json.RawMessage
	if err := h.DecodeConfig(&raw); err != nil { // verifies the config's checksum
		return "", 0, err
	}
	family, mh, err := modelfile.Peek(raw)
	if err != nil {
		return "", 0, fmt.Errorf("train: checkpoint %s: %w", h.Dir, err)
	}
	if mh.Run == nil {
		return "", 0, fmt.Errorf("train: checkpoint %s: config.json has no \"run\" object", h.Dir)
	}
	if err := modelfile.DecodeRun(mh.Run, run); err != nil {
		return "", 0, fmt.Errorf("train: checkpoint %s: config.json: key \"run\": %w", h.Dir, err)
	}
	return family, h.Step(), nil
}
