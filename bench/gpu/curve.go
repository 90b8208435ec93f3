package main

import (
	"fmt"
	"time"

	"github.com/gdattn/gdattn/bench"
	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/cuda"
	"github.com/gdattn/gdattn/internal/cli"
	"github.com/gdattn/gdattn/losses"
	"github.com/gdattn/gdattn/tf"
	"github.com/gdattn/gdattn/train"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// curveSetup is the first line of "gpu curve".
type curveSetup struct {
	Kind       string  `json:"kind"` // "curve_setup"
	Device     string  `json:"device"`
	Model      string  `json:"model"`
	Preset     string  `json:"preset"`
	Sizes      string  `json:"sizes"`
	Corpus     string  `json:"corpus"`
	Tokens     int     `json:"train_tokens"`
	Params     int     `json:"params"`
	BuildS     float64 `json:"build_s"`
	BudgetS    float64 `json:"budget_s"`
	Optimizer  string  `json:"optimizer"`
	Seed       uint64  `json:"seed"`
	DataSource string  `json:"data"`
}

// curvePoint is one training step of "gpu curve".
type curvePoint struct {
	Kind     string  `json:"kind"` // "curve"
	Device   string  `json:"device"`
	Step     int     `json:"step"`
	Loss     float64 `json:"loss"`
	StepMS   float64 `json:"step_ms"`
	ElapsedS float64 `json:"elapsed_s"`
}

// cmdCurve trains the language model (-model gd: gd.LM, or gpt: tf.GPT) at
// the sizes of a bench preset (paper: GPT-2 vocabulary, d' = 512, context
// 256, 8 heads) on windows of a corpus (the training split of
// data.NewTextData, seeded windows per step as examples/language draws
// them), float32, with bench.LMTrainConfig (AdamW, constant learning rate
// 1e-3, clipping at 1), for as many steps as fit in -budget (or -max-steps),
// printing every step's loss. The same command on the CPU gives the curve
// to compare: same seed, same minibatches.
func cmdCurve(args []string, out *jsonLines) error {
	fs := cli.NewFlagSet("curve")
	dev := fs.String("device", "cuda", "where it trains: cuda, emulator or cpu")
	corpus := fs.String("corpus", "", "plain-text corpus (e.g. TinyStories), cut into stories by data.ReadCorpus")
	model := fs.String("model", "gd", "gd (the GD language model) or gpt")
	preset := fs.String("preset", "paper", "sizes: paper or small (bench.LMPaper, bench.LMSmall)")
	batch := fs.Int("batch", 8, "sequences per step, 1..4096 (8: examples/language's paper preset)")
	budget := fs.Duration("budget", 2*time.Minute, "training time budget (building the model not counted), > 0")
	maxSteps := fs.Int("max-steps", 0, "stop after this many steps, 0..1000000 (0: only the budget)")
	seed := fs.Uint64("seed", 1, "initialisation and minibatch seed")
	if err := parseFlags(fs, args, "A language model trained for a time budget on a device; one JSON line per step.", cli.Rules{
		"device": cli.OneOf(deviceNames...), "corpus": cli.NonEmpty, "model": cli.OneOf("gd", "gpt"),
		"preset": cli.OneOf("paper", "small"), "batch": cli.IntIn(1, 4096), "budget": cli.Positive,
		"max-steps": cli.IntIn(0, 1000000), "seed": cli.Any,
	}); err != nil {
		return err
	}
	p := bench.LMPaper
	if *preset == "small" {
		p = bench.LMSmall
	}
	stories, err := data.ReadCorpus(*corpus, data.CorpusConfig{})
	if err != nil {
		return cli.Usage(fmt.Errorf("-corpus: %w", err))
	}
	tok, err := data.NewGPT2Tokenizer()
	if err != nil {
		return err
	}
	td, err := data.NewTextData(stories, tok, data.TextDataConfig{Seed: 1})
	if err != nil {
		return err
	}
	be, name, closeDevice, err := useDevice(*dev)
	if err != nil {
		return err
	}
	defer closeDevice()
	T, V := p.Context, td.Codec.Vocab.Size()
	t0 := time.Now()
	s, err := graph.NewScope(tensor.Float32, *seed)
	if err != nil {
		return err
	}
	var logits, targets *G.Node
	var feed func(ids, targets []int) error
	switch *model {
	case "gd":
		m, err := gd.NewLM(s, gd.LMConfig{Vocab: V, DPrime: p.DPrime, Context: T, Heads: p.Heads}, gd.LMOptions{Batch: *batch})
		if err != nil {
			return err
		}
		logits, targets, feed = m.Logits, m.Targets, m.Feed
	default:
		m, err := tf.NewGPT(s, tf.GPTConfig{Vocab: V, Context: T, DModel: p.DPrime, Heads: p.Heads}, tf.GPTOptions{Batch: *batch})
		if err != nil {
			return err
		}
		logits, targets, feed = m.Logits, m.Targets, m.Feed
	}
	loss, err := losses.SparseSoftmaxCrossEntropy(logits, targets)
	if err != nil {
		return err
	}
	opts := graph.MachineOptions{}
	if be != nil {
		opts.Executor = cuda.NewExecutorWith(be, cuda.ExecOptions{ResidentParams: true, DeviceGrads: true, Logf: discardf})
	}
	mach, err := graph.NewMachine(s, loss, opts)
	if err != nil {
		return err
	}
	defer mach.Close()
	tr, err := train.NewTrainer(mach, bench.LMTrainConfig())
	if err != nil {
		return err
	}
	params := 0
	for _, n := range mach.Params() {
		params += n.Shape().TotalSize()
	}
	sizes := fmt.Sprintf("%s B=%d T=%d d'=%d heads=%d V=%d", *model, *batch, T, p.DPrime, p.Heads, V)
	if err := out.emit(curveSetup{Kind: "curve_setup", Device: name, Model: *model, Preset: *preset, Sizes: sizes, Corpus: *corpus,
		Tokens: len(td.TrainStream), Params: params, BuildS: time.Since(t0).Seconds(), BudgetS: budget.Seconds(),
		Optimizer: "AdamW lr 1e-3 (constant), betas 0.9/0.999, weight decay 0.01 on matrices, clip 1 (bench.LMTrainConfig)", Seed: *seed,
		DataSource: "data.SampleWindows of the training split (data.NewTextData seed 1), one draw per step"},
		fmt.Sprintf("curve: %s on %s, %d parameters, built in %.1f s", sizes, name, params, time.Since(t0).Seconds())); err != nil {
		return err
	}
	ids, tgt := make([]int, *batch*T), make([]int, *batch*T)
	start := time.Now()
	last := time.Duration(0)
	for step := 1; *maxSteps == 0 || step <= *maxSteps; step++ {
		if el := time.Since(start); step > 1 && el+last > *budget {
			break
		}
		win, err := data.SampleWindows(td.TrainStream, *batch, T+1, *seed, step)
		if err != nil {
			return err
		}
		for b := 0; b < *batch; b++ {
			w := win[b*(T+1) : (b+1)*(T+1)]
			copy(ids[b*T:], w[:T])
			copy(tgt[b*T:], w[1:])
		}
		if err := feed(ids, tgt); err != nil {
			return err
		}
		s0 := time.Now()
		l, err := tr.Step()
		if err != nil {
			return fmt.Errorf("step %d: %w", step, err)
		}
		last = time.Since(s0)
		if err := out.emit(curvePoint{Kind: "curve", Device: name, Step: step, Loss: l, StepMS: ms(last), ElapsedS: time.Since(start).Seconds()},
			fmt.Sprintf("curve step %d loss %.4f (%.1f ms, %.1f s)", step, l, ms(last), time.Since(start).Seconds())); err != nil {
			return err
		}
	}
	return nil
}
