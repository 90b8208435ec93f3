package regression

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

// Limits of what a command line (or a checkpoint's config) may ask for.
const (
	MaxContexts = 1 << 20 // -L, -M, -Ls
	MaxN        = 4096    // -N
	MaxD        = 1024    // -d, -dy
	MaxDepth    = 16      // -steps
	MaxEpochs   = 1 << 20 // -epochs
	MaxBatch    = 1 << 16 // -batch
	MaxSeeds    = 1000    // -seeds
)

// DefaultPred is -pred's default, under results/ as synthetic's -probs.
var DefaultPred = filepath.Join("results", "regression", "pred.npy")

// EvalInputs are what -eval reads (ReadEvalInputs), checked before any work.
type EvalInputs struct {
	dir string
	cfg gd.Config
	b   *data.Batch
	yq  []float64 // the query rows of -y (B, d_y); nil if any is not finite
}

// ReadEvalInputs reads the config of the checkpoint in dir (a GD model with
// the Gaussian likelihood, sizes within this command's limits), the -x/-y
// contexts in the .npy files xPath and yPath (float64 (B, N+1, d) and
// (B, N+1, d_y); the query's y is ignored) and, if bayesPath is not empty,
// the Bayes error of each query (float64 (B)).
func ReadEvalInputs(dir, xPath, yPath, bayesPath string) (*EvalInputs, error) {
	cfg, _, err := gd.LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	file := filepath.Join(dir, "config.json")
	if cfg.LikelihoodName() != gd.LikelihoodGaussian {
		return nil, fmt.Errorf("%s: the model's likelihood is %q, want \"gaussian\" (categorical checkpoints: examples/synthetic -eval)", file, cfg.LikelihoodName())
	}
	if err := cli.InFile(file,
		cli.Check("gd.d", cfg.D, cli.IntIn(1, MaxD)), cli.Check("gd.d_prime", cfg.DPrime, cli.IntIn(1, MaxD)),
		cli.Check("gd.n", cfg.N, cli.IntIn(1, MaxN)), cli.Check("gd.blocks", cfg.Blocks, cli.IntIn(1, 64)),
		cli.Check("gd.heads", cfg.Heads, cli.IntIn(1, 64))); err != nil {
		return nil, err
	}
	// Only regular files are read (npy.ReadFileLimit opens them through
	// internal/infile: a device or a FIFO is refused at once), of at most
	// data.MaxElements values.
	xa, err := npy.ReadFileLimit(xPath, data.MaxElements)
	if err != nil {
		return nil, fmt.Errorf("-x: %w", err)
	}
	ya, err := npy.ReadFileLimit(yPath, data.MaxElements)
	if err != nil {
		return nil, fmt.Errorf("-y: %w", err)
	}
	T := cfg.N + 1
	switch {
	case xa.Dtype != npy.Float64:
		return nil, fmt.Errorf("-x %s: dtype %s, want float64", xPath, xa.Dtype)
	case ya.Dtype != npy.Float64:
		return nil, fmt.Errorf("-y %s: dtype %s, want float64", yPath, ya.Dtype)
	case len(xa.Shape) != 3 || xa.Shape[1] != T || xa.Shape[2] != cfg.D:
		return nil, fmt.Errorf("-x %s: shape %v, want (B, %d, %d) for this checkpoint", xPath, xa.Shape, T, cfg.D)
	case xa.Shape[0] == 0:
		return nil, fmt.Errorf("-x %s: no contexts", xPath)
	case len(ya.Shape) != 3 || ya.Shape[0] != xa.Shape[0] || ya.Shape[1] != T || ya.Shape[2] != cfg.DPrime:
		return nil, fmt.Errorf("-y %s: shape %v, want (%d, %d, %d) to match -x and the checkpoint's d_y", yPath, ya.Shape, xa.Shape[0], T, cfg.DPrime)
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
	if bayesPath != "" {
		ba, err := npy.ReadFileLimit(bayesPath, data.MaxElements)
		if err != nil {
			return nil, fmt.Errorf("-bayes: %w", err)
		}
		if ba.Dtype != npy.Float64 || len(ba.Shape) != 1 || ba.Shape[0] != B {
			return nil, fmt.Errorf("-bayes %s: %s %v, want float64 (%d) to match -x", bayesPath, ba.Dtype, ba.Shape, B)
		}
		b.Bayes = ba.F64
	}
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("-x/-y: %w", err)
	}
	return &EvalInputs{dir: dir, cfg: cfg, b: b, yq: yq}, nil
}

// Evaluate loads the checkpoint, writes the query predictions f_K (B, d_y)
// of the contexts to predPath and prints the query MSE when every query
// target is known (with the Bayes error beside it when it was read).
func (in *EvalInputs) Evaluate(predPath string) error {
	m, err := gd.Load(in.dir, min(in.b.B, 256))
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
	if err := os.MkdirAll(filepath.Dir(predPath), 0o755); err != nil {
		return err
	}
	if err := npy.WriteFile(predPath, out); err != nil {
		return err
	}
	fmt.Printf("wrote query predictions (%d, %d) to %s\n", in.b.B, in.cfg.DPrime, predPath)
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
