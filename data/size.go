package data

import (
	"fmt"

	"github.com/gdattn/gdattn/internal/bounds"
)

// MaxElements is the largest number of elements of any slice this package
// allocates or accepts: 2^31, 16 GiB of float64, the same per-tensor limit
// as graph.MaxElements (one constant for the module). Every constructor,
// generator, validator and reader checks the sizes it is given (and their
// products, which could otherwise overflow an int) against it and returns an
// error naming the field before it allocates anything, instead of panicking in
// makeslice or exhausting memory.
const MaxElements = bounds.MaxElements

// checkedProduct returns the product of dims, or an error naming field if a
// dimension is negative or larger than MaxElements, or the product exceeds
// MaxElements (which includes every product that would overflow an int). An
// empty dims gives 1; a zero dimension gives 0.
func checkedProduct(field string, dims ...int) (int, error) {
	for _, d := range dims {
		if d < 0 {
			return 0, fmt.Errorf("%s = %s: a dimension is negative", field, productString(dims))
		}
		if d > MaxElements {
			return 0, fmt.Errorf("%s = %s: dimension %d exceeds the limit of %d elements (data.MaxElements)", field, productString(dims), d, MaxElements)
		}
	}
	n := 1
	for _, d := range dims {
		if d == 0 {
			return 0, nil
		}
	}
	for _, d := range dims {
		if n > MaxElements/d {
			return 0, fmt.Errorf("%s = %s exceeds the limit of %d elements (data.MaxElements)", field, productString(dims), MaxElements)
		}
		n *= d
	}
	return n, nil
}

// checkedSum returns a+b for non-negative a and b, or an error naming field
// if the sum exceeds MaxElements.
func checkedSum(field string, a, b int) (int, error) {
	if a < 0 || b < 0 {
		return 0, fmt.Errorf("%s: term %d + %d is negative", field, a, b)
	}
	if a > MaxElements || b > MaxElements-a {
		return 0, fmt.Errorf("%s = %d + %d exceeds the limit of %d elements (data.MaxElements)", field, a, b, MaxElements)
	}
	return a + b, nil
}

// checkedSize returns an error naming field unless 0 <= n <= MaxElements.
func checkedSize(field string, n int) error {
	_, err := checkedProduct(field, n)
	return err
}

// productString formats dims as "2*3*4".
func productString(dims []int) string {
	s := ""
	for i, d := range dims {
		if i > 0 {
			s += "*"
		}
		s += fmt.Sprint(d)
	}
	return s
}

// checkBatchSize checks that a Batch of B contexts of T positions with D
// covariates and C categories fits: B*T*D and B*T*C (so also B*T) at most
// MaxElements.
func checkBatchSize(B, T, D, C int) error {
	if _, err := checkedProduct("B*T*D", B, T, D); err != nil {
		return err
	}
	_, err := checkedProduct("B*T*C", B, T, C)
	return err
}

// Size limits of the files this package reads by path (each a regular
// file: a device, directory or FIFO is refused, see internal/infile). A
// larger file is refused before it is read.
const (
	// MaxCorpusBytes bounds a plain-text corpus or Gutenberg book file:
	// 4 GiB (TinyStories V2's training file, the largest corpus in view,
	// is 2.2 GB).
	MaxCorpusBytes = 4 << 30
	// MaxQuickDrawFileBytes bounds one <category>.ndjson.gz file: 1 GiB
	// (the largest category of the simplified dataset is under 200 MB).
	MaxQuickDrawFileBytes = 1 << 30
)
