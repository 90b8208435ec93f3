package layers

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/graph"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestFeedReal(t *testing.T) {
	s, err := graph.NewScope(tensor.Float64, 1)
	if err != nil {
		t.Fatal(err)
	}
	B, T, d, dy := 2, 3, 1, 1
	X := G.NewTensor(s.Graph(), tensor.Float64, 3, G.WithShape(B, T, d), G.WithName("x"), G.WithInit(G.Zeroes()))
	Y := G.NewTensor(s.Graph(), tensor.Float64, 3, G.WithShape(B, T, dy), G.WithName("y"), G.WithInit(G.Zeroes()))
	Tg := G.NewMatrix(s.Graph(), tensor.Float64, G.WithShape(B, dy), G.WithName("target"), G.WithInit(G.Zeroes()))
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
