package language

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gdattn/gdattn/experiment"
	"github.com/gdattn/gdattn/internal/cli"
	"github.com/gdattn/gdattn/train"
)

// corpusStats describes the data of a run: the corpus, its split and the
// vocabulary.
type corpusStats struct {
	Stories     int `json:"stories"`
	Tokens      int `json:"tokens"`
	Train       int `json:"train_stories"`
	Valid       int `json:"valid_stories"`
	Test        int `json:"test_stories"`
	Vocab       int `json:"vocab"`
	TrainTokens int `json:"train_tokens"`
	UnkHeld     int `json:"unknown_held_out"`
}

// runOutput is the result of a run of the plan: what a rerun reproduces
// exactly (no timings; the store keeps the run's time beside it).
type runOutput struct {
	Data   corpusStats `json:"data"`
	Report *report     `json:"report"`
	// Sample is the sampled continuation of sampleConfig's prompt.
	Sample string `json:"sample"`
}

// rates are the measured costs of training, in training tokens (steps ×
// batch × context) per second of CPU time (user + system, GOMAXPROCS=1),
// per preset and model, on TinyStories; the machine was shared with other
// jobs. small: whole runs of "language train -preset small" and of the
// plan's runs 0-2 (1,536,000 tokens; data, training and the evaluation
// included; the mean of two runs each: GD 94 and 97 s, GD + FF 115 and
// 102 s, GPT 173 and 137 s). paper:
// the difference between "train -preset paper -no-eval" runs of 3 steps and
// of 1 step (4,096 tokens of training; the periodic validation and the
// final evaluation are not included). tiny: not measured (no estimate).
var rates = map[string]map[string]float64{
	"small": {"gd": 16100, "gdff": 14100, "gpt": 9920},
	"paper": {"gd": 379, "gdff": 307, "gpt": 456},
}

// combinedFactor is the cost of a small run on TinyStories + Gutenberg
// (vocabulary 7,964 ids) over the same run on TinyStories (3,237 ids),
// measured on GD (the plan's run 8: 206 s of CPU, against 95 s).
const combinedFactor = 2.16

// estimate is the CPU time of run k in seconds, from the measured rates.
func estimate(k RunKey) float64 {
	r := rates[k.Preset][k.Model]
	if r == 0 {
		return 0
	}
	sec := float64(k.Train.Steps*k.Train.Batch*k.Sizes.Context) / r
	if k.Corpus != "tinystories" && k.Sizes.Restrict {
		sec *= combinedFactor // a larger restricted vocabulary; the paper's is the full one on both corpora
	}
	return sec
}

// runOne trains, evaluates and samples the run k, printing its report (as
// "language train" prints it) to stdout.
func (sw *Sweep) runOne(k RunKey, stdout, log io.Writer) (*runOutput, error) {
	rc, err := k.runConfig(sw.o)
	if err != nil {
		return nil, err
	}
	ds, err := loadData(rc.Data)
	if err != nil {
		return nil, err
	}
	rc.Vocab = ds.Codec.Vocab.Size()
	kernel := k.Kernel
	if kernel == "" {
		kernel = "softmax" // not used by gpt
	}
	p := presets[k.Preset]
	p.D, p.Context, p.Heads = k.Sizes.D, k.Sizes.Context, k.Sizes.Heads
	if err := modelConfigs(&rc, p, kernel, k.DiagP); err != nil {
		return nil, err
	}
	if err := checkSizes(rc); err != nil {
		return nil, err
	}
	m, err := buildModel(rc, rc.Train.Batch, false)
	if err != nil {
		return nil, err
	}
	dev, err := openDevice(sw.o.Device, log)
	if err != nil {
		return nil, err
	}
	defer dev.close()
	ckpt := ""
	if sw.o.Ckpt != "" {
		key, err := experiment.Key(k)
		if err != nil {
			return nil, err
		}
		ckpt = filepath.Join(sw.o.Ckpt, strings.ReplaceAll(k.label(), " ", "-")+"-"+strings.TrimSuffix(experiment.FileName(key), ".json")[:8])
	}
	t, err := fit(rc, ds, m, nil, ckpt, dev, log)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	dec := k.Eval.Decode.config()
	r, err := evaluate(rc, ds, t, evalOptions{Stories: k.Eval.Stories, Decode: dec, GenBatch: k.Eval.GenBatch, Examples: k.Eval.Examples}, log)
	if err != nil {
		return nil, err
	}
	r.print(stdout, WithDefaults(dec))
	out := &runOutput{Report: r, Data: corpusStats{Stories: ds.NumStories, Tokens: ds.NumToks, Train: len(ds.Train),
		Valid: len(ds.Valid), Test: len(ds.Test), Vocab: rc.Vocab, TrainTokens: len(ds.TrainStream), UnkHeld: ds.UnkHeld}}
	if out.Sample, err = sample(t.Model().(lm), k.Sample); err != nil {
		return nil, err
	}
	fmt.Fprintf(stdout, "\nSAMPLE (%s): %s%s\n", describe(k.Sample.Decode.config()), k.Sample.Prompt, out.Sample)
	return out, nil
}

// sample continues s.Prompt with the trained model src, as "language
// generate" does with its checkpoint (prompt tokens outside a restricted
// vocabulary map to <|unk|>).
func sample(src lm, s sampleKey) (string, error) {
	m, err := rebuild(src, 1, true)
	if err != nil {
		return "", err
	}
	codec := m.TextCodec()
	ids, err := codec.Encode(s.Prompt)
	if err != nil {
		return "", err
	}
	g, err := train.NewGenerator(m)
	if err != nil {
		return "", err
	}
	defer g.Close()
	outs, err := g.Generate([][]int{ids}, train.TextDecodeConfig(codec, s.Decode.config()))
	if err != nil {
		return "", err
	}
	return codec.Decode(outs[0])
}

// Run does what the experiment flags ask: print the plan, submit it to
// Slurm, run a part of it (-index, -shard), merge the runs done into the
// tables (-merge), or, by default, run every run without a result and
// merge. fs is the command's flag set (for the workers' command line).
func (sw *Sweep) Run(exp experiment.Flags, fs *flag.FlagSet, stdout io.Writer) error {
	start := time.Now()
	store, err := experiment.OpenStore(sw.o.Results)
	if err != nil {
		return err
	}
	log := io.Writer(os.Stderr)
	if sw.o.Quiet {
		log = io.Discard
	}
	switch {
	case exp.Plan, exp.PlanJSON:
		return experiment.WritePlan(stdout, sw.Plan, store, exp.PlanJSON)
	case exp.Submit != "":
		_, err := experiment.Submit(stdout, sw.Plan, store, fs, exp.Slurm)
		return err
	}
	if !exp.Merge {
		indices, err := exp.Indices(len(sw.Plan.Runs))
		if err != nil {
			return err
		}
		if err := sw.checkInputs(indices); err != nil {
			return err
		}
		err = experiment.Execute(sw.Plan, store, indices, func(i int, r experiment.Run) (any, error) {
			fmt.Fprintf(stdout, "== run %d: %s\n", i, r.Label)
			return sw.runOne(sw.Keys[i], stdout, log)
		}, log)
		if err != nil || exp.Worker() {
			return err
		}
	}
	rep, err := experiment.Collect(sw.Plan, store)
	if err != nil {
		return err
	}
	if exp.Merge {
		rep.WriteStatus(stdout)
	}
	if err := rep.Check(exp.Partial); err != nil {
		return err
	}
	if err := sw.merge(rep, stdout); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "done in %.0f s; results in %s\n", time.Since(start).Seconds(), sw.o.Results)
	return nil
}

// checkInputs checks, before any work, that the corpora of the runs at
// indices can be read: a usage error naming the flag.
func (sw *Sweep) checkInputs(indices []int) error {
	if fi, err := os.Stat(sw.o.TinyStories); err != nil || !fi.Mode().IsRegular() {
		if err == nil {
			err = fmt.Errorf("%s is not a regular file", sw.o.TinyStories)
		}
		return cli.Usagef("-tinystories: %v", err)
	}
	for _, i := range indices {
		if _, err := sw.Keys[i].runConfig(sw.o); err != nil { // the Gutenberg books, where the run reads them
			return err
		}
	}
	return nil
}

// outputs decodes the outputs of the runs done, in plan order, with their
// keys and CPU... seconds.
func (sw *Sweep) outputs(rep *experiment.Report) ([]RunKey, []runOutput, []float64, error) {
	var ks []RunKey
	var outs []runOutput
	var secs []float64
	for i, r := range rep.Plan.Runs {
		res, ok := rep.Get(r.Key)
		if !ok {
			continue
		}
		var o runOutput
		if err := json.Unmarshal(res.Output, &o); err != nil || o.Report == nil {
			if err == nil {
				err = fmt.Errorf("no report")
			}
			return nil, nil, nil, fmt.Errorf("result of %s (%s): %w", r.Label, res.Source, err)
		}
		ks, outs, secs = append(ks, sw.Keys[i]), append(outs, o), append(secs, res.Seconds)
	}
	return ks, outs, secs, nil
}
