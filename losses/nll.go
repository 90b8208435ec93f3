package losses

import "math"

// NLL returns the mean negative log-likelihood -(1/B) Σ_i log probs[i, labels[i]]
// of the labels under the given probabilities: probs is (B, C) row-major with
// every value in [0, 1], B = len(labels) >= 1. Rows are used as given, not
// renormalised. A target probability of exactly 0 gives +Inf, honestly: the
// value is not clamped, so a model that rules out an observed label shows up.
func NLL(probs []float64, labels []int, C int) (float64, error) {
	if err := checkProbs("losses: NLL", "probs", probs, labels, C); err != nil {
		return 0, err
	}
	sum := 0.0
	for i, y := range labels {
		sum -= math.Log(probs[i*C+y])
	}
	return sum / float64(len(labels)), nil
}
