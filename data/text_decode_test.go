package data

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

// bigram is a toy model over 5 ids: after id a it puts its mass on
// table[a]; id 4 is end-of-text.
func bigram(table [][]float64) NextFunc {
	return func(ctxs [][]int) ([][]float64, error) {
		out := make([][]float64, len(ctxs))
		for i, c := range ctxs {
			out[i] = append([]float64(nil), table[c[len(c)-1]]...)
		}
		return out, nil
	}
}

var toyTable = [][]float64{
	{0, 5, 1, 0, -9},  // 0 -> 1
	{0, 0, 5, 4.9, 0}, // 1 -> 2 (3 almost as likely)
	{0, 0, 0, 0, 0.5}, // 2 -> end, unsure
	{9, 0, 0, 0, 0},   // 3 -> 0, very sure
	{0, 0, 0, 0, 0},
}

func TestGenerateGreedy(t *testing.T) {
	out, err := Generate(bigram(toyTable), [][]int{{0}, {3}}, DecodeConfig{MaxNew: 5, Stop: 4})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int{{1, 2, 4}, {0, 1, 2, 4}}
	if !reflect.DeepEqual(out, want) {
		t.Errorf("greedy = %v, want %v", out, want)
	}
	// Forbidding the end and not stopping: MaxNew ids.
	out, _ = Generate(bigram(toyTable), [][]int{{2}}, DecodeConfig{MaxNew: 3, Stop: -1, Forbid: []int{4}})
	if len(out[0]) != 3 || out[0][0] == 4 {
		t.Errorf("greedy with end forbidden = %v", out)
	}
}

func TestGenerateBeam(t *testing.T) {
	// From 1, greedy takes 2 then ends (5 + 5); beam search sees that 3 is
	// followed by a near-certain 0, and its length-normalised score wins.
	out, err := Generate(bigram(toyTable), [][]int{{1}}, DecodeConfig{Strategy: DecodeBeam, Beams: 3, MaxNew: 2, Stop: 4})
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]int{{3, 0}}; !reflect.DeepEqual(out, want) {
		t.Errorf("beam = %v, want %v", out, want)
	}
	greedy, _ := Generate(bigram(toyTable), [][]int{{1}}, DecodeConfig{MaxNew: 2, Stop: 4})
	if want := [][]int{{2, 4}}; !reflect.DeepEqual(greedy, want) {
		t.Errorf("greedy = %v, want %v", greedy, want)
	}
	one, _ := Generate(bigram(toyTable), [][]int{{1}, {0}}, DecodeConfig{Strategy: DecodeBeam, Beams: 1, MaxNew: 4, Stop: 4})
	g2, _ := Generate(bigram(toyTable), [][]int{{1}, {0}}, DecodeConfig{MaxNew: 4, Stop: 4})
	if !reflect.DeepEqual(one, g2) {
		t.Errorf("beam width 1 = %v, greedy = %v", one, g2)
	}
}

func TestGenerateSample(t *testing.T) {
	flat := [][]float64{{0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}}
	cfg := DecodeConfig{Strategy: DecodeSample, MaxNew: 200, Seed: 7, Stop: -1}
	a, err := Generate(bigram(flat), [][]int{{0}, {1}}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Generate(bigram(flat), [][]int{{0}}, cfg)
	if !reflect.DeepEqual(a[0], b[0]) {
		t.Error("a prompt's sample depends on the other prompts")
	}
	counts := make([]int, 5)
	for _, id := range a[0] {
		counts[id]++
	}
	for id, c := range counts {
		if c < 20 {
			t.Errorf("id %d drawn %d times of 200 from a uniform distribution", id, c)
		}
	}
	// top-2 with a low temperature: only the two best ids.
	top, _ := Generate(bigram(toyTable), [][]int{{1}}, DecodeConfig{Strategy: DecodeSample, TopK: 2, Temperature: 0.5, MaxNew: 1, Seed: 3})
	if top[0][0] != 2 && top[0][0] != 3 {
		t.Errorf("top-2 sample = %v", top)
	}
}

func TestGenerateErrors(t *testing.T) {
	for _, c := range []struct {
		cfg     DecodeConfig
		prompts [][]int
		want    string
	}{
		{DecodeConfig{Strategy: "nucleus"}, [][]int{{0}}, "unknown strategy"},
		{DecodeConfig{Temperature: -1}, [][]int{{0}}, "Temperature"},
		{DecodeConfig{Beams: -2}, [][]int{{0}}, "Beams"},
		{DecodeConfig{}, [][]int{{}}, "prompt 0 is empty"},
	} {
		if _, err := Generate(bigram(toyTable), c.prompts, c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want it to mention %q", c.cfg, err, c.want)
		}
	}
	nan := func(ctxs [][]int) ([][]float64, error) {
		return [][]float64{{0, math.NaN()}}, nil
	}
	if _, err := Generate(nan, [][]int{{0}}, DecodeConfig{}); err == nil || !strings.Contains(err.Error(), "NaN") {
		t.Errorf("NaN logits: err = %v", err)
	}
}

func TestNgramMetrics(t *testing.T) {
	cases := []struct {
		ids      []int
		n        int
		distinct float64
		repeated float64
	}{
		{[]int{1, 2, 3, 4}, 1, 1, 0},
		{[]int{1, 1, 1, 1}, 1, 0.25, 0.75},
		{[]int{1, 2, 1, 2, 1}, 2, 0.5, 0.5},
		// "the moral is to be kind" twice: of 9 4-grams, 3 repeat.
		{[]int{5, 6, 7, 8, 9, 10, 5, 6, 7, 8, 9, 10}, 4, 6.0 / 9, 3.0 / 9},
		{[]int{1, 2}, 4, 0, 0},
	}
	for _, c := range cases {
		d, err := DistinctN(c.ids, c.n)
		r, err2 := RepeatedNgramRate(c.ids, c.n)
		if err != nil || err2 != nil || math.Abs(d-c.distinct) > 1e-12 || math.Abs(r-c.repeated) > 1e-12 {
			t.Errorf("%v n=%d: distinct %v, repeated %v (errors %v %v), want %v, %v", c.ids, c.n, d, r, err, err2, c.distinct, c.repeated)
		}
	}
	if _, err := DistinctN([]int{1}, 0); err == nil {
		t.Error("n = 0: no error")
	}
}
