package losses

import (
	"fmt"
	"math"

	"github.com/gdattn/gdattn/internal/numeric"
)

// Softmax returns the row-wise softmax of logits, read as rows of C class
// scores (row-major, len(logits) a positive multiple of C), for evaluation
// code outside the graph. It subtracts each row's maximum first, so large
// logits do not overflow. Logits may be -Inf (a class with probability 0),
// but not NaN or +Inf, and a row may not be entirely -Inf.
func Softmax(logits []float64, C int) ([]float64, error) {
	const fn = "losses: Softmax"
	if C < 1 {
		return nil, fmt.Errorf("%s: C = %d, want >= 1", fn, C)
	}
	if len(logits) == 0 || len(logits)%C != 0 {
		return nil, fmt.Errorf("%s: logits has %d values, want a positive multiple of C = %d", fn, len(logits), C)
	}
	out := make([]float64, len(logits))
	for r := 0; r < len(logits); r += C {
		row := logits[r : r+C]
		for c, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 1) {
				return nil, fmt.Errorf("%s: logits[%d] = %v, want finite or -Inf", fn, r+c, v)
			}
		}
		if math.IsInf(numeric.Max(row), -1) {
			return nil, fmt.Errorf("%s: logits row %d is entirely -Inf", fn, r/C)
		}
		numeric.SoftmaxInto(out[r:r+C], row)
	}
	return out, nil
}

// OneHot returns the (len(labels), C) row-major one-hot encoding of labels,
// the targets of [CrossEntropy]. Every label must lie in 0..C-1.
func OneHot(labels []int, C int) ([]float64, error) {
	const fn = "losses: OneHot"
	if err := checkLabels(fn, labels, C); err != nil {
		return nil, err
	}
	out := make([]float64, len(labels)*C)
	for i, y := range labels {
		out[i*C+y] = 1
	}
	return out, nil
}

// checkLabels validates C >= 1, a non-empty labels slice and every label in
// 0..C-1.
func checkLabels(fn string, labels []int, C int) error {
	if C < 1 {
		return fmt.Errorf("%s: C = %d, want >= 1", fn, C)
	}
	if len(labels) == 0 {
		return fmt.Errorf("%s: labels is empty", fn)
	}
	for i, y := range labels {
		if y < 0 || y >= C {
			return fmt.Errorf("%s: labels[%d] = %d, want 0 <= label < C = %d", fn, i, y, C)
		}
	}
	return nil
}

// checkRows validates labels and that vals (named name) holds len(labels)*C
// values, none NaN.
func checkRows(fn, name string, vals []float64, labels []int, C int) error {
	if err := checkLabels(fn, labels, C); err != nil {
		return err
	}
	if len(vals) != len(labels)*C {
		return fmt.Errorf("%s: %s has %d values, want len(labels)*C = %d*%d = %d",
			fn, name, len(vals), len(labels), C, len(labels)*C)
	}
	for i, v := range vals {
		if math.IsNaN(v) {
			return fmt.Errorf("%s: %s[%d] is NaN", fn, name, i)
		}
	}
	return nil
}

// checkProbs is checkRows plus every value in [0, 1].
func checkProbs(fn, name string, probs []float64, labels []int, C int) error {
	if err := checkRows(fn, name, probs, labels, C); err != nil {
		return err
	}
	for i, p := range probs {
		if p < 0 || p > 1 {
			return fmt.Errorf("%s: %s[%d] = %v is not a probability (want 0 <= p <= 1)", fn, name, i, p)
		}
	}
	return nil
}
