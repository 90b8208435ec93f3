package train

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLMFitChecksStreams checks that an id outside the vocabulary anywhere
// in the training or validation stream is refused before the first step
// (it used to pass until a window drawing it came up: 5 steps in one
// probe), with an error naming the stream, the id and its position.
func TestLMFitChecksStreams(t *testing.T) {
	ds := storyData(t)
	m := newLM(t, lmFamilies[0], ds, 2, false)
	V := m.VocabSize()
	cfg := tinyLMConfig("")
	for _, c := range []struct {
		name         string
		train, valid []int
		want         string
	}{
		{"train, last id", append(append([]int(nil), ds.TrainStream...), V), nil,
			"training stream: id " + itoa(V) + " at position " + itoa(len(ds.TrainStream))},
		{"train, negative", append([]int{-3}, ds.TrainStream...), nil, "training stream: id -3 at position 0"},
		{"valid", ds.TrainStream, []int{0, 1, V + 7}, "validation stream: id " + itoa(V+7) + " at position 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr, err := NewLMTrainer(m, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			err = tr.Fit(c.train, c.valid)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
			if n := tr.Trainer().StepCount(); n != 0 {
				t.Errorf("%d steps made before the refusal, want 0", n)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestLMSummaryUnits checks that the run summary of a short run prints
// units that fit (it printed "0.0 min (0.00 s/step)") and the formatter's
// choice of unit.
func TestLMSummaryUnits(t *testing.T) {
	ds := storyData(t)
	m := newLM(t, lmFamilies[0], ds, 2, false)
	cfg := tinyLMConfig("")
	var log bytes.Buffer
	cfg.Progress = &log
	tr, err := NewLMTrainer(m, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := tr.Fit(ds.TrainStream, ds.ValidStream); err != nil {
		t.Fatal(err)
	}
	out := log.String()
	re := regexp.MustCompile(`trained steps 1\.\.8 in [0-9.]+ (µs|ms|s|min|h) \([0-9.]+ (µs|ms|s|min|h)/step\)`)
	if !re.MatchString(out) || strings.Contains(out, "0.0 min") || strings.Contains(out, "0.00 s/step") {
		t.Errorf("summary without fitting units:\n%s", out)
	}
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{850 * time.Microsecond, "850 µs"},
		{12300 * time.Microsecond, "12.3 ms"},
		{4560 * time.Millisecond, "4.56 s"},
		{192 * time.Second, "3.2 min"},
		{90 * time.Minute, "1.50 h"},
	} {
		if got := humanDuration(c.d); got != c.want {
			t.Errorf("humanDuration(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}
