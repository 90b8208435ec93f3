package layers

import (
	"math"
	"strings"
	"testing"

	"gorgonia.org/tensor"
)

// huge is 2^40: a size no product of which can be allocated.
const huge = 1 << 40

// TestConstructorSizesAndNils: nil scopes and functions, NaN/Inf epsilon
// and sizes that cannot fit in memory are errors naming the argument, not
// panics (issue 12).
func TestConstructorSizesAndNils(t *testing.T) {
	s := newTestScope(t, tensor.Float64)
	we := mustConst(t, s, "we", tensor.Shape{2, 3}, make([]float64, 6))
	all := func(j, i int) bool { return true }
	for _, tc := range []struct {
		name string
		f    func() error
		want string
	}{
		{"attention nil scope", func() error { _, err := NewAttention(nil, AttentionConfig{DIn: 2, Kernel: LinearKernel()}); return err }, "scope is nil"},
		{"attention DIn", func() error {
			_, err := NewAttention(s.Sub("a1"), AttentionConfig{DIn: huge, Kernel: LinearKernel()})
			return err
		}, "DIn·DK"},
		{"attention DV", func() error {
			_, err := NewAttention(s.Sub("a2"), AttentionConfig{DIn: 2, DV: math.MaxInt, Kernel: LinearKernel()})
			return err
		}, "DIn·DV"},
		{"cross nil scope", func() error {
			_, err := NewCrossAttention(nil, CrossAttentionConfig{DIn: 2, DPrime: 2, We: we})
			return err
		}, "scope is nil"},
		{"cross DIn", func() error {
			_, err := NewCrossAttention(s.Sub("c1"), CrossAttentionConfig{DIn: huge, DPrime: 2, We: we})
			return err
		}, "DIn·DPrime"},
		{"layernorm nil scope", func() error { _, err := NewLayerNorm(nil, LayerNormConfig{Dim: 2}); return err }, "scope is nil"},
		{"layernorm NaN eps", func() error {
			_, err := NewLayerNorm(s.Sub("l1"), LayerNormConfig{Dim: 2, Eps: math.NaN()})
			return err
		}, "Eps = NaN"},
		{"layernorm Inf eps", func() error {
			_, err := NewLayerNorm(s.Sub("l2"), LayerNormConfig{Dim: 2, Eps: math.Inf(1)})
			return err
		}, "Eps = +Inf"},
		{"layernorm Dim", func() error { _, err := NewLayerNorm(s.Sub("l3"), LayerNormConfig{Dim: huge}); return err }, "Dim"},
		{"mask nil scope", func() error { _, err := NewMask(nil, "m", 1, 2, 2, all); return err }, "scope is nil"},
		{"mask nil visible", func() error { _, err := NewMask(s, "m1", 1, 2, 2, nil); return err }, "visible is nil"},
		{"mask sizes", func() error { _, err := NewMask(s, "m2", 0, 2, 2, all); return err }, "b = 0"},
		{"mask huge", func() error { _, err := NewMask(s, "m3", huge, huge, 2, all); return err }, "b·tq·tk"},
		{"kernel nil scope", func() error { _, err := NewKernel(nil, KernelRBF, KernelConfig{Learnable: true}); return err }, "scope is nil"},
		{"encoder batch", func() error {
			_, err := NewEncoder(s.Sub("e1"), EncoderConfig{D: 2, DPrime: 2, C: 3, N: 4}, huge)
			return err
		}, "batch·C (target)"},
		{"encoder C", func() error {
			_, err := NewEncoder(s.Sub("e2"), EncoderConfig{D: 2, DPrime: 2, C: huge, N: 4}, 1)
			return err
		}, "batch·C (target)"},
		{"feed-forward nil scope", func() error { _, err := NewFeedForward(nil, FeedForwardConfig{DIn: 2}); return err }, "scope is nil"},
		{"feed-forward Hidden", func() error {
			_, err := NewFeedForward(s.Sub("f1"), FeedForwardConfig{DIn: 2, Hidden: huge})
			return err
		}, "DIn·Hidden"},
		{"embedding nil scope", func() error { _, err := NewEmbedding(nil, EmbeddingConfig{Vocab: 2, Dim: 2}); return err }, "scope is nil"},
		{"embedding size", func() error { _, err := NewEmbedding(s.Sub("w1"), EmbeddingConfig{Vocab: huge, Dim: 2}); return err }, "Vocab·Dim"},
		{"ids nil scope", func() error { _, err := NewIDs(nil, "ids", 2); return err }, "scope is nil"},
		{"ids huge", func() error { _, err := NewIDs(s, "ids", huge, huge); return err }, "graph.MaxElements"},
		// One matrix just past graph.MaxElements (2^31): refused by the
		// constructor, naming the fields, not by graph.Scope.
		{"embedding tensor", func() error {
			_, err := NewEmbedding(s.Sub("w2"), EmbeddingConfig{Vocab: 1 << 16, Dim: 1<<15 + 1})
			return err
		}, "Vocab·Dim (w) = 65536·32769 elements exceeds the limit of 2^31 elements per tensor (graph.MaxElements)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errContains(t, tc.f(), tc.want)
		})
	}
	var names []string
	for _, p := range s.Params() {
		names = append(names, p.Name())
	}
	if len(names) != 0 {
		t.Errorf("refused constructors created parameters %v", strings.Join(names, " "))
	}
}
