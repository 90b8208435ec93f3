package quadrant

import (
	"fmt"
	"image/color"
	"math"

	"github.com/gdattn/gdattn/examples/internal/plot"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/tf"
	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

var modelLabels = map[string]string{"gd": "GD", "tf": "Trained TF"}

// accuracyFigure is Figure 6: test top-1 against training steps, mean ± std
// over seeds, one panel per kernel, with the oracle (mean max probability).
func accuracyFigure(krs []*kernelResult, oracle float64) plot.Figure {
	var panels []plot.Panel
	for _, kr := range krs {
		l := plot.Lines{Title: kr.Kernel + " attention", X: plot.Axis{Label: "training steps"},
			Y: plot.Axis{Label: "test top-1 accuracy", Min: 0, Max: 0.6, Ticks: []float64{0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6}}, Legend: plot.BottomRight}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, name := range ModelNames {
			mr := kr.Models[name]
			if mr == nil || len(mr.Curve) == 0 {
				continue
			}
			s := plot.Series{Label: modelLabels[name]}
			for _, c := range mr.Curve {
				s.X = append(s.X, float64(c.Step))
				s.Y = append(s.Y, c.Top1.Mean)
				s.Err = append(s.Err, c.Top1.Std)
			}
			lo, hi = math.Min(lo, s.X[0]), math.Max(hi, s.X[len(s.X)-1])
			l.Series = append(l.Series, s)
		}
		if len(l.Series) == 0 {
			continue
		}
		l.X.Ticks = niceTicks(0, hi)
		l.Series = append(l.Series, plot.Series{Label: "oracle (mean max prob.)", X: []float64{lo, hi},
			Y: []float64{oracle, oracle}, Dashed: true, NoPoints: true, Color: plot.Colors[6]})
		panels = append(panels, l)
	}
	return plot.Figure{Title: "Quadrant task (Appendix F), one attention layer: GD vs Trained TF", Panels: rows(panels, 3)}
}

// niceTicks returns round tick values from lo to hi: multiples of 1, 2 or
// 5 times a power of ten, about five of them.
func niceTicks(lo, hi float64) []float64 {
	if !(hi > lo) {
		return nil
	}
	raw := (hi - lo) / 5
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	step := p
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			step = m * p
			break
		}
	}
	var out []float64
	for v := math.Ceil(lo/step) * step; v <= hi+1e-9*step; v += step {
		out = append(out, v)
	}
	return out
}

// rows lays panels out in rows of at most n.
func rows(panels []plot.Panel, n int) [][]plot.Panel {
	var out [][]plot.Panel
	for i := 0; i < len(panels); i += n {
		out = append(out, panels[i:min(i+n, len(panels))])
	}
	return out
}

// probMap is a Figure 7 panel: p(y = c | x) over [−1, 1]² as a heatmap with
// the context points on top, the mapped categories as their numbers and the
// other categories as rings. It embeds plot.Heatmap for the cells and the
// color bar.
type probMap struct {
	plot.Heatmap
	side    int
	ctxX    []float64 // (N, 2)
	ctxY    []int
	numbers map[int]bool // categories drawn as numbers
}

func (pm probMap) Plot() (*gplot.Plot, error) {
	p, err := pm.Heatmap.Plot()
	if err != nil {
		return nil, err
	}
	// Cell (c, r) is centred at plot coordinates (c, side−1−r); x₁ = −1 + c·h.
	h := 2 / float64(pm.side-1)
	toPlot := func(v float64) float64 { return (v + 1) / h }
	var ticks []gplot.Tick
	for _, v := range []float64{-1, -0.5, 0, 0.5, 1} {
		ticks = append(ticks, gplot.Tick{Value: toPlot(v), Label: fmt.Sprint(v)})
	}
	p.X.Tick.Marker, p.Y.Tick.Marker = gplot.ConstantTicks(ticks), gplot.ConstantTicks(ticks)
	p.X.Label.Text, p.Y.Label.Text = "x₁", "x₂"
	var rings plotter.XYs
	var nums plotter.XYLabels
	for i, y := range pm.ctxY {
		xy := plotter.XY{X: toPlot(pm.ctxX[2*i]), Y: toPlot(pm.ctxX[2*i+1])}
		if pm.numbers[y] {
			nums.XYs = append(nums.XYs, xy)
			nums.Labels = append(nums.Labels, fmt.Sprint(y))
		} else {
			rings = append(rings, xy)
		}
	}
	// Quadrant axes.
	mid := toPlot(0)
	for _, seg := range [][2]plotter.XY{{{X: mid, Y: 0}, {X: mid, Y: toPlot(1)}}, {{X: 0, Y: mid}, {X: toPlot(1), Y: mid}}} {
		ln, err := plotter.NewLine(plotter.XYs{seg[0], seg[1]})
		if err != nil {
			return nil, err
		}
		ln.Color = color.RGBA{0x80, 0x80, 0x80, 0xff}
		ln.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
		p.Add(ln)
	}
	if len(rings) > 0 {
		sc, err := plotter.NewScatter(rings)
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: color.RGBA{0x00, 0xe5, 0xff, 0xff}, Radius: vg.Points(2), Shape: draw.RingGlyph{}}
		p.Add(sc)
	}
	if len(nums.XYs) > 0 {
		lab, err := plotter.NewLabels(nums)
		if err != nil {
			return nil, err
		}
		for i := range lab.TextStyle {
			lab.TextStyle[i].Color = color.RGBA{0x00, 0xe5, 0xff, 0xff}
			lab.TextStyle[i].XAlign, lab.TextStyle[i].YAlign = -0.5, -0.5
			lab.TextStyle[i].Font.Size = vg.Points(8)
		}
		p.Add(lab)
	}
	return p, nil
}

// mapFigure is Figure 7: GD (top row) and TF (bottom row) maps of
// p(y = c | x) for the mapped categories; probs[model] is (side², C).
func mapFigure(kern string, seed uint64, side int, probs map[string][]float64, C int, cats []int, ctxX []float64, ctxY []int) plot.Figure {
	numbers := map[int]bool{}
	for _, c := range cats {
		numbers[c] = true
	}
	var fig [][]plot.Panel
	for _, name := range ModelNames {
		var row []plot.Panel
		for _, c := range cats {
			vals := make([]float64, side*side)
			hi := 0.0
			for i := range vals {
				vals[i] = probs[name][i*C+c]
				for _, n := range ModelNames {
					hi = math.Max(hi, probs[n][i*C+c])
				}
			}
			row = append(row, probMap{
				Heatmap: plot.Heatmap{Title: fmt.Sprintf("%s: p(y = %d | x)", modelLabels[name], c), Rows: side, Cols: side,
					Values: vals, Min: 0, Max: hi, ColorBar: true, ColorMap: moreland.ExtendedBlackBody()},
				side: side, ctxX: ctxX, ctxY: ctxY, numbers: numbers,
			})
		}
		fig = append(fig, row)
	}
	return plot.Figure{
		Title:      fmt.Sprintf("%s attention, one layer (seed %d): p(y = c | x) for one context (N = %d); numbers: context points of the mapped categories, rings: the others", kern, seed, len(ctxY)),
		Panels:     fig,
		PanelWidth: 10 * vg.Centimeter, PanelHeight: 9 * vg.Centimeter,
	}
}

// tokenLabels names the D = 12 token coordinates: x (0-1), w_{e,y} − w̄
// (2-6), f (7-11).
func tokenLabels(d, dp int) []string {
	var out []string
	for i := 0; i < d+2*dp; i++ {
		out = append(out, fmt.Sprint(i))
	}
	return out
}

// transpose returns mᵀ: the paper prints column-convention matrices, gdattn
// stores row-convention ones.
func transpose(m gd.Matrix) gd.Matrix {
	out := gd.Matrix{Rows: m.Cols, Cols: m.Rows, Data: make([]float64, len(m.Data))}
	for i := 0; i < m.Rows; i++ {
		for j := 0; j < m.Cols; j++ {
			out.Data[j*m.Rows+i] = m.At(i, j)
		}
	}
	return out
}

// signedHeatmap is a diverging heatmap symmetric about 0.
func signedHeatmap(title string, m gd.Matrix, labels []string, format string) plot.Heatmap {
	hi := 0.0
	for _, v := range m.Data {
		hi = math.Max(hi, math.Abs(v))
	}
	if hi == 0 {
		hi = 1
	}
	h := plot.Heatmap{Title: title, Rows: m.Rows, Cols: m.Cols, Values: m.Data, Min: -hi, Max: hi,
		ColorMap: moreland.SmoothBlueRed(), ColorBar: true, Format: format}
	if labels != nil && len(labels) == m.Cols && len(labels) == m.Rows {
		h.RowLabels, h.ColLabels = labels, labels
	}
	return h
}

// paramsFigure is Figure 8: the TF's learned W_Q, W_K, W_V and P in the
// paper's column convention (transposes of gdattn's row-convention
// matrices), so that column j is input coordinate j.
func paramsFigure(kern string, seed uint64, l oneLayer) plot.Figure {
	hd := l.Heads[0]
	labels := tokenLabels(l.D, l.DPrime)
	var row []plot.Panel
	for _, c := range []struct {
		name string
		m    gd.Matrix
	}{{"W_Q", hd.WQ}, {"W_K", hd.WK}, {"W_V", hd.WV}, {"P", hd.P}} {
		row = append(row, signedHeatmap(c.name, transpose(c.m), labels, ""))
	}
	return plot.Figure{
		Title:      fmt.Sprintf("Trained TF, %s attention (seed %d): learned matrices, paper's convention; coordinates 0-1: x, 2-6: w_{e,y} − w̄_e, 7-11: f", kern, seed),
		Panels:     [][]plot.Panel{row},
		PanelWidth: 10 * vg.Centimeter, PanelHeight: 9 * vg.Centimeter,
	}
}

// qedFigure is Figure 9: Q = AᵀB (2×2) and E·D (5×5) of the first TF seed
// of every kernel, one row per kernel.
func qedFigure(krs []*kernelResult) plot.Figure {
	var fig [][]plot.Panel
	for _, kr := range krs {
		if kr.Analysis == nil {
			continue
		}
		a := kr.Analysis
		fig = append(fig, []plot.Panel{
			signedHeatmap(fmt.Sprintf("%s: Q (off-diagonal share %.3f)", kr.Kernel, tf.Diagonality(a.Q)), a.Q, nil, "%.3g"),
			signedHeatmap(fmt.Sprintf("%s: E·D (off-diagonal share %.3f)", kr.Kernel, tf.Diagonality(a.ED)), a.ED, nil, "%.3f"),
			signedHeatmap(fmt.Sprintf("%s: (W_V·P·R)ᵀ label→f (off-diag. %.3f)", kr.Kernel, tf.Diagonality(a.MEff)), transpose(a.MEff), nil, "%.3f"),
		})
	}
	return plot.Figure{Title: "Trained TF (run of median accuracy): Q = AᵀB, E·D and the label→f map through the readout R (GD: all multiples of I)", Panels: fig,
		PanelWidth: 10 * vg.Centimeter, PanelHeight: 8 * vg.Centimeter}
}
