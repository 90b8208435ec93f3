package synthetic

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/graph/npy"
	"github.com/gdattn/gdattn/train"
)

// DefaultProbs is where -eval writes the query probabilities by default:
// under results/, as every example's outputs, not in the working directory.
var DefaultProbs = filepath.Join("results", "synthetic", "probs.npy")

// EvalCheckpoint loads the checkpoint in dir (written by TrainBlocks) and
// writes the query probabilities (B, C) of the contexts in the .npy files
// xPath and yPath to probsPath; it prints the query metrics when every
// query label is known.
func EvalCheckpoint(dir, xPath, yPath, probsPath string) error {
	if xPath == "" || yPath == "" {
		return fmt.Errorf("-eval needs -x and -y")
	}
	cfg, _, err := gd.LoadConfig(dir)
	if err != nil {
		return err
	}
	b, err := readContexts(xPath, yPath, cfg)
	if err != nil {
		return err
	}
	m, err := gd.Load(dir, min(b.B, 256))
	if err != nil {
		return err
	}
	r, err := train.NewRunner(m, train.RunnerConfig{EvalOnly: true})
	if err != nil {
		return err
	}
	defer r.Close()
	probs, err := r.Predict(b)
	if err != nil {
		return err
	}
	out := &npy.Array{Shape: []int{b.B, cfg.C}, Dtype: npy.Float64, F64: probs}
	if err := os.MkdirAll(filepath.Dir(probsPath), 0o755); err != nil {
		return err
	}
	if err := npy.WriteFile(probsPath, out); err != nil {
		return err
	}
	fmt.Printf("wrote query probabilities (%d, %d) to %s\n", b.B, cfg.C, probsPath)
	// Score the queries when every label is known.
	for i := 0; i < b.B; i++ {
		if b.Y[i*b.T+b.T-1] < 0 {
			return nil
		}
	}
	met, err := r.Evaluate(b)
	if err != nil {
		return err
	}
	fmt.Println(met)
	return nil
}

// readContexts reads x (B, N+1, d) float64 and y (B, N+1) int64 .npy files
// and checks them against the model's sizes.
func readContexts(xPath, yPath string, mc gd.Config) (*data.Batch, error) {
	xa, err := npy.ReadFileLimit(xPath, data.MaxElements)
	if err != nil {
		return nil, fmt.Errorf("-x: %w", err)
	}
	ya, err := npy.ReadFileLimit(yPath, data.MaxElements)
	if err != nil {
		return nil, fmt.Errorf("-y: %w", err)
	}
	T := mc.N + 1
	if len(xa.Shape) != 3 || xa.Shape[1] != T || xa.Shape[2] != mc.D {
		return nil, fmt.Errorf("-x %s: shape %v, want (B, %d, %d) for this checkpoint", xPath, xa.Shape, T, mc.D)
	}
	if xa.Dtype != npy.Float64 && xa.Dtype != npy.Float32 {
		return nil, fmt.Errorf("-x %s: dtype %s, want float64", xPath, xa.Dtype)
	}
	if ya.Dtype != npy.Int64 {
		return nil, fmt.Errorf("-y %s: dtype %s, want int64", yPath, ya.Dtype)
	}
	if len(ya.Shape) != 2 || ya.Shape[0] != xa.Shape[0] || ya.Shape[1] != T {
		return nil, fmt.Errorf("-y %s: shape %v, want (%d, %d) to match -x", yPath, ya.Shape, xa.Shape[0], T)
	}
	if xa.Shape[0] == 0 {
		return nil, fmt.Errorf("-x %s: no contexts", xPath)
	}
	y := make([]int, len(ya.I64))
	for i, v := range ya.I64 {
		y[i] = int(v)
	}
	b := &data.Batch{B: xa.Shape[0], T: T, D: mc.D, C: mc.C, X: xa.Float64s(), Y: y}
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("-x/-y: %w", err)
	}
	return b, nil
}
