package losses

import "fmt"

// TopK returns the fraction of examples whose label is among the k most
// probable classes: probs is (B, C) row-major, B = len(labels) >= 1,
// 1 <= k <= C. Only the order within each row matters, so any scores
// monotone in the probability (logits) work too; NaN is an error.
//
// Ties count against the prediction: example i is a hit when the number of
// other classes c != labels[i] with probs[i,c] >= probs[i,labels[i]] is less
// than k. A uniform prediction therefore scores 0 top-1 accuracy (for C > 1),
// not 1.
func TopK(probs []float64, labels []int, C, k int) (float64, error) {
	return topK("losses: TopK", probs, labels, C, k)
}

// Top1 is TopK with k = 1: the accuracy of the arg-max prediction (ties count
// as misses).
func Top1(probs []float64, labels []int, C int) (float64, error) {
	return topK("losses: Top1", probs, labels, C, 1)
}

func topK(fn string, probs []float64, labels []int, C, k int) (float64, error) {
	if err := checkRows(fn, "probs", probs, labels, C); err != nil {
		return 0, err
	}
	if k < 1 || k > C {
		return 0, fmt.Errorf("%s: k = %d, want 1 <= k <= C = %d", fn, k, C)
	}
	hits := 0
	for i, y := range labels {
		row := probs[i*C : (i+1)*C]
		py := row[y]
		above := 0
		for c, p := range row {
			if c != y && p >= py {
				above++
			}
		}
		if above < k {
			hits++
		}
	}
	return float64(hits) / float64(len(labels)), nil
}
