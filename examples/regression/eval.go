package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph/npy"
	"github.com/gdattn/gdattn/internal/cli"
	"github.com/gdattn/gdattn/train"
)

// defaultPred is -pred's default, under results/ as synthetic's -probs.
var defaultPred = filepath.Join("results", "regression", "pred.npy")

// evalInputs are what -eval reads, checked before any work.
type evalInputs struct {
	cfg gd.Config
	b   *data.Batch
	yq  []float64 // the query rows of -y (B, d_y); nil if any is not finite
}

// readEvalInputs reads the checkpoint's config (a GD model with the Gaussian
// likelihood, sizes within this command's limits) and the -x/-y contexts
// (float64 (B, N+1, d) and (B, N+1, d_y); the query's y is ignored).
func readEvalInputs(o options) (*evalInputs, error) {
	cfg, _, err := gd.LoadConfig(o.evalDir)
	if err != nil {
		return nil, err
	}
	file := filepath.Join(o.evalDir, "config.json")
	if cfg.LikelihoodName() != gd.LikelihoodGaussian {
		return nil, fmt.Errorf("%s: the model's likelihood is %q, want \"gaussian\" (categorical checkpoints: examples/synthetic -eval)", file, cfg.LikelihoodName())
	}
	if err := cli.InFile(file,
		cli.Check("gd.d", cfg.D, cli.IntIn(1, maxD)), cli.Check("gd.d_prime", cfg.DPrime, cli.IntIn(1, maxD)),
		cli.Check("gd.n", cfg.N, cli.IntIn(1, maxN)), cli.Check("gd.blocks", cfg.Blocks, cli.IntIn(1, 64)),
		cli.Check("gd.heads", cfg.Heads, cli.IntIn(1, 64))); err != nil {
		return nil, err
	}
	// Only regular files are read (npy.ReadFileLimit opens them through
	// internal/infile: a device or a FIFO is refused at once), of at most
	// data.MaxElements values.
	xa, err := npy.ReadFileLimit(o.xPath, data.MaxElements)
	if err != nil {
		return nil, fmt.Errorf("-x: %w", err)
	}
	ya, err := npy.ReadFileLimit(o.yPath, data.MaxElements)
	if err != nil {
		return nil, fmt.Errorf("-y: %w", err)
	}
	T := cfg.N + 1
	switch {
	case xa.Dtype != npy.Float64:
		return nil, fmt.Errorf("-x %s: dtype %s, want float64", o.xPath, xa.Dtype)
	case ya.Dtype != npy.Float64:
		return nil, fmt.Errorf("-y %s: dtype %s, want float64", o.yPath, ya.Dtype)
	case len(xa.Shape) != 3 || xa.Shape[1] != T || xa.Shape[2] != cfg.D:
		return nil, fmt.Errorf("-x %s: shape %v, want (B, %d, %d) for this checkpoint", o.xPath, xa.Shape, T, cfg.D)
	case xa.Shape[0] == 0:
		return nil, fmt.Errorf("-x %s: no contexts", o.xPath)
	case len(ya.Shape) != 3 || ya.Shape[0] != xa.Shape[0] || ya.Shape[1] != T || ya.Shape[2] != cfg.DPrime:
		return nil, fmt.Errorf("-y %s: shape %v, want (%d, %d, %d) to match -x and the checkpoint's d_y", o.yPath, ya.Shape, xa.Shape[0], T, cfg.DPrime)
	}
	B, dy := xa.Shape[0], cfg.DPrime
	r := append([]float64(nil), ya.F64...)
	yq := make([]float64, 0, B*dy)
	for i := 0; i < B; i++ {
		for c := 0; c < dy; c++ {
			v := &r[(i*T+T-1)*dy+c]
			if yq != nil && !math.IsNaN(*v) && !math.IsInf(*v, 0) {
				yq = append(yq, *v)
			} else {
				yq = nil // an unknown query target: no MSE
			}
			*v = 0 // the query's row is ignored by the model: any value, NaN and ±Inf included
		}
	}
	b := &data.Batch{B: B, T: T, D: cfg.D, DY: dy, X: xa.F64, R: r}
	if o.bayesPath != "" {
		ba, err := npy.ReadFileLimit(o.bayesPath, data.MaxElements)
		if err != nil {
			return nil, fmt.Errorf("-bayes: %w", err)
		}
		if ba.Dtype != npy.Float64 || len(ba.Shape) != 1 || ba.Shape[0] != B {
			return nil, fmt.Errorf("-bayes %s: %s %v, want float64 (%d) to match -x", o.bayesPath, ba.Dtype, ba.Shape, B)
		}
		b.Bayes = ba.F64
	}
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("-x/-y: %w", err)
	}
	return &evalInputs{cfg: cfg, b: b, yq: yq}, nil
}

// evalCheckpoint writes the query predictions f_K of the -x/-y contexts to
// -pred.
func evalCheckpoint(o options, in *evalInputs) error {
	m, err := gd.Load(o.evalDir, min(in.b.B, 256))
	if err != nil {
		return err
	}
	r, err := train.NewRunner(m, train.RunnerConfig{EvalOnly: true})
	if err != nil {
		return err
	}
	defer r.Close()
	pred, err := r.Predict(in.b)
	if err != nil {
		return err
	}
	out := &npy.Array{Shape: []int{in.b.B, in.cfg.DPrime}, Dtype: npy.Float64, F64: pred}
	// -pred's directory was checked to exist or be creatable (cli.OutFile).
	if err := os.MkdirAll(filepath.Dir(o.predPath), 0o755); err != nil {
		return err
	}
	if err := npy.WriteFile(o.predPath, out); err != nil {
		return err
	}
	fmt.Printf("wrote query predictions (%d, %d) to %s\n", in.b.B, in.cfg.DPrime, o.predPath)
	if in.yq == nil {
		fmt.Println("query MSE: not computed (a query row of -y is not finite: unknown targets)")
		return nil
	}
	mse := 0.0
	for i, y := range in.yq {
		mse += (pred[i] - y) * (pred[i] - y)
	}
	mse /= float64(len(in.yq))
	if in.b.Bayes != nil {
		fmt.Printf("query MSE %.6g over %d contexts (per target entry); Bayes error %.6g\n", mse, in.b.B, in.b.Oracle())
	} else {
		fmt.Printf("query MSE %.6g over %d contexts (per target entry)\n", mse, in.b.B)
	}
	return nil
}
