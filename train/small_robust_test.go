package train_test

import (
	"math"
	"testing"

	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/train"
)

// TestSmallRefusals: a typed nil model is an error, not a panic, and Steps
// never wraps around.
func TestSmallRefusals(t *testing.T) {
	_, test := synthSets(t, 1, 2)
	var nilModel *gd.Model
	if _, err := train.NewRunner(nilModel, train.RunnerConfig{EvalOnly: true}); err == nil {
		t.Error("NewRunner((*gd.Model)(nil)): no error")
	}
	if _, err := train.Predict(nilModel, test); err == nil {
		t.Error("Predict((*gd.Model)(nil)): no error")
	}
	for _, tc := range []struct{ n, batch, epochs, want int }{
		{math.MaxInt, 1, 4, math.MaxInt},
		{10, 3, 2, 8},
		{-1, 1, 1, 0},
		{1, 1, -1, 0},
		{1, 0, 1, 0},
	} {
		if got := train.Steps(tc.n, tc.batch, tc.epochs); got != tc.want {
			t.Errorf("Steps(%d, %d, %d) = %d, want %d", tc.n, tc.batch, tc.epochs, got, tc.want)
		}
	}
}
