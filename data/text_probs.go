package data

import (
	"errors"
	"fmt"
	"math"

	"github.com/gdattn/gdattn/internal/numeric"
)

// Probabilities returns softmax(logits), the next-token distribution of a
// row of logits (what a NextFunc or train.Generator.Next returns), computed
// with the maximum subtracted so that large logits do not overflow. Ids at
// −Inf get probability 0. It returns an error for an empty row, a NaN or
// +Inf logit, or a row entirely at −Inf.
func Probabilities(logits []float64) ([]float64, error) {
	if err := checkLogits(logits); err != nil {
		return nil, err
	}
	return numeric.Softmax(logits), nil
}

// LogProbabilities returns log softmax(logits) (log-probabilities, for
// scoring a continuation: the log-likelihood of ids is the sum of their
// entries), computed as logits − logsumexp(logits). Ids at −Inf stay −Inf.
// Its errors are those of [Probabilities].
func LogProbabilities(logits []float64) ([]float64, error) {
	if err := checkLogits(logits); err != nil {
		return nil, err
	}
	return numeric.LogSoftmax(logits), nil
}

func checkLogits(logits []float64) error {
	if len(logits) == 0 {
		return errors.New("data: probabilities: no logits")
	}
	for i, v := range logits {
		if math.IsNaN(v) || math.IsInf(v, 1) {
			return fmt.Errorf("data: probabilities: logit %d is %v", i, v)
		}
	}
	if math.IsInf(numeric.Max(logits), -1) {
		return errors.New("data: probabilities: every logit is -Inf")
	}
	return nil
}
