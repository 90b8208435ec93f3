package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/examples/internal/icl"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph"
)

type options struct {
	blocks, kernel, dtype, out, evalDir, xPath, yPath, probsPath string
	L, M, N, epochs, batch, seeds                                int
	lr                                                           float64
	seed, dataSeed                                               uint64
	quiet                                                        bool
}

// savedConfig is what config.json of a checkpoint holds.
type savedConfig struct {
	Model gd.Config `json:"model"`
	Dtype string    `json:"dtype"`
	Task  struct {
		Seed uint64 `json:"seed"`
	} `json:"task"`
}

func train(o options) error {
	blocks, err := parseInts(o.blocks)
	if err != nil {
		return err
	}
	dt, err := graph.ParseDtype(o.dtype)
	if err != nil {
		return err
	}
	if o.L <= 0 || o.M <= 0 || o.N <= 0 || o.epochs <= 0 || o.batch <= 0 || o.seeds <= 0 {
		return fmt.Errorf("-L, -M, -N, -epochs, -batch and -seeds must be positive")
	}
	cfg := data.DefaultSyntheticConfig()
	cfg.N = o.N
	task, err := data.NewSynthetic(cfg, o.dataSeed)
	if err != nil {
		return err
	}
	trainSet, err := task.Sample(o.L, rand.New(rand.NewPCG(o.dataSeed, 1)))
	if err != nil {
		return err
	}
	testSet, err := task.Sample(o.M, rand.New(rand.NewPCG(o.dataSeed, 2)))
	if err != nil {
		return err
	}
	var progress io.Writer = os.Stderr
	if o.quiet {
		progress = nil
	}
	fmt.Printf("synthetic task: C=%d d'=%d d=%d N=%d, L=%d train / M=%d test contexts, kernel %s, %s\n",
		cfg.C, cfg.DPrime, cfg.D, cfg.N, o.L, o.M, o.kernel, o.dtype)
	for _, K := range blocks {
		var top1, nll []float64
		var oracle float64
		for s := 0; s < o.seeds; s++ {
			seed := o.seed + uint64(s)
			mc := gd.Config{D: cfg.D, DPrime: cfg.DPrime, C: cfg.C, N: cfg.N, Blocks: K, Kernel: o.kernel}
			scope, err := graph.NewScope(dt, seed)
			if err != nil {
				return err
			}
			m, err := gd.NewModel(scope, mc, o.batch)
			if err != nil {
				return err
			}
			tc := icl.TrainConfig{Epochs: o.epochs, LR: o.lr, Seed: seed, Progress: progress,
				Label: fmt.Sprintf("K=%d seed=%d", K, seed)}
			r, err := icl.NewRunner(icl.Model{Scope: scope, Batch: o.batch, Feed: m.Feed, Logits: m.Logits, Target: m.Target},
				tc, icl.Steps(o.L, o.batch, o.epochs))
			if err != nil {
				return err
			}
			if err := r.Train(trainSet, tc); err != nil {
				r.Close()
				return err
			}
			met, err := r.Evaluate(testSet)
			r.Close()
			if err != nil {
				return err
			}
			fmt.Printf("blocks %d seed %d: %v\n", K, seed, met)
			top1, nll, oracle = append(top1, met.Top1), append(nll, met.NLL), met.Oracle
			if o.out != "" {
				dir := filepath.Join(o.out, fmt.Sprintf("blocks%d-seed%d", K, seed))
				sc := savedConfig{Model: m.Cfg, Dtype: o.dtype}
				sc.Task.Seed = o.dataSeed
				if err := graph.SaveCheckpoint(dir, scope, sc, graph.SaveOptions{}); err != nil {
					return err
				}
			}
		}
		mt, st := icl.MeanStd(top1)
		mn, sn := icl.MeanStd(nll)
		fmt.Printf("== blocks %d (%d seeds): top-1 %.3f ± %.3f  NLL %.3f ± %.3f  oracle %.3f\n", K, o.seeds, mt, st, mn, sn, oracle)
	}
	return nil
}
