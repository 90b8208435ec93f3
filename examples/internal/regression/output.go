package regression

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/gdattn/gdattn/examples/internal/plot"
	"github.com/gdattn/gdattn/examples/internal/sweep"
	"github.com/gdattn/gdattn/experiment"
	"github.com/gdattn/gdattn/internal/cli"
)

func f64(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }

// output is one location a run writes: a file (results, figure) or a
// checkpoint directory, and the flag that names where it goes.
type output struct {
	flag, path string
	ckpt       bool
}

// Where each experiment writes (one definition: the writers and
// CheckOutputs use these).
func (p *Plan) resultFile(exp, ext string) string { return filepath.Join(p.results, exp+"."+ext) }
func (p *Plan) figureFile(exp string) string {
	return filepath.Join(p.figures, "regression-"+exp+p.suffix()+".png")
}
func (p *Plan) checkpointDir(K int) string {
	return filepath.Join(p.out, fmt.Sprintf("gd-linear-K%d%s", K, p.suffix()))
}

// outputs lists every location the run of p writes: per experiment its
// JSON and CSV results and its figure, and for the linear experiment the
// checkpoint of each K's GD model (when -out is set).
func (p *Plan) outputs() []output {
	var out []output
	for _, e := range p.Exps {
		out = append(out, output{"results", p.resultFile(e, "json"), false}, output{"results", p.resultFile(e, "csv"), false},
			output{"figures", p.figureFile(e), false})
		if e == "linear" && p.out != "" {
			for _, K := range p.Steps {
				out = append(out, output{"out", p.checkpointDir(K), true})
			}
		}
	}
	return out
}

// CheckOutputs checks, before any work starts, that every location the run
// writes can be written: the -results, -figures and -out directories
// (created if missing) and each file or checkpoint in them (a directory
// where a file goes, or a file where a checkpoint goes, is refused). An
// error is a usage error naming the flag.
func CheckOutputs(p *Plan) error {
	errs := []error{cli.OutDir("results", p.results), cli.OutDir("figures", p.figures)}
	for _, e := range p.Exps {
		if e == "linear" {
			errs = append(errs, cli.OutDir("out", p.out))
		}
	}
	for _, o := range p.outputs() {
		if o.ckpt {
			errs = append(errs, cli.OutCheckpoint(o.flag, o.path))
		} else {
			errs = append(errs, cli.OutFile(o.flag, o.path))
		}
	}
	return cli.First(errs...)
}

// Check checks, before any work starts, a resolved plan against the
// experiment flags (-index within the plan, or its environment variable
// set) and every location it writes (CheckOutputs). Every refusal is a
// usage error.
func Check(p *Plan, exp experiment.Flags) error {
	n, err := plannedRuns(p)
	if err != nil {
		return cli.Usage(err)
	}
	if _, err := exp.Indices(n); err != nil { // -index past the plan, or -index env unset
		return cli.Usage(err)
	}
	return CheckOutputs(p)
}

// writeFile writes data to path atomically (examples/internal/sweep) and
// says where.
func writeFile(path string, data []byte) error {
	if err := sweep.WriteFile(path, data); err != nil {
		return err
	}
	fmt.Printf("wrote %s\n", path)
	return nil
}

// writeJSON writes v as indented JSON to path.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return writeFile(path, append(b, '\n'))
}

// writeCSV writes rows (the first is the header) to path.
func writeCSV(path string, rows [][]string) error {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	if err := w.WriteAll(rows); err != nil {
		return err
	}
	return writeFile(path, b.Bytes())
}

// saveFigure saves f to path and says where.
func saveFigure(f plot.Figure, path string) error {
	if err := f.Save(path); err != nil {
		return err
	}
	fmt.Printf("wrote %s\n", path)
	return nil
}

// writeLinear writes linear.json, linear.csv and regression-linear.png.
func writeLinear(p *Plan, res *linearResult) error {
	if err := writeJSON(p.resultFile("linear", "json"), res); err != nil {
		return err
	}
	rows := [][]string{{"K", "gd_mse_mean", "gd_mse_std", "gd_alpha_mean", "gd_alpha_std", "tf_mse_mean", "tf_mse_std",
		"pred_distance_mean", "pred_distance_std", "sensitivity_cosine_mean", "sensitivity_cosine_std", "oracle", "alpha_opt", "alpha_opt_mc"}}
	var ks, gdm, gds, tfm, tfs, dm, ds, cm, cs, or []float64
	for _, r := range res.Rows {
		rows = append(rows, []string{strconv.Itoa(r.K), f64(r.GDMSE.Mean), f64(r.GDMSE.Std), f64(r.GDAlpha.Mean), f64(r.GDAlpha.Std),
			f64(r.TFMSE.Mean), f64(r.TFMSE.Std), f64(r.Dist.Mean), f64(r.Dist.Std), f64(r.Cos.Mean), f64(r.Cos.Std),
			f64(res.Oracle), f64(res.AlphaOpt), f64(res.AlphaOptMC)})
		ks = append(ks, float64(r.K))
		gdm, gds = append(gdm, r.GDMSE.Mean), append(gds, r.GDMSE.Std)
		tfm, tfs = append(tfm, r.TFMSE.Mean), append(tfs, r.TFMSE.Std)
		dm, ds = append(dm, r.Dist.Mean), append(ds, r.Dist.Std)
		cm, cs = append(cm, r.Cos.Mean), append(cs, r.Cos.Std)
		or = append(or, res.Oracle)
	}
	if err := writeCSV(p.resultFile("linear", "csv"), rows); err != nil {
		return err
	}
	x := plot.Axis{Label: "GD steps K = TF layers", Ticks: ks}
	top := 0.0 // room above the curves for the legend
	for i := range gdm {
		top = max(top, gdm[i]+gds[i], tfm[i]+tfs[i])
	}
	mse := plot.Lines{Title: fmt.Sprintf("linear regression, d=%d, N=%d", p.D, p.N), X: x, Y: plot.Axis{Label: "test MSE", Min: 0, Max: 1.5 * top},
		Series: []plot.Series{
			{Label: "GD (linear kernel, α learned)", X: ks, Y: gdm, Err: gds},
			{Label: "Trained TF (linear attention)", X: ks, Y: tfm, Err: tfs},
			{Label: "Bayes error", X: ks, Y: or, Dashed: true, NoPoints: true, Color: plot.Colors[6]},
		}}
	top = 1.0
	for i := range dm {
		top = max(top, dm[i]+ds[i])
	}
	sim := plot.Lines{Title: "Trained TF against GD (held-out tasks)", X: x, Y: plot.Axis{Label: "value", Min: 0, Max: 1.4 * top},
		Series: []plot.Series{
			{Label: "‖ŷ_TF − ŷ_GD‖", X: ks, Y: dm, Err: ds},
			{Label: "cos(∂ŷ_TF/∂x_q, ∂ŷ_GD/∂x_q)", X: ks, Y: cm, Err: cs},
		}}
	return saveFigure(plot.Figure{Panels: [][]plot.Panel{{mse, sim}}}, p.figureFile("linear"))
}

// writeNonlinear writes nonlinear.json, nonlinear.csv and
// regression-nonlinear.png.
func writeNonlinear(p *Plan, res *nonlinearResult) error {
	if err := writeJSON(p.resultFile("nonlinear", "json"), res); err != nil {
		return err
	}
	rows := [][]string{{"L", "gd_rbf_mean", "gd_rbf_std", "gd_softmax_mean", "gd_softmax_std", "tf_softmax_mean", "tf_softmax_std", "oracle"}}
	var ls []float64
	series := make([]plot.Series, 4)
	for i, name := range []string{"GD one step, rbf", "GD one step, softmax", "Trained TF 1 layer, softmax", "oracle (σ²)"} {
		series[i].Label = name
	}
	series[3].Dashed, series[3].NoPoints, series[3].Color = true, true, plot.Colors[6]
	for _, r := range res.Rows {
		rows = append(rows, []string{strconv.Itoa(r.L), f64(r.GDRBF.Mean), f64(r.GDRBF.Std), f64(r.GDSoftmax.Mean), f64(r.GDSoftmax.Std),
			f64(r.TFSoftmax.Mean), f64(r.TFSoftmax.Std), f64(res.Oracle)})
		ls = append(ls, float64(r.L))
		for i, s := range []stat{r.GDRBF, r.GDSoftmax, r.TFSoftmax, {Mean: res.Oracle}} {
			series[i].Y, series[i].Err = append(series[i].Y, s.Mean), append(series[i].Err, s.Std)
		}
	}
	for i := range series {
		series[i].X = ls
	}
	series[3].Err = nil
	if err := writeCSV(p.resultFile("nonlinear", "csv"), rows); err != nil {
		return err
	}
	top := 0.0
	for _, s := range series {
		for i := range s.Y {
			top = max(top, s.Y[i])
		}
	}
	panel := plot.Lines{Title: fmt.Sprintf("RBF-bump regression, d=%d, N=%d", p.D, p.N),
		X: plot.Axis{Label: "training contexts L", Log: true, Ticks: ls}, Y: plot.Axis{Label: "test MSE", Min: 0, Max: 1.5 * top}, Series: series}
	return saveFigure(plot.Figure{Panels: [][]plot.Panel{{panel}}}, p.figureFile("nonlinear"))
}
