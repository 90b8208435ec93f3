package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/gdattn/gdattn/checkpoint"
	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/npy"
	"github.com/gdattn/gdattn/train"
	G "gorgonia.org/gorgonia"
)

// vocabExtra is the name of the checkpoint's extra array holding the kept
// GPT-2 ids of a restricted vocabulary.
const vocabExtra = "vocab/gpt_ids"

// loadData reads and tokenises the corpus of dc.
func loadData(dc dataConfig) (*data.TextData, error) {
	split, err := data.ParseSplitMode(dc.Split)
	if err != nil {
		return nil, err
	}
	stories, err := data.ReadCorpora(dc.Corpus, data.CorpusConfig{Split: split, Gutenberg: dc.Books})
	if err != nil {
		return nil, err
	}
	tok, err := data.NewGPT2Tokenizer()
	if err != nil {
		return nil, err
	}
	return data.NewTextData(stories, tok, data.TextDataConfig{
		Seed: dc.Seed, ValidFrac: dc.ValidFrac, TestFrac: dc.TestFrac, Restrict: dc.Restrict, MinCount: dc.MinCount,
	})
}

// trainer is a training run in progress.
type trainer struct {
	rc    runConfig
	ds    *data.TextData
	m     *model
	train *graph.Machine
	eval  *graph.Machine
	tr    *train.Trainer
	dev   *placement
	out   string
	log   io.Writer
	// stopAfter, when positive, ends run after that many steps (as if the
	// process were killed there) without the final checkpoint: the resume
	// tests use it.
	stopAfter int
}

// newTrainer builds the model, its machines and the AdamW trainer; with a
// non-nil checkpoint it restores the parameters and the optimiser state.
// dev nil means the CPU.
func newTrainer(rc runConfig, ds *data.TextData, ckpt *checkpoint.Checkpoint, out string, dev *placement, log io.Writer) (*trainer, error) {
	if log == nil {
		log = io.Discard
	}
	m, err := buildModel(rc, rc.Train.Batch, false)
	if err != nil {
		return nil, err
	}
	t := &trainer{rc: rc, ds: ds, m: m, dev: dev, out: out, log: log}
	if t.train, err = graph.NewMachine(m.Scope(), m.loss, dev.options(graph.MachineOptions{}, true)); err != nil {
		return nil, err
	}
	if t.eval, err = graph.NewMachine(m.Scope(), nil, dev.options(graph.MachineOptions{NoGrad: true, Outputs: G.Nodes{m.loss}}, false)); err != nil {
		return nil, err
	}
	ts := rc.Train
	t.tr, err = train.NewTrainer(t.train, train.Config{
		Optimizer: "adamw", Schedule: train.WarmupCosine(ts.LR, ts.Warmup, ts.Steps, ts.MinLR),
		WeightDecay: ts.WeightDecay, Decay: decayMatrices, ClipNorm: ts.Clip,
		Progress: log, ProgressEvery: max(1, min(50, ts.Steps/10)), Total: ts.Steps, Label: rc.Model,
	})
	if err != nil {
		return nil, err
	}
	if ckpt != nil {
		if err := ckpt.Apply(m.Scope(), checkpoint.LoadOptions{}); err != nil {
			return nil, err
		}
		if ckpt.Optim == nil {
			return nil, fmt.Errorf("checkpoint %s holds no optimiser state: it cannot be resumed", ckpt.Dir)
		}
		if err := t.tr.SetState(*ckpt.Optim); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func (t *trainer) close() {
	t.train.Close()
	t.eval.Close()
}

// batch returns the inputs and targets of training step step (0-based):
// Batch random windows of T+1 ids, a function of (seed, step) only.
func (t *trainer) batch(step int) (ids, targets []int, err error) {
	T, B := t.m.context, t.rc.Train.Batch
	w, err := data.SampleWindows(t.ds.TrainStream, B, T+1, t.rc.Seed, step)
	if err != nil {
		return nil, nil, err
	}
	ids, targets = make([]int, 0, B*T), make([]int, 0, B*T)
	for b := 0; b < B; b++ {
		row := w[b*(T+1) : (b+1)*(T+1)]
		ids = append(ids, row[:T]...)
		targets = append(targets, row[1:]...)
	}
	return ids, targets, nil
}

// run trains up to rc.Train.Steps, checkpointing every CkptEvery steps and
// at the end, and printing the validation loss every EvalEvery steps.
func (t *trainer) run() error {
	ts := t.rc.Train
	start := time.Now()
	first := t.tr.StepCount()
	for step := first; step < ts.Steps; step++ {
		ids, targets, err := t.batch(step)
		if err != nil {
			return err
		}
		if err := t.m.Feed(ids, targets); err != nil {
			return err
		}
		if _, err := t.tr.Step(); err != nil {
			return err
		}
		n := step + 1
		if ts.EvalEvery > 0 && (n%ts.EvalEvery == 0 || n == ts.Steps) {
			vl, err := t.validLoss()
			if err != nil {
				return err
			}
			fmt.Fprintf(t.log, "%s step %d/%d: validation loss %.4f (perplexity %.1f), %.1f min\n",
				t.rc.Model, n, ts.Steps, vl, math.Exp(vl), time.Since(start).Minutes())
		}
		if t.out != "" && ((ts.CkptEvery > 0 && n%ts.CkptEvery == 0) || n == ts.Steps) {
			if err := t.save(); err != nil {
				return err
			}
		}
		if n == t.stopAfter {
			return nil
		}
	}
	if first < ts.Steps {
		fmt.Fprintf(t.log, "%s: trained steps %d..%d in %.1f min (%.2f s/step)\n", t.rc.Model, first+1, ts.Steps,
			time.Since(start).Minutes(), time.Since(start).Seconds()/float64(ts.Steps-first))
	}
	return nil
}

// save writes the parameters, the optimiser state and the vocabulary
// (Trainer.Save syncs device-resident parameters first).
func (t *trainer) save() error {
	var extra map[string]*npy.Array
	if ids := t.ds.Codec.Vocab.GPTIDs(); ids != nil {
		a := &npy.Array{Shape: []int{len(ids)}, Dtype: npy.Int64}
		for _, id := range ids {
			a.I64 = append(a.I64, int64(id))
		}
		extra = map[string]*npy.Array{vocabExtra: a}
	}
	return t.tr.Save(t.out, t.rc, extra)
}

// validLoss is the mean loss over the first EvalBatches batches of
// consecutive validation windows.
func (t *trainer) validLoss() (float64, error) {
	if err := t.tr.SyncParams(); err != nil {
		return 0, err
	}
	nll, n, err := scoreWindows(t.m, t.eval, t.ds.ValidStream, t.ds.Codec.Vocab.Pad, t.rc.Train.EvalBatches)
	if err != nil {
		return 0, err
	}
	return nll / float64(n), nil
}

// scoreWindows returns the summed NLL and the number of scored ids of the
// stream's consecutive windows (at most maxBatches batches; 0: all).
func scoreWindows(m *model, mc *graph.Machine, stream []int, pad, maxBatches int) (float64, int, error) {
	ws, err := data.StreamWindows(stream, m.context, pad)
	if err != nil {
		return 0, 0, err
	}
	if maxBatches > 0 && len(ws) > maxBatches*m.batch {
		ws = ws[:maxBatches*m.batch]
	}
	return scoreRows(m, mc, ws, pad)
}

// scoreRows runs the training graph forward on windows, a batch at a time,
// and returns the summed NLL of their targets and how many there were.
func scoreRows(m *model, mc *graph.Machine, ws []data.Window, pad int) (float64, int, error) {
	T, B := m.context, m.batch
	total, count := 0.0, 0
	for lo := 0; lo < len(ws); lo += B {
		ids := make([]int, 0, B*T)
		targets := make([]int, 0, B*T)
		n := 0
		for b := 0; b < B; b++ {
			if lo+b < len(ws) {
				ids = append(ids, ws[lo+b].Inputs...)
				targets = append(targets, ws[lo+b].Targets...)
				continue
			}
			for j := 0; j < T; j++ {
				ids = append(ids, pad)
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
		if err := m.Feed(ids, targets); err != nil {
			return 0, 0, err
		}
		if err := mc.Run(); err != nil {
			return 0, 0, err
		}
		l, err := graph.Scalar(m.loss)
		if err != nil {
			return 0, 0, err
		}
		total += l * float64(n)
		count += n
	}
	if count == 0 {
		return 0, 0, errors.New("no token to score")
	}
	return total, count, nil
}

// checkVocab verifies that the data's vocabulary is the one a checkpoint
// was trained with.
func checkVocab(c *checkpoint.Checkpoint, v *data.Vocab) error {
	a, ok := c.Extra[vocabExtra]
	if !ok {
		if v.Restricted() {
			return fmt.Errorf("checkpoint %s has no restricted vocabulary, the data has one", c.Dir)
		}
		return nil
	}
	ids := make([]int, len(a.I64))
	for i, x := range a.I64 {
		ids[i] = int(x)
	}
	if !slices.Equal(ids, v.GPTIDs()) {
		return fmt.Errorf("checkpoint %s was trained with another vocabulary than this corpus gives (was the corpus changed?)", c.Dir)
	}
	return nil
}

// readRun reads a checkpoint and its run config.
func readRun(dir string) (*checkpoint.Checkpoint, runConfig, error) {
	var rc runConfig
	c, err := checkpoint.Read(dir)
	if err != nil {
		return nil, rc, err
	}
	if err := c.DecodeConfig(&rc); err != nil {
		return nil, rc, err
	}
	if rc.GD == nil && rc.GPT == nil {
		return nil, rc, fmt.Errorf("checkpoint %s: config.json holds no language-model config", dir)
	}
	return c, rc, nil
}

// vocabOf rebuilds the vocabulary stored in a checkpoint.
func vocabOf(c *checkpoint.Checkpoint) (*data.Vocab, error) {
	a, ok := c.Extra[vocabExtra]
	if !ok {
		return data.FullVocab(), nil
	}
	ids := make([]int, len(a.I64))
	for i, x := range a.I64 {
		ids[i] = int(x)
	}
	return data.VocabFromGPTIDs(ids)
}
