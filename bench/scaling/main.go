// Command scaling measures how the training step of the GD model grows with
// the context length N and with the number of categories C, fits the
// measured times, and writes a markdown table and two log-log plots.
//
//	go run ./bench/scaling                 # N = 10..2000, C = 25..50,258 (about 15 minutes on 1 thread, quiet machine)
//	go run ./bench/scaling -quick          # N ≤ 500, C ≤ 6,400 (a minute)
//	go run ./bench/scaling -out bench/out -threads 1 -batch 16 -dtype float32
//
// The model is the synthetic GD model (one block, softmax kernel, exact
// erase; d = 10, d' = 5) on random inputs, with a minibatch of -batch
// contexts (16: the batch of 512 of the paper's experiments would need
// 2001·2000·512 kernel entries, 8 GB in float32, at N = 2,000).
//
// The N sweep (C = 25) is fitted with t(N) = a + b·N + c·N² (least squares
// on the relative error): c is the cost of the N×N kernel matrices (the
// update head's softmax kernel over the context and the exact erase's
// T×T product), b that of the per-position work. The C sweep (at N = 10 and
// N = 100) is fitted with t(C) = a + b·C: b is the cost of the
// (B·T)×C products with W_e (the label embedding, the cross-attention
// softmax over the categories and its backward), so b/(B·T) should not
// depend on N: the cost grows as N·C. The local exponent of a point is
// the log-log slope from the previous point.
//
// Times are the median process CPU time of a step by default (-clock cpu):
// on a shared machine with more runnable jobs than cores the wall clock
// mostly measures the wait for a core; -clock wall fits the wall time. The
// table gives both.
//
// Outputs in -out: scaling.md, scaling-N.png, scaling-C.png.
package main

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/gdattn/gdattn/bench"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/internal/cli"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

type options struct {
	quick             bool
	batch, threads    int
	dtype, out, clock string
	minTime           time.Duration
}

func main() { cli.Main("scaling", func() error { return command(os.Args[1:]) }) }

// command parses and checks the command line args, then runs it.
func command(args []string) error {
	var o options
	fs := cli.NewFlagSet("scaling")
	fs.BoolVar(&o.quick, "quick", false, "short sweeps (N ≤ 500, C ≤ 6,400) and shorter timings")
	fs.IntVar(&o.batch, "batch", 16, "contexts per minibatch, 1..4096")
	fs.IntVar(&o.threads, "threads", 1, "GOMAXPROCS, 1..1024")
	fs.StringVar(&o.dtype, "dtype", "float32", "float32 or float64")
	fs.StringVar(&o.out, "out", "bench/out", "directory for scaling.md and the plots (not empty)")
	fs.StringVar(&o.clock, "clock", "cpu", "time fitted and plotted: cpu (process CPU time per step, robust to other jobs) or wall")
	fs.DurationVar(&o.minTime, "min-time", 0, "timed duration per point, at least (>= 0; 0: 1s, 0.2s with -quick)")
	err := cli.Parse(fs, args, func(w io.Writer) {
		fmt.Fprintf(w, "Usage: scaling [flags]\n\nMeasures how the GD training step grows with N and C (see the package documentation).\nExit status: 0 done, 2 bad command line (one line on stderr, before any work), 1 a failure during the run.\n\nFlags:\n")
		cli.PrintDefaults(fs, w)
	})
	if err != nil {
		return err
	}
	err = cli.Validate(fs, cli.Rules{
		"quick": cli.Any, "batch": cli.IntIn(1, 4096), "threads": cli.IntIn(1, 1024), "dtype": cli.OneOf("float32", "float64"),
		"out": cli.NonEmpty, "clock": cli.OneOf("cpu", "wall"), "min-time": cli.NonNegative,
	})
	if err == nil {
		err = cli.OutDir("out", o.out)
	}
	if err != nil {
		return err
	}
	return run(o)
}

// point is one measured size.
type point struct {
	x     float64 // N or C
	n     int     // context length
	ms    float64 // median ms per step on the -clock (fitted and plotted)
	other float64 // median ms per step on the other clock
	mem   float64 // peak heap MB
}

func run(o options) error {
	dt, err := graph.ParseDtype(o.dtype)
	if err != nil {
		return err
	}
	if o.batch < 1 || o.threads < 1 {
		return fmt.Errorf("-batch and -threads must be at least 1")
	}
	if o.clock != "cpu" && o.clock != "wall" {
		return fmt.Errorf("-clock %q, want cpu or wall", o.clock)
	}
	runtime.GOMAXPROCS(o.threads)
	if o.minTime == 0 {
		o.minTime = time.Second
		if o.quick {
			o.minTime = 200 * time.Millisecond
		}
	}
	ns := []int{10, 20, 50, 100, 200, 500, 1000, 2000}
	cs := []int{25, 100, 400, 1600, 6400, 25600, 50258}
	cNs := []int{10, 100}
	if o.quick {
		ns = []int{10, 20, 50, 100, 200, 500}
		cs = []int{25, 100, 400, 1600, 6400}
		cNs = []int{10}
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	var rep bytes.Buffer
	out := io.MultiWriter(os.Stdout, &rep)
	fmt.Fprintf(out, "## Scaling of the GD training step\n\n%s\n\n", bench.Describe())
	fmt.Fprintf(out, "Command: `go run ./bench/scaling %s`. GD, 1 block, softmax kernel, exact erase, d = 10, d' = 5, batch B = %d, %s, train step (forward, backward, Adam). Fitted and plotted: %s time per step (median); the table also gives the %s time.\n\n",
		strings.Join(os.Args[1:], " "), o.batch, o.dtype, clockName(o.clock), clockName(other(o.clock)))

	measure := func(n, c int) (point, error) {
		w := bench.Workload{Name: fmt.Sprintf("gd N=%d C=%d", n, c), Model: bench.ModelGD, Task: bench.TaskRandom,
			Batch: o.batch, N: n, D: 10, DPrime: 5, C: c, Depth: 1}
		r, err := bench.NewRunner(w, dt, bench.Train, 1)
		if err != nil {
			return point{}, err
		}
		defer r.Close()
		pm := bench.StartPeak(0)
		t, err := bench.Measure(func() error { _, err := r.Step(); return err }, 1, 3, 50, o.minTime)
		heap, _ := pm.Stop()
		if err != nil {
			return point{}, err
		}
		wall, cpu := float64(t.Median)/1e6, float64(t.CPUMedian)/1e6
		p := point{n: n, ms: cpu, other: wall, mem: bench.MB(heap)}
		if o.clock == "wall" || cpu == 0 {
			p.ms, p.other = wall, cpu
		}
		fmt.Fprintf(os.Stderr, "N=%d C=%d: %.2f ms/step wall, %.2f ms CPU (%d steps), peak heap %.0f MB\n", n, c, wall, cpu, t.Steps, p.mem)
		return p, nil
	}

	// N sweep.
	var pn []point
	for _, n := range ns {
		p, err := measure(n, 25)
		if err != nil {
			return err
		}
		p.x = float64(n)
		pn = append(pn, p)
	}
	xs, ys := coords(pn)
	cn, err := fitNonNeg(xs, ys, []float64{0, 1, 2})
	if err != nil {
		return err
	}
	B := float64(o.batch)
	fmt.Fprintf(out, "### Context length N (C = 25)\n\nLoad at the end of the sweep: `%s`\n\n", bench.Uptime())
	table(out, "N", pn, o.clock, func(x float64) float64 { return cn[0] + cn[1]*x + cn[2]*x*x })
	top, _ := bench.LogLogSlope(xs[len(xs)-3:], ys[len(ys)-3:])
	fmt.Fprintf(out, "\nFit t(N) = a + b·N + c·N²: a = %.3g ms, b = %.3g µs per N (%.3g ns per context and position), c = %.3g ns per N² (%.3g ns per kernel entry, B·N² of them). ",
		cn[0], cn[1]*1e3, cn[1]*1e6/B, cn[2]*1e6, cn[2]*1e6/B)
	if cn[1] > 0 && cn[2] > 0 {
		fmt.Fprintf(out, "The N² term overtakes the linear one at N ≈ %.0f. ", cn[1]/cn[2])
	}
	fmt.Fprintf(out, "Log-log slope over the three largest N: %.2f.\n\n", top)

	// C sweeps.
	fmt.Fprintf(out, "### Number of categories C\n\n")
	var series [][]point
	var fits [][]float64
	for _, n := range cNs {
		var pc []point
		for _, c := range cs {
			p, err := measure(n, c)
			if err != nil {
				return err
			}
			p.x = float64(c)
			pc = append(pc, p)
		}
		xs, ys := coords(pc)
		cc, err := fitNonNeg(xs, ys, []float64{0, 1})
		if err != nil {
			return err
		}
		series, fits = append(series, pc), append(fits, cc)
		fmt.Fprintf(out, "N = %d (T = %d); load: `%s`\n\n", n, n+1, bench.Uptime())
		table(out, "C", pc, o.clock, func(x float64) float64 { return cc[0] + cc[1]*x })
		top, _ := bench.LogLogSlope(xs[len(xs)-3:], ys[len(ys)-3:])
		fmt.Fprintf(out, "\nFit t(C) = a + b·C: a = %.3g ms, b = %.3g µs per category = %.3g ns per position and category (B·T·C of them). Log-log slope over the three largest C: %.2f.\n\n",
			cc[0], cc[1]*1e3, cc[1]*1e6/(B*float64(n+1)), top)
	}
	if len(cNs) > 1 {
		k0 := fits[0][1] * 1e6 / (B * float64(cNs[0]+1))
		k1 := fits[len(fits)-1][1] * 1e6 / (B * float64(cNs[len(cNs)-1]+1))
		fmt.Fprintf(out, "Cost per position and category: %.3g ns at N = %d, %.3g ns at N = %d: the C term grows as N·C.\n\n", k0, cNs[0], k1, cNs[len(cNs)-1])
	}

	if err := plotN(filepath.Join(o.out, "scaling-N.png"), pn, cn, o); err != nil {
		return err
	}
	if err := plotC(filepath.Join(o.out, "scaling-C.png"), series, fits, cNs, o); err != nil {
		return err
	}
	fmt.Fprintf(out, "Plots: scaling-N.png, scaling-C.png.\n")
	return os.WriteFile(filepath.Join(o.out, "scaling.md"), rep.Bytes(), 0o644)
}

func coords(ps []point) (xs, ys []float64) {
	for _, p := range ps {
		xs, ys = append(xs, p.x), append(ys, p.ms)
	}
	return xs, ys
}

func clockName(c string) string {
	if c == "cpu" {
		return "CPU"
	}
	return "wall"
}

func other(c string) string {
	if c == "cpu" {
		return "wall"
	}
	return "cpu"
}

func table(w io.Writer, name string, ps []point, clock string, fit func(float64) float64) {
	fmt.Fprintf(w, "| %s | %s ms/step | fit ms | fit error | local exponent | %s ms/step | peak heap MB |\n|---:|---:|---:|---:|---:|---:|---:|\n",
		name, clockName(clock), clockName(other(clock)))
	for i, p := range ps {
		slope := "–"
		if i > 0 {
			slope = fmt.Sprintf("%.2f", math.Log(p.ms/ps[i-1].ms)/math.Log(p.x/ps[i-1].x))
		}
		f := fit(p.x)
		fmt.Fprintf(w, "| %.0f | %.3g | %.3g | %+.0f%% | %s | %.3g | %.0f |\n", p.x, p.ms, f, 100*(f-p.ms)/p.ms, slope, p.other, p.mem)
	}
}

// fitNonNeg fits Σ c_k x^{p_k} (bench.FitPowers) with every c_k ≥ 0: a
// term whose coefficient comes out negative is dropped (c_k = 0) and the
// rest refitted, so that the constants stay physical costs.
func fitNonNeg(xs, ys, powers []float64) ([]float64, error) {
	keep := make([]bool, len(powers))
	for i := range keep {
		keep[i] = true
	}
	for {
		var ps []float64
		for i, k := range keep {
			if k {
				ps = append(ps, powers[i])
			}
		}
		c, err := bench.FitPowers(xs, ys, ps)
		if err != nil {
			return nil, err
		}
		out := make([]float64, len(powers))
		worst, j := -1, 0
		for i, k := range keep {
			if !k {
				continue
			}
			out[i] = c[j]
			if c[j] < 0 && (worst < 0 || c[j] < out[worst]) {
				worst = i
			}
			j++
		}
		if worst < 0 || len(ps) == 1 {
			return out, nil
		}
		keep[worst] = false
	}
}

// logLine samples f at 64 log-spaced points on [lo, hi].
func logLine(lo, hi float64, f func(float64) float64) plotter.XYs {
	xy := make(plotter.XYs, 64)
	for i := range xy {
		x := lo * math.Pow(hi/lo, float64(i)/float64(len(xy)-1))
		xy[i].X, xy[i].Y = x, f(x)
	}
	return xy
}

func logPlot(title, x, clock string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = clockName(clock) + " ms per training step"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	return p
}

var palette = []color.Color{color.RGBA{R: 31, G: 119, B: 180, A: 255}, color.RGBA{R: 214, G: 39, B: 40, A: 255}, color.RGBA{R: 44, G: 160, B: 44, A: 255}}

func addSeries(p *plot.Plot, ps []point, fit func(float64) float64, col color.Color, label string) error {
	xs, ys := coords(ps)
	pts := make(plotter.XYs, len(xs))
	for i := range xs {
		pts[i].X, pts[i].Y = xs[i], ys[i]
	}
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return err
	}
	sc.GlyphStyle.Color, sc.GlyphStyle.Radius, sc.GlyphStyle.Shape = col, vg.Points(3), draw.CircleGlyph{}
	ln, err := plotter.NewLine(logLine(xs[0], xs[len(xs)-1], fit))
	if err != nil {
		return err
	}
	ln.LineStyle.Color, ln.LineStyle.Width = col, vg.Points(1)
	p.Add(ln, sc)
	p.Legend.Add(label, sc, ln)
	return nil
}

// addGuide draws a dashed x^e line through the first point of ps.
func addGuide(p *plot.Plot, ps []point, e float64, label string) error {
	x0, y0 := ps[0].x, ps[0].ms
	ln, err := plotter.NewLine(logLine(x0, ps[len(ps)-1].x, func(x float64) float64 { return y0 * math.Pow(x/x0, e) }))
	if err != nil {
		return err
	}
	ln.LineStyle.Color, ln.LineStyle.Dashes = color.Gray{Y: 140}, []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(ln)
	p.Legend.Add(label, ln)
	return nil
}

func plotN(file string, ps []point, c []float64, o options) error {
	p := logPlot(fmt.Sprintf("GD training step vs context length (C = 25, B = %d, %s, %d thread)", o.batch, o.dtype, o.threads), "context length N", o.clock)
	if err := addSeries(p, ps, func(x float64) float64 { return c[0] + c[1]*x + c[2]*x*x }, palette[0],
		fmt.Sprintf("measured; fit %.2g + %.2g N + %.2g N² ms", c[0], c[1], c[2])); err != nil {
		return err
	}
	if err := addGuide(p, ps, 1, "slope 1 (~N)"); err != nil {
		return err
	}
	if err := addGuide(p, ps, 2, "slope 2 (~N²)"); err != nil {
		return err
	}
	return p.Save(16*vg.Centimeter, 11*vg.Centimeter, file)
}

func plotC(file string, series [][]point, fits [][]float64, ns []int, o options) error {
	p := logPlot(fmt.Sprintf("GD training step vs categories (B = %d, %s, %d thread)", o.batch, o.dtype, o.threads), "number of categories C", o.clock)
	for i, ps := range series {
		c := fits[i]
		if err := addSeries(p, ps, func(x float64) float64 { return c[0] + c[1]*x }, palette[i%len(palette)],
			fmt.Sprintf("N = %d; fit %.2g + %.2g C ms", ns[i], c[0], c[1])); err != nil {
			return err
		}
	}
	if err := addGuide(p, series[0], 1, "slope 1 (~C)"); err != nil {
		return err
	}
	return p.Save(16*vg.Centimeter, 11*vg.Centimeter, file)
}
