package synthetic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"

	"github.com/gdattn/gdattn/examples/internal/plot"
	"github.com/gdattn/gdattn/examples/internal/sweep"
	"github.com/gdattn/gdattn/experiment"
)

// figureFile is what <fig>.json holds.
type figureFile struct {
	Figure  string        `json:"figure"`
	Title   string        `json:"title"`
	X       string        `json:"x"` // "L" or "epoch"
	Preset  Preset        `json:"preset"`
	Seeds   []uint64      `json:"seeds"`
	Runs    int           `json:"runs"`     // runs of the figure
	Done    int           `json:"finished"` // of which finished
	Points  []sweep.Point `json:"points"`
	PNG     string        `json:"png,omitempty"`
	Results string        `json:"results"`           // the results directory (its runs/ and any runs.jsonl)
	Partial string        `json:"partial,omitempty"` // set when runs of the plan are missing
}

// points aggregates the figure's finished runs over seeds: one point per
// series and L (or epoch), skipping points no seed has reached yet.
func (f figure) points(get func(key string) (runOutput, bool, error), seeds []uint64) (pts []sweep.Point, runs, done int, err error) {
	for _, s := range f.Series {
		type acc struct{ top1, nll []float64 }
		byX := map[float64]*acc{}
		var xs []float64
		oracle := 0.0
		add := func(x, top1, nll float64) {
			a := byX[x]
			if a == nil {
				a = &acc{}
				byX[x] = a
				xs = append(xs, x)
			}
			a.top1, a.nll = append(a.top1, top1), append(a.nll, nll)
		}
		for _, seed := range seeds {
			for _, r := range f.runs(s, seed) {
				runs++
				key, err := experiment.Key(r)
				if err != nil {
					return nil, 0, 0, err
				}
				rec, ok, err := get(key)
				if err != nil {
					return nil, 0, 0, err
				}
				if !ok {
					continue
				}
				done++
				oracle = rec.Final.Oracle
				if f.ByL {
					add(float64(r.L), rec.Final.Top1, rec.Final.NLL)
					continue
				}
				for _, e := range rec.Curve {
					add(float64(e.Epoch), e.Top1, e.NLL)
				}
			}
		}
		// xs are in run order: ascending L, or ascending epochs.
		for _, x := range xs {
			a := byX[x]
			pts = append(pts, sweep.Point{Panel: s.Panel, Series: s.Label, X: x, Seeds: len(a.top1),
				Top1: sweep.NewStat(a.top1), NLL: sweep.NewStat(a.nll), Oracle: oracle})
		}
	}
	return pts, runs, done, nil
}

// writeFigures writes <fig>.json and <fig>.csv to the results directory and
// synthetic-<fig>[-quick].png to the figure directory for every figure of
// the sweep, from the runs of rep.
func writeFigures(st *Setup, rep *experiment.Report) error {
	get := func(key string) (runOutput, bool, error) {
		var out runOutput
		res, ok := rep.Get(key)
		if !ok {
			return out, false, nil
		}
		if err := json.Unmarshal(res.Output, &out); err != nil {
			return out, false, fmt.Errorf("result of %s (%s): %w", key, res.Source, err)
		}
		return out, true, nil
	}
	for _, f := range st.figs {
		pts, runs, done, err := f.points(get, st.seeds)
		if err != nil {
			return err
		}
		ff := figureFile{Figure: f.Name, Title: f.Title, X: "epoch", Preset: st.preset, Seeds: st.seeds,
			Runs: runs, Done: done, Points: pts, Results: st.resultsDir, Partial: rep.Note()}
		if f.ByL {
			ff.X = "L"
		}
		if len(pts) > 0 {
			ff.PNG = filepath.Join(st.figDir, "synthetic-"+f.Name+st.preset.FigureSuffix+".png")
			if err := f.figure(pts, len(st.seeds)).Save(ff.PNG); err != nil {
				return err
			}
		}
		if err := sweep.WriteJSON(filepath.Join(st.resultsDir, f.Name+".json"), ff); err != nil {
			return err
		}
		var csv bytes.Buffer
		if err := sweep.WritePointsCSV(&csv, pts); err != nil {
			return err
		}
		if err := sweep.WriteFile(filepath.Join(st.resultsDir, f.Name+".csv"), csv.Bytes()); err != nil {
			return err
		}
		fmt.Fprintf(st.logOut, "%s: %d/%d runs -> %s", f.Name, done, runs, filepath.Join(st.resultsDir, f.Name+".{json,csv}"))
		if ff.PNG != "" {
			fmt.Fprintf(st.logOut, ", %s", ff.PNG)
		}
		fmt.Fprintln(st.logOut)
	}
	return nil
}

// figure lays out the points: a top-1 and an NLL panel per panel group,
// side by side for one group, as rows (top-1 above NLL) for several.
func (f figure) figure(pts []sweep.Point, seeds int) plot.Figure {
	var groups []string
	for _, s := range f.Series {
		if !contains(groups, s.Panel) {
			groups = append(groups, s.Panel)
		}
	}
	x := plot.Axis{Label: "training epoch"}
	if f.ByL {
		ticks := make([]float64, len(f.Ls))
		for i, L := range f.Ls {
			ticks[i] = float64(L)
		}
		x = plot.Axis{Label: "training contexts L", Log: true, Ticks: ticks}
	}
	top1 := make([]plot.Panel, len(groups))
	nll := make([]plot.Panel, len(groups))
	oracle := 0.0
	for g, name := range groups {
		acc := plot.Lines{Title: name, X: x, Y: plot.Axis{Label: "test top-1 accuracy"}, Legend: plot.BottomRight}
		loss := plot.Lines{Title: name, X: x, Y: plot.Axis{Label: "test NLL"}, Legend: plot.TopRight}
		var inGroup []series
		for _, s := range f.Series {
			if s.Panel == name {
				inGroup = append(inGroup, s)
			}
		}
		for i, s := range inGroup {
			// The i-th series of every group has the same color, so a
			// model keeps its color across panels.
			a := plot.Series{Label: s.Label, NoPoints: !f.ByL, Color: plot.Colors[i%len(plot.Colors)]}
			l := a
			for _, p := range pts {
				if p.Panel == name && p.Series == s.Label {
					e1, e2 := p.Top1.Std, p.NLL.Std
					if !f.ByL && !barAt(int(p.X), i, len(inGroup), f.epochs()) {
						e1, e2 = math.NaN(), math.NaN()
					}
					a.X, a.Y, a.Err = append(a.X, p.X), append(a.Y, p.Top1.Mean), append(a.Err, e1)
					l.X, l.Y, l.Err = append(l.X, p.X), append(l.Y, p.NLL.Mean), append(l.Err, e2)
					oracle = p.Oracle
				}
			}
			if len(a.X) > 0 {
				acc.Series, loss.Series = append(acc.Series, a), append(loss.Series, l)
			}
		}
		if len(acc.Series) > 0 {
			if lo, hi, ok := xRange(acc.Series); ok && oracle > 0 {
				// The Bayes oracle's top-1 (from the true class probabilities)
				// as a dashed reference line across the panel.
				// The legend, which the NLL panel below repeats, would cover
				// the line: the figure's title names the dashed line instead.
				acc.Series = append(acc.Series, plot.Series{Label: "Bayes oracle", X: []float64{lo, hi},
					Y: []float64{oracle, oracle}, Dashed: true, NoPoints: true, Color: plot.Colors[6]})
				acc.Legend = plot.NoLegend
			}
			top1[g], nll[g] = acc, loss
		}
	}
	fig := plot.Figure{Title: fmt.Sprintf("%s  (mean ± std over %d seeds; dashed: Bayes top-1 %.3f)", f.Title, seeds, oracle)}
	if len(groups) == 1 {
		fig.Panels = [][]plot.Panel{{top1[0], nll[0]}}
	} else {
		fig.Panels = [][]plot.Panel{top1, nll}
	}
	return fig
}

// xRange is the smallest and largest abscissa of the series.
func xRange(ss []plot.Series) (lo, hi float64, ok bool) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		for _, x := range s.X {
			lo, hi = min(lo, x), max(hi, x)
		}
	}
	return lo, hi, lo <= hi
}

// barAt reports whether a training curve gets an error bar at epoch: about
// ten bars per curve, staggered between the n curves of a panel so that
// they do not hide each other.
func barAt(epoch, i, n, epochs int) bool {
	stride := max(1, epochs/10)
	return (epoch+i*stride/max(1, n))%stride == 0 || stride == 1
}

// epochs is the largest number of epochs of the figure's runs.
func (f figure) epochs() int {
	e := 0
	for _, s := range f.Series {
		e = max(e, s.Run.Epochs)
	}
	return e
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
