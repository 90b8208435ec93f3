package kvcachetest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/kvcache"
	G "gorgonia.org/gorgonia"
)

// Model is what GraphNext needs of a language model's generation graph
// (gd.LM and tf.GPT built with Next).
type Model interface {
	Scope() *graph.Scope
	BatchSize() int
	ContextLen() int
	VocabSize() int
	FeedNext(ids, lengths []int) error
	LMOutputs() (logits, targets, next *G.Node)
}

// GraphNext runs the generation graph of m on contexts (cropped to
// the last T ids, as train.Generator does) and returns the next-token
// logits of each: the full recompute the decoder must match.
func GraphNext(t testing.TB, m Model, contexts [][]int) [][]float64 {
	t.Helper()
	_, _, next := m.LMOutputs()
	m.Scope().Lock()
	defer m.Scope().Unlock()
	mc, err := graph.NewMachine(m.Scope(), nil, graph.MachineOptions{NoGrad: true, Outputs: G.Nodes{next}})
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	B, T, V := m.BatchSize(), m.ContextLen(), m.VocabSize()
	var out [][]float64
	for lo := 0; lo < len(contexts); lo += B {
		ids, lengths := make([]int, B*T), make([]int, B)
		for b := range lengths {
			lengths[b] = 1
			if lo+b < len(contexts) {
				c := contexts[lo+b]
				if len(c) > T {
					c = c[len(c)-T:]
				}
				copy(ids[b*T:], c)
				lengths[b] = len(c)
			}
		}
		if err := m.FeedNext(ids, lengths); err != nil {
			t.Fatal(err)
		}
		if err := mc.Run(); err != nil {
			t.Fatal(err)
		}
		v, err := graph.Values(next)
		if err != nil {
			t.Fatal(err)
		}
		for b := 0; b < B && lo+b < len(contexts); b++ {
			out = append(out, v[b*V:(b+1)*V])
		}
	}
	return out
}

// RelErr is max |a − b| / max |b| over a logits vector.
func RelErr(a, b []float64) float64 {
	var num, den float64
	for i := range b {
		num = math.Max(num, math.Abs(a[i]-b[i]))
		den = math.Max(den, math.Abs(b[i]))
	}
	if den == 0 {
		return num
	}
	return num / den
}

// Check drives dec through a stream of 2T+3 ids (one at a time:
// through and past the window), through prefixes appended as one chunk,
// and through a batch of rows of different lengths, comparing every logits
// vector with want (the full recompute) at tolerance tol.
func Check(t testing.TB, dec kvcache.Decoder, want func([][]int) [][]float64, T, V int, tol float64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(9, 9))
	stream := make([]int, 2*T+3)
	for i := range stream {
		stream[i] = rng.IntN(V)
	}
	var ctxs [][]int
	for n := 1; n <= len(stream); n++ {
		ctxs = append(ctxs, stream[:n])
	}
	ref := want(ctxs)
	worst := 0.0
	check := func(what string, n int, got []float64) {
		t.Helper()
		e := RelErr(got, ref[n-1])
		worst = math.Max(worst, e)
		if !(e <= tol) {
			t.Fatalf("%s, context of %d ids (window %d): relative error %.3g > %g", what, n, T, e, tol)
		}
	}
	// One id at a time.
	row := dec.NewRow()
	for n := 1; n <= len(stream); n++ {
		l := make([]float64, V)
		if err := dec.Append([]kvcache.Row{row}, [][]int{{stream[n-1]}}, [][]float64{l}); err != nil {
			t.Fatal(err)
		}
		check("one id at a time", n, l)
		if want := min(n, T); len(row.IDs()) != want {
			t.Fatalf("row holds %d ids after %d, want %d", len(row.IDs()), n, want)
		}
	}
	// Whole prefixes as one chunk, and a clone extended by one id.
	for n := 1; n <= len(stream); n++ {
		r := dec.NewRow()
		l := make([]float64, V)
		if err := dec.Append([]kvcache.Row{r}, [][]int{stream[:n]}, [][]float64{l}); err != nil {
			t.Fatal(err)
		}
		check("one chunk", n, l)
		if n < len(stream) {
			c := r.Clone()
			if err := dec.Append([]kvcache.Row{c}, [][]int{{stream[n]}}, [][]float64{l}); err != nil {
				t.Fatal(err)
			}
			check("clone extended", n+1, l)
		}
	}
	// A batch: rows of different lengths extended together, some by
	// chunks, one without logits.
	rows := []kvcache.Row{dec.NewRow(), dec.NewRow(), dec.NewRow(), dec.NewRow()}
	lens := []int{0, 0, 0, 0}
	for step, grow := range [][]int{{1, 3, T, 2}, {1, 1, 1, 2}, {2, T, 1, 1}, {1, 1, 3, 1}} {
		chunks := make([][]int, len(rows))
		logits := make([][]float64, len(rows))
		for b, g := range grow {
			chunks[b] = stream[lens[b] : lens[b]+g]
			lens[b] += g
			if b != step%len(rows) {
				logits[b] = make([]float64, V)
			}
		}
		if err := dec.Append(rows, chunks, logits); err != nil {
			t.Fatal(err)
		}
		for b := range rows {
			if logits[b] != nil {
				check("batch", lens[b], logits[b])
			}
		}
	}
	t.Logf("worst relative error %.2e", worst)
}
