// Package bounds holds the size limits that the model and layer
// constructors of gdattn check before they allocate anything, so that a
// huge config returns an error naming its fields instead of panicking in
// makeslice, exhausting memory or building a graph for hours.
//
// Two limits apply:
//
//   - MaxElements (2^34) bounds the elements of every tensor a constructor
//     allocates, and of all of them together: 2^34 float64 values are
//     128 GiB before any gradient or optimiser state, which no supported
//     machine holds.
//   - MaxUnits (2^16) bounds the repeated structures of a graph: GD steps,
//     layers, heads, and steps × heads. Each one adds graph nodes; beyond
//     65536 the graph would take hours to build and compile.
//
// Products are computed with overflow checks: a product that does not fit
// in an int is reported as exceeding the limit.
package bounds

import (
	"fmt"
	"math/bits"
	"strings"
)

const (
	// MaxElements is the most elements one model may allocate, each
	// tensor and all together.
	MaxElements = 1 << 34
	// MaxUnits is the most repeated units (steps, layers, heads, steps ×
	// heads) one model may have.
	MaxUnits = 1 << 16
)

// Term is one tensor (or group of tensors) a constructor allocates: What
// names it by the config fields whose product is its size, e.g.
// "Batch·(N+1)·C (labels)", and Dims are the factors.
type Term struct {
	What string
	Dims []int
}

// Product returns the product of dims and whether it is non-negative and
// fits in an int without overflow.
func Product(dims ...int) (int, bool) {
	p := uint64(1)
	for _, d := range dims {
		if d < 0 {
			return 0, false
		}
		hi, lo := bits.Mul64(p, uint64(d))
		if hi != 0 || lo > 1<<62 {
			return 0, false
		}
		p = lo
	}
	return int(p), true
}

// Elements checks every term and their sum against MaxElements. The error
// names the offending term's fields and factors.
func Elements(terms ...Term) error {
	total := 0
	for _, t := range terms {
		n, ok := Product(t.Dims...)
		if !ok || n > MaxElements {
			return fmt.Errorf("%s = %s elements exceeds the limit 2^34 (128 GiB of float64)", t.What, factors(t.Dims))
		}
		total += n
		if total > MaxElements {
			whats := make([]string, len(terms))
			for i, t := range terms {
				whats[i] = t.What
			}
			return fmt.Errorf("%s together exceed the limit of 2^34 elements (128 GiB of float64)", strings.Join(whats, " + "))
		}
	}
	return nil
}

// Each checks every term on its own against MaxElements (the sizes of
// config fields, before their sums and products are formed: a field within
// the limit cannot overflow a sum of a few of them).
func Each(terms ...Term) error {
	for _, t := range terms {
		if err := Elements(t); err != nil {
			return err
		}
	}
	return nil
}

// Units checks that the product of dims, a count of repeated graph
// structures named by what (e.g. "Blocks·Heads"), is at most MaxUnits.
func Units(what string, dims ...int) error {
	n, ok := Product(dims...)
	if !ok || n > MaxUnits {
		return fmt.Errorf("%s = %s exceeds the limit 2^16 of repeated steps, layers or heads", what, factors(dims))
	}
	return nil
}

func factors(dims []int) string {
	s := make([]string, len(dims))
	for i, d := range dims {
		s[i] = fmt.Sprint(d)
	}
	return strings.Join(s, "·")
}
