package cnn

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// bars returns 8×8 images of 3 classes: a horizontal bar, a vertical bar and
// a diagonal, each at a random offset, with noise.
func bars(n int, seed uint64) *data.Features {
	const S = 8
	rng := rand.New(rand.NewPCG(seed, seed))
	f := &data.Features{Dim: S * S, MaxCount: n, Counts: []int{n, n, n}, X: make([]float64, 3*n*S*S), Names: []string{"h", "v", "d"}}
	for c := 0; c < 3; c++ {
		for i := 0; i < n; i++ {
			img := f.X[(c*n+i)*S*S : (c*n+i+1)*S*S]
			for k := range img {
				img[k] = 0.1 * rng.Float64()
			}
			o := 1 + rng.IntN(S-2)
			for k := 1; k < S-1; k++ {
				switch c {
				case 0:
					img[o*S+k] = 1
				case 1:
					img[k*S+o] = 1
				case 2:
					img[k*S+k] = 1
				}
			}
		}
	}
	return f
}

func TestNetGrad(t *testing.T) {
	// The whole network on two 8×8 images, every parameter checked.
	build := func(s *graph.Scope) (*G.Node, error) {
		n, err := NewNet(s, Config{Side: 8, Channels: [2]int{2, 3}, Hidden: 4, Classes: 3}, 2)
		if err != nil {
			return nil, err
		}
		px := bars(1, 1)
		x := append(append([]float64(nil), px.Vector(0, 0)...), px.Vector(2, 0)...)
		if err := graph.SetValue(n.X, x); err != nil {
			return nil, err
		}
		if err := graph.SetValue(n.Target, []float64{1, 0, 0, 0, 0, 1}); err != nil {
			return nil, err
		}
		return n.Loss, nil
	}
	if e := graphtest.CheckGrad(t, build, graphtest.Options{Seed: 4}); e > 1e-6 {
		t.Errorf("max relative error %g", e)
	}
	graphtest.CheckGrad32(t, build, graphtest.Options{Seed: 4})
}

func TestTrainExtract(t *testing.T) {
	for _, dt := range []struct {
		name string
		dt   tensor.Dtype
	}{{"float32", graph.Float32}, {"float64", graph.Float64}} {
		t.Run(dt.name, func(t *testing.T) {
			s, err := graph.NewScope(dt.dt, 1)
			if err != nil {
				t.Fatal(err)
			}
			n, err := NewNet(s, Config{Side: 8, Channels: [2]int{4, 8}, Hidden: 16, Classes: 3}, 16)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"conv1/w", "conv1/b", "conv2/w", "conv2/b", "fc1/w", "fc1/b", "fc2/w", "fc2/b"}
			if got := strings.Join(s.ParamNames(), " "); got != strings.Join(want, " ") {
				t.Errorf("params %s, want %s", got, strings.Join(want, " "))
			}
			px := bars(40, 2)
			res, err := Train(n, px, TrainConfig{Epochs: 6, LR: 1e-2, Val: 10, Shift: 1, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Loss) != 6 || len(res.ValAcc) != 6 || res.Images != 90 {
				t.Fatalf("result %+v, want 6 epochs of 90 images", res)
			}
			if res.Loss[5] >= res.Loss[0] {
				t.Errorf("loss %v did not fall", res.Loss)
			}
			if acc := res.ValAcc[5]; acc < 0.9 {
				t.Errorf("validation accuracy %v, want >= 0.9 on bars", acc)
			}
			f, err := Extract(n, px, nil)
			if err != nil {
				t.Fatal(err)
			}
			if f.Dim != 16 || f.Classes() != 3 || f.Counts[2] != 40 || f.Names[1] != "v" {
				t.Fatalf("features dim %d, %d classes, counts %v, names %v", f.Dim, f.Classes(), f.Counts, f.Names)
			}
			if err := f.Validate(); err != nil {
				t.Fatal(err)
			}
			nonzero := 0
			for _, v := range f.X {
				if v < 0 {
					t.Fatalf("feature %v < 0 after ReLU", v)
				}
				if v > 0 {
					nonzero++
				}
			}
			if nonzero == 0 {
				t.Error("all features are zero")
			}
		})
	}
}

func TestTrainErrors(t *testing.T) {
	s, _ := graph.NewScope(graph.Float32, 1)
	n, err := NewNet(s, Config{Side: 8, Channels: [2]int{2, 2}, Hidden: 4, Classes: 3}, 4)
	if err != nil {
		t.Fatal(err)
	}
	px := bars(5, 1)
	wrongSide := &data.Features{Dim: 49, MaxCount: 1, Counts: []int{1, 1, 1}, X: make([]float64, 3*49)}
	tests := []struct {
		name string
		err  func() error
		want string
	}{
		{"wrong class count", func() error { p, _ := px.Subset([]int{0, 1}); _, err := Train(n, p, TrainConfig{}); return err }, "2 classes of images for a 3-class"},
		{"wrong image size", func() error { _, err := Train(n, wrongSide, TrainConfig{}); return err }, "49 pixels"},
		{"val too large", func() error { _, err := Train(n, px, TrainConfig{Val: 5}); return err }, "more than Val"},
		{"extract wrong size", func() error { _, err := Extract(n, wrongSide, nil); return err }, "49 pixels"},
		{"invalid images", func() error { _, err := Extract(n, &data.Features{}, nil); return err }, "Dim = 0"},
		{"bad side", func() error { _, err := NewNet(s.Sub("x"), Config{Side: 6, Classes: 3}, 4); return err }, "Side = 6"},
		{"one class", func() error { _, err := NewNet(s.Sub("y"), Config{Classes: 1}, 4); return err }, "Classes = 1"},
		{"bad batch", func() error { _, err := NewNet(s.Sub("z"), Config{Classes: 3}, 0); return err }, "batch = 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.err()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestShifted(t *testing.T) {
	img := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9}
	dst := make([]float64, 9)
	shifted(dst, img, 3, 1, 0) // right by one
	graphtest.AllClose(t, "right", dst, []float64{0, 1, 2, 0, 4, 5, 0, 7, 8}, 0)
	shifted(dst, img, 3, 0, -1) // up by one
	graphtest.AllClose(t, "up", dst, []float64{4, 5, 6, 7, 8, 9, 0, 0, 0}, 0)
	shifted(dst, img, 3, 0, 0)
	graphtest.AllClose(t, "none", dst, img, 0)
}
