package plot_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gdattn/gdattn/examples/internal/plot"
)

// A metric against a swept quantity, mean ± std over seeds, for two models,
// next to its NLL: the layout of the paper's Figure 2.
func ExampleFigure() {
	ls := []float64{2048, 4096, 8192}
	x := plot.Axis{Label: "training contexts L", Log: true, Ticks: ls}
	acc := plot.Lines{
		Title: "softmax kernel", X: x, Y: plot.Axis{Label: "test top-1"}, Legend: plot.BottomRight,
		Series: []plot.Series{
			{Label: "GD", X: ls, Y: []float64{0.55, 0.56, 0.56}, Err: []float64{0.01, 0.01, 0.005}},
			{Label: "Trained TF", X: ls, Y: []float64{0.40, 0.50, 0.55}, Err: []float64{0.03, 0.02, 0.01}},
		},
	}
	nll := plot.Lines{
		Title: "softmax kernel", X: x, Y: plot.Axis{Label: "test NLL"},
		Series: []plot.Series{
			{Label: "GD", X: ls, Y: []float64{1.50, 1.48, 1.47}, Err: []float64{0.02, 0.01, 0.01}},
			{Label: "Trained TF", X: ls, Y: []float64{2.10, 1.70, 1.52}, Err: []float64{0.10, 0.05, 0.02}},
		},
	}
	dir, _ := os.MkdirTemp("", "plot")
	defer os.RemoveAll(dir)
	err := plot.Figure{Panels: [][]plot.Panel{{acc, nll}}}.Save(filepath.Join(dir, "fig.png"))
	fmt.Println(err)
	// Output: <nil>
}
