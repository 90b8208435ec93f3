package checkpoint_test

import (
	"fmt"
	"os"
	"path/filepath"

	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/checkpoint"
	"github.com/gdattn/gdattn/graph"
)

// Save a scope's parameters with a model config, then load them into a
// fresh scope of the same shape.
func Example() {
	type config struct {
		D int `json:"d"`
	}
	build := func(seed uint64) *graph.Scope {
		s, _ := graph.NewScope(graph.Float64, seed)
		_, _ = s.Sub("block0").Sub("attn").Param("wq", tensor.Shape{2, 2}, graph.Normal(1))
		_, _ = s.Param("alpha", tensor.Shape{}, graph.Constant(0.5))
		return s
	}
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	ckpt := filepath.Join(dir, "ckpt")

	src := build(1)
	if err := checkpoint.Save(ckpt, src, config{D: 2}, checkpoint.SaveOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	dst := build(2)
	var cfg config
	if err := checkpoint.Load(ckpt, dst, &cfg); err != nil {
		fmt.Println(err)
		return
	}
	a, _ := graph.Values(src.Params()[0])
	b, _ := graph.Values(dst.Params()[0])
	fmt.Println(cfg.D, a[0] == b[0], checkpoint.ParamFileName(dst.Params()[0].Name()))
	// Output:
	// 2 true block0__attn__wq.npy
}
