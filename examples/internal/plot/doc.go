// Package plot draws the figures of gdattn's examples with gonum/plot: line
// plots of a metric against a swept quantity with error bars (mean ± std over
// seeds), heatmaps of matrices, and grids of such panels saved as one PNG,
// SVG or PDF file. It lives under examples/internal because it is glue for
// the examples' figures, not a library API.
//
// A figure is a grid of panels. Each panel is a value describing what to
// draw ([Lines] or [Heatmap]); [Figure.Save] lays the panels out with aligned
// axes and writes the file, whose format follows its extension:
//
//	acc := plot.Lines{
//		Title: "RBF kernel",
//		X:     plot.Axis{Label: "training contexts L", Log: true, Ticks: []float64{2048, 4096, 8192}},
//		Y:     plot.Axis{Label: "test top-1 accuracy"},
//		Series: []plot.Series{
//			{Label: "GD", X: ls, Y: meanGD, Err: stdGD},
//			{Label: "Trained TF", X: ls, Y: meanTF, Err: stdTF},
//		},
//		Legend: plot.BottomRight,
//	}
//	err := plot.Figure{Panels: [][]plot.Panel{{acc, nll}}}.Save("fig2.png")
//
// Heatmaps show a row-major matrix with row 0 at the top, optional row and
// column labels, cell annotations and a color bar:
//
//	hm := plot.Heatmap{Title: "W_e", Rows: 5, Cols: 25, Values: we, Format: "%.1f", ColorBar: true}
//
// Series get distinct colors (the Okabe-Ito palette, designed to stay
// distinguishable for color-blind readers) and point shapes by their
// position in the panel, unless they set Color; listing the models in the
// same order in every panel therefore keeps each model's color and shape. Panel.Plot returns the gonum *plot.Plot for
// callers that need to adjust something this package does not expose.
//
// Sizes are in gonum's vg units (vg.Centimeter, vg.Inch, vg.Points); zero
// sizes mean the documented defaults, and PNGs are rendered at [DPI].
package plot
