// Command synthetic trains K-block GD attention models on the paper's
// synthetic in-context classification task (Appendix D: C=25 categories,
// d'=5, d=10) and reports top-1 accuracy, NLL and the oracle on fresh test
// contexts. It saves the trained model as a checkpoint, and evaluates a
// checkpoint on contexts given as .npy files.
//
//	go run ./examples/synthetic                       # 1 block, softmax kernel, L=2048, N=10
//	go run ./examples/synthetic -blocks 1,2,3 -seeds 5 # the README table
//	go run ./examples/synthetic -eval ckpt -x x.npy -y y.npy -probs p.npy
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
)

func main() {
	var o options
	flag.StringVar(&o.blocks, "blocks", "1", "comma-separated numbers of GD blocks (steps) to train, e.g. 1,2,3")
	flag.StringVar(&o.kernel, "kernel", "softmax", "update kernel: linear, rbf, exp, laplacian or softmax")
	flag.IntVar(&o.L, "L", 2048, "number of training contexts")
	flag.IntVar(&o.M, "M", 2048, "number of test contexts")
	flag.IntVar(&o.N, "N", 10, "context size (examples per context)")
	flag.IntVar(&o.epochs, "epochs", 60, "training epochs")
	flag.IntVar(&o.batch, "batch", 64, "contexts per minibatch")
	flag.Float64Var(&o.lr, "lr", 1e-2, "Adam learning rate")
	flag.IntVar(&o.seeds, "seeds", 1, "number of model seeds (seed, seed+1, ...); mean ± std is reported")
	flag.Uint64Var(&o.seed, "seed", 1, "first model seed (initialisation and minibatch order)")
	flag.Uint64Var(&o.dataSeed, "data-seed", 1, "seed of the task (W_e) and of the train/test contexts")
	flag.StringVar(&o.dtype, "dtype", "float64", "float32 or float64")
	flag.StringVar(&o.out, "out", "checkpoints/synthetic", "directory for checkpoints (one per blocks/seed); empty: none")
	flag.StringVar(&o.evalDir, "eval", "", "evaluate this checkpoint instead of training (needs -x and -y)")
	flag.StringVar(&o.xPath, "x", "", "with -eval: contexts x, .npy float64 (B, N+1, d)")
	flag.StringVar(&o.yPath, "y", "", "with -eval: labels y, .npy int64 (B, N+1); the last label may be -1")
	flag.StringVar(&o.probsPath, "probs", "probs.npy", "with -eval: where to write the query probabilities (B, C)")
	flag.BoolVar(&o.quiet, "quiet", false, "no progress output")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: synthetic [flags]\n\nTrains GD attention models on the synthetic task of Appendix D, or evaluates a checkpoint.\n\nFlags:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	var err error
	if o.evalDir != "" {
		err = evalCheckpoint(o)
	} else {
		err = train(o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "synthetic:", err)
		os.Exit(1)
	}
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("-blocks %q: want positive integers separated by commas", s)
		}
		out = append(out, v)
	}
	return out, nil
}
