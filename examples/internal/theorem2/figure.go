package theorem2

import (
	"math"
	"strconv"

	"github.com/gdattn/gdattn/examples/internal/plot"
	"github.com/gdattn/gdattn/examples/internal/sweep"
	"gonum.org/v1/plot/vg"
)

// gradFigure plots, per kernel, how far the mean gradient moves when the
// GD construction is perturbed by a relative amount ε (the paired
// difference ḡ(θ_ε) − ḡ(θ_GD) on a common sample; log-log, mean ± std over
// the random directions), for the symmetry-forbidden part and for all
// attention parameters, against the gradient at the GD point itself (main
// sample) and its Monte Carlo noise floor.
func gradFigure(res *results) plot.Figure {
	var panels []plot.Panel
	for _, kr := range res.Kernels {
		var eps []float64
		sym := map[float64][]float64{}
		all := map[float64][]float64{}
		for _, p := range kr.Perturbed {
			if p.ChangeSymmetry == nil {
				continue
			}
			if _, ok := sym[p.Eps]; !ok {
				eps = append(eps, p.Eps)
			}
			sym[p.Eps] = append(sym[p.Eps], p.ChangeSymmetry.Norm)
			all[p.Eps] = append(all[p.Eps], p.ChangeAll.Norm)
		}
		if len(eps) < 2 {
			continue // a log axis needs a range (gonum widens a single value to [v−1, v+1])
		}
		series := func(label string, m map[float64][]float64) plot.Series {
			s := plot.Series{Label: label}
			for _, e := range eps {
				st := sweep.NewStat(m[e])
				// A bar reaching 0 cannot be drawn on a log axis.
				s.X, s.Y, s.Err = append(s.X, e), append(s.Y, st.Mean), append(s.Err, math.Min(st.Std, 0.9*st.Mean))
			}
			return s
		}
		lo, hi := eps[0], eps[len(eps)-1]
		flat := func(label string, v float64, col int) plot.Series {
			return plot.Series{Label: label, X: []float64{lo, hi}, Y: []float64{v, v}, Dashed: true, NoPoints: true, Color: plot.Colors[col]}
		}
		ss := []plot.Series{
			series("change of symmetry-forbidden part", sym),
			series("change of all attention", all),
			flat("all attention at GD", kr.GD.All.Norm, 1),
			flat("symmetry-forbidden at GD", kr.GD.Symmetry.Norm, 0),
			flat("its noise floor", kr.GD.Symmetry.Noise, 6),
		}
		ymin := math.Inf(1)
		for _, s := range ss {
			for i, y := range s.Y {
				e := 0.0
				if s.Err != nil {
					e = s.Err[i]
				}
				if y-e > 0 {
					ymin = math.Min(ymin, y-e)
				} else if y > 0 {
					ymin = math.Min(ymin, y/2)
				}
			}
		}
		legend := plot.NoLegend // one legend, in the first panel, where the curves leave room
		if len(panels) == 0 {
			legend = plot.BottomRight
		}
		panels = append(panels, plot.Lines{
			Title:  kr.Kernel + " attention",
			X:      plot.Axis{Label: "relative perturbation ε of the GD construction", Log: true, Ticks: eps},
			Y:      plot.Axis{Label: "‖mean gradient‖", Log: true, Min: ymin / 1.5, Max: 0},
			Series: ss,
			Legend: legend,
		})
	}
	return plot.Figure{Title: "Theorem 2 check (" + res.Task + " task, N = " + strconv.Itoa(res.N) + ", " + strconv.Itoa(res.Contexts) + " contexts)",
		Panels: rows(panels, 3), PanelWidth: 12 * vg.Centimeter, PanelHeight: 9 * vg.Centimeter}
}

func rows(panels []plot.Panel, n int) [][]plot.Panel {
	var out [][]plot.Panel
	for i := 0; i < len(panels); i += n {
		out = append(out, panels[i:min(i+n, len(panels))])
	}
	return out
}
