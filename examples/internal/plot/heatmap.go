package plot

import (
	"fmt"
	"image/color"
	"math"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Heatmap is a panel showing a Rows×Cols matrix as colored cells, row 0 at
// the top (as the matrix is printed), column 0 at the left.
type Heatmap struct {
	Title string
	// Rows, Cols and the row-major Values (element (r, c) at r*Cols+c)
	// are the matrix; NaN cells are drawn white.
	Rows, Cols int
	Values     []float64
	XLabel     string
	YLabel     string
	// ColLabels and RowLabels, if non-nil, label every column and row
	// (len Cols and Rows); nil labels them 0, 1, ... (at most about ten
	// ticks per axis).
	ColLabels, RowLabels []string
	// ColorMap maps values to colors; nil means moreland.ExtendedBlackBody()
	// (sequential, light for large values). Use a diverging map such as
	// moreland.SmoothBlueRed() for signed data. The panel sets the map's
	// Min and Max to the color range.
	ColorMap palette.ColorMap
	// Min and Max set the color range; when Min >= Max it is the range of
	// the finite values.
	Min, Max float64
	// Format, if non-empty, writes every cell's value with fmt.Sprintf in
	// the cell (black or white, whichever contrasts with the cell).
	Format string
	// ColorBar draws a vertical color bar to the right of the panel when
	// the panel is drawn by [Figure.Save] (Plot alone returns the cells).
	ColorBar bool
}

// colors in the discrete palette a heatmap is drawn with.
const heatColors = 256

// grid adapts a Heatmap to gonum's GridXYZ: X(c) = c, Y(r) = r with r
// counted from the bottom, so that matrix row 0 is drawn at the top.
type grid struct{ h *Heatmap }

func (g grid) Dims() (int, int)   { return g.h.Cols, g.h.Rows }
func (g grid) X(c int) float64    { return float64(c) }
func (g grid) Y(r int) float64    { return float64(r) }
func (g grid) Z(c, r int) float64 { return g.h.Values[(g.h.Rows-1-r)*g.h.Cols+c] }

// resolve validates the shape and returns the color map, its Min and Max
// set to the color range.
func (h *Heatmap) resolve() (palette.ColorMap, error) {
	if h.Rows <= 0 || h.Cols <= 0 || len(h.Values) != h.Rows*h.Cols {
		return nil, fmt.Errorf("plot: heatmap %q: Rows = %d, Cols = %d, len(Values) = %d: want Rows*Cols > 0 values", h.Title, h.Rows, h.Cols, len(h.Values))
	}
	if h.ColLabels != nil && len(h.ColLabels) != h.Cols || h.RowLabels != nil && len(h.RowLabels) != h.Rows {
		return nil, fmt.Errorf("plot: heatmap %q: %d column and %d row labels for a %dx%d matrix", h.Title, len(h.ColLabels), len(h.RowLabels), h.Rows, h.Cols)
	}
	lo, hi := h.Min, h.Max
	if !(lo < hi) {
		lo, hi = math.Inf(1), math.Inf(-1)
		for _, v := range h.Values {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
		switch {
		case lo > hi: // no finite value
			lo, hi = 0, 1
		case lo == hi:
			lo, hi = lo-0.5, hi+0.5
		}
	}
	cm := h.ColorMap
	if cm == nil {
		cm = moreland.ExtendedBlackBody()
	}
	cm.SetMin(lo)
	cm.SetMax(hi)
	return cm, nil
}

// Plot builds the panel (without the color bar; see ColorBar).
func (h Heatmap) Plot() (*gplot.Plot, error) {
	cm, err := h.resolve()
	if err != nil {
		return nil, err
	}
	hm := plotter.NewHeatMap(grid{&h}, cm.Palette(heatColors))
	hm.Min, hm.Max = cm.Min(), cm.Max()
	hm.NaN = color.White
	hm.Underflow, hm.Overflow = mustColor(cm, cm.Min()), mustColor(cm, cm.Max())
	hm.Rasterized = h.Rows*h.Cols > 4096
	p := gplot.New()
	p.Title.Text = h.Title
	p.X.Label.Text, p.Y.Label.Text = h.XLabel, h.YLabel
	p.X.Padding, p.Y.Padding = 0, 0
	p.Add(hm)
	p.X.Tick.Marker = indexTicks(h.Cols, h.ColLabels, false)
	p.Y.Tick.Marker = indexTicks(h.Rows, h.RowLabels, true)
	if h.Format != "" {
		var xys plotter.XYs
		var labels []string
		var colors []color.Color
		for r := 0; r < h.Rows; r++ {
			for c := 0; c < h.Cols; c++ {
				v := h.Values[r*h.Cols+c]
				xys = append(xys, plotter.XY{X: float64(c), Y: float64(h.Rows - 1 - r)})
				labels = append(labels, fmt.Sprintf(h.Format, v))
				colors = append(colors, contrast(cm, v))
			}
		}
		lab, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
		if err != nil {
			return nil, fmt.Errorf("plot: heatmap %q: %w", h.Title, err)
		}
		for i := range lab.TextStyle {
			lab.TextStyle[i].Color = colors[i]
			lab.TextStyle[i].XAlign, lab.TextStyle[i].YAlign = -0.5, -0.5
			lab.TextStyle[i].Font.Size = vg.Points(7)
		}
		p.Add(lab)
	}
	return p, nil
}

// colorBar returns the panel's color bar, or nil without ColorBar.
func (h Heatmap) colorBar() (*gplot.Plot, error) {
	if !h.ColorBar {
		return nil, nil
	}
	cm, err := h.resolve()
	if err != nil {
		return nil, err
	}
	p := gplot.New()
	p.Add(&plotter.ColorBar{ColorMap: cm, Vertical: true, Colors: heatColors})
	p.HideX()
	p.X.Padding, p.Y.Padding = 0, 0
	return p, nil
}

// indexTicks labels cell centres 0..n-1 with labels (or their index),
// thinning index labels to about ten. Rows count from the bottom when
// fromTop is set, so their labels are reversed.
func indexTicks(n int, labels []string, fromTop bool) gplot.ConstantTicks {
	step := 1
	if labels == nil {
		step = max(1, (n+9)/10)
	}
	var ticks []gplot.Tick
	for i := 0; i < n; i++ {
		pos := float64(i)
		if fromTop {
			pos = float64(n - 1 - i)
		}
		switch {
		case labels != nil:
			ticks = append(ticks, gplot.Tick{Value: pos, Label: labels[i]})
		case i%step == 0:
			ticks = append(ticks, gplot.Tick{Value: pos, Label: fmt.Sprint(i)})
		}
	}
	return ticks
}

// mustColor is cm's color at v, clamped to its range (v is in range by
// construction; a map error falls back to black).
func mustColor(cm palette.ColorMap, v float64) color.Color {
	v = math.Max(cm.Min(), math.Min(cm.Max(), v))
	c, err := cm.At(v)
	if err != nil {
		return color.Black
	}
	return c
}

// contrast returns black or white, whichever reads better on v's color.
func contrast(cm palette.ColorMap, v float64) color.Color {
	if math.IsNaN(v) {
		return color.Black
	}
	r, g, b, _ := mustColor(cm, v).RGBA()
	// Relative luminance (ITU-R BT.709 weights) of the 16-bit channels.
	if 0.2126*float64(r)+0.7152*float64(g)+0.0722*float64(b) > 0.5*0xffff {
		return color.Black
	}
	return color.White
}
