package cnn

import (
	"strings"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/graphtest"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// weighted returns Σ y ⊙ c for a fixed random c of y's shape, a scalar whose
// gradient w.r.t. y is c: every output element gets a distinct weight, so
// a gradient routed to the wrong place cannot cancel out.
func weighted(s *graph.Scope, y *G.Node) (*G.Node, error) {
	c, err := s.Input("c", y.Shape())
	if err != nil {
		return nil, err
	}
	if err := graph.SetValue(c, graphtest.RandValues(s, y.Shape().TotalSize())); err != nil {
		return nil, err
	}
	p, err := G.HadamardProd(y, c)
	if err != nil {
		return nil, err
	}
	return G.Sum(p)
}

// image returns a (B, C, H, W) parameter "x" so that the check covers the
// gradient with respect to the layer's input too.
func image(s *graph.Scope, shape ...int) (*G.Node, error) {
	return s.Param("x", tensor.Shape(shape), graph.Normal(1))
}

func TestConv2DGrad(t *testing.T) {
	tests := []struct {
		name              string
		b, in, out, h, w  int
		kernel, pad, relu int
	}{
		{"3x3 same", 2, 3, 4, 5, 5, 3, 0, 0},
		{"3x3 valid rectangular", 2, 2, 3, 6, 4, 3, -1, 0},
		{"1x1", 3, 4, 2, 3, 3, 1, 0, 0},
		{"5x5 pad 1", 1, 1, 2, 6, 6, 5, 1, 0},
		{"3x3 then ReLU and pool", 2, 2, 3, 6, 6, 3, 0, 1},
	}
	for _, tt := range tests {
		build := func(s *graph.Scope) (*G.Node, error) {
			x, err := image(s, tt.b, tt.in, tt.h, tt.w)
			if err != nil {
				return nil, err
			}
			conv, err := NewConv2D(s.Sub("conv"), Conv2DConfig{In: tt.in, Out: tt.out, Kernel: tt.kernel, Pad: tt.pad, BInit: graph.Normal(1)})
			if err != nil {
				return nil, err
			}
			y, err := conv.Forward(x)
			if err != nil {
				return nil, err
			}
			if tt.relu == 1 {
				if y, err = G.Rectify(y); err != nil {
					return nil, err
				}
				if y, err = (MaxPool{Size: 2}).Forward(y); err != nil {
					return nil, err
				}
			}
			return weighted(s, y)
		}
		t.Run(tt.name+"/float64", func(t *testing.T) {
			if e := graphtest.CheckGrad(t, build, graphtest.Options{Seed: 1}); e > 1e-6 {
				t.Errorf("max relative error %g, want < 1e-6", e)
			}
		})
		t.Run(tt.name+"/float32", func(t *testing.T) {
			graphtest.CheckGrad32(t, build, graphtest.Options{Seed: 1})
		})
	}
}

func TestConv2DForward(t *testing.T) {
	// A 1-channel 3×3 image and a 2×2 kernel, no padding, computed by hand:
	// out[r][c] = Σ img[r+i][c+j]·k[i][j] + bias.
	img := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9}
	ker := []float64{1, 0, 0, -1} // x[r][c] - x[r+1][c+1] = -4 everywhere
	build := func(s *graph.Scope) (*G.Node, error) {
		x, err := s.Input("x", tensor.Shape{1, 1, 3, 3})
		if err != nil {
			return nil, err
		}
		if err := graph.SetValue(x, img); err != nil {
			return nil, err
		}
		conv, err := NewConv2D(s.Sub("conv"), Conv2DConfig{In: 1, Out: 1, Kernel: 2, Pad: -1,
			WInit: graph.FromValues(ker), BInit: graph.Constant(0.5)})
		if err != nil {
			return nil, err
		}
		return conv.Forward(x)
	}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		got := graphtest.Forward(t, build, dt, 1)
		graphtest.AllClose(t, "conv "+dt.String(), got, []float64{-3.5, -3.5, -3.5, -3.5}, 1e-6)
	}
}

func TestMaxPoolGrad(t *testing.T) {
	for _, sh := range [][4]int{{2, 3, 6, 6}, {1, 2, 7, 5}} {
		build := func(s *graph.Scope) (*G.Node, error) {
			x, err := image(s, sh[0], sh[1], sh[2], sh[3])
			if err != nil {
				return nil, err
			}
			y, err := (MaxPool{Size: 2}).Forward(x)
			if err != nil {
				return nil, err
			}
			if got := y.Shape(); got[2] != sh[2]/2 || got[3] != sh[3]/2 {
				t.Fatalf("pool output %v, want spatial %dx%d", got, sh[2]/2, sh[3]/2)
			}
			return weighted(s, y)
		}
		if e := graphtest.CheckGrad(t, build, graphtest.Options{Seed: 2}); e > 1e-6 {
			t.Errorf("%v: max relative error %g", sh, e)
		}
		graphtest.CheckGrad32(t, build, graphtest.Options{Seed: 2})
	}
}

func TestMaxPoolForward(t *testing.T) {
	build := func(s *graph.Scope) (*G.Node, error) {
		x, err := s.Input("x", tensor.Shape{1, 1, 4, 4})
		if err != nil {
			return nil, err
		}
		if err := graph.SetValue(x, []float64{
			1, 5, 2, 0,
			3, 4, 8, 1,
			-1, -2, 0, 0,
			-3, -4, 0, 7,
		}); err != nil {
			return nil, err
		}
		return (MaxPool{Size: 2}).Forward(x)
	}
	graphtest.AllClose(t, "pool", graphtest.Forward(t, build, tensor.Float64, 1), []float64{5, 8, -1, 7}, 0)
}

func TestLinearGrad(t *testing.T) {
	build := func(s *graph.Scope) (*G.Node, error) {
		x, err := s.Param("x", tensor.Shape{3, 4}, graph.Normal(1))
		if err != nil {
			return nil, err
		}
		l, err := NewLinear(s.Sub("fc"), LinearConfig{In: 4, Out: 5, BInit: graph.Normal(1)})
		if err != nil {
			return nil, err
		}
		y, err := l.Forward(x)
		if err != nil {
			return nil, err
		}
		return weighted(s, y)
	}
	if e := graphtest.CheckGrad(t, build, graphtest.Options{Seed: 3}); e > 1e-6 {
		t.Errorf("max relative error %g", e)
	}
	graphtest.CheckGrad32(t, build, graphtest.Options{Seed: 3})
}

func TestLayerErrors(t *testing.T) {
	s, _ := graph.NewScope(graph.Float64, 1)
	x3, _ := s.Input("x3", tensor.Shape{2, 3, 4})
	x4, _ := s.Input("x4", tensor.Shape{2, 3, 2, 2})
	tests := []struct {
		name string
		err  func() error
		want string
	}{
		{"conv no channels", func() error { _, err := NewConv2D(s.Sub("a"), Conv2DConfig{In: 0, Out: 2}); return err }, "In, Out"},
		{"conv bad pad", func() error { _, err := NewConv2D(s.Sub("b"), Conv2DConfig{In: 1, Out: 2, Pad: -2}); return err }, "Pad"},
		{"conv rank 3 input", func() error {
			c, err := NewConv2D(s.Sub("c"), Conv2DConfig{In: 3, Out: 2})
			if err != nil {
				return err
			}
			_, err = c.Forward(x3)
			return err
		}, "want (B, 3, H, W)"},
		{"conv wrong channels", func() error {
			c, err := NewConv2D(s.Sub("d"), Conv2DConfig{In: 1, Out: 2})
			if err != nil {
				return err
			}
			_, err = c.Forward(x4)
			return err
		}, "want (B, 1, H, W)"},
		{"conv kernel larger than image", func() error {
			c, err := NewConv2D(s.Sub("e"), Conv2DConfig{In: 3, Out: 2, Kernel: 5, Pad: -1})
			if err != nil {
				return err
			}
			_, err = c.Forward(x4)
			return err
		}, "smaller than the kernel"},
		{"pool size 0", func() error { _, err := (MaxPool{}).Forward(x4); return err }, "Size = 0"},
		{"pool too large", func() error { _, err := (MaxPool{Size: 3}).Forward(x4); return err }, "H, W >= 3"},
		{"pool rank 3", func() error { _, err := (MaxPool{Size: 2}).Forward(x3); return err }, "want (B, C, H, W)"},
		{"linear bad width", func() error {
			l, err := NewLinear(s.Sub("f"), LinearConfig{In: 5, Out: 2})
			if err != nil {
				return err
			}
			_, err = l.Forward(x3)
			return err
		}, "want (B, 5)"},
		{"linear no width", func() error { _, err := NewLinear(s.Sub("g"), LinearConfig{In: 5}); return err }, "In, Out"},
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
