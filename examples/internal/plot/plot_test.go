package plot

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot/palette/moreland"
)

// demo is a figure using every feature: error bars, a band, a log axis
// with fixed ticks, NaN errors, a dashed series and an annotated heatmap
// with a color bar.
func demo() Figure {
	ls := []float64{2048, 4096, 8192, 16384, 32768}
	acc := Lines{
		Title: "top-1 accuracy",
		X:     Axis{Label: "training contexts L", Log: true, Ticks: ls},
		Y:     Axis{Label: "test top-1"},
		Series: []Series{
			{Label: "GD", X: ls, Y: []float64{0.55, 0.56, 0.565, 0.57, 0.57}, Err: []float64{0.01, 0.008, 0.005, 0.004, 0.003}},
			{Label: "Trained TF", X: ls, Y: []float64{0.3, 0.42, 0.5, 0.55, 0.565}, Err: []float64{0.05, math.NaN(), 0.02, 0.01, 0.005}},
			{Label: "oracle", X: []float64{2048, 32768}, Y: []float64{0.6, 0.6}, Dashed: true, NoPoints: true, Color: Colors[6]},
		},
		Legend: BottomRight,
	}
	ep := make([]float64, 30)
	y, e := make([]float64, 30), make([]float64, 30)
	for i := range ep {
		ep[i] = float64(i + 1)
		y[i] = 3 - math.Log(ep[i])/2
		e[i] = 0.2 / math.Sqrt(ep[i])
	}
	curve := Lines{
		Title:  "training curve",
		X:      Axis{Label: "epoch"},
		Y:      Axis{Label: "test NLL"},
		Series: []Series{{Label: "K=1", X: ep, Y: y, Err: e, Band: true, NoPoints: true}},
	}
	m := make([]float64, 5*8)
	for i := range m {
		m[i] = math.Sin(float64(i))
	}
	heat := Heatmap{Title: "matrix", Rows: 5, Cols: 8, Values: m, Format: "%.1f", ColorBar: true,
		ColorMap: moreland.SmoothBlueRed(), XLabel: "column", YLabel: "row",
		RowLabels: []string{"a", "b", "c", "d", "e"}}
	return Figure{Title: "demo", Panels: [][]Panel{{acc, curve}, {heat}}}
}

func TestSaveFormats(t *testing.T) {
	dir := t.TempDir()
	if out := os.Getenv("PLOT_DEMO_DIR"); out != "" {
		dir = out // to look at the demo: PLOT_DEMO_DIR=/tmp go test -run TestSaveFormats
	}
	for _, ext := range []string{"png", "svg", "pdf", "jpg"} {
		path := filepath.Join(dir, "demo."+ext)
		if err := demo().Save(path); err != nil {
			t.Fatalf("%s: %v", ext, err)
		}
		st, err := os.Stat(path)
		if err != nil || st.Size() < 1000 {
			t.Fatalf("%s: %v, size %d", ext, err, st.Size())
		}
	}
	f, err := os.Open(filepath.Join(dir, "demo.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	// Two columns of 11 cm and two rows of 8 cm plus the title, at DPI.
	wantW := int(math.Ceil(2 * 11 / 2.54 * DPI))
	if w := img.Bounds().Dx(); w != wantW {
		t.Errorf("png width %d, want %d", w, wantW)
	}
	if h := img.Bounds().Dy(); float64(h) < 2*8/2.54*DPI {
		t.Errorf("png height %d, want at least two panel heights", h)
	}
}

func TestErrors(t *testing.T) {
	x := []float64{1, 2, 3}
	tests := []struct {
		name string
		fig  Figure
		path string
		want string
	}{
		{"no panels", Figure{}, "a.png", "no panels"},
		{"format", Figure{Panels: [][]Panel{{Lines{Series: []Series{{X: x, Y: x}}}}}}, "a.gif", "gif"},
		{"lengths", Figure{Panels: [][]Panel{{Lines{Title: "p", Series: []Series{{Label: "s", X: x, Y: x[:2]}}}}}}, "a.png", `series "s"`},
		{"err length", Figure{Panels: [][]Panel{{Lines{Series: []Series{{X: x, Y: x, Err: x[:1]}}}}}}, "a.png", "len(Err)"},
		{"empty series", Figure{Panels: [][]Panel{{Lines{Series: []Series{{}}}}}}, "a.png", "non-zero"},
		{"nan", Figure{Panels: [][]Panel{{Lines{Series: []Series{{X: x, Y: []float64{1, math.NaN(), 3}}}}}}}, "a.png", "point 1"},
		{"log", Figure{Panels: [][]Panel{{Lines{X: Axis{Log: true}, Series: []Series{{X: []float64{0, 1}, Y: x[:2]}}}}}}, "a.png", "log axis"},
		{"heatmap size", Figure{Panels: [][]Panel{{Heatmap{Title: "h", Rows: 2, Cols: 2, Values: x}}}}, "a.png", `heatmap "h"`},
		{"heatmap labels", Figure{Panels: [][]Panel{{Heatmap{Rows: 1, Cols: 3, Values: x, ColLabels: []string{"a"}}}}}, "a.png", "labels"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.path)
			err := tc.fig.Save(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error %v, want one containing %q", err, tc.want)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("%s exists after a failed save", path)
			}
		})
	}
}

func TestHeatmapLayout(t *testing.T) {
	h := Heatmap{Rows: 2, Cols: 3, Values: []float64{1, 2, 3, 4, 5, math.NaN()}}
	g := grid{&h}
	// Matrix row 0 is drawn at the top: grid row 1 from the bottom.
	if got := g.Z(2, 1); got != 3 {
		t.Errorf("Z(2, 1) = %v, want 3 (row 0, column 2)", got)
	}
	if got := g.Z(0, 0); got != 4 {
		t.Errorf("Z(0, 0) = %v, want 4 (row 1, column 0)", got)
	}
	cm, err := h.resolve()
	if err != nil {
		t.Fatal(err)
	}
	if cm.Min() != 1 || cm.Max() != 5 {
		t.Errorf("color range [%v, %v], want the finite data range [1, 5]", cm.Min(), cm.Max())
	}
	// A constant matrix still gets a non-empty range, and renders.
	c := Heatmap{Rows: 1, Cols: 1, Values: []float64{7}, Format: "%.0f", ColorBar: true}
	var buf bytes.Buffer
	if err := (Figure{Panels: [][]Panel{{c}}}).WriteTo(&buf, "png"); err != nil {
		t.Fatal(err)
	}
	ticks := indexTicks(25, nil, false)
	if len(ticks) != 9 || ticks[1].Label != "3" {
		t.Errorf("25 unlabelled columns: %d ticks %v, want every 3rd index", len(ticks), ticks)
	}
}

// TestExactTicks: every labelled tick reads as its value (the default
// labels rounded 0.25 to "0.2" and 3.36 to "3.4").
func TestExactTicks(t *testing.T) {
	for _, r := range [][2]float64{{0.2, 0.8}, {3.08, 3.41}, {1.4, 1.62}, {0, 1000}, {-2.5, 7}} {
		labelled := 0
		for _, tk := range (exactTicks{}).Ticks(r[0], r[1]) {
			if tk.Label == "" {
				continue
			}
			labelled++
			v, err := strconv.ParseFloat(tk.Label, 64)
			if err != nil || math.Abs(v-tk.Value) > 1e-9*math.Max(1, math.Abs(tk.Value)) {
				t.Errorf("range %v: tick %v labelled %q", r, tk.Value, tk.Label)
			}
		}
		if labelled < 2 {
			t.Errorf("range %v: %d labelled ticks", r, labelled)
		}
	}
}
