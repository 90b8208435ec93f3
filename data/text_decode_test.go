package data

import (
	"errors"
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
	out, err := Generate(bigram(toyTable), [][]int{{0}, {3}}, DecodeConfig{MaxNew: 5, Stop: StopAt(4)})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int{{1, 2, 4}, {0, 1, 2, 4}}
	if !reflect.DeepEqual(out, want) {
		t.Errorf("greedy = %v, want %v", out, want)
	}
	// Forbidding the end and not stopping: MaxNew ids.
	out, _ = Generate(bigram(toyTable), [][]int{{2}}, DecodeConfig{MaxNew: 3, Stop: StopNever(), Forbid: []int{4}})
	if len(out[0]) != 3 || out[0][0] == 4 {
		t.Errorf("greedy with end forbidden = %v", out)
	}
}

func TestGenerateBeam(t *testing.T) {
	// From 1, greedy takes 2 then ends (5 + 5); beam search sees that 3 is
	// followed by a near-certain 0, and its length-normalised score wins.
	out, err := Generate(bigram(toyTable), [][]int{{1}}, DecodeConfig{Strategy: DecodeBeam, Beams: 3, MaxNew: 2, Stop: StopAt(4)})
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]int{{3, 0}}; !reflect.DeepEqual(out, want) {
		t.Errorf("beam = %v, want %v", out, want)
	}
	greedy, _ := Generate(bigram(toyTable), [][]int{{1}}, DecodeConfig{MaxNew: 2, Stop: StopAt(4)})
	if want := [][]int{{2, 4}}; !reflect.DeepEqual(greedy, want) {
		t.Errorf("greedy = %v, want %v", greedy, want)
	}
	one, _ := Generate(bigram(toyTable), [][]int{{1}, {0}}, DecodeConfig{Strategy: DecodeBeam, Beams: 1, MaxNew: 4, Stop: StopAt(4)})
	g2, _ := Generate(bigram(toyTable), [][]int{{1}, {0}}, DecodeConfig{MaxNew: 4, Stop: StopAt(4)})
	if !reflect.DeepEqual(one, g2) {
		t.Errorf("beam width 1 = %v, greedy = %v", one, g2)
	}
}

func TestGenerateSample(t *testing.T) {
	flat := [][]float64{{0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}}
	cfg := DecodeConfig{Strategy: DecodeSample, MaxNew: 200, Seed: 7, Stop: StopNever()}
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

// TestGenerateNoAllowedID checks that Generate never returns a forbidden id
// or one with logit −Inf: when a step leaves no id to generate, every
// strategy returns an error.
func TestGenerateNoAllowedID(t *testing.T) {
	inf := math.Inf(-1)
	constant := func(row []float64) NextFunc {
		return func(ctxs [][]int) ([][]float64, error) {
			out := make([][]float64, len(ctxs))
			for i := range out {
				out[i] = append([]float64(nil), row...)
			}
			return out, nil
		}
	}
	strategies := []struct {
		name string
		cfg  DecodeConfig
	}{
		{"greedy", DecodeConfig{}},
		{"sample", DecodeConfig{Strategy: DecodeSample, Seed: 1}},
		{"top-k", DecodeConfig{Strategy: DecodeSample, TopK: 2, Seed: 1}},
		{"low temperature", DecodeConfig{Strategy: DecodeSample, Temperature: 1e-3, Seed: 1}},
		{"beam", DecodeConfig{Strategy: DecodeBeam, Beams: 3}},
	}
	for _, s := range strategies {
		for _, c := range []struct {
			name   string
			next   NextFunc
			forbid []int
		}{
			{"every id forbidden", bigram(toyTable), []int{0, 1, 2, 3, 4}},
			{"every logit -Inf", constant([]float64{inf, inf, inf}), nil},
			{"every allowed logit -Inf", constant([]float64{3, inf, 7, inf}), []int{0, 2}},
		} {
			t.Run(s.name+"/"+c.name, func(t *testing.T) {
				cfg := s.cfg
				cfg.MaxNew, cfg.Stop, cfg.Forbid = 3, StopNever(), c.forbid
				out, err := Generate(c.next, [][]int{{0}, {1}}, cfg)
				if !errors.Is(err, errNoAllowedID) {
					t.Errorf("got %v, %v, want an error wrapping errNoAllowedID", out, err)
				}
			})
		}
	}
	// One allowed id among forbidden or impossible ones is always the one
	// generated, however many candidates a strategy wants (TopK, Beams) and
	// however low the temperature (5e-324 makes every lp/temperature -Inf).
	row := []float64{9, 0, inf, 1, 8}
	for _, s := range append(strategies,
		struct {
			name string
			cfg  DecodeConfig
		}{"tiny temperature", DecodeConfig{Strategy: DecodeSample, Temperature: 5e-324, Seed: 1}},
		struct {
			name string
			cfg  DecodeConfig
		}{"wide beam", DecodeConfig{Strategy: DecodeBeam, Beams: 5}},
	) {
		t.Run(s.name+"/one allowed id", func(t *testing.T) {
			cfg := s.cfg
			cfg.MaxNew, cfg.Stop, cfg.Forbid = 4, StopNever(), []int{0, 1, 4, 7}
			out, err := Generate(constant(row), [][]int{{0}, {2}}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			for p, ids := range out {
				if want := []int{3, 3, 3, 3}; !reflect.DeepEqual(ids, want) {
					t.Errorf("prompt %d: got %v, want %v", p, ids, want)
				}
			}
		})
	}
	// With a tiny temperature and no top-k, sampling is greedy among the
	// allowed ids (it used to fall back to candidate 0, a forbidden id).
	out, err := Generate(constant([]float64{0, 0, 0, 10, 0}), [][]int{{0}}, DecodeConfig{
		Strategy: DecodeSample, Temperature: 5e-324, MaxNew: 2, Stop: StopNever(), Forbid: []int{0}})
	if err != nil || !reflect.DeepEqual(out, [][]int{{3, 3}}) {
		t.Errorf("tiny temperature: got %v, %v, want [[3 3]]", out, err)
	}
}

// TestBeamsBounded checks that a beam wider than MaxBeams is refused before
// next is called (1<<20 beams once ran for minutes and ran out of memory),
// and one wider than the vocabulary after the first call, both with an
// error naming the limit; a beam as wide as the vocabulary runs.
func TestBeamsBounded(t *testing.T) {
	calls := 0
	next := func(ctxs [][]int) ([][]float64, error) {
		calls++
		return bigram(toyTable)(ctxs)
	}
	for _, c := range []struct {
		beams     int
		want      string
		wantCalls int
	}{
		{1 << 20, "exceeds the limit MaxBeams = 256", 0},
		{MaxBeams + 1, "exceeds the limit MaxBeams = 256", 0},
		{MaxBeams, "exceeds the vocabulary size 5", 1},
		{6, "Beams = 6 exceeds the vocabulary size 5", 1},
		{5, "", 3},
	} {
		calls = 0
		got, err := Generate(next, [][]int{{1}}, DecodeConfig{Strategy: DecodeBeam, Beams: c.beams, MaxNew: 3, Stop: StopNever()})
		if c.want == "" {
			if err != nil || len(got) != 1 || len(got[0]) != 3 {
				t.Errorf("Beams = %d: got %v, %v; want 3 ids", c.beams, got, err)
			}
		} else if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Beams = %d: got %v, want an error containing %q", c.beams, err, c.want)
		}
		if calls != c.wantCalls {
			t.Errorf("Beams = %d: next called %d times, want %d", c.beams, calls, c.wantCalls)
		}
	}
}

// TestDecodeStop checks the Stop rules and the reason Decode gives: the zero
// Stop stops at no id in Decode alone (it knows no model), StopAt(0) stops
// at id 0 (the value the old zero Stop meant), StopNever generates exactly
// MaxNew ids, and each result says whether it ended at the stop id or
// after MaxNew ids, for every strategy.
func TestDecodeStop(t *testing.T) {
	// toyTable: 3 -> 0 -> 1 -> 2 -> 4 (end) under greedy decoding.
	for _, strategy := range []string{DecodeGreedy, DecodeSample, DecodeBeam} {
		for _, c := range []struct {
			stop   Stop
			ids    int // generated ids from prompt {3}, MaxNew 6
			reason StopReason
		}{
			{Stop{}, 6, StoppedMaxNew},
			{StopNever(), 6, StoppedMaxNew},
			{StopAt(0), 1, StoppedAtStop},
		} {
			cfg := DecodeConfig{Strategy: strategy, MaxNew: 6, Stop: c.stop, Temperature: 1e-3, Beams: 1}
			got, err := Decode(bigram(toyTable), [][]int{{3}}, cfg)
			if err != nil {
				t.Fatalf("%s, Stop %v: %v", strategy, c.stop, err)
			}
			if g := got[0]; len(g.IDs) != c.ids || g.Reason != c.reason {
				t.Errorf("%s, Stop %v: got %v (%v), want %d ids (%v)", strategy, c.stop, g.IDs, g.Reason, c.ids, c.reason)
			}
		}
	}
	got, err := Decode(bigram(toyTable), [][]int{{3}, {2}}, DecodeConfig{MaxNew: 6, Stop: StopAt(4)})
	if err != nil {
		t.Fatal(err)
	}
	want := []Generation{{IDs: []int{0, 1, 2, 4}, Reason: StoppedAtStop}, {IDs: []int{4}, Reason: StoppedAtStop}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if _, err := Decode(bigram(toyTable), [][]int{{3}}, DecodeConfig{Stop: StopAt(-1)}); err == nil || !strings.Contains(err.Error(), "StopAt(-1)") {
		t.Errorf("StopAt(-1): got %v", err)
	}
	if _, err := Decode(bigram(toyTable), [][]int{{3}}, DecodeConfig{Unknown: "drop"}); err == nil || !strings.Contains(err.Error(), `Unknown = "drop"`) {
		t.Errorf(`Unknown "drop": got %v`, err)
	}
	if s := (Stop{}).Or(StopAt(7)); s != StopAt(7) {
		t.Errorf("default Or StopAt(7) = %v", s)
	}
	if s := StopNever().Or(StopAt(7)); s != StopNever() {
		t.Errorf("StopNever Or StopAt(7) = %v", s)
	}
}

// TestBeamLogitsBounded checks that a beam search whose later steps would
// ask next for prompts*Beams rows of V logits beyond MaxElements is refused
// after the first call (which returns only prompts rows), naming the limit.
func TestBeamLogitsBounded(t *testing.T) {
	const V = MaxElements/(2*MaxBeams) + 1
	row := make([]float64, V) // one row shared by every context: 34 MB
	calls := 0
	next := func(ctxs [][]int) ([][]float64, error) {
		calls++
		out := make([][]float64, len(ctxs))
		for i := range out {
			out[i] = row
		}
		return out, nil
	}
	_, err := Generate(next, [][]int{{0}, {1}}, DecodeConfig{Strategy: DecodeBeam, Beams: MaxBeams, MaxNew: 3})
	if err == nil || !strings.Contains(err.Error(), "prompts*DecodeConfig.Beams*vocabulary") || !strings.Contains(err.Error(), "MaxElements") {
		t.Fatalf("got %v, want a refusal naming prompts*DecodeConfig.Beams*vocabulary and MaxElements", err)
	}
	if calls != 1 {
		t.Errorf("next called %d times, want 1", calls)
	}
}
