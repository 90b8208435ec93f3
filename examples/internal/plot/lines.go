package plot

import (
	"fmt"
	"image/color"
	"math"
	"strconv"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Series is one line of a [Lines] panel: the points (X[i], Y[i]) joined in
// order, with optional symmetric error bars ±Err[i].
type Series struct {
	Label string
	X, Y  []float64
	// Err, if non-nil, holds one error per point (e.g. the std over seeds);
	// NaN entries draw no bar. Errors are drawn as bars, or as a shaded band
	// when Band is set (easier to read for dense curves such as training
	// curves).
	Err  []float64
	Band bool
	// Color overrides the default color (the i-th of [Colors]); Dashed
	// draws a dashed line; NoPoints omits the point markers.
	Color    color.Color
	Dashed   bool
	NoPoints bool
}

// Axis describes one axis of a [Lines] panel.
type Axis struct {
	Label string
	// Log uses a logarithmic scale; every value on the axis must then be > 0.
	Log bool
	// Ticks, if non-nil, places the ticks exactly at these values (labelled
	// with strconv's shortest 'g' format), e.g. the swept values of L.
	Ticks []float64
	// Min and Max fix the range when Min < Max; otherwise it follows the
	// data (error bars included).
	Min, Max float64
}

// LegendPos places the legend inside a panel.
type LegendPos int

// Legend positions; the zero value is TopRight.
const (
	TopRight LegendPos = iota
	TopLeft
	BottomRight
	BottomLeft
	NoLegend
)

// Lines is a panel of line plots, such as a metric against a swept
// quantity, one series per model.
type Lines struct {
	Title  string
	X, Y   Axis
	Series []Series
	Legend LegendPos
}

// Colors is the default series color cycle: the Okabe-Ito palette
// (distinguishable under the common forms of color blindness).
var Colors = []color.Color{
	color.RGBA{0x00, 0x72, 0xb2, 0xff}, // blue
	color.RGBA{0xd5, 0x5e, 0x00, 0xff}, // vermillion
	color.RGBA{0x00, 0x9e, 0x73, 0xff}, // bluish green
	color.RGBA{0xcc, 0x79, 0xa7, 0xff}, // reddish purple
	color.RGBA{0xe6, 0x9f, 0x00, 0xff}, // orange
	color.RGBA{0x56, 0xb4, 0xe9, 0xff}, // sky blue
	color.RGBA{0x00, 0x00, 0x00, 0xff}, // black
	color.RGBA{0xf0, 0xe4, 0x42, 0xff}, // yellow
}

// shapes is the point-marker cycle, parallel to Colors.
var shapes = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PlusGlyph{},
	draw.CrossGlyph{}, draw.RingGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{},
}

// Plot builds the panel. It returns an error if a series' slices differ in
// length, hold no point, hold a non-finite X or Y, or a value ≤ 0 on a Log
// axis.
func (l Lines) Plot() (*gplot.Plot, error) {
	p := gplot.New()
	p.Title.Text = l.Title
	setAxis(&p.X, l.X)
	setAxis(&p.Y, l.Y)
	p.Add(plotter.NewGrid())
	switch l.Legend {
	case TopLeft:
		p.Legend.Top, p.Legend.Left = true, true
	case BottomRight:
	case BottomLeft:
		p.Legend.Left = true
	default:
		p.Legend.Top = true
	}
	p.Legend.ThumbnailWidth = vg.Points(20)
	for i, s := range l.Series {
		if err := l.addSeries(p, i, s); err != nil {
			return nil, fmt.Errorf("plot: %q: series %q: %w", l.Title, s.Label, err)
		}
	}
	return p, nil
}

func setAxis(a *gplot.Axis, ax Axis) {
	a.Label.Text = ax.Label
	a.Tick.Marker = exactTicks{}
	if ax.Log {
		a.Scale = gplot.LogScale{}
		a.Tick.Marker = gplot.LogTicks{Prec: -1}
	}
	if ax.Ticks != nil {
		ticks := make([]gplot.Tick, len(ax.Ticks))
		for i, v := range ax.Ticks {
			ticks[i] = gplot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', -1, 64)}
		}
		a.Tick.Marker = gplot.ConstantTicks(ticks)
	}
	if ax.Min < ax.Max {
		a.Min, a.Max = ax.Min, ax.Max
	}
}

// xyErr adapts a Series to gonum's XYer and YErrorer.
type xyErr struct{ s Series }

func (d xyErr) Len() int                        { return len(d.s.X) }
func (d xyErr) XY(i int) (float64, float64)     { return d.s.X[i], d.s.Y[i] }
func (d xyErr) YError(i int) (float64, float64) { return d.s.Err[i], d.s.Err[i] }

func (l Lines) addSeries(p *gplot.Plot, i int, s Series) error {
	n := len(s.X)
	if n == 0 || len(s.Y) != n || (s.Err != nil && len(s.Err) != n) {
		return fmt.Errorf("len(X) = %d, len(Y) = %d, len(Err) = %d: want equal, non-zero lengths (Err may be nil)", len(s.X), len(s.Y), len(s.Err))
	}
	for j := 0; j < n; j++ {
		if err := plotter.CheckFloats(s.X[j], s.Y[j]); err != nil {
			return fmt.Errorf("point %d: %w", j, err)
		}
		if l.X.Log && s.X[j] <= 0 || l.Y.Log && s.Y[j] <= 0 {
			return fmt.Errorf("point %d (%g, %g): values must be > 0 on a log axis", j, s.X[j], s.Y[j])
		}
	}
	col := s.Color
	if col == nil {
		col = Colors[i%len(Colors)]
	}
	if s.Err != nil {
		// Points whose error is NaN get no bar: draw the bars of the others.
		var keep Series
		keep.X, keep.Y, keep.Err = []float64{}, []float64{}, []float64{}
		for j := 0; j < n; j++ {
			if e := s.Err[j]; !math.IsNaN(e) && !math.IsInf(e, 0) {
				keep.X, keep.Y, keep.Err = append(keep.X, s.X[j]), append(keep.Y, s.Y[j]), append(keep.Err, math.Abs(e))
			}
		}
		if len(keep.X) > 0 {
			if s.Band {
				poly, err := band(keep, col, l.Y.Log)
				if err != nil {
					return err
				}
				p.Add(poly)
			} else {
				eb, err := plotter.NewYErrorBars(xyErr{keep})
				if err != nil {
					return err
				}
				eb.LineStyle.Color = col
				eb.LineStyle.Width = vg.Points(1)
				eb.CapWidth = vg.Points(5)
				p.Add(eb)
			}
		}
	}
	xys := make(plotter.XYs, n)
	for j := range xys {
		xys[j].X, xys[j].Y = s.X[j], s.Y[j]
	}
	line, points, err := plotter.NewLinePoints(xys)
	if err != nil {
		return err
	}
	line.Color = col
	line.Width = vg.Points(1.5)
	if s.Dashed {
		line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	p.Add(line)
	entry := []gplot.Thumbnailer{line}
	if !s.NoPoints {
		points.Color = col
		points.Shape = shapes[i%len(shapes)]
		points.Radius = vg.Points(2.5)
		p.Add(points)
		entry = append(entry, points)
	}
	if s.Label != "" && l.Legend != NoLegend {
		p.Legend.Add(s.Label, entry...)
	}
	return nil
}

// band is the shaded region Y ± Err of s, drawn as a translucent polygon.
func band(s Series, col color.Color, logY bool) (*plotter.Polygon, error) {
	n := len(s.X)
	ring := make(plotter.XYs, 0, 2*n)
	for j := 0; j < n; j++ {
		ring = append(ring, plotter.XY{X: s.X[j], Y: s.Y[j] + s.Err[j]})
	}
	for j := n - 1; j >= 0; j-- {
		lo := s.Y[j] - s.Err[j]
		if logY && lo <= 0 {
			lo = s.Y[j] / 2 // a log axis cannot show a non-positive bound
		}
		ring = append(ring, plotter.XY{X: s.X[j], Y: lo})
	}
	poly, err := plotter.NewPolygon(ring)
	if err != nil {
		return nil, err
	}
	r, g, b, _ := col.RGBA()
	poly.Color = color.NRGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), 0x40}
	poly.LineStyle.Width = 0
	return poly, nil
}

// exactTicks are gonum's default ticks, labelled with the fewest decimals
// that write every labelled value exactly: the default labels round to a
// fixed number of significant digits, so that ticks at 0.25 and 0.75 can
// read "0.2" and "0.8".
type exactTicks struct{}

func (exactTicks) Ticks(lo, hi float64) []gplot.Tick {
	ticks := gplot.DefaultTicks{}.Ticks(lo, hi)
	decimals := 0
	for ; decimals < 8; decimals++ {
		exact := true
		scale := math.Pow(10, float64(decimals))
		for _, t := range ticks {
			if v := t.Value * scale; t.Label != "" && math.Abs(v-math.Round(v)) > 1e-6*math.Max(1, math.Abs(v)) {
				exact = false
				break
			}
		}
		if exact {
			break
		}
	}
	for i, t := range ticks {
		if t.Label != "" {
			ticks[i].Label = strconv.FormatFloat(t.Value, 'f', decimals, 64)
		}
	}
	return ticks
}
