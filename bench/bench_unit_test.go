package bench

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"gorgonia.org/tensor"
)

// tiny shrinks a workload so that building and running it takes
// milliseconds; the model structure is unchanged.
func tiny(w Workload) Workload {
	w.Batch = 2
	if w.Language() {
		w.Vocab, w.Context, w.DPrime, w.Heads = 64, 8, 16, 2
	}
	if w.Task == TaskFewShot {
		w.D = 16 // few-shot keeps N = 50 = 5 ways × 10 shots
	}
	return w
}

func TestRunners(t *testing.T) {
	regrouped := SyntheticTF(1)
	regrouped.Name += "-regroup"
	regrouped.RegroupQuery = true
	ws := append(ICLWorkloads(), regrouped, fusedGD(2), LM(ModelGDLM, LMSmall), LM(ModelGPT, LMSmall))
	for _, w := range ws {
		for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
			for _, mode := range []Mode{Train, Infer} {
				t.Run(fmt.Sprintf("%s/%v/%v", w.Name, dt, mode), func(t *testing.T) {
					r, err := NewRunner(tiny(w), dt, mode, 1)
					if err != nil {
						t.Fatal(err)
					}
					defer r.Close()
					for i := 0; i < 2; i++ {
						l, err := r.Step()
						if err != nil {
							t.Fatal(err)
						}
						if mode == Train && !(l > 0 && !math.IsInf(l, 0)) {
							t.Errorf("step %d: loss %v, want a finite positive cross-entropy", i, l)
						}
					}
					if r.Logits.Value() == nil {
						t.Error("logits have no value after a step")
					}
				})
			}
		}
	}
}

func TestRunnerErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    Workload
		want string
	}{
		{"no batch", Workload{Name: "x", Model: ModelGD, N: 1, D: 1, DPrime: 1, C: 2}, "Batch must be > 0"},
		{"unknown model", Workload{Name: "x", Model: "rnn"}, "unknown model"},
		{"quadrant d", Workload{Name: "x", Model: ModelGD, Task: TaskQuadrant, Batch: 1, N: 4, D: 3, DPrime: 2, C: 4}, "quadrant task has d = 2"},
		{"few-shot ways", Workload{Name: "x", Model: ModelGD, Task: TaskFewShot, Batch: 1, N: 7, D: 3, DPrime: 2, C: 5}, "not a multiple"},
		{"tokens for gd", Workload{Name: "x", Model: ModelGD, Task: TaskTokens, Batch: 1, N: 4, D: 3, DPrime: 2, C: 4}, "no in-context minibatch"},
		{"regroup for gd", Workload{Name: "x", Model: ModelGD, Batch: 1, N: 4, D: 3, DPrime: 2, C: 4, RegroupQuery: true}, "only for the Trained TF"},
		{"fuse for tf", Workload{Name: "x", Model: ModelTF, Batch: 1, N: 4, D: 3, DPrime: 2, C: 4, FuseEncoder: true}, "only for the GD model"},
		{"xent32 for gd", Workload{Name: "x", Model: ModelGD, Batch: 1, N: 4, D: 3, DPrime: 2, C: 4, Float32CrossEntropy: true}, "only for the language models"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewRunner(tc.w, tensor.Float64, Train, 1)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestLossValue(t *testing.T) {
	r, err := NewRunner(tiny(SyntheticGD(1)), tensor.Float64, Train, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	a, err := r.LossValue()
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.LossValue() // no update in between: the same loss
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Errorf("LossValue twice: got %v then %v, want equal", a, b)
	}
	s, err := r.Step() // the step returns the loss before its update
	if err != nil {
		t.Fatal(err)
	}
	if s != a {
		t.Errorf("Step: got loss %v, want %v", s, a)
	}
	inf, err := NewRunner(tiny(SyntheticGD(1)), tensor.Float64, Infer, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer inf.Close()
	if _, err := inf.LossValue(); err == nil {
		t.Error("LossValue on an Infer runner: got nil error")
	}
}

func TestFindWorkload(t *testing.T) {
	for _, name := range []string{"synthetic/gd-1", "synthetic/tf-2", "quadrant/tf-1", "fewshot/gd-1", "language-paper/gpt", "language-small/gdlm"} {
		w, err := FindWorkload(name)
		if err != nil || w.Name != name {
			t.Errorf("FindWorkload(%q): got %q, %v", name, w.Name, err)
		}
	}
	if _, err := FindWorkload("synthetic/gd-9"); err == nil || !strings.Contains(err.Error(), "synthetic/gd-1") {
		t.Errorf("unknown workload: got %v, want an error listing the known ones", err)
	}
}

func TestParseMode(t *testing.T) {
	for _, m := range []Mode{Train, Infer} {
		got, err := ParseMode(m.String())
		if err != nil || got != m {
			t.Errorf("ParseMode(%q): got %v, %v, want %v", m.String(), got, err, m)
		}
	}
	if _, err := ParseMode("eval"); err == nil {
		t.Error(`ParseMode("eval"): got nil error`)
	}
}

func TestMeasure(t *testing.T) {
	calls := 0
	step := func() error { calls++; return nil }
	tm, err := Measure(step, 2, 5, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if calls != 7 || tm.Steps != 5 {
		t.Errorf("got %d calls and %d timed steps, want 7 and 5", calls, tm.Steps)
	}
	if tm.Min > tm.Median || tm.Median < 0 {
		t.Errorf("got min %v > median %v", tm.Min, tm.Median)
	}
	calls = 0
	if tm, _ = Measure(step, 0, 1, 3, time.Hour); tm.Steps != 3 {
		t.Errorf("maxSteps 3: got %d steps", tm.Steps)
	}
	boom := errors.New("boom")
	if _, err := Measure(func() error { return boom }, 1, 1, 0, 0); !errors.Is(err, boom) {
		t.Errorf("got %v, want the step's error", err)
	}
	if _, err := Measure(step, 0, 0, 0, 0); err == nil {
		t.Error("nothing to time: got nil error")
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := Median(tc.in); got != tc.want {
			t.Errorf("Median(%v): got %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestPeakMeter(t *testing.T) {
	pm := StartPeak(time.Millisecond)
	const size = 64 << 20
	buf := make([]byte, size)
	for i := range buf { // touch every page so it is resident
		buf[i] = byte(i)
	}
	time.Sleep(5 * time.Millisecond)
	heap, rss := pm.Stop()
	sinkValue = buf
	if heap < size {
		t.Errorf("peak heap %d B, want at least the %d B allocated", heap, size)
	}
	if pm.RSSReset && rss < size {
		t.Errorf("peak RSS %d B, want at least the %d B touched", rss, size)
	}
}

func TestParseStatusKB(t *testing.T) {
	st := []byte("Name:\tbench.test\nVmPeak:\t  100 kB\nVmHWM:\t   2048 kB\nVmRSS:\t 1024 kB\n")
	if got, err := parseStatusKB(st, "VmHWM:"); err != nil || got != 2048*1024 {
		t.Errorf("got %d, %v, want %d", got, err, 2048*1024)
	}
	if _, err := parseStatusKB(st, "VmSwap:"); err == nil {
		t.Error("missing key: got nil error")
	}
	if _, err := parseStatusKB([]byte("VmHWM: 12 MB\n"), "VmHWM:"); err == nil {
		t.Error("unit MB: got nil error")
	}
}

func TestCPUInfo(t *testing.T) {
	const info = "processor\t: 0\nmodel name\t: AMD EPYC\ncpu family\t: 26\ncpu MHz\t\t: 2596.096\nflags\t\t: fpu fma avx2 avx512f\n\n" +
		"processor\t: 1\nmodel name\t: AMD EPYC\ncpu family\t: 26\ncpu MHz\t\t: 2596.096\nflags\t\t: fpu fma avx2 avx512f\n"
	c, err := parseCPUInfo(info)
	if err != nil {
		t.Fatal(err)
	}
	if c.Threads != 2 || c.Family != 26 || c.MHz != 2596.096 || !c.AVX512 || !c.FMA || c.Model != "AMD EPYC" {
		t.Errorf("got %+v", c)
	}
	// 2 cores × 2.596096 GHz × 2 FMA pipes × 16 float32 lanes × 2 FLOPs.
	for _, tc := range []struct {
		cores, bytes int
		want         float64
	}{{2, 4, 332.300288}, {2, 8, 166.150144}, {1, 4, 166.150144}} {
		if got := c.PeakGFLOPS(tc.cores, tc.bytes); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("PeakGFLOPS(%d, %d): got %v, want %v", tc.cores, tc.bytes, got, tc.want)
		}
	}
	c.AVX512 = false // AVX2: half the lanes
	if got := c.PeakGFLOPS(2, 4); math.Abs(got-166.150144) > 1e-9 {
		t.Errorf("AVX2 PeakGFLOPS(2, 4): got %v", got)
	}
	if _, err := parseCPUInfo("nothing here"); err == nil {
		t.Error("empty cpuinfo: got nil error")
	}
}

func TestFLOPs(t *testing.T) {
	// GPT, 1 layer, B=1, T=2, d=4, V=10: forward 24·1·2·16 + 4·1·4·4 + 2·1·2·4·10 = 768 + 64 + 160.
	gpt := Workload{Model: ModelGPT, Batch: 1, Context: 2, DPrime: 4, Heads: 2, Vocab: 10}
	if got := FLOPs(gpt, Infer); got != 992 {
		t.Errorf("GPT forward: got %v, want 992", got)
	}
	if got := FLOPs(gpt, Train); got != 3*992 {
		t.Errorf("GPT train: got %v, want %v", got, 3*992)
	}
	// GD LM, 1 head, B=1, T=2, d=4, V=10: logits 160, kernel 2·3·2·4 = 48,
	// repeat 2·1·3·2 = 12, kernel × values 48, P_m 2·1·3·16 = 96, mean 80;
	// GD + FF adds 16·1·2·16 = 512.
	lm := Workload{Model: ModelGDLM, Batch: 1, Context: 2, DPrime: 4, Heads: 1, Vocab: 10}
	if got := FLOPs(lm, Infer); got != 160+48+12+48+96+80 {
		t.Errorf("GD LM forward: got %v, want %v", got, 160+48+12+48+96+80)
	}
	if got, want := FLOPs(lm, Train), 3*160+3*48+3*48+3*96+2*12+2*80.0; got != want {
		t.Errorf("GD LM train: got %v, want %v", got, want)
	}
	lm.FF = true
	if got, want := FLOPs(lm, Train), 3*160+3*48+3*48+3*96+2*12+2*80+3*512.0; got != want {
		t.Errorf("GD + FF train: got %v, want %v", got, want)
	}
	if got := FLOPs(SyntheticGD(1), Train); got != 0 {
		t.Errorf("in-context workload: got %v FLOPs, want 0 (not counted)", got)
	}
}

func TestFitPowers(t *testing.T) {
	xs := []float64{10, 20, 50, 100, 200, 500, 1000}
	ys := make([]float64, len(xs))
	for i, x := range xs {
		ys[i] = 2 + 3*x + 0.5*x*x
	}
	c, err := FitPowers(xs, ys, []float64{0, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []float64{2, 3, 0.5} {
		if math.Abs(c[i]-want) > 1e-8*math.Max(1, want) {
			t.Errorf("coefficient %d: got %v, want %v", i, c[i], want)
		}
	}
	if s, err := LogLogSlope(xs[4:], []float64{4e4, 2.5e5, 1e6}); err != nil || math.Abs(s-2) > 1e-12 {
		t.Errorf("LogLogSlope of x²: got %v, %v, want 2", s, err)
	}
	if _, err := FitPowers(xs[:1], ys[:1], []float64{0, 1}); err == nil {
		t.Error("fewer points than powers: got nil error")
	}
	if _, err := FitPowers([]float64{1, 1, 1}, []float64{1, 2, 3}, []float64{0, 1}); err == nil {
		t.Error("singular fit: got nil error")
	}
	if _, err := LogLogSlope([]float64{1, 2}, []float64{1, -1}); err == nil {
		t.Error("negative value: got nil error")
	}
}

func ExampleSyntheticGD() {
	w := SyntheticGD(2)
	fmt.Println(w.Name)
	fmt.Println(w)
	// Output:
	// synthetic/gd-2
	// gd K=2 B=512 N=10 d=10 d'=5 C=25
}
