package fewshot

import (
	"fmt"
	"image/color"
	"math"

	"github.com/gdattn/gdattn/examples/internal/plot"
	"github.com/gdattn/gdattn/examples/internal/sweep"
)

// modelLabel names a model in the figure as the paper does.
func modelLabel(name string) string {
	if k, err := blocksOf(name); err == nil {
		if k == 1 {
			return "GD, 1 block"
		}
		return fmt.Sprintf("GD, %d blocks", k)
	}
	switch name {
	case "tf":
		return "Trained TF"
	case "lp":
		return "linear probing"
	}
	return name
}

// modelColor gives every model one color in every panel.
func modelColor(name string) color.Color {
	order := []string{"gd1", "gd2", "gd3", "tf", "lp"}
	for i, n := range order {
		if n == name {
			return plot.Colors[i]
		}
	}
	return plot.Colors[len(order)%len(plot.Colors)]
}

// plotResults draws the held-out top-1 accuracy and NLL against training
// epochs (mean ± std over seeds), with linear probing (trained anew on each
// test context, so flat) dashed: for every feature set a row with the GD
// models, the layout of the paper's Figure 4 (right), and, where the Trained
// TF ran, a row comparing it with GD (its accuracy sits on another scale).
func plotResults(res *Results, path string) error {
	var rows [][]plot.Panel
	for _, fr := range res.Features {
		isTF := func(n string) bool { return n == "tf" }
		notTF := func(n string) bool { return n != "tf" }
		title := fmt.Sprintf("%s features (d=%d)", fr.Kind, fr.InputDim)
		if acc, nll, ok := panels(fr, title+": GD vs linear probing", notTF); ok {
			rows = append(rows, []plot.Panel{acc, nll})
		}
		hasTF := false
		for _, m := range fr.Models {
			hasTF = hasTF || isTF(m.Name)
		}
		if hasTF {
			acc, nll, _ := panels(fr, title+": Trained TF", func(n string) bool { return n == "tf" || n == "gd2" || n == "lp" })
			rows = append(rows, []plot.Panel{acc, nll})
		}
	}
	if len(rows) == 0 {
		return fmt.Errorf("plot: no results to draw")
	}
	return plot.Figure{Title: "In-context classification of held-out Quick, Draw! categories (5-way 10-shot)", Panels: rows}.Save(path)
}

// panels draws the accuracy and NLL panels of the models keep selects.
func panels(fr FeatureResult, title string, keep func(string) bool) (plot.Lines, plot.Lines, bool) {
	acc := plot.Lines{Title: title, X: plot.Axis{Label: "training epochs"}, Y: plot.Axis{Label: "held-out top-1 accuracy"}, Legend: plot.BottomRight}
	nll := plot.Lines{Title: title, X: plot.Axis{Label: "training epochs"}, Y: plot.Axis{Label: "held-out NLL"}}
	var probe *ModelResult
	xmax := 1.0
	for i := range fr.Models {
		m := &fr.Models[i]
		if !keep(m.Name) {
			continue
		}
		if m.Name == "lp" {
			probe = m
			continue
		}
		x, top1, top1Err, nl, nlErr := curveStats(m)
		if len(x) == 0 {
			continue
		}
		xmax = math.Max(xmax, x[len(x)-1])
		col := modelColor(m.Name)
		acc.Series = append(acc.Series, plot.Series{Label: modelLabel(m.Name), X: x, Y: top1, Err: top1Err, Color: col})
		nll.Series = append(nll.Series, plot.Series{Label: modelLabel(m.Name), X: x, Y: nl, Err: nlErr, Color: col})
	}
	if len(acc.Series) == 0 {
		return acc, nll, false
	}
	if probe != nil {
		x, col := []float64{0, xmax}, modelColor("lp")
		acc.Series = append(acc.Series, plot.Series{Label: modelLabel("lp"), X: x, Y: []float64{probe.Top1, probe.Top1}, Color: col, Dashed: true, NoPoints: true})
		nll.Series = append(nll.Series, plot.Series{Label: modelLabel("lp"), X: x, Y: []float64{probe.NLL, probe.NLL}, Color: col, Dashed: true, NoPoints: true})
	}
	return acc, nll, true
}

// curveStats averages a model's evaluation curves over its seeds, epoch by
// epoch (every seed is evaluated at the same epochs).
func curveStats(m *ModelResult) (x, top1, top1Err, nll, nllErr []float64) {
	if len(m.Seeds) == 0 {
		return
	}
	for i, p := range m.Seeds[0].Curve {
		var a, n []float64
		for _, s := range m.Seeds {
			if i < len(s.Curve) {
				a, n = append(a, s.Curve[i].Top1), append(n, s.Curve[i].NLL)
			}
		}
		ma, sa := sweep.MeanStd(a)
		mn, sn := sweep.MeanStd(n)
		x, top1, top1Err, nll, nllErr = append(x, float64(p.Epoch)), append(top1, ma), append(top1Err, sa), append(nll, mn), append(nllErr, sn)
	}
	return
}
