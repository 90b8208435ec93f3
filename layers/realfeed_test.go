package layers

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"gorgonia.org/tensor"
)

func TestRealInputsFeedReal(t *testing.T) {
	s, err := graph.NewScope(tensor.Float64, 1)
	if err != nil {
		t.Fatal(err)
	}
	B, T, d, dy := 2, 3, 1, 1
	X, Y, Tg, f0, err := RealInputs(s, B, T, d, dy)
	if err != nil {
		t.Fatal(err)
	}
	if got := values(t, f0); !slices.Equal(got, make([]float64, B*T*dy)) || !slices.Equal(f0.Shape(), tensor.Shape{B, T, dy}) {
		t.Errorf("f0 = %v %v, want zeros of shape (%d, %d, %d)", f0.Shape(), got, B, T, dy)
	}
	x := []float64{1, 2, 3, 4, 5, 6}
	y := []float64{10, 11, 12, 20, 21, math.NaN()}
	if err := FeedReal("who", X, Y, Tg, x, y, B, T, d, dy); err != nil {
		t.Fatal(err)
	}
	if got, want := values(t, Y), []float64{10, 11, 0, 20, 21, 0}; !slices.Equal(got, want) {
		t.Errorf("Y = %v, want %v (query rows hidden)", got, want)
	}
	if got, want := values(t, Tg), []float64{12, 0}; !slices.Equal(got, want) {
		t.Errorf("Target = %v, want %v (NaN query target is 0)", got, want)
	}
	for _, c := range []struct {
		x, y []float64
		want string
	}{
		{[]float64{1, math.Inf(1), 3, 4, 5, 6}, y, "who: x[1] (context 0, position 1)"},
		{x, []float64{10, math.NaN(), 12, 20, 21, 22}, "who: y[1] (context 0, position 1)"},
		{x, []float64{10, 11, 12, 20, 21, math.Inf(-1)}, "who: y[5] (query of context 1)"},
	} {
		err := FeedReal("who", X, Y, Tg, c.x, c.y, B, T, d, dy)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("FeedReal error %v, want prefix %q", err, c.want)
		}
	}
}
