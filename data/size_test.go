package data

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/graph/npy"
)

// hugeSizes are sizes no slice of this package may take: just past
// MaxElements (2^31), far past it, near the top of int and the top itself.
var hugeSizes = []int{MaxElements + 1, 1 << 40, 1 << 62, math.MaxInt}

func TestCheckedProduct(t *testing.T) {
	tests := []struct {
		name    string
		dims    []int
		want    int
		wantErr string
	}{
		{"empty", nil, 1, ""},
		{"small", []int{2, 3, 4}, 24, ""},
		{"zero", []int{0, 5}, 0, ""},
		{"limit", []int{MaxElements}, MaxElements, ""},
		{"limit as a product", []int{1 << 16, 1 << 15}, 1 << 31, ""},
		{"one past the limit", []int{3, 715827883}, 0, "F = 3*715827883 exceeds the limit of 2147483648 elements"}, // 2^31 + 1
		{"negative", []int{3, -1}, 0, "a dimension is negative"},
		{"huge dimension", []int{1 << 40}, 0, "dimension 1099511627776 exceeds"},
		{"huge dimension beside a zero", []int{0, math.MaxInt}, 0, "exceeds"},
		{"product that wraps to zero", []int{1 << 32, 1 << 32}, 0, "exceeds"},
		{"product that wraps to one", []int{3, 6148914691236517206}, 0, "exceeds"},
		{"product of many", []int{1 << 10, 1 << 10, 1 << 10, 4}, 0, "exceeds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := checkedProduct("F", tt.dims...)
			if tt.wantErr == "" {
				if err != nil || got != tt.want {
					t.Errorf("got %d, %v, want %d, nil", got, err, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "F = ") {
				t.Errorf("got %d, %v, want an error naming F and containing %q", got, err, tt.wantErr)
			}
		})
	}
	for _, c := range []struct{ a, b int }{{MaxElements, 1}, {-1, 2}, {math.MaxInt, math.MaxInt}, {1 << 30, 1<<30 + 1}} {
		if s, err := checkedSum("S", c.a, c.b); err == nil || !strings.HasPrefix(err.Error(), "S") {
			t.Errorf("checkedSum(%d, %d) = %d, %v, want an error naming S", c.a, c.b, s, err)
		}
	}
	if s, err := checkedSum("S", MaxElements-1, 1); err != nil || s != MaxElements {
		t.Errorf("checkedSum(MaxElements-1, 1) = %d, %v", s, err)
	}
}

// sizeCase is one call with a huge size that must fail with an error naming
// the field, without panicking or allocating the size.
type sizeCase struct {
	name string
	call func(h int) error
	want string // the field the error must name
}

// runSizeCases runs every case with every huge size. Unless notLimit (a
// size refused for another reason, such as a count no token reaches), the
// error must also mention MaxElements.
func runSizeCases(t *testing.T, cases []sizeCase, notLimit ...bool) {
	t.Helper()
	for _, c := range cases {
		for _, h := range hugeSizes {
			t.Run(fmt.Sprintf("%s=%d", c.name, h), func(t *testing.T) {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("panic: %v", r)
					}
				}()
				err := c.call(h)
				if err == nil || !strings.Contains(err.Error(), c.want) || (len(notLimit) == 0 && !strings.Contains(err.Error(), "MaxElements")) {
					t.Errorf("got error %v, want one naming %q (and MaxElements unless %v)", err, c.want, notLimit)
				}
			})
		}
	}
}

func TestBatchValidateSizes(t *testing.T) {
	// B*T*D = 2^64 wraps to 0 = len(X) (and B*T to 0 = len(Y)): without the
	// overflow check this empty batch claiming 2^64 values passes.
	wrap := &Batch{B: 1 << 32, T: 1 << 32, D: 1, C: 1}
	if err := wrap.Validate(); err == nil || !strings.Contains(err.Error(), "B*T*D") {
		t.Errorf("B = T = 2^32 with empty slices: got %v, want an error naming B*T*D", err)
	}
	if _, err := wrap.Slice(0, 1); err == nil {
		t.Error("Slice of a batch whose sizes overflow: no error")
	}
	if o := wrap.Oracle(); !math.IsNaN(o) {
		t.Errorf("Oracle of a batch whose sizes overflow = %v, want NaN", o)
	}
	runSizeCases(t, []sizeCase{
		{"B", func(h int) error { return (&Batch{B: h, T: 11, D: 10, C: 25}).Validate() }, "B*T*D"},
		{"T", func(h int) error { return (&Batch{B: 64, T: h, D: 10, C: 25}).Validate() }, "B*T*D"},
		{"D", func(h int) error { return (&Batch{B: 64, T: 11, D: h, C: 25}).Validate() }, "B*T*D"},
		{"C", func(h int) error { return (&Batch{B: 64, T: 11, D: 10, C: h, P: []float64{}}).Validate() }, "B*T*C"},
	})
}

func TestSyntheticSizes(t *testing.T) {
	newSyn := func(cfg SyntheticConfig) error { _, err := NewSynthetic(cfg, 1); return err }
	runSizeCases(t, []sizeCase{
		{"C", func(h int) error { return newSyn(SyntheticConfig{C: h}) }, "SyntheticConfig.C"},
		{"DPrime", func(h int) error { return newSyn(SyntheticConfig{DPrime: h}) }, "SyntheticConfig.DPrime"},
		{"D", func(h int) error { return newSyn(SyntheticConfig{D: h}) }, "SyntheticConfig.D"},
		{"N", func(h int) error { return newSyn(SyntheticConfig{N: h}) }, "SyntheticConfig.N"},
		{"Active", func(h int) error { return newSyn(SyntheticConfig{C: h, Active: h}) }, "SyntheticConfig.C"},
		{"Sample B", func(h int) error {
			s, err := NewSynthetic(SyntheticConfig{}, 1)
			if err != nil {
				return err
			}
			_, err = s.Sample(h, rand.New(rand.NewPCG(1, 1)))
			return err
		}, "B*T*D"},
		// A task edited after NewSynthetic is checked again by Sample.
		{"Sample Config.N", func(h int) error {
			s, err := NewSynthetic(SyntheticConfig{}, 1)
			if err != nil {
				return err
			}
			s.Config.N = h
			_, err = s.Sample(2, rand.New(rand.NewPCG(1, 1)))
			return err
		}, "SyntheticConfig.N"},
	})
	// Products of sizes that each fit.
	for _, c := range []struct {
		cfg  SyntheticConfig
		want string
	}{
		{SyntheticConfig{C: 1 << 29, DPrime: 8}, "DPrime*C"},
		{SyntheticConfig{D: 1 << 29, Active: 8, C: 8}, "Active*D"},
		{SyntheticConfig{N: MaxElements}, "N+1"},
	} {
		if err := newSyn(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want an error naming %s", c.cfg, err, c.want)
		}
	}
}

func TestQuadrantSizes(t *testing.T) {
	newQuad := func(cfg QuadrantConfig) error { _, err := NewQuadrant(cfg, 1); return err }
	runSizeCases(t, []sizeCase{
		{"C", func(h int) error { return newQuad(QuadrantConfig{C: h}) }, "QuadrantConfig.C"},
		{"DPrime", func(h int) error { return newQuad(QuadrantConfig{DPrime: h}) }, "QuadrantConfig.DPrime"},
		{"N", func(h int) error { return newQuad(QuadrantConfig{N: h}) }, "QuadrantConfig.N"},
		{"Sample B", func(h int) error {
			q, err := NewQuadrant(QuadrantConfig{}, 1)
			if err != nil {
				return err
			}
			_, err = q.Sample(h, rand.New(rand.NewPCG(1, 1)))
			return err
		}, "B*T*D"},
	})
	if err := newQuad(QuadrantConfig{C: 1 << 29, DPrime: 8}); err == nil || !strings.Contains(err.Error(), "DPrime*C") {
		t.Errorf("DPrime*C = 2^32: got %v", err)
	}
}

func TestEpisodesSizes(t *testing.T) {
	f := classFeatures([]int{12, 12, 12, 12, 12, 12}, 12, 3)
	newEp := func(cfg EpisodeConfig) error { _, err := NewEpisodes(f, seq(0, 6), cfg); return err }
	runSizeCases(t, []sizeCase{
		{"Ways", func(h int) error { return newEp(EpisodeConfig{Ways: h}) }, "EpisodeConfig.Ways"},
		// Shots = MaxInt made Shots+1 wrap to MinInt, which every class
		// count exceeds, and Sample then panicked.
		{"Shots", func(h int) error { return newEp(EpisodeConfig{Shots: h}) }, "EpisodeConfig.Shots"},
		{"Sample B", func(h int) error {
			e, err := NewEpisodes(f, seq(0, 6), EpisodeConfig{})
			if err != nil {
				return err
			}
			_, err = e.Sample(h, rand.New(rand.NewPCG(1, 1)))
			return err
		}, "B*T*D"},
	})
	if err := newEp(EpisodeConfig{Ways: 1 << 16, Shots: 1 << 16}); err == nil || !strings.Contains(err.Error(), "Ways*Shots") {
		t.Errorf("Ways*Shots = 2^32: got %v", err)
	}
	// A Config edited after NewEpisodes is refused by Sample, not trusted.
	e, err := NewEpisodes(f, seq(0, 6), EpisodeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, edit := range []EpisodeConfig{{Ways: 5, Shots: math.MaxInt}, {Ways: 5, Shots: 40}, {Ways: 9, Shots: 2}, {}} {
		e.Config = edit
		if _, err := e.Sample(2, rand.New(rand.NewPCG(1, 1))); err == nil {
			t.Errorf("Sample with Config edited to %+v: no error", edit)
		}
	}
}

func TestFeaturesSizes(t *testing.T) {
	// classes*MaxCount*Dim = 2^64 wraps to 0 = len(X): Validate used to pass
	// the size check and then slice past X.
	for _, h := range hugeSizes {
		f := &Features{Dim: h, MaxCount: h, Counts: []int{1}}
		if err := f.Validate(); err == nil || !strings.Contains(err.Error(), "classes*MaxCount*Dim") {
			t.Errorf("Dim = MaxCount = %d: Validate = %v, want an error naming classes*MaxCount*Dim", h, err)
		}
		if _, err := f.Subset([]int{0}); err == nil {
			t.Errorf("Dim = MaxCount = %d: Subset: no error", h)
		}
	}
	// The covariance of FitPCA is Dim×Dim: 2^32 and 2^40 values for these
	// small feature sets.
	for _, dim := range []int{1 << 16, 1 << 20} {
		f := &Features{Dim: dim, MaxCount: 2, Counts: []int{2}, X: make([]float64, 2*dim)}
		f.X[0] = 1
		if _, err := FitPCA(f, []int{0}, 1); err == nil || !strings.Contains(err.Error(), "Dim*Dim") {
			t.Errorf("FitPCA with Dim = %d: got %v, want an error naming Dim*Dim", dim, err)
		}
	}
	f := classFeatures([]int{3, 3}, 3, 2)
	runSizeCases(t, []sizeCase{
		{"PCA.Apply K", func(h int) error {
			_, err := (&PCA{Dim: 2, K: h, Mean: []float64{0, 0}}).Apply(f)
			return err
		}, "malformed PCA"},
	}, true)
}

// writeNpyHeader writes a .npy file holding only the header of an array of
// the given shape (no data).
func writeNpyHeader(t *testing.T, path, descr, shape string) {
	t.Helper()
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape)
	dict += strings.Repeat(" ", 127-10-len(dict)) + "\n"
	raw := append([]byte("\x93NUMPY\x01\x00"), byte(len(dict)), byte(len(dict)>>8))
	if err := os.WriteFile(path, append(raw, dict...), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadFeaturesSizes(t *testing.T) {
	dir := t.TempDir()
	counts := filepath.Join(dir, "counts.npy")
	if err := npy.WriteFile(counts, &npy.Array{Shape: []int{1}, Dtype: npy.Int64, I64: []int64{1}}); err != nil {
		t.Fatal(err)
	}
	for _, shape := range []string{"(1099511627776, 1, 1)", "(2147483649, 1, 1)", "(1, 65536, 65536)"} {
		path := filepath.Join(dir, "features.npy")
		writeNpyHeader(t, path, "<f8", shape)
		_, err := ReadFeatures(path, counts)
		if !errors.Is(err, npy.ErrTooLarge) || !strings.Contains(err.Error(), "shape") {
			t.Errorf("features of shape %s: got %v, want npy.ErrTooLarge naming the shape", shape, err)
		}
	}
	// The counts file is bounded too.
	big := filepath.Join(dir, "big-counts.npy")
	writeNpyHeader(t, big, "<i8", "(4398046511104,)")
	feats := filepath.Join(dir, "ok.npy")
	if err := npy.WriteFile(feats, &npy.Array{Shape: []int{1, 1, 1}, Dtype: npy.Float64, F64: []float64{1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFeatures(feats, big); !errors.Is(err, npy.ErrTooLarge) {
		t.Errorf("counts of 2^42 entries: got %v, want npy.ErrTooLarge", err)
	}
}

func TestTextSizes(t *testing.T) {
	stream := []int{1, 2, 3, 4, 5, 6, 7}
	tok, err := NewGPT2Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	stories := []string{"Once upon a time.", "The end.", "A cat sat.", "A dog ran."}
	runSizeCases(t, []sizeCase{
		{"SplitIndices n", func(h int) error { _, _, _, err := SplitIndices(h, 0.1, 0.1, 1); return err }, "n (stories)"},
		{"SampleWindows batch", func(h int) error { _, err := SampleWindows(stream, h, 4, 1, 0); return err }, "batch*length"},
		{"SampleWindows length", func(h int) error { _, err := SampleWindows(stream, 2, h, 1, 0); return err }, "batch*length"},
		{"StreamWindows T", func(h int) error { _, err := StreamWindows(stream, h, 0); return err }, "windows*2*T"},
		// T = MaxInt made the next window start wrap negative: an endless
		// loop of T-sized windows.
		{"ContinuationWindows T", func(h int) error { _, err := ContinuationWindows(stream, 1, h, 0); return err }, "windows*2*T"},
	})
	runSizeCases(t, []sizeCase{
		{"NewTextData MinCount", func(h int) error {
			_, err := NewTextData(stories, tok, TextDataConfig{Restrict: true, MinCount: h})
			return err
		}, "TextDataConfig.MinCount = "},
		{"NewRestrictedVocab minCount", func(h int) error {
			_, err := NewRestrictedVocab([][]int{{1, 2, 3}}, h)
			return err
		}, "minCount = "},
	}, true)
	if _, err := NewTextData(stories, tok, TextDataConfig{MinCount: -1}); err == nil || !strings.Contains(err.Error(), "MinCount = -1") {
		t.Errorf("MinCount = -1: got %v", err)
	}
	// Windows whose total would pass the limit although T alone does not.
	if _, err := StreamWindows(make([]int, 1<<12), 1<<20, 0); err != nil {
		t.Errorf("one window of 2^20: %v", err)
	}
	if _, err := ContinuationWindows(make([]int, 1<<12), 1, 1<<30, 0); err == nil || !strings.Contains(err.Error(), "windows*2*T") {
		t.Errorf("ContinuationWindows with T = 2^30: got %v", err)
	}
}

func TestGenerateSizes(t *testing.T) {
	// next fails after a bounded number of calls, so that a size that is
	// not refused up front cannot make the test run for ever.
	calls := 0
	next := func(ctxs [][]int) ([][]float64, error) {
		if calls++; calls > 1000 {
			return nil, errors.New("next called more than 1000 times")
		}
		return bigram(toyTable)(ctxs)
	}
	prompts := [][]int{{0}, {1}}
	gen := func(cfg DecodeConfig) error {
		calls = 0
		cfg.Stop = StopNever()
		_, err := Generate(next, prompts, cfg)
		return err
	}
	runSizeCases(t, []sizeCase{
		{"MaxNew greedy", func(h int) error { return gen(DecodeConfig{MaxNew: h}) }, "DecodeConfig.MaxNew"},
		{"MaxNew sample", func(h int) error { return gen(DecodeConfig{Strategy: DecodeSample, MaxNew: h}) }, "DecodeConfig.MaxNew"},
		{"MaxNew beam", func(h int) error { return gen(DecodeConfig{Strategy: DecodeBeam, MaxNew: h}) }, "DecodeConfig.MaxNew"},
	})
	for _, c := range []struct {
		cfg  DecodeConfig
		want string
	}{
		{DecodeConfig{MaxNew: 1 << 30}, "prompts*(longest prompt+DecodeConfig.MaxNew)"},
		{DecodeConfig{Strategy: DecodeBeam, MaxNew: 1 << 22, Beams: MaxBeams}, "prompts*DecodeConfig.Beams*"},
	} {
		if err := gen(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want an error naming %q", c.cfg, err, c.want)
		}
	}
	// A large TopK is harmless (it is capped by the vocabulary).
	if err := gen(DecodeConfig{Strategy: DecodeSample, TopK: math.MaxInt, MaxNew: 3}); err != nil {
		t.Errorf("TopK = MaxInt: %v", err)
	}
}

func TestMoreSizes(t *testing.T) {
	runSizeCases(t, []sizeCase{
		{"SplitClasses n", func(h int) error { _, _, err := SplitClasses(h, 1, 1); return err }, "n (classes)"},
	})
	// n-grams longer than the sequence: none (a key buffer of 8n bytes
	// overflowed to a negative capacity and panicked for n near MaxInt/8).
	for _, h := range hugeSizes {
		d, err := DistinctN([]int{1, 2, 3}, h)
		r, err2 := RepeatedNgramRate([]int{1, 2, 3}, h)
		if d != 0 || r != 0 || err != nil || err2 != nil {
			t.Errorf("n = %d: distinct %v, repeated %v, errors %v %v, want 0, 0, nil, nil", h, d, r, err, err2)
		}
	}
	// A batch without P may have a C whose B*T*C would not fit.
	b := &Batch{B: 1 << 16, T: 2, D: 1, C: 1 << 20, X: make([]float64, 1<<17), Y: make([]int, 1<<17)}
	if err := b.Validate(); err != nil {
		t.Errorf("P = nil, B*T*C = 2^37: %v", err)
	}
	b.P = []float64{}
	if err := b.Validate(); err == nil || !strings.Contains(err.Error(), "B*T*C") {
		t.Errorf("P set, B*T*C = 2^37: got %v, want an error naming B*T*C", err)
	}
	for _, c := range []*TextCodec{nil, {}, {Tok: newTok(t)}, {Vocab: FullVocab()}} {
		if _, err := c.Encode("x"); err == nil {
			t.Errorf("Encode with codec %+v: no error", c)
		}
		if _, err := c.EncodeStrict("x"); err == nil {
			t.Errorf("EncodeStrict with codec %+v: no error", c)
		}
		if _, err := c.Decode([]int{1}); err == nil {
			t.Errorf("Decode with codec %+v: no error", c)
		}
	}
}
