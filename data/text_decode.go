package data

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/gdattn/gdattn/internal/numeric"
)

// NextFunc returns, for each context (a sequence of model ids), the logits
// of the next id over the vocabulary (any length V, the same for all). It is
// how the decoders below drive a model; the model crops contexts longer than
// its window itself.
type NextFunc func(contexts [][]int) ([][]float64, error)

// Decoding strategies for DecodeConfig.Strategy.
const (
	DecodeGreedy = "greedy"
	DecodeSample = "sample"
	DecodeBeam   = "beam"
)

// MaxBeams is the widest beam search [Generate] runs (DecodeConfig.Beams):
// each step keeps Beams hypotheses per prompt and ranks up to Beams² of
// their extensions, so the width multiplies time and memory. The width is
// also at most the vocabulary size V (a first step has only V extensions).
const MaxBeams = 256

// Stop says when a generation ends before MaxNew ids. Its zero value is the
// default: the model's end-of-text where a model's text codec knows one
// (train.Generator, train.GenerateText), and no stop id in [Generate] alone,
// which knows no model. [StopAt] names an id (0 included); [StopNever]
// generates exactly MaxNew ids.
type Stop struct {
	kind stopKind
	id   int
}

type stopKind uint8

const (
	stopDefault stopKind = iota
	stopAt
	stopNever
)

// StopAt ends a generation after id, which is kept as its last id.
func StopAt(id int) Stop { return Stop{kind: stopAt, id: id} }

// StopNever generates exactly MaxNew ids (an end-of-text among them does not
// end the generation).
func StopNever() Stop { return Stop{kind: stopNever} }

// IsDefault reports whether s is the zero value: the model's end-of-text.
func (s Stop) IsDefault() bool { return s.kind == stopDefault }

// ID returns the id s stops after, and false if it names none (the default
// and StopNever).
func (s Stop) ID() (int, bool) { return s.id, s.kind == stopAt }

// String is "default", "never" or "at ID".
func (s Stop) String() string {
	switch s.kind {
	case stopAt:
		return fmt.Sprintf("at %d", s.id)
	case stopNever:
		return "never"
	}
	return "default"
}

// Or returns s, or def if s is the default: how a caller that knows a model
// resolves the zero value (train: StopAt(end-of-text)).
func (s Stop) Or(def Stop) Stop {
	if s.kind == stopDefault {
		return def
	}
	return s
}

// StopReason says why a generation ended.
type StopReason uint8

const (
	// StoppedMaxNew: MaxNew ids were generated.
	StoppedMaxNew StopReason = iota + 1
	// StoppedAtStop: the stop id (DecodeConfig.Stop, the end-of-text by
	// default for a model with a text codec) was generated; it is the
	// generation's last id.
	StoppedAtStop
)

// String is "MaxNew" or "stop id".
func (r StopReason) String() string {
	switch r {
	case StoppedMaxNew:
		return "MaxNew"
	case StoppedAtStop:
		return "stop id"
	}
	return fmt.Sprintf("StopReason(%d)", uint8(r))
}

// Generation is one prompt's continuation: the generated ids (not the
// prompt) and why generation ended.
type Generation struct {
	IDs    []int
	Reason StopReason
}

// Policies for a prompt's pieces outside a restricted vocabulary
// (DecodeConfig.Unknown).
const (
	// UnknownRefuse (the default, also "") refuses such a prompt with an
	// error naming the pieces.
	UnknownRefuse = "refuse"
	// UnknownSkip drops the pieces the vocabulary lacks.
	UnknownSkip = "skip"
	// UnknownMap encodes each such piece as the vocabulary's unknown id.
	UnknownMap = "map"
)

// DecodeConfig configures [Generate]. Zero fields mean the defaults.
type DecodeConfig struct {
	// Strategy is "greedy" (default), "sample" (temperature and top-k) or
	// "beam" (beam search).
	Strategy string
	// MaxNew is the most ids to generate (default 100, as the paper).
	MaxNew int
	// Temperature divides the logits before sampling (default 1).
	Temperature float64
	// TopK, when > 0, samples among the TopK most likely ids only.
	TopK int
	// Beams is the beam width (default 3, as the paper), at most
	// [MaxBeams] and at most the vocabulary size.
	Beams int
	// Seed seeds sampling: prompt i draws from rand.NewPCG(Seed, i), so a
	// result does not depend on the other prompts.
	Seed uint64
	// Stop ends a generation after an id (kept): by default (zero) the
	// model's end-of-text where one is known, none in Generate alone;
	// StopAt(id) names one; StopNever() generates exactly MaxNew ids.
	Stop Stop
	// Forbid lists ids never generated (padding; unknown).
	Forbid []int
	// Unknown says what text generation (train.GenerateText) does with a
	// prompt piece outside a restricted vocabulary: UnknownRefuse (the
	// default), UnknownSkip or UnknownMap. Generation from ids ignores it.
	Unknown string
}

func (c DecodeConfig) withDefaults() (DecodeConfig, error) {
	if c.Strategy == "" {
		c.Strategy = DecodeGreedy
	}
	if c.MaxNew == 0 {
		c.MaxNew = 100
	}
	if c.Temperature == 0 {
		c.Temperature = 1
	}
	if c.Beams == 0 {
		c.Beams = 3
	}
	if c.Unknown == "" {
		c.Unknown = UnknownRefuse
	}
	switch {
	case c.Strategy != DecodeGreedy && c.Strategy != DecodeSample && c.Strategy != DecodeBeam:
		return c, fmt.Errorf("data: decode: unknown strategy %q (want greedy, sample or beam)", c.Strategy)
	case c.MaxNew < 0:
		return c, fmt.Errorf("data: decode: MaxNew = %d, want > 0", c.MaxNew)
	case !(c.Temperature > 0) || math.IsInf(c.Temperature, 0):
		return c, fmt.Errorf("data: decode: Temperature = %v, want a finite value > 0", c.Temperature)
	case c.TopK < 0:
		return c, fmt.Errorf("data: decode: TopK = %d, want >= 0", c.TopK)
	case c.Beams < 1:
		return c, fmt.Errorf("data: decode: Beams = %d, want >= 1", c.Beams)
	case c.Beams > MaxBeams:
		return c, fmt.Errorf("data: decode: Beams = %d exceeds the limit MaxBeams = %d", c.Beams, MaxBeams)
	case c.Stop.kind == stopAt && c.Stop.id < 0:
		return c, fmt.Errorf("data: decode: Stop = StopAt(%d), want an id >= 0 (StopNever() to generate exactly MaxNew ids)", c.Stop.id)
	case c.Stop.kind > stopNever:
		return c, fmt.Errorf("data: decode: invalid Stop %v", c.Stop)
	case c.Unknown != UnknownRefuse && c.Unknown != UnknownSkip && c.Unknown != UnknownMap:
		return c, fmt.Errorf("data: decode: Unknown = %q, want refuse, skip or map", c.Unknown)
	}
	if err := checkedSize("DecodeConfig.MaxNew", c.MaxNew); err != nil {
		return c, fmt.Errorf("data: decode: %w", err)
	}
	return c, nil
}

// stopID is the id that ends a generation, or -1 for none.
func (c DecodeConfig) stopID() int {
	if id, ok := c.Stop.ID(); ok {
		return id
	}
	return -1
}

// Generate continues every prompt with up to cfg.MaxNew ids and returns the
// generated ids only (not the prompt); [Decode] also says why each
// generation ended. The zero cfg.Stop stops at no id here (Generate knows no
// model): set StopAt(end-of-text), or use train.Generator, which stops at the
// model's end-of-text by default.
func Generate(next NextFunc, prompts [][]int, cfg DecodeConfig) ([][]int, error) {
	gens, err := Decode(next, prompts, cfg)
	if err != nil {
		return nil, err
	}
	out := make([][]int, len(gens))
	for i, g := range gens {
		out[i] = g.IDs
	}
	return out, nil
}

// Decode continues every prompt with up to cfg.MaxNew ids and returns, per
// prompt, the generated ids (not the prompt) and why generation ended
// (Generation.Reason: the stop id, or MaxNew ids). All live sequences of one
// decoding step go to next in a single call, so a batched model sees large
// batches. Every generated id lies in [0, V) for next's V logits, is not in
// cfg.Forbid (ids outside [0, V) there are ignored) and has a logit above
// −Inf. It returns an error if cfg is invalid (Beams above MaxBeams, or,
// once next has returned its first logits, above V or with
// prompts*Beams*V logits per step above MaxElements), next fails or returns
// NaN or +Inf logits or rows of the wrong number or length, a step leaves no
// id to generate (every id forbidden or at −Inf), or prompts*(longest
// prompt+MaxNew) (times Beams for beam search) exceeds MaxElements.
func Decode(next NextFunc, prompts [][]int, cfg DecodeConfig) ([]Generation, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if next == nil {
		return nil, errors.New("data: decode: next is nil")
	}
	longest := 0
	for i, p := range prompts {
		if len(p) == 0 {
			return nil, fmt.Errorf("data: decode: prompt %d is empty", i)
		}
		longest = max(longest, len(p))
	}
	// Every step hands next up to prompts*Beams contexts (Beams = 1 unless
	// beam search) of up to longest+MaxNew ids each.
	width, field := 1, "prompts*(longest prompt+DecodeConfig.MaxNew)"
	if cfg.Strategy == DecodeBeam {
		width, field = cfg.Beams, "prompts*DecodeConfig.Beams*(longest prompt+DecodeConfig.MaxNew)"
	}
	ctxLen, err := checkedSum("longest prompt + DecodeConfig.MaxNew", longest, cfg.MaxNew)
	if err == nil {
		_, err = checkedProduct(field, len(prompts), width, ctxLen)
	}
	if err != nil {
		return nil, fmt.Errorf("data: decode: %w", err)
	}
	if cfg.Strategy == DecodeBeam {
		return beamSearch(next, prompts, cfg)
	}
	stop := cfg.stopID()
	out := make([]Generation, len(prompts))
	rngs := make([]*rand.Rand, len(prompts))
	for i := range rngs {
		rngs[i] = rand.New(rand.NewPCG(cfg.Seed, uint64(i)))
		out[i].Reason = StoppedMaxNew
	}
	done := make([]bool, len(prompts))
	vocab := 0 // logits per row, fixed by the first call of next
	for step := 0; step < cfg.MaxNew; step++ {
		var live []int
		var ctx [][]int
		for i, p := range prompts {
			if !done[i] {
				live = append(live, i)
				ctx = append(ctx, concat(p, out[i].IDs))
			}
		}
		if len(live) == 0 {
			break
		}
		logits, err := callNext(next, ctx, &vocab)
		if err != nil {
			return nil, err
		}
		for k, i := range live {
			lp, err := logSoftmax(logits[k], cfg.Forbid)
			if err != nil {
				return nil, fmt.Errorf("data: decode: prompt %d, step %d: %w", i, step, err)
			}
			var id int
			if cfg.Strategy == DecodeGreedy {
				id = argmax(lp)
			} else {
				id = sample(lp, cfg.Temperature, cfg.TopK, rngs[i])
			}
			out[i].IDs = append(out[i].IDs, id)
			if id == stop {
				done[i] = true
				out[i].Reason = StoppedAtStop
			}
		}
	}
	return out, nil
}

// callNext calls next on ctx and checks its logits: a row per context,
// each of *width logits (the vocabulary size, fixed by the first call when
// *width is 0), none NaN or +Inf.
func callNext(next NextFunc, ctx [][]int, width *int) ([][]float64, error) {
	logits, err := next(ctx)
	if err != nil {
		return nil, err
	}
	if len(logits) != len(ctx) {
		return nil, fmt.Errorf("data: decode: next returned %d rows for %d contexts", len(logits), len(ctx))
	}
	if *width == 0 && len(logits) > 0 {
		*width = len(logits[0])
	}
	for i, l := range logits {
		if len(l) == 0 || len(l) != *width {
			return nil, fmt.Errorf("data: decode: next returned a row of %d logits, want %d (every row of every call has one logit per id)", len(l), *width)
		}
		for j, v := range l {
			if math.IsNaN(v) || math.IsInf(v, 1) {
				return nil, fmt.Errorf("data: decode: logit %d of context %d is %v", j, i, v)
			}
		}
	}
	return logits, nil
}

// hyp is a beam-search hypothesis.
type hyp struct {
	ids   []int
	score float64 // sum of log-probabilities
	done  bool
}

// cand is an extension of a live hypothesis (parent >= 0) by id, or a
// finished hypothesis carried over unchanged (parent < 0, fin); its ids are
// materialised only if it survives, so a step allocates Beams hypotheses
// per prompt, not Beams².
type cand struct {
	parent int // index into the prompt's beams; -1: carried finished hyp
	fin    hyp
	id     int
	score  float64
	n      int // ids of the hypothesis
}

func (c cand) norm() float64 {
	if c.n == 0 {
		return 0
	}
	return c.score / float64(c.n)
}

// beamSearch keeps cfg.Beams hypotheses per prompt; at each step every live
// hypothesis is extended by its Beams best ids and the Beams best of all
// (finished ones included, unchanged) survive. The result is the hypothesis
// with the best length-normalised score (sum of log-probabilities divided by
// the number of generated ids, as HuggingFace's default length_penalty=1).
// Beams above the vocabulary size V is refused once next has given V.
func beamSearch(next NextFunc, prompts [][]int, cfg DecodeConfig) ([]Generation, error) {
	stop := cfg.stopID()
	beams := make([][]hyp, len(prompts))
	for i := range beams {
		beams[i] = []hyp{{}}
	}
	vocab := 0 // logits per row, fixed by the first call of next
	for step := 0; step < cfg.MaxNew; step++ {
		type ref struct{ p, h int }
		var refs []ref
		var ctx [][]int
		for p, bs := range beams {
			for h, b := range bs {
				if !b.done {
					refs = append(refs, ref{p, h})
					ctx = append(ctx, concat(prompts[p], b.ids))
				}
			}
		}
		if len(refs) == 0 {
			break
		}
		logits, err := callNext(next, ctx, &vocab)
		if err != nil {
			return nil, err
		}
		if step == 0 {
			if cfg.Beams > vocab {
				return nil, fmt.Errorf("data: decode: Beams = %d exceeds the vocabulary size %d (the limit: a beam wider than the vocabulary holds no more hypotheses)", cfg.Beams, vocab)
			}
			// From the next step on, next returns a row of V logits for
			// each of up to prompts*Beams hypotheses.
			if _, err := checkedProduct("prompts*DecodeConfig.Beams*vocabulary (logits per step)", len(prompts), cfg.Beams, vocab); err != nil {
				return nil, fmt.Errorf("data: decode: %w", err)
			}
		}
		cands := make([][]cand, len(prompts))
		for p, bs := range beams {
			for _, b := range bs {
				if b.done {
					cands[p] = append(cands[p], cand{parent: -1, fin: b, score: b.score, n: len(b.ids)})
				}
			}
		}
		for k, r := range refs {
			b := beams[r.p][r.h]
			lp, err := logSoftmax(logits[k], cfg.Forbid)
			if err != nil {
				return nil, fmt.Errorf("data: decode: prompt %d, beam %d, step %d: %w", r.p, r.h, step, err)
			}
			for _, id := range topIndices(lp, cfg.Beams) {
				if math.IsInf(lp[id], -1) {
					break // forbidden or impossible, as are the rest (sorted)
				}
				cands[r.p] = append(cands[r.p], cand{parent: r.h, id: id, score: b.score + lp[id], n: len(b.ids) + 1})
			}
		}
		for p := range beams {
			c := cands[p]
			sort.SliceStable(c, func(i, j int) bool { return c[i].norm() > c[j].norm() })
			c = c[:min(cfg.Beams, len(c))]
			kept := make([]hyp, len(c))
			for i, x := range c {
				if x.parent < 0 {
					kept[i] = x.fin
					continue
				}
				ids := append(append(make([]int, 0, x.n), beams[p][x.parent].ids...), x.id)
				kept[i] = hyp{ids: ids, score: x.score, done: x.id == stop}
			}
			beams[p] = kept
		}
	}
	out := make([]Generation, len(prompts))
	for p, bs := range beams {
		best := bs[0]
		for _, b := range bs[1:] {
			if normScore(b) > normScore(best) {
				best = b
			}
		}
		out[p] = Generation{IDs: best.ids, Reason: StoppedMaxNew}
		if best.done {
			out[p].Reason = StoppedAtStop
		}
	}
	return out, nil
}

func normScore(h hyp) float64 {
	if len(h.ids) == 0 {
		return 0
	}
	return h.score / float64(len(h.ids))
}

func concat(a, b []int) []int {
	return append(append(make([]int, 0, len(a)+len(b)), a...), b...)
}

// errNoAllowedID is wrapped by the error Generate returns when every id of a
// step is forbidden or has logit −Inf, so that no id can be generated.
var errNoAllowedID = errors.New("no id may be generated: every id is forbidden (DecodeConfig.Forbid) or has logit -Inf")

// logSoftmax returns the log-probabilities of logits, with the forbidden
// ids at -Inf. It returns errNoAllowedID if every id is forbidden or has
// logit −Inf (callNext has refused NaN and +Inf).
func logSoftmax(logits []float64, forbid []int) ([]float64, error) {
	lp := append([]float64(nil), logits...)
	for _, f := range forbid {
		if f >= 0 && f < len(lp) {
			lp[f] = math.Inf(-1)
		}
	}
	if !(numeric.Max(lp) > math.Inf(-1)) {
		return nil, errNoAllowedID
	}
	numeric.LogSoftmaxInto(lp, lp)
	return lp, nil
}

func argmax(v []float64) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// topIndices returns the indices of the k largest values, largest first
// (ties by lower index).
// It keeps the k best in order while scanning v once (what a stable sort
// of all of v would put first, without sorting the whole vocabulary).
func topIndices(v []float64, k int) []int {
	k = min(k, len(v))
	top := make([]int, 0, k)
	for i, x := range v {
		if len(top) == k {
			if k == 0 || !(x > v[top[k-1]]) {
				continue
			}
			top = top[:k-1]
		}
		j := len(top)
		for j > 0 && x > v[top[j-1]] {
			j--
		}
		top = append(top, 0)
		copy(top[j+1:], top[j:])
		top[j] = i
	}
	return top
}

// sample draws an id from softmax(lp/temperature), restricted to the topK
// most likely ids when topK > 0.
func sample(lp []float64, temperature float64, topK int, rng *rand.Rand) int {
	cand := make([]int, 0, len(lp))
	if topK > 0 && topK < len(lp) {
		cand = topIndices(lp, topK)
	} else {
		for i := range lp {
			cand = append(cand, i)
		}
	}
	w := make([]float64, len(cand))
	for k, i := range cand {
		w[k] = lp[i] / temperature
	}
	_, total := numeric.ExpShifted(w, w)
	if !(total > 0) || math.IsInf(total, 1) {
		// The temperature is so low that lp/temperature underflows to -Inf
		// for every candidate: sample in the limit temperature -> 0, the
		// most likely candidate (lp holds a finite maximum: logSoftmax).
		best := cand[0]
		for _, i := range cand {
			if lp[i] > lp[best] {
				best = i
			}
		}
		return best
	}
	u := rng.Float64() * total
	for k, i := range cand {
		if u -= w[k]; u < 0 {
			return i
		}
	}
	for k := len(cand) - 1; k >= 0; k-- {
		if w[k] > 0 {
			return cand[k]
		}
	}
	return cand[0]
}

// EncodePrompt encodes a prompt's text under policy (DecodeConfig.Unknown)
// and returns its ids and the number of its pieces outside the vocabulary:
// UnknownRefuse ("" too) refuses them as [TextCodec.EncodeStrict] does,
// UnknownSkip drops them, UnknownMap encodes them as Vocab.Unk as
// [TextCodec.Encode] does. The full vocabulary has no unknown piece.
func (c *TextCodec) EncodePrompt(text, policy string) (ids []int, unknown int, err error) {
	switch policy {
	case "", UnknownRefuse:
		ids, err = c.EncodeStrict(text)
		return ids, 0, err
	case UnknownSkip, UnknownMap:
	default:
		return nil, 0, fmt.Errorf("data: decode: Unknown = %q, want refuse, skip or map", policy)
	}
	if err := c.check(); err != nil {
		return nil, 0, err
	}
	g, err := c.Tok.Encode(text)
	if err != nil {
		return nil, 0, err
	}
	ids, unknown = c.Vocab.Encode(g)
	if policy == UnknownSkip && unknown > 0 {
		kept := ids[:0]
		for _, id := range ids {
			if id != c.Vocab.Unk {
				kept = append(kept, id)
			}
		}
		ids = kept
	}
	return ids, unknown, nil
}
