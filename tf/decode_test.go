package tf

import (
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/kvcache"
	"github.com/gdattn/gdattn/kvcache/kvcachetest"
	"gorgonia.org/tensor"
)

// TestGPTDecoderMatchesGraph checks the cached decoder against the
// generation graph (the full recompute): contexts shorter than, equal to
// and longer than the window, fed one id at a time, in chunks, and several
// rows of different lengths in one call, in float64 (1e-12 relative) and
// float32 (1e-5).
func TestGPTDecoderMatchesGraph(t *testing.T) {
	const T, V = 6, 11
	for _, dt := range []tensor.Dtype{graph.Float64, graph.Float32} {
		for _, layers := range []int{1, 2} {
			s, err := graph.NewScope(dt, 4)
			if err != nil {
				t.Fatal(err)
			}
			m, err := NewGPT(s.Sub("gpt"), GPTConfig{Vocab: V, Context: T, DModel: 8, Heads: 2, Layers: layers, FFHidden: 12}, GPTOptions{Batch: 3, Next: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := gptScale(s, 0.5); err != nil {
				t.Fatal(err)
			}
			dec, err := m.NewDecoder()
			if err != nil {
				t.Fatal(err)
			}
			tol := 1e-12
			if dt == graph.Float32 {
				tol = 1e-5
			}
			kvcachetest.Check(t, dec, func(c [][]int) [][]float64 { return kvcachetest.GraphNext(t, m, c) }, T, V, tol)
		}
	}
}

// TestGPTDecoderErrors checks that bad arguments are refused.
func TestGPTDecoderErrors(t *testing.T) {
	s, _ := graph.NewScope(graph.Float64, 1)
	m, err := NewGPT(s, GPTConfig{Vocab: 5, Context: 4, DModel: 4, Heads: 1}, GPTOptions{Batch: 1, Next: true})
	if err != nil {
		t.Fatal(err)
	}
	dec, err := m.NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	r := dec.NewRow()
	for _, c := range []struct {
		rows   []kvcache.Row
		chunks [][]int
		logits [][]float64
	}{
		{[]kvcache.Row{r}, [][]int{{5}}, [][]float64{nil}},
		{[]kvcache.Row{r}, [][]int{{-1}}, [][]float64{nil}},
		{[]kvcache.Row{r}, [][]int{{}}, [][]float64{nil}},
		{[]kvcache.Row{r, r}, [][]int{{1}, {1}}, [][]float64{nil, nil}},
		{[]kvcache.Row{r}, [][]int{{1}}, [][]float64{make([]float64, 3)}},
		{[]kvcache.Row{r}, nil, nil},
	} {
		if err := dec.Append(c.rows, c.chunks, c.logits); err == nil {
			t.Errorf("Append(%v, %v) gave no error", c.chunks, len(c.logits))
		}
	}
}

// TestGPTDecoderCausal checks the invariant the cache rests on: the keys
// and values cached for a prefix are, bit for bit, those of the prefix
// alone, whatever ids follow it (within the window), in every layer.
func TestGPTDecoderCausal(t *testing.T) {
	s, _ := graph.NewScope(graph.Float64, 3)
	m, err := NewGPT(s, GPTConfig{Vocab: 9, Context: 8, DModel: 4, Heads: 2, Layers: 2}, GPTOptions{Batch: 1, Next: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := gptScale(s, 0.5); err != nil {
		t.Fatal(err)
	}
	dec, err := m.NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	prefix := []int{3, 1, 4}
	a, b := dec.NewRow(), dec.NewRow()
	if err := dec.Append([]kvcache.Row{a, b}, [][]int{prefix, append(append([]int(nil), prefix...), 1, 5, 8, 2)}, [][]float64{nil, nil}); err != nil {
		t.Fatal(err)
	}
	ra, rb := a.(*gptRow[float64]), b.(*gptRow[float64])
	for l := range ra.k {
		for j := range ra.k[l] {
			if ra.k[l][j] != rb.k[l][j] || ra.v[l][j] != rb.v[l][j] {
				t.Fatalf("layer %d: entry %d of the prefix differs with later ids", l, j)
			}
		}
	}
}
