package theorem2

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gdattn/gdattn/examples/internal/sweep"
	"github.com/gdattn/gdattn/experiment"
	"github.com/gdattn/gdattn/layers"
	"gonum.org/v1/gonum/stat/distuv"
)

// Options are the settings of a check (the command line's flags).
type Options struct {
	Kernels string  // comma-separated attention kernels
	Task    string  // covariate law: TaskRotated, TaskSquare, TaskUniform or TaskAnisotropic
	Aniso   float64 // with TaskAnisotropic: the scale of x₂
	N       int     // context size
	Batch   int     // contexts per minibatch
	NB      int     // minibatches at the GD point (contexts = NB·Batch)
	PertNB  int     // minibatches at each perturbed point (and at the GD point for comparison)
	Scales  string  // relative perturbation sizes ε, comma-separated (empty: none)
	Dirs    int     // random perturbation directions per size
	// AdamSteps Adam steps fit α and g, then NewtonIters Newton steps on
	// a fixed sample of NewtonBatches minibatches, with the Hessian from
	// its first HessBatches.
	AdamSteps, NewtonIters, NewtonBatches, HessBatches int
	Seed                                               uint64 // the Monte Carlo samples and perturbations
	DataSeed                                           uint64 // W_e
	Out                                                string // output directory (results_<task>.json, theorem2_<task>.png, runs/; empty: none)
	Figdir                                             string // directory the figure is copied to (empty: none)
	Quiet                                              bool   // no progress output
	Exp                                                experiment.Flags
	FS                                                 *flag.FlagSet // the command line (-submit passes it on to the workers)
}

// pointStats are the gradient statistics at one parameter point.
type pointStats struct {
	Eps       float64    `json:"eps"`       // relative perturbation size (0: the GD point)
	Direction int        `json:"direction"` // index of the random direction
	Contexts  int        `json:"contexts"`
	Loss      float64    `json:"loss"`
	Cats      []catStats `json:"categories"`
	// Symmetry sums the three symmetry-forbidden categories, Covered adds
	// the GD scalars (everything Theorem 2 speaks about), All adds the
	// rest: Norm and Noise as in catStats.
	Symmetry, Covered, All normNoise
	// ChangeSymmetry and ChangeAll (perturbed points only) are the same
	// for the paired difference ḡ(θ) − ḡ(θ_GD) on the common sample: how
	// much the gradient moved, measured with far less noise than either
	// gradient alone.
	ChangeSymmetry, ChangeAll *normNoise `json:",omitempty"`
}

type normNoise struct {
	Norm, Noise, Debiased float64
}

func combine(cats []catStats) normNoise {
	var n normNoise
	for _, c := range cats {
		n.Norm += c.Norm * c.Norm
		n.Noise += c.Noise * c.Noise
	}
	n.Debiased = math.Sqrt(math.Max(0, n.Norm-n.Noise))
	n.Norm, n.Noise = math.Sqrt(n.Norm), math.Sqrt(n.Noise)
	return n
}

func newPoint(cats []category, att [][]float64, eps float64, dir int, contexts int, loss float64, withTest bool) pointStats {
	ps := pointStats{Eps: eps, Direction: dir, Contexts: contexts, Loss: loss}
	for _, c := range cats {
		ps.Cats = append(ps.Cats, stats(c, att, withTest))
	}
	ps.Symmetry, ps.Covered, ps.All = combine(ps.Cats[:3]), combine(ps.Cats[:4]), combine(ps.Cats)
	return ps
}

type kernelResult struct {
	Kernel string    `json:"kernel"`
	Fit    scalarFit `json:"scalar_fit"`
	// GD is the check at the GD construction with the main sample.
	GD pointStats `json:"gd"`
	// Other are W_e and R (not attention parameters; fixed by the theorem).
	Other []catStats `json:"other_parameters"`
	// GDSmall is the GD point on the perturbations' (smaller) sample, and
	// Perturbed the perturbed points on that same sample.
	GDSmall   pointStats   `json:"gd_small_sample"`
	Perturbed []pointStats `json:"perturbed"`
	// Resolution is the perturbation size ε whose (median) change of the
	// symmetry-forbidden gradient equals the noise floor of that gradient
	// at the GD point on the main sample: the check could not tell the GD
	// point from a point that far from it, and could from one farther.
	// Nil when no perturbation size gave a change clearly above its noise.
	Resolution *float64 `json:"resolution_eps"`
	// ScalarsPFitCorrected is the Hotelling p-value of the GD scalars at
	// the GD point, allowing for the Monte Carlo error of the fitted (α, g)
	// themselves: see scalarsPFitCorrected.
	ScalarsPFitCorrected *float64 `json:"scalars_p_fit_corrected"`
	Seconds              float64  `json:"seconds"`
}

type results struct {
	Command  string          `json:"command"`
	Task     string          `json:"task"`
	Symmetry string          `json:"symmetry"`
	N        int             `json:"n"`
	Batch    int             `json:"batch"`
	Contexts int             `json:"contexts"` // main sample
	Kernels  []*kernelResult `json:"kernels"`
	Figure   string          `json:"figure,omitempty"`
}

// runKey is one run of the plan: the check of one kernel, with every
// setting that changes its result.
type runKey struct {
	Kernel        string    `json:"kernel"`
	Task          string    `json:"task"`
	Aniso         float64   `json:"aniso,omitempty"` // -task anisotropic
	N             int       `json:"N"`
	Batch         int       `json:"batch"`
	NB            int       `json:"nb"`
	PertNB        int       `json:"pert_nb"`
	Scales        []float64 `json:"scales"`
	Dirs          int       `json:"dirs"`
	AdamSteps     int       `json:"adam_steps"`
	NewtonIters   int       `json:"newton"`
	NewtonBatches int       `json:"newton_batches"`
	HessBatches   int       `json:"hess_batches"`
	Seed          uint64    `json:"seed"`
	DataSeed      uint64    `json:"data_seed"`
}

// runPlan lists the runs: one per kernel.
func runPlan(o Options, kernels []string, scales []float64) (experiment.Plan, error) {
	p := experiment.Plan{Name: "theorem2-" + o.Task}
	for _, kern := range kernels {
		k := runKey{Kernel: kern, Task: o.Task, N: o.N, Batch: o.Batch, NB: o.NB, PertNB: o.PertNB, Scales: scales, Dirs: o.Dirs,
			AdamSteps: o.AdamSteps, NewtonIters: o.NewtonIters, NewtonBatches: o.NewtonBatches, HessBatches: o.HessBatches,
			Seed: o.Seed, DataSeed: o.DataSeed}
		if o.Task == TaskAnisotropic {
			k.Aniso = o.Aniso
		}
		if _, err := p.Add(k, kern, 0); err != nil {
			return p, err
		}
	}
	return p, nil
}

// Run is the check of every kernel (each a run of a plan of package
// experiment, stored under o.Out/runs), then the results file and figure;
// or the part of it the experiment flags o.Exp ask for (-plan, -submit,
// -index, -shard, -merge). It prints the tables to w, the progress to
// stderr unless o.Quiet; command is recorded in the results file.
func Run(o Options, command string, w io.Writer) error {
	_, err := run(o, command, w)
	return err
}

// run is Run, returning the results; it is the check of every kernel (each a run of a plan of package
// experiment, stored under -out/runs), then the results file and figure;
// or the part of it the experiment flags ask for.
func run(o Options, command string, w io.Writer) (*results, error) {
	kernels, err := ParseKernels(o.Kernels)
	if err != nil {
		return nil, err
	}
	scales, err := parseScales(o.Scales)
	if err != nil {
		return nil, err
	}
	if o.N <= 0 || o.Batch <= 1 || o.NB <= 1 || o.PertNB <= 1 || o.Dirs < 0 || o.AdamSteps <= 0 || o.NewtonBatches <= 1 || o.NewtonIters < 0 {
		return nil, fmt.Errorf("-N, -batch, -nb, -pert-nb, -adam-steps, -newton-batches must be positive (-batch, -nb, -pert-nb, -newton-batches > 1)")
	}
	ep, err := runPlan(o, kernels, scales)
	if err != nil {
		return nil, err
	}
	dir := o.Out
	if dir == "" { // no output: the runs' results go to a temporary store
		if dir, err = os.MkdirTemp("", "theorem2-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
	}
	store, err := experiment.OpenStore(dir)
	if err != nil {
		return nil, err
	}
	switch {
	case o.Exp.Plan, o.Exp.PlanJSON:
		return nil, experiment.WritePlan(w, ep, store, o.Exp.PlanJSON)
	case o.Exp.Submit != "":
		_, err := experiment.Submit(w, ep, store, o.FS, o.Exp.Slurm)
		return nil, err
	}
	p, err := newProblem(o.Task, o.N, o.Aniso, o.DataSeed)
	if err != nil {
		return nil, err
	}
	var progress io.Writer = os.Stderr
	if o.Quiet {
		progress = nil
	}
	cfg := p.task.Config
	res := &results{Command: command, Task: o.Task, Symmetry: p.symmetry, N: o.N, Batch: o.Batch, Contexts: o.NB * o.Batch}
	fmt.Fprintf(w, "Theorem 2 check on the quadrant task (%s: %s), d=2 C=%d d'=%d N=%d; %d contexts at the GD point, %d per perturbed point\n",
		o.Task, p.symmetry, cfg.C, cfg.DPrime, o.N, o.NB*o.Batch, o.PertNB*o.Batch)
	if !o.Exp.Merge {
		indices, err := o.Exp.Indices(len(ep.Runs))
		if err != nil {
			return nil, err
		}
		err = experiment.Execute(ep, store, indices, func(i int, _ experiment.Run) (any, error) {
			kr, err := checkKernel(o, p, kernels[i], scales, progress, w)
			if err != nil {
				return nil, err
			}
			kr.Seconds, kr.Fit.Seconds = 0, 0 // the output is what a rerun reproduces: no timings
			return kr, nil
		}, progress)
		if err != nil || o.Exp.Worker() {
			return nil, err
		}
	}
	rep, err := experiment.Collect(ep, store)
	if err != nil {
		return nil, err
	}
	if o.Exp.Merge {
		rep.WriteStatus(w)
	}
	if err := rep.Check(o.Exp.Partial); err != nil {
		return nil, err
	}
	if note := rep.Note(); note != "" {
		fmt.Fprintln(w, note)
	}
	for _, r := range ep.Runs {
		out, ok := rep.Get(r.Key)
		if !ok {
			continue
		}
		kr := &kernelResult{}
		if err := json.Unmarshal(out.Output, kr); err != nil {
			return nil, fmt.Errorf("result of %s (%s): %w", r.Label, out.Source, err)
		}
		if err := checkKernelResult("", kr); err != nil {
			return nil, fmt.Errorf("result of %s (%s): %w", r.Label, out.Source, err)
		}
		kr.Seconds = out.Seconds
		if o.Exp.Merge {
			printKernel(w, kr)
		}
		res.Kernels = append(res.Kernels, kr)
	}
	if o.Out != "" {
		if len(scales) > 1 && o.Dirs > 0 {
			res.Figure = filepath.Join(o.Out, "theorem2_"+o.Task+".png")
			if err := saveFigure(res, o.Figdir); err != nil {
				return nil, err
			}
		}
		path := filepath.Join(o.Out, "results_"+o.Task+".json")
		if err := sweep.WriteJSON(path, res); err != nil {
			return nil, err
		}
		fmt.Fprintf(w, "\nwrote %s\n", path)
	}
	return res, nil
}

// checkKernel checks the kernel kern at its fitted GD construction and at
// perturbations of it, printing the statistics to w.
func checkKernel(o Options, p *problem, kern string, scales []float64, progress, w io.Writer) (*kernelResult, error) {
	cfg := p.task.Config
	var err error
	start := time.Now()
	kr := &kernelResult{Kernel: kern}
	if kr.Fit, err = fitScalars(p, kern, o.N, o.AdamSteps, o.Batch, o.NewtonIters, o.NewtonBatches, o.HessBatches, o.Seed, progress); err != nil {
		return nil, err
	}
	gm, err := newGradModel(kern, 2, cfg.DPrime, cfg.C, o.N, o.Batch, kr.Fit.Alpha, kr.Fit.Gamma, p.task.We)
	if err != nil {
		return nil, err
	}
	_, hasGamma := gm.s.Lookup("layer0/head0/log_gamma")
	cats := categories(&gm.lay, 2, cfg.DPrime, hasGamma)
	// The GD point, main sample.
	att, other, loss, err := gm.sampleGrads(p, o.NB, rand.New(rand.NewPCG(o.Seed, 21)))
	if err != nil {
		gm.close()
		return nil, err
	}
	kr.GD = newPoint(cats, att, 0, -1, o.NB*o.Batch, loss, true)
	kr.ScalarsPFitCorrected = scalarsPFitCorrected(kr, o.Batch)
	kr.Other = otherStats(gm, other)
	// Perturbed points and the GD point on one common smaller sample.
	small := func() *rand.Rand { return rand.New(rand.NewPCG(o.Seed, 41)) }
	attGD, _, loss, err := gm.sampleGrads(p, o.PertNB, small())
	if err != nil {
		gm.close()
		return nil, err
	}
	kr.GDSmall = newPoint(cats, attGD, 0, -1, o.PertNB*o.Batch, loss, true)
	for _, eps := range scales {
		for dir := 0; dir < o.Dirs; dir++ {
			if err := gm.set(gm.perturbation(eps, rand.New(rand.NewPCG(o.Seed+uint64(dir), 31)))); err != nil {
				gm.close()
				return nil, err
			}
			att, _, loss, err := gm.sampleGrads(p, o.PertNB, small())
			if err != nil {
				gm.close()
				return nil, err
			}
			ps := newPoint(cats, att, eps, dir, o.PertNB*o.Batch, loss, true)
			diff := make([][]float64, len(att))
			for k := range att {
				diff[k] = make([]float64, len(att[k]))
				for i := range diff[k] {
					diff[k][i] = att[k][i] - attGD[k][i]
				}
			}
			ch := newPoint(cats, diff, eps, dir, o.PertNB*o.Batch, 0, false)
			ps.ChangeSymmetry, ps.ChangeAll = &ch.Symmetry, &ch.All
			kr.Perturbed = append(kr.Perturbed, ps)
		}
	}
	if err := gm.set(nil); err != nil {
		gm.close()
		return nil, err
	}
	if r := resolution(kr); !math.IsNaN(r) {
		kr.Resolution = &r
	}
	gm.close()
	kr.Seconds = time.Since(start).Seconds()
	printKernel(w, kr)
	return kr, nil
}

// printKernel prints the tables of one kernel's check, from its result
// alone: checkKernel once it is done, and -merge for each run done.
func printKernel(w io.Writer, kr *kernelResult) {
	fmt.Fprintf(w, "\n== %s: fitted α = %.4g, g = %.4g (loss %.4f); gradient wrt (log α, log g) on %d fixed contexts: %s before Newton, %s after (SE %s)\n",
		kr.Kernel, kr.Fit.Alpha, kr.Fit.Gamma, kr.Fit.Loss, kr.Fit.NewtonContexts, fmtVec(kr.Fit.GradBefore), fmtVec(kr.Fit.GradAfter), fmtVec(kr.Fit.SE))
	printPoint(w, kr.GD, true)
	if pc := kr.ScalarsPFitCorrected; pc != nil {
		fmt.Fprintf(w, "   GD scalars p-value allowing for the fit's own Monte Carlo error (%d contexts): %.3g\n", kr.Fit.NewtonContexts, *pc)
	}
	for _, c := range kr.Other {
		fmt.Fprintf(w, "   %-26s ‖ḡ‖ %.3e  noise %.3e  debiased %.3e  (not an attention parameter)\n", c.Name, c.Norm, c.Noise, c.Debiased)
	}
	fmt.Fprintf(w, "   perturbations (%d contexts each, the same for every point): ‖ḡ‖ (noise floor) of the symmetry-forbidden part with the smallest\n   Hotelling p-value of its 3 categories, of all attention parameters, and of the change ḡ(θ) − ḡ(θ_GD)\n", kr.GDSmall.Contexts)
	fmt.Fprintf(w, "   ε = 0 (GD):     sym %.3e (%.1e) p %-9.3g all %.3e (%.1e)\n", kr.GDSmall.Symmetry.Norm, kr.GDSmall.Symmetry.Noise, symP(kr.GDSmall), kr.GDSmall.All.Norm, kr.GDSmall.All.Noise)
	for _, ps := range kr.Perturbed {
		change := "-" // checkKernelResult refuses a result with half a change
		if ch, ca := ps.ChangeSymmetry, ps.ChangeAll; ch != nil && ca != nil {
			change = fmt.Sprintf("sym %.3e (%.1e) all %.3e (%.1e)", ch.Norm, ch.Noise, ca.Norm, ca.Noise)
		}
		fmt.Fprintf(w, "   ε = %-6g dir %d: sym %.3e (%.1e) p %-9.3g all %.3e (%.1e) | change: %s | loss %+.2e\n", ps.Eps, ps.Direction,
			ps.Symmetry.Norm, ps.Symmetry.Noise, symP(ps), ps.All.Norm, ps.All.Noise, change, ps.Loss-kr.GDSmall.Loss)
	}
	if r := kr.Resolution; r != nil {
		fmt.Fprintf(w, "   resolution: the Monte Carlo noise floor %.2e of the symmetry-forbidden gradient at GD equals the change a perturbation of ε ≈ %.2g produces\n",
			kr.GD.Symmetry.Noise, *r)
	}
	fmt.Fprintf(w, "   (%s done in %.0f s)\n", kr.Kernel, kr.Seconds)
}

// resolution interpolates, linearly in ε (the change is first order), the
// ε at which the change of the symmetry-forbidden gradient equals its noise
// floor at the GD point: it uses the smallest ε whose median (over the
// directions) debiased change is at least twice the median noise of the
// change. NaN without such an ε.
func resolution(kr *kernelResult) float64 {
	change := map[float64][]float64{}
	noise := map[float64][]float64{}
	var eps []float64
	for _, p := range kr.Perturbed {
		if p.ChangeSymmetry == nil {
			continue
		}
		if _, seen := change[p.Eps]; !seen {
			eps = append(eps, p.Eps)
		}
		change[p.Eps] = append(change[p.Eps], p.ChangeSymmetry.Debiased)
		noise[p.Eps] = append(noise[p.Eps], p.ChangeSymmetry.Noise)
	}
	sort.Float64s(eps)
	for _, e := range eps {
		if c := median(change[e]); c > 0 && c >= 2*median(noise[e]) {
			return e * kr.GD.Symmetry.Noise / c
		}
	}
	return math.NaN()
}

// scalarsPFitCorrected corrects the GD-scalars test at the GD point for
// the fit: (α, g) minimise the loss on an independent sample of n_A
// contexts, so the true gradient at the fitted point is not 0 but about
// H(θ_A − θ*), of covariance ≈ Σ/n_A; the gradient measured on n_B contexts
// then has covariance ≈ Σ(1/n_B + 1/n_A), and the F statistic is divided
// by 1 + n_B/n_A. The correction holds for the fitted directions only (for
// the RBF and Laplacian kernels the unfitted W_Q–W_K scale asymmetry is
// among the GD scalars too, and dominates).
func scalarsPFitCorrected(kr *kernelResult, batch int) *float64 {
	c := kr.GD.Cats[3]
	nb := kr.GD.Contexts / batch // minibatches
	if c.Rank == 0 || kr.Fit.NewtonContexts == 0 || nb <= c.Rank {
		return nil
	}
	f := c.F / (1 + float64(kr.GD.Contexts)/float64(kr.Fit.NewtonContexts))
	r := float64(c.Rank)
	p := distuv.F{D1: r, D2: float64(nb) - r}.Survival(f)
	return &p
}

func median(v []float64) float64 {
	v = append([]float64(nil), v...)
	sort.Float64s(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// saveFigure draws res's figure to res.Figure and copies it to figdir
// (unless empty).
func saveFigure(res *results, figdir string) error {
	if err := gradFigure(res).Save(res.Figure); err != nil {
		return err
	}
	if figdir == "" {
		return nil
	}
	b, err := os.ReadFile(res.Figure)
	if err != nil {
		return err
	}
	return sweep.WriteFile(filepath.Join(figdir, filepath.Base(res.Figure)), b)
}

// symP is the smallest Hotelling p-value of the three symmetry-forbidden
// categories of ps.
func symP(ps pointStats) float64 {
	p := 1.0
	for _, c := range ps.Cats[:min(3, len(ps.Cats))] {
		if c.Rank > 0 {
			p = math.Min(p, c.P)
		}
	}
	return p
}

// otherStats are the W_e and R gradients (all their entries).
func otherStats(gm *gradModel, other [][]float64) []catStats {
	var out []catStats
	off := 0
	for _, n := range gm.other {
		size := n.Shape().TotalSize()
		c := category{Name: n.Name(), What: "every entry"}
		for i := 0; i < size; i++ {
			c.dirs = append(c.dirs, direction{label: fmt.Sprintf("%s[%d]", n.Name(), i), idx: []int{off + i}, coef: []float64{1}})
		}
		out = append(out, stats(c, other, false))
		off += size
	}
	return out
}

func printPoint(w io.Writer, ps pointStats, detail bool) {
	fmt.Fprintf(w, "   GD point, %d contexts, loss %.5f:\n", ps.Contexts, ps.Loss)
	fmt.Fprintf(w, "   %-26s %5s %5s %11s %11s %11s %7s %5s %9s  %s\n", "category", "dims", "zero", "‖ḡ‖", "noise", "debiased", "max|z|", "rank", "p-value", "largest |z| at")
	for _, c := range ps.Cats {
		fmt.Fprintf(w, "   %-26s %5d %5d %11.3e %11.3e %11.3e %7.2f %5d %9.3g  %s\n", c.Name, c.Dims, c.Structural, c.Norm, c.Noise, c.Debiased, c.MaxZ, c.Rank, c.P, c.MaxZDir)
		if detail && c.Name == "GD scalars" {
			for _, comp := range c.Components {
				fmt.Fprintf(w, "       %-24s %+.3e ± %.1e\n", comp.Dir, comp.Mean, comp.SE)
			}
		}
	}
	fmt.Fprintf(w, "   %-26s %11s %11.3e %11.3e %11.3e\n", "symmetry-forbidden (1-3)", "", ps.Symmetry.Norm, ps.Symmetry.Noise, ps.Symmetry.Debiased)
	fmt.Fprintf(w, "   %-26s %11s %11.3e %11.3e %11.3e\n", "covered by Thm 2 (1-4)", "", ps.Covered.Norm, ps.Covered.Noise, ps.Covered.Debiased)
	fmt.Fprintf(w, "   %-26s %11s %11.3e %11.3e %11.3e\n", "all attention parameters", "", ps.All.Norm, ps.All.Noise, ps.All.Debiased)
}

func fmtVec(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%+.2e", x)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// ParseKernels splits the -kernels list, refusing an unknown kernel.
func ParseKernels(s string) ([]string, error) {
	var out []string
	for _, k := range strings.Split(s, ",") {
		k = strings.TrimSpace(k)
		ok := false
		for _, n := range layers.KernelNames() {
			ok = ok || n == k
		}
		if !ok {
			return nil, fmt.Errorf("-kernels: unknown kernel %q (known: %v)", k, layers.KernelNames())
		}
		out = append(out, k)
	}
	return out, nil
}

func parseScales(s string) ([]float64, error) {
	var out []float64
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("-scales %q: want positive numbers separated by commas", s)
		}
		out = append(out, v)
	}
	return out, nil
}
