package bench

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/layers"
	"github.com/gdattn/gdattn/losses"
	"github.com/gdattn/gdattn/tf"
	"github.com/gdattn/gdattn/train"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Model names the model a [Workload] builds.
type Model string

// Models benchmarked.
const (
	ModelGD   Model = "gd"   // gd.Model (Interleaved, exact erase), Depth blocks
	ModelTF   Model = "tf"   // tf.Model, Depth layers, cross-attention with Cross
	ModelGDLM Model = "gdlm" // gd.LM, the GD language model
	ModelGPT  Model = "gpt"  // tf.GPT, the GPT-2-style baseline
)

// Task names where a [Workload]'s minibatch comes from. The timing of a step
// does not depend on the values, only on the sizes; the task generators are
// used where they exist so that the benchmarks also exercise their APIs.
type Task string

// Tasks.
const (
	TaskSynthetic Task = "synthetic" // data.NewSynthetic (Section 5.1)
	TaskQuadrant  Task = "quadrant"  // data.NewQuadrant (Appendix F)
	TaskFewShot   Task = "fewshot"   // data.NewEpisodes on random "image features" (Section 5.2)
	TaskRandom    Task = "random"    // x ~ U(-1, 1), labels uniform: any sizes (scaling sweeps)
	TaskTokens    Task = "tokens"    // uniform random token ids (language models)
)

// Workload is one benchmarked configuration: a model, its sizes and the
// minibatch it is fed. The in-context models (GD, TF) use Batch, N, D,
// DPrime, C, Depth and Cross; the language models use Batch, Vocab, Context,
// DPrime and Heads (Depth is the number of GD steps or GPT layers, default 1).
type Workload struct {
	Name  string
	Model Model
	Task  Task
	Batch int

	N, D, DPrime, C int
	// Depth is the number of GD blocks, TF layers, GD-LM steps or GPT
	// layers (0 means 1).
	Depth int
	// Cross adds the cross-attention layers to the Trained TF (and its
	// interleaved token layout): the paper's 2-layer TF.
	Cross bool
	// RegroupQuery sets tf.Config.RegroupQuery: the TF's last layer at the
	// query with its values regrouped, (Σ_i w_i z_i)·(W_V P). Only for
	// ModelTF.
	RegroupQuery bool
	// FuseEncoder sets gd.Config.FuseEncoder: the GD model's residuals
	// (α/N)(w_{e,y_i} − E_i) and its cross-entropy as one op each. Only
	// for ModelGD.
	FuseEncoder bool

	Vocab, Context, Heads int
	// Float32CrossEntropy builds a language workload's loss with
	// losses.SparseOptions.Float32: the softmax of float32 logits in
	// float32 arithmetic, as PyTorch's CPU cross_entropy computes it. Only
	// for ModelGDLM and ModelGPT; float64 runs ignore it.
	Float32CrossEntropy bool
	// FF appends the feed-forward block to the GD language model ("GD + FF"
	// of Section 5.3; gd.LMConfig.FF). Only for ModelGDLM.
	FF bool
}

// Sizes of the paper's experiments. Minibatch sizes are not given in the
// paper except where noted; the quadrant and few-shot sizes use the
// examples' default minibatch of 64.
const (
	SyntheticBatch = 512 // the paper's synthetic experiments
	QuadrantBatch  = 64
	FewShotBatch   = 64
)

// SyntheticGD is the paper's synthetic GD model with the given number of
// blocks: batch 512, N = 10, d = 10, d' = 5, C = 25, softmax kernel.
func SyntheticGD(blocks int) Workload {
	return Workload{Name: fmt.Sprintf("synthetic/gd-%d", blocks), Model: ModelGD, Task: TaskSynthetic,
		Batch: SyntheticBatch, N: 10, D: 10, DPrime: 5, C: 25, Depth: blocks}
}

// SyntheticTF is the paper's Trained TF on the synthetic task with the given
// number of layers; two or more layers add cross-attention (the paper's
// 2-layer TF interleaves self- and cross-attention like 2-step GD).
func SyntheticTF(layers int) Workload {
	return Workload{Name: fmt.Sprintf("synthetic/tf-%d", layers), Model: ModelTF, Task: TaskSynthetic,
		Batch: SyntheticBatch, N: 10, D: 10, DPrime: 5, C: 25, Depth: layers, Cross: layers > 1}
}

// Quadrant is the quadrant task of Appendix F (N = 100, d = 2, C = 20,
// d' = 5) with a 1-block GD model or a 1-layer TF.
func Quadrant(m Model) Workload {
	return Workload{Name: "quadrant/" + string(m) + "-1", Model: m, Task: TaskQuadrant,
		Batch: QuadrantBatch, N: 100, D: data.QuadrantD, DPrime: 5, C: 20, Depth: 1}
}

// FewShot is the few-shot image task of Section 5.2 (5-way 10-shot: N = 50,
// d = 512 VGG features, C = 5, d' = 4) with a 1-block GD model or a 1-layer
// TF. The features are random: the cost does not depend on them.
func FewShot(m Model) Workload {
	return Workload{Name: "fewshot/" + string(m) + "-1", Model: m, Task: TaskFewShot,
		Batch: FewShotBatch, N: 50, D: 512, DPrime: 4, C: 5, Depth: 1}
}

// LMPreset holds the sizes of a language-model workload.
type LMPreset struct {
	Name                                 string
	Vocab, Context, DPrime, Heads, Batch int
}

// LM presets. "paper" is Section 5.3: GPT-2 vocabulary (50,257 tokens plus
// the pad id), context 256, d' = 512, 8 heads; its minibatch of 4 is ours
// (the paper gives none), small enough for a benchmark: the products are
// large already at one sequence, so the achieved GFLOP/s hardly depends on
// it. "small" is a development size with the full vocabulary (context 64,
// d' = 64, 8 heads, minibatch 8).
var (
	LMSmall = LMPreset{Name: "small", Vocab: data.GPT2VocabSize, Context: 64, DPrime: 64, Heads: 8, Batch: 8}
	LMPaper = LMPreset{Name: "paper", Vocab: data.GPT2VocabSize, Context: 256, DPrime: 512, Heads: 8, Batch: 4}
)

// LM is the language workload of preset p for model ModelGDLM or ModelGPT.
func LM(m Model, p LMPreset) Workload {
	return Workload{Name: "language-" + p.Name + "/" + string(m), Model: m, Task: TaskTokens, Batch: p.Batch,
		Vocab: p.Vocab, Context: p.Context, DPrime: p.DPrime, Heads: p.Heads, Depth: 1}
}

// ICLWorkloads lists the in-context workloads at the paper's sizes, in the
// order of the results tables.
func ICLWorkloads() []Workload {
	return []Workload{
		SyntheticGD(1), SyntheticGD(2), SyntheticTF(1), SyntheticTF(2),
		Quadrant(ModelGD), Quadrant(ModelTF), FewShot(ModelGD), FewShot(ModelTF),
	}
}

// FindWorkload returns the workload named name among ICLWorkloads and the
// language workloads of both presets.
func FindWorkload(name string) (Workload, error) {
	all := ICLWorkloads()
	for _, p := range []LMPreset{LMSmall, LMPaper} {
		all = append(all, LM(ModelGDLM, p), LM(ModelGPT, p))
	}
	var names []string
	for _, w := range all {
		if w.Name == name {
			return w, nil
		}
		names = append(names, w.Name)
	}
	return Workload{}, fmt.Errorf("bench: unknown workload %q (known: %s)", name, strings.Join(names, ", "))
}

func (w Workload) depth() int {
	if w.Depth <= 0 {
		return 1
	}
	return w.Depth
}

// Language reports whether w is a language-model workload.
func (w Workload) Language() bool { return w.Model == ModelGDLM || w.Model == ModelGPT }

// String describes the sizes, e.g. "gd K=1 B=512 N=10 d=10 d'=5 C=25".
func (w Workload) String() string {
	switch w.Model {
	case ModelGD:
		s := fmt.Sprintf("gd K=%d B=%d N=%d d=%d d'=%d C=%d", w.depth(), w.Batch, w.N, w.D, w.DPrime, w.C)
		if w.FuseEncoder {
			s += " fused encoder"
		}
		return s
	case ModelTF:
		s := fmt.Sprintf("tf L=%d cross=%v B=%d N=%d d=%d d'=%d C=%d", w.depth(), w.Cross, w.Batch, w.N, w.D, w.DPrime, w.C)
		if w.RegroupQuery {
			s += " regrouped"
		}
		return s
	}
	m := string(w.Model)
	if w.FF {
		m += "+ff"
	}
	s := fmt.Sprintf("%s B=%d T=%d d'=%d heads=%d V=%d", m, w.Batch, w.Context, w.DPrime, w.Heads, w.Vocab)
	if w.Float32CrossEntropy {
		s += " float32 softmax"
	}
	return s
}

// Validate checks the sizes the workload's model needs.
func (w Workload) Validate() error {
	pos := func(names string, vs ...int) error {
		for i, v := range vs {
			if v <= 0 {
				return fmt.Errorf("bench: workload %q: %s must be > 0, got %d", w.Name, strings.Fields(names)[i], v)
			}
		}
		return nil
	}
	if w.RegroupQuery && w.Model != ModelTF {
		return fmt.Errorf("bench: workload %q: RegroupQuery is only for the Trained TF", w.Name)
	}
	if w.FuseEncoder && w.Model != ModelGD {
		return fmt.Errorf("bench: workload %q: FuseEncoder is only for the GD model", w.Name)
	}
	if w.Float32CrossEntropy && w.Model != ModelGDLM && w.Model != ModelGPT {
		return fmt.Errorf("bench: workload %q: Float32CrossEntropy is only for the language models", w.Name)
	}
	switch w.Model {
	case ModelGD, ModelTF:
		return pos("Batch N D DPrime C", w.Batch, w.N, w.D, w.DPrime, w.C)
	case ModelGDLM, ModelGPT:
		if w.FF && w.Model != ModelGDLM {
			return fmt.Errorf("bench: workload %q: FF is only for the GD language model", w.Name)
		}
		return pos("Batch Vocab Context DPrime Heads", w.Batch, w.Vocab, w.Context, w.DPrime, w.Heads)
	}
	return fmt.Errorf("bench: workload %q: unknown model %q", w.Name, w.Model)
}

// Mode says what a [Runner]'s Step does.
type Mode int

const (
	// Train is a full training step: forward, loss, backward and the Adam
	// update (train.Trainer.Step); the language workloads use AdamW with
	// clipping, [LMTrainConfig].
	Train Mode = iota
	// Infer is a forward pass to the logits on a forward-only machine
	// (graph.MachineOptions{NoGrad: true, Outputs: logits}).
	Infer
)

func (m Mode) String() string {
	if m == Infer {
		return "infer"
	}
	return "train"
}

// ParseMode parses "train" or "infer".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "train":
		return Train, nil
	case "infer":
		return Infer, nil
	}
	return 0, fmt.Errorf("bench: mode %q, want train or infer", s)
}

// Runner holds a compiled workload with one minibatch fed: Step runs it.
// The graph and its machine are built once by [NewRunner]; Step only runs
// them, so a timing of Step measures compute, not graph building.
type Runner struct {
	W     Workload
	Dtype tensor.Dtype
	Mode  Mode
	Scope *graph.Scope
	// Loss is the scalar training loss (mean cross-entropy); Logits the
	// model's logits. An Infer runner computes only Logits. A Train runner
	// of a language workload builds its loss with
	// losses.SparseSoftmaxCrossEntropyWith (Overwrite, and Float32 with
	// Workload.Float32CrossEntropy), so there Logits does not hold the
	// logits after a step.
	Loss, Logits *G.Node

	machine *graph.Machine
	trainer *train.Trainer
	feed    func() error
	// X and Y are the fed minibatch of an in-context workload (nil for
	// the language models): x (B, T, d), y (B, T) with the query label last.
	X []float64
	Y []int
	// IDs and Targets are the fed minibatch of a language workload (nil for
	// the in-context models): input ids (B, T) and next-token targets (B·T),
	// row-major.
	IDs, Targets []int
}

// LMTrainConfig is the optimiser of the language workloads: the training
// settings of examples/language (AdamW, learning rate 1e-3, betas 0.9 and
// 0.999, eps 1e-8, weight decay 0.01 on the parameters of rank >= 2 as
// nanoGPT, gradients clipped to global norm 1), with the moments in the
// parameters' dtype as torch.optim keeps them (train.Config's
// ParamDtypeMoments; examples/language keeps float64 moments unless told)
// and the learning rate held constant (the warmup-cosine schedule costs
// nothing per step).
func LMTrainConfig() train.Config {
	return train.Config{Optimizer: "adamw", LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 1e-2,
		Decay: func(_ string, shape tensor.Shape) bool { return shape.Dims() >= 2 }, ClipNorm: 1, ParamDtypeMoments: true}
}

// NewRunner builds w's model in a fresh scope of dtype dt (parameters
// initialised from seed), compiles its machine for mode, and feeds one
// minibatch drawn with seed.
func NewRunner(w Workload, dt tensor.Dtype, mode Mode, seed uint64) (r *Runner, err error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	s, err := graph.NewScope(dt, seed)
	if err != nil {
		return nil, err
	}
	r = &Runner{W: w, Dtype: dt, Mode: mode, Scope: s}
	if err := r.build(seed); err != nil {
		return nil, fmt.Errorf("bench: %s: %w", w.Name, err)
	}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	if mode == Train {
		if r.machine, err = graph.NewMachine(s, r.Loss, graph.MachineOptions{ReuseGrads: true}); err != nil {
			return nil, fmt.Errorf("bench: %s: %w", w.Name, err)
		}
		cfg := train.Config{LR: 1e-3}
		if w.Language() {
			cfg = LMTrainConfig()
		}
		if r.trainer, err = train.NewTrainer(r.machine, cfg); err != nil {
			return nil, fmt.Errorf("bench: %s: %w", w.Name, err)
		}
	} else if r.machine, err = graph.NewMachine(s, nil, graph.MachineOptions{NoGrad: true, Outputs: G.Nodes{r.Logits}}); err != nil {
		return nil, fmt.Errorf("bench: %s: %w", w.Name, err)
	}
	if err := r.feed(); err != nil {
		return nil, fmt.Errorf("bench: %s: feed: %w", w.Name, err)
	}
	return r, nil
}

// Step runs one training step (returning the loss before the update) or one
// forward pass (returning 0).
func (r *Runner) Step() (float64, error) {
	if r.trainer != nil {
		return r.trainer.Step()
	}
	return 0, r.machine.Run()
}

// LossValue runs the forward pass and returns the loss of a Train runner
// without updating the parameters (the machine also computes the
// gradients, readable with graph.GradValues).
func (r *Runner) LossValue() (float64, error) {
	if r.Mode != Train {
		return 0, errors.New("bench: LossValue needs a Train runner")
	}
	if err := r.machine.Run(); err != nil {
		return 0, err
	}
	return graph.Scalar(r.Loss)
}

// Close releases the machine.
func (r *Runner) Close() error {
	if r.machine == nil {
		return nil
	}
	return r.machine.Close()
}

func (r *Runner) build(seed uint64) error {
	w, s := r.W, r.Scope
	rng := rand.New(rand.NewPCG(seed, seed+1))
	switch w.Model {
	case ModelGD, ModelTF:
		b, err := iclBatch(w, rng, seed)
		if err != nil {
			return err
		}
		r.X, r.Y = b.X, b.Y
		var feed func([]float64, []int) error
		var target *G.Node
		if w.Model == ModelGD {
			m, err := gd.NewModel(s, gd.Config{D: w.D, DPrime: w.DPrime, C: w.C, N: w.N, Blocks: w.depth(), Kernel: layers.Softmax(1), FuseEncoder: w.FuseEncoder}, w.Batch)
			if err != nil {
				return err
			}
			r.Logits, target, feed = m.Logits, m.Target, m.Feed
			if r.Mode == Train {
				// The cross-entropy as one op with FuseEncoder, else the
				// chain of losses.CrossEntropy.
				if r.Loss, err = m.CrossEntropyLoss(); err != nil {
					return err
				}
			}
		} else {
			m, err := tf.NewModel(s, tf.Config{D: w.D, DPrime: w.DPrime, C: w.C, N: w.N, Layers: w.depth(), Cross: w.Cross, Kernel: layers.Softmax(1), RegroupQuery: w.RegroupQuery}, w.Batch)
			if err != nil {
				return err
			}
			r.Logits, target, feed = m.Logits, m.Target, m.Feed
		}
		if r.Mode == Train && r.Loss == nil {
			var err error
			if r.Loss, err = losses.CrossEntropy(r.Logits, target); err != nil {
				return err
			}
		}
		r.feed = func() error { return feed(b.X, b.Y) }
		return nil
	case ModelGDLM, ModelGPT:
		T := w.Context
		ids, targets := make([]int, w.Batch*T), make([]int, w.Batch*T)
		for i := range ids {
			ids[i] = rng.IntN(w.Vocab)
			targets[i] = rng.IntN(w.Vocab)
		}
		r.IDs, r.Targets = ids, targets
		if w.Model == ModelGDLM {
			m, err := gd.NewLM(s, gd.LMConfig{Vocab: w.Vocab, DPrime: w.DPrime, Context: T, Heads: w.Heads, Steps: w.depth(), FF: w.FF}, gd.LMOptions{Batch: w.Batch})
			if err != nil {
				return err
			}
			r.Logits = m.Logits
			if r.Loss, err = losses.SparseSoftmaxCrossEntropyWith(m.Logits, m.Targets, xentOptions(w)); err != nil {
				return err
			}
			r.feed = func() error { return m.Feed(ids, targets) }
		} else {
			m, err := tf.NewGPT(s, tf.GPTConfig{Vocab: w.Vocab, Context: T, DModel: w.DPrime, Heads: w.Heads, Layers: w.depth()}, tf.GPTOptions{Batch: w.Batch})
			if err != nil {
				return err
			}
			r.Logits = m.Logits
			if r.Loss, err = losses.SparseSoftmaxCrossEntropyWith(m.Logits, m.Targets, xentOptions(w)); err != nil {
				return err
			}
			r.feed = func() error { return m.Feed(ids, targets) }
		}
		return nil
	}
	return fmt.Errorf("unknown model %q", w.Model)
}

// xentOptions are the options of a language workload's loss.
func xentOptions(w Workload) losses.SparseOptions {
	return losses.SparseOptions{Overwrite: true, Float32: w.Float32CrossEntropy}
}

// iclBatch draws one minibatch of an in-context workload.
func iclBatch(w Workload, rng *rand.Rand, seed uint64) (*data.Batch, error) {
	switch w.Task {
	case TaskSynthetic:
		task, err := data.NewSynthetic(data.SyntheticConfig{N: w.N, D: w.D, DPrime: w.DPrime, C: w.C}, seed)
		if err != nil {
			return nil, err
		}
		return task.Sample(w.Batch, rng)
	case TaskQuadrant:
		if w.D != data.QuadrantD {
			return nil, fmt.Errorf("the quadrant task has d = %d, workload has %d", data.QuadrantD, w.D)
		}
		task, err := data.NewQuadrant(data.QuadrantConfig{N: w.N, DPrime: w.DPrime, C: w.C}, seed)
		if err != nil {
			return nil, err
		}
		return task.Sample(w.Batch, rng)
	case TaskFewShot:
		return fewShotBatch(w, rng)
	case TaskRandom, "":
		return RandomBatch(w.Batch, w.N, w.D, w.C, rng), nil
	}
	return nil, fmt.Errorf("task %q has no in-context minibatch", w.Task)
}

// fewShotBatch samples C-way episodes with N/C shots from random features
// of 2C classes (20 vectors each, N(0, 1/d) entries).
func fewShotBatch(w Workload, rng *rand.Rand) (*data.Batch, error) {
	if w.N%w.C != 0 {
		return nil, fmt.Errorf("few-shot: N = %d is not a multiple of C = %d ways", w.N, w.C)
	}
	shots := w.N / w.C
	classes, count := 2*w.C, shots+10
	f := &data.Features{Dim: w.D, MaxCount: count, Counts: make([]int, classes), X: make([]float64, classes*count*w.D)}
	for i := range f.Counts {
		f.Counts[i] = count
	}
	for i := range f.X {
		f.X[i] = rng.NormFloat64() / float64(w.D)
	}
	all := make([]int, classes)
	for i := range all {
		all[i] = i
	}
	ep, err := data.NewEpisodes(f, all, data.EpisodeConfig{Ways: w.C, Shots: shots})
	if err != nil {
		return nil, err
	}
	return ep.Sample(w.Batch, rng)
}

// RandomBatch returns B contexts of T = N+1 positions with x ~ U(-1, 1)^d
// and labels uniform on 0..C-1 (the query's included).
func RandomBatch(B, N, d, C int, rng *rand.Rand) *data.Batch {
	T := N + 1
	b := &data.Batch{B: B, T: T, D: d, C: C, X: make([]float64, B*T*d), Y: make([]int, B*T)}
	for i := range b.X {
		b.X[i] = 2*rng.Float64() - 1
	}
	for i := range b.Y {
		b.Y[i] = rng.IntN(C)
	}
	return b
}
