package data

import (
	"fmt"
	"math/rand/v2"
)

// EpisodeConfig describes few-shot episodes (paper Section 5.2). A zero field
// means its default, given by DefaultEpisodeConfig; negative values are
// errors.
type EpisodeConfig struct {
	// Ways is the number of classes per episode (default 5); they become
	// the labels 0..Ways-1, in a fresh random order in every episode.
	Ways int
	// Shots is the number of context examples of each class (default 10),
	// so N = Ways*Shots context positions and T = N+1.
	Shots int
}

// DefaultEpisodeConfig returns the paper's 5-way 10-shot episodes (N = 50).
func DefaultEpisodeConfig() EpisodeConfig { return EpisodeConfig{Ways: 5, Shots: 10} }

func (c EpisodeConfig) resolve() (EpisodeConfig, error) {
	def := DefaultEpisodeConfig()
	if c.Ways < 0 || c.Shots < 0 {
		return c, fmt.Errorf("EpisodeConfig{Ways: %d, Shots: %d}: want >= 0 (0 means the default %d, %d)", c.Ways, c.Shots, def.Ways, def.Shots)
	}
	if c.Ways == 0 {
		c.Ways = def.Ways
	}
	if c.Shots == 0 {
		c.Shots = def.Shots
	}
	if c.Ways < 2 {
		return c, fmt.Errorf("EpisodeConfig.Ways = %d, want >= 2", c.Ways)
	}
	if err := checkedSize("EpisodeConfig.Ways", c.Ways); err != nil {
		return c, err
	}
	if err := checkedSize("EpisodeConfig.Shots", c.Shots); err != nil {
		return c, err
	}
	n, err := checkedProduct("EpisodeConfig.Ways*Shots (N)", c.Ways, c.Shots)
	if err != nil {
		return c, err
	}
	if _, err := checkedSum("EpisodeConfig.Ways*Shots+1 (T)", n, 1); err != nil {
		return c, err
	}
	return c, nil
}

// N is the number of context positions of an episode, Ways*Shots (for a
// configuration NewEpisodes accepted; the product of unchecked fields may
// overflow).
func (c EpisodeConfig) N() int { return c.Ways * c.Shots }

// Episodes samples few-shot classification episodes from a fixed set of
// classes of a [Features]: each episode draws Ways distinct classes
// uniformly without replacement, relabels them 0..Ways-1 in the order drawn,
// draws Shots distinct vectors of each class as the context (Ways*Shots
// positions in a random order), and a query from one of the Ways classes,
// chosen uniformly, distinct from that class's context vectors.
//
// Training and test episodes come from two Episodes over disjoint class
// lists (see [SplitClasses]), so that test episodes hold classes no model has
// been trained on.
type Episodes struct {
	// Config is the configuration with its defaults filled in.
	Config EpisodeConfig

	f       *Features
	classes []int
}

// NewEpisodes returns a sampler of episodes over the listed classes of f.
// It returns an error if f is invalid, cfg is (including Ways*Shots+1 above
// MaxElements), the list is empty, repeats a class or names one out of range,
// holds fewer than Ways classes, or a listed class has fewer than Shots+1
// vectors (every class may provide the query). f must not change while the
// sampler is in use.
func NewEpisodes(f *Features, classes []int, cfg EpisodeConfig) (*Episodes, error) {
	cfg, err := cfg.resolve()
	if err != nil {
		return nil, fmt.Errorf("data: NewEpisodes: %w", err)
	}
	if err := f.Validate(); err != nil {
		return nil, fmt.Errorf("data: NewEpisodes: %w", err)
	}
	if err := checkClassList("NewEpisodes", classes, f.Classes()); err != nil {
		return nil, err
	}
	if len(classes) < cfg.Ways {
		return nil, fmt.Errorf("data: NewEpisodes: %d classes, want at least Ways = %d", len(classes), cfg.Ways)
	}
	for _, c := range classes {
		if f.Counts[c] < cfg.Shots+1 {
			name := ""
			if f.Names != nil {
				name = fmt.Sprintf(" (%q)", f.Names[c])
			}
			return nil, fmt.Errorf("data: NewEpisodes: class %d%s has %d examples, want at least Shots+1 = %d (the context and a query)",
				c, name, f.Counts[c], cfg.Shots+1)
		}
	}
	return &Episodes{Config: cfg, f: f, classes: append([]int(nil), classes...)}, nil
}

// countsFit reports whether every class of e holds at least Shots+1 vectors.
func (e *Episodes) countsFit() bool {
	for _, c := range e.classes {
		if c < 0 || c >= len(e.f.Counts) || e.f.Counts[c] < e.Config.Shots+1 {
			return false
		}
	}
	return len(e.classes) >= e.Config.Ways
}

// Classes returns a copy of the classes episodes are drawn from.
func (e *Episodes) Classes() []int { return append([]int(nil), e.classes...) }

// Episode records where the vectors of one sampled episode come from.
type Episode struct {
	// Classes[l] is the class of f relabelled l in this episode.
	Classes []int
	// Context[t] = (class of f, vector index) of context position t.
	Context [][2]int
	// Query is the (class, vector index) of the query.
	Query [2]int
}

// Sample draws B episodes using rng only (equal generator states give equal
// batches) and returns them as a Batch with T = Ways*Shots+1, D = Dim,
// C = Ways, the query last with its label, and P = nil.
func (e *Episodes) Sample(B int, rng *rand.Rand) (*Batch, error) {
	b, _, err := e.SampleEpisodes(B, rng)
	return b, err
}

// SampleEpisodes is Sample that also returns where each episode's vectors
// come from.
func (e *Episodes) SampleEpisodes(B int, rng *rand.Rand) (*Batch, []Episode, error) {
	if e == nil || e.f == nil {
		return nil, nil, fmt.Errorf("data: Episodes.Sample: sampler is nil (use NewEpisodes)")
	}
	if rng == nil {
		return nil, nil, fmt.Errorf("data: Episodes.Sample: rng is nil")
	}
	if B <= 0 {
		return nil, nil, fmt.Errorf("data: Episodes.Sample: B = %d, want > 0", B)
	}
	// Config is exported: check that it is still the one NewEpisodes
	// validated against the class counts.
	cfg, err := e.Config.resolve()
	if err != nil {
		return nil, nil, fmt.Errorf("data: Episodes.Sample: %w", err)
	}
	if cfg != e.Config || !e.countsFit() {
		return nil, nil, fmt.Errorf("data: Episodes.Sample: Config %+v is not the configuration NewEpisodes checked against the class counts", e.Config)
	}
	W, S, D := e.Config.Ways, e.Config.Shots, e.f.Dim
	T := W*S + 1 // at most MaxElements: checked by resolve
	if _, err := checkedProduct("B*T*D", B, T, D); err != nil {
		return nil, nil, fmt.Errorf("data: Episodes.Sample: %w", err)
	}
	b := &Batch{B: B, T: T, D: D, C: W, X: make([]float64, B*T*D), Y: make([]int, B*T)}
	eps := make([]Episode, B)
	pos := make([][2]int, 0, W*S) // (label, vector index) before shuffling
	for ep := range eps {
		// Ways distinct classes: a partial Fisher-Yates over the class list.
		pick := rng.Perm(len(e.classes))[:W]
		cls := make([]int, W)
		for l, k := range pick {
			cls[l] = e.classes[k]
		}
		qLabel := rng.IntN(W)
		pos = pos[:0]
		var query [2]int
		for l, c := range cls {
			n := S
			if l == qLabel {
				n = S + 1 // the query is distinct from its class's context
			}
			idx := sampleDistinct(rng, e.f.Counts[c], n)
			for _, i := range idx[:S] {
				pos = append(pos, [2]int{l, i})
			}
			if l == qLabel {
				query = [2]int{c, idx[S]}
			}
		}
		rng.Shuffle(len(pos), func(i, j int) { pos[i], pos[j] = pos[j], pos[i] })
		rec := Episode{Classes: cls, Context: make([][2]int, len(pos)), Query: query}
		for t, p := range pos {
			c := cls[p[0]]
			copy(b.X[(ep*T+t)*D:(ep*T+t+1)*D], e.f.Vector(c, p[1]))
			b.Y[ep*T+t] = p[0]
			rec.Context[t] = [2]int{c, p[1]}
		}
		copy(b.X[(ep*T+T-1)*D:(ep*T+T)*D], e.f.Vector(query[0], query[1]))
		b.Y[ep*T+T-1] = qLabel
		eps[ep] = rec
	}
	return b, eps, nil
}

// sampleDistinct returns k distinct integers from 0..n-1 in random order.
func sampleDistinct(rng *rand.Rand, n, k int) []int {
	if 2*k >= n {
		return rng.Perm(n)[:k]
	}
	seen := make(map[int]bool, k)
	out := make([]int, 0, k)
	for len(out) < k {
		i := rng.IntN(n)
		if !seen[i] {
			seen[i] = true
			out = append(out, i)
		}
	}
	return out
}
