package train

import (
	"math"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/data"
)

// textGenerator returns a Generator over an untrained gd generation graph
// with storyData's codec (a restricted vocabulary), and the codec.
func textGenerator(t *testing.T) (*Generator, *data.TextCodec) {
	t.Helper()
	ds := storyData(t)
	m := newLM(t, lmFamilies[0], ds, 2, true)
	if err := m.(interface{ SetTextCodec(*data.TextCodec) error }).SetTextCodec(ds.Codec); err != nil {
		t.Fatal(err)
	}
	g, err := NewGenerator(m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g, ds.Codec
}

// allBut forbids every id of a vocabulary of v ids except keep.
func allBut(v, keep int) []int {
	var f []int
	for id := 0; id < v; id++ {
		if id != keep {
			f = append(f, id)
		}
	}
	return f
}

// TestGenerateStop checks that the zero Stop of a model with a text codec
// is its end-of-text (not id 0), that StopNever generates exactly MaxNew ids
// even through end-of-text, that StopAt(0) stops at id 0, and that each
// result says why it ended: a model that ends the text at once gives ""
// with Reason StoppedAtStop, not a bare "".
func TestGenerateStop(t *testing.T) {
	g, c := textGenerator(t)
	V, eot := c.Vocab.Size(), c.Vocab.EOT
	const prompt = "Once upon a time"

	// Only end-of-text may be generated: the default stops after it.
	early := data.DecodeConfig{MaxNew: 5, Forbid: allBut(V, eot)}
	res, err := g.GenerateText(prompt, early)
	if err != nil {
		t.Fatal(err)
	}
	if want := (TextGeneration{Text: "", Tokens: 1, Reason: data.StoppedAtStop}); res != want {
		t.Errorf("an immediate end-of-text: got %+v, want %+v", res, want)
	}
	// StopNever: exactly MaxNew ids, end-of-text included in the text.
	early.Stop = data.StopNever()
	res, err = g.GenerateText(prompt, early)
	if err != nil {
		t.Fatal(err)
	}
	if res.Tokens != 5 || res.Reason != data.StoppedMaxNew || res.Text != strings.Repeat(data.EOTText, 5) {
		t.Errorf("StopNever: got %+v, want 5 end-of-text tokens, Reason MaxNew", res)
	}

	ids, err := c.EncodeStrict(prompt)
	if err != nil {
		t.Fatal(err)
	}
	// The ids API: the default resolves to end-of-text too.
	gens, err := g.Decode([][]int{ids}, data.DecodeConfig{MaxNew: 4, Forbid: allBut(V, eot)})
	if err != nil {
		t.Fatal(err)
	}
	if got := gens[0]; len(got.IDs) != 1 || got.IDs[0] != eot || got.Reason != data.StoppedAtStop {
		t.Errorf("Decode, default Stop: got %+v, want [%d] stopped at the stop id", got, eot)
	}
	// Only id 0 may be generated: the old zero Stop (id 0) is StopAt(0) now,
	// and the default no longer stops there.
	for _, c := range []struct {
		stop   data.Stop
		n      int
		reason data.StopReason
	}{
		{data.Stop{}, 4, data.StoppedMaxNew},
		{data.StopAt(0), 1, data.StoppedAtStop},
	} {
		for _, strategy := range []string{data.DecodeGreedy, data.DecodeBeam} {
			cfg := data.DecodeConfig{Strategy: strategy, Beams: 1, MaxNew: 4, Stop: c.stop, Forbid: allBut(V, 0)}
			gens, err := g.Decode([][]int{ids}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got := gens[0]; len(got.IDs) != c.n || got.Reason != c.reason {
				t.Errorf("%s, Stop %v: got %+v, want %d ids (%v)", strategy, c.stop, got, c.n, c.reason)
			}
			plain, err := g.Generate([][]int{ids}, cfg)
			if err != nil || len(plain[0]) != c.n {
				t.Errorf("%s, Stop %v: Generate gave %v, %v", strategy, c.stop, plain, err)
			}
		}
	}
}

// TestGenerateTextUnknown checks that a prompt with pieces outside the
// restricted vocabulary is refused by default, with an error that names
// the lenient modes, and accepted by UnknownSkip and UnknownMap, which say
// how many pieces they dropped or mapped.
func TestGenerateTextUnknown(t *testing.T) {
	g, c := textGenerator(t)
	const prompt = "Once upon a time, quantum chromodynamics"
	_, err := g.GenerateText(prompt, data.DecodeConfig{MaxNew: 3})
	if err == nil || !strings.Contains(err.Error(), "not in the model's vocabulary") || !strings.Contains(err.Error(), "data.UnknownSkip") {
		t.Fatalf("default: got %v, want a refusal naming data.UnknownSkip", err)
	}
	_, unk, err := c.EncodePrompt(prompt, data.UnknownMap)
	if err != nil || unk == 0 {
		t.Fatalf("EncodePrompt map: %d unknown, %v", unk, err)
	}
	for _, policy := range []string{data.UnknownSkip, data.UnknownMap} {
		res, err := g.GenerateText(prompt, data.DecodeConfig{MaxNew: 3, Unknown: policy})
		if err != nil {
			t.Fatalf("%s: %v", policy, err)
		}
		if res.Unknown != unk || res.Tokens == 0 {
			t.Errorf("%s: got %+v, want %d unknown pieces", policy, res, unk)
		}
	}
	if _, err := g.GenerateText("quantum chromodynamics", data.DecodeConfig{Unknown: data.UnknownSkip}); err == nil || !strings.Contains(err.Error(), "empty once its") {
		t.Errorf("a prompt of unknown pieces only, skipped: got %v", err)
	}
	if _, err := g.GenerateText("Once", data.DecodeConfig{Unknown: "drop"}); err == nil || !strings.Contains(err.Error(), `Unknown = "drop"`) {
		t.Errorf(`Unknown "drop": got %v`, err)
	}
}

// TestGeneratorProbs checks that Probs is the softmax of Next's logits
// (rows summing to 1, the same argmax) and LogProbs its logarithm.
func TestGeneratorProbs(t *testing.T) {
	g, c := textGenerator(t)
	ids, err := c.EncodeStrict("Once upon a time, there was a little cat")
	if err != nil {
		t.Fatal(err)
	}
	ctxs := [][]int{ids, ids[:3], ids[2:5]} // 3 contexts: two runs of a batch of 2
	logits, err := g.Next(ctxs)
	if err != nil {
		t.Fatal(err)
	}
	p, err := g.Probs(ctxs)
	if err != nil {
		t.Fatal(err)
	}
	lp, err := g.LogProbs(ctxs)
	if err != nil {
		t.Fatal(err)
	}
	if len(p) != 3 || len(lp) != 3 {
		t.Fatalf("%d and %d rows for 3 contexts", len(p), len(lp))
	}
	for i := range ctxs {
		sum, best, bestP := 0.0, 0, 0
		for j, v := range p[i] {
			sum += v
			if logits[i][j] > logits[i][best] {
				best = j
			}
			if v > p[i][bestP] {
				bestP = j
			}
			if math.Abs(math.Log(v)-lp[i][j]) > 1e-9 {
				t.Fatalf("context %d, id %d: log p = %v, LogProbs %v", i, j, math.Log(v), lp[i][j])
			}
		}
		if math.Abs(sum-1) > 1e-9 || best != bestP {
			t.Errorf("context %d: probabilities sum to %v, argmax %d (logits %d)", i, sum, bestP, best)
		}
	}
}
