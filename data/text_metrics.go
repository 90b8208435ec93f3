package data

import "fmt"

// DistinctN returns the number of distinct n-grams of ids divided by the
// number of n-grams (len(ids)-n+1): distinct-1 and distinct-2 (Li et al.,
// 2016) measure lexical diversity, 1 meaning no n-gram repeats. It returns
// 0 when ids has fewer than n ids, and an error for n < 1.
func DistinctN(ids []int, n int) (float64, error) {
	total, distinct, err := ngramCounts(ids, n)
	if err != nil || total == 0 {
		return 0, err
	}
	return float64(distinct) / float64(total), nil
}

// RepeatedNgramRate returns the fraction of the n-grams of ids that repeat
// an earlier n-gram of the same sequence, 1 − distinct-n: the repetition
// rate (with n = 4, the "rep-4" of degeneration studies). The paper's bad
// generations loop on a sentence, which drives it towards 1. It returns 0
// when ids has fewer than n ids, and an error for n < 1.
func RepeatedNgramRate(ids []int, n int) (float64, error) {
	total, distinct, err := ngramCounts(ids, n)
	if err != nil || total == 0 {
		return 0, err
	}
	return float64(total-distinct) / float64(total), nil
}

func ngramCounts(ids []int, n int) (total, distinct int, err error) {
	if n < 1 {
		return 0, 0, fmt.Errorf("data: n-grams: n = %d, want >= 1", n)
	}
	if n > len(ids) {
		return 0, 0, nil // no n-gram (and no key buffer of 8n bytes)
	}
	seen := map[string]bool{}
	key := make([]byte, 0, 8*n)
	for i := 0; i+n <= len(ids); i++ {
		key = key[:0]
		for _, id := range ids[i : i+n] {
			key = fmt.Appendf(key, "%d,", id)
		}
		total++
		if !seen[string(key)] {
			seen[string(key)] = true
			distinct++
		}
	}
	return total, distinct, nil
}
