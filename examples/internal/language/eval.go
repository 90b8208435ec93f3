package language

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/train"
)

// evalOptions configures an evaluation on the test split.
type evalOptions struct {
	Stories  int // test stories continued (the paper: 200)
	Decode   data.DecodeConfig
	GenBatch int
	Examples int // generations printed
}

// report is the result of an evaluation.
// Its JSON (without the time taken) is the output of a run of the plan.
type report struct {
	Model      string   `json:"model"`
	Label      string   `json:"label"`
	AttnParams int      `json:"attention_params"`
	Rest       int      `json:"other_params"`
	TestTokens int      `json:"test_tokens"`
	TestNLL    float64  `json:"test_nll"`
	TestPPL    float64  `json:"test_ppl"`
	Stories    int      `json:"stories"`
	ContTokens int      `json:"continuation_tokens"`
	ContNLL    float64  `json:"continuation_nll"`
	ContPPL    float64  `json:"continuation_ppl"`
	Distinct1  float64  `json:"distinct1"`
	Distinct2  float64  `json:"distinct2"`
	Rep4       float64  `json:"rep4"`
	GenLen     float64  `json:"generated_length"`
	Seconds    float64  `json:"-"`
	Examples   []string `json:"examples"`
}

// evaluate scores the model (whose trained parameters are in src, a
// training graph on the same run config) on the test split: perplexity over
// the test stream, then for the first opts.Stories test stories the NLL of
// the true second half given the first, and the diversity of the model's own
// continuation of the first half.
func evaluate(rc runConfig, ds *data.TextData, t *train.LMTrainer, opts evalOptions, log io.Writer) (*report, error) {
	start := time.Now()
	v := ds.Codec.Vocab
	src := t.Model().(lm)
	r := &report{Model: rc.Model, Label: modelLabel(rc)}
	r.AttnParams, r.Rest = src.NumParams()
	nll, n, err := t.ScoreStream(ds.TestStream, 0)
	if err != nil {
		return nil, err
	}
	r.TestTokens, r.TestNLL, r.TestPPL = n, nll/float64(n), math.Exp(nll/float64(n))
	fmt.Fprintf(log, "%s: test perplexity %.2f (%d tokens)\n", rc.Model, r.TestPPL, n)

	// Continuations.
	var prompts, truths [][]int
	var windows []data.Window
	for _, st := range ds.Test {
		if len(prompts) == opts.Stories {
			break
		}
		ids := st.IDs[:len(st.IDs)-1] // without the final end-of-text
		if len(ids) < 8 {
			continue
		}
		half := len(ids) / 2
		ws, err := data.ContinuationWindows(ids, half, src.ContextLen(), v.Pad)
		if err != nil {
			return nil, err
		}
		windows = append(windows, ws...)
		prompts = append(prompts, ids[:half])
		truths = append(truths, ids[half:])
	}
	if len(prompts) == 0 {
		return nil, fmt.Errorf("no test story has 8 tokens or more")
	}
	r.Stories = len(prompts)
	if nll, n, err = t.ScoreWindows(windows); err != nil {
		return nil, err
	}
	r.ContTokens, r.ContNLL, r.ContPPL = n, nll/float64(n), math.Exp(nll/float64(n))

	gen, err := rebuild(src, opts.GenBatch, true)
	if err != nil {
		return nil, err
	}
	g, err := train.NewGenerator(gen)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	outs, err := g.Generate(prompts, train.TextDecodeConfig(ds.Codec, opts.Decode))
	if err != nil {
		return nil, err
	}
	for i, o := range outs {
		if len(o) > 0 && o[len(o)-1] == v.EOT {
			o = o[:len(o)-1]
		}
		d1, _ := data.DistinctN(o, 1)
		d2, _ := data.DistinctN(o, 2)
		r4, _ := data.RepeatedNgramRate(o, 4)
		r.Distinct1 += d1 / float64(len(outs))
		r.Distinct2 += d2 / float64(len(outs))
		r.Rep4 += r4 / float64(len(outs))
		r.GenLen += float64(len(o)) / float64(len(outs))
		if i < opts.Examples {
			p, _ := ds.Codec.Decode(prompts[i])
			g, _ := ds.Codec.Decode(o)
			tr, _ := ds.Codec.Decode(truths[i])
			r.Examples = append(r.Examples, fmt.Sprintf("PROMPT: %s\nMODEL: %s\nTRUE: %s", oneLine(p), oneLine(g), oneLine(tr)))
		}
	}
	r.Seconds = time.Since(start).Seconds()
	return r, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// print writes the report.
func (r *report) print(w io.Writer, dc data.DecodeConfig) {
	fmt.Fprintf(w, "\n== %s\n", r.Label)
	fmt.Fprintf(w, "parameters: attention %d, rest %d, total %d\n", r.AttnParams, r.Rest, r.AttnParams+r.Rest)
	fmt.Fprintf(w, "test perplexity: %.2f (NLL %.4f over %d tokens)\n", r.TestPPL, r.TestNLL, r.TestTokens)
	fmt.Fprintf(w, "continuations of %d test stories: NLL of the true second half %.4f (perplexity %.2f, %d tokens)\n",
		r.Stories, r.ContNLL, r.ContPPL, r.ContTokens)
	fmt.Fprintf(w, "generated (%s, up to %d tokens, mean %.1f): distinct-1 %.3f, distinct-2 %.3f, repeated 4-grams %.3f\n",
		describe(dc), dc.MaxNew, r.GenLen, r.Distinct1, r.Distinct2, r.Rep4)
	for _, e := range r.Examples {
		fmt.Fprintf(w, "\n%s\n", e)
	}
	fmt.Fprintf(w, "\n| %s | %d | %d | %.2f | %.3f | %.3f | %.3f | %.3f |\n", r.Label, r.AttnParams, r.Rest,
		r.TestPPL, r.ContNLL, r.Distinct1, r.Distinct2, r.Rep4)
}

func describe(dc data.DecodeConfig) string {
	switch dc.Strategy {
	case data.DecodeBeam:
		return fmt.Sprintf("beam search, %d beams", dc.Beams)
	case data.DecodeSample:
		s := fmt.Sprintf("sampling, temperature %g", dc.Temperature)
		if dc.TopK > 0 {
			s += fmt.Sprintf(", top-%d", dc.TopK)
		}
		return s
	}
	return "greedy"
}
