// Package bounds holds the size limits of gdattn, defined once: the model
// and layer constructors check them before they allocate anything, so that
// a huge config returns an error naming its fields instead of panicking in
// makeslice, exhausting memory, building a graph for hours, or being
// refused later by graph.Scope with an error that names a parameter path
// but not the config field behind it.
//
// Three limits apply:
//
//   - MaxElements (2^31) bounds the elements of one tensor: 8 GiB of
//     float32, 16 GiB of float64. graph.MaxElements (graph.CheckShape, every
//     node a graph.Scope creates, graph.NewTensor) and data.MaxElements
//     (every slice package data allocates or accepts) are this constant, so
//     a config whose tensors pass a constructor's check is never refused by
//     the Scope.
//   - MaxTotal (2^34) bounds the elements one model allocates in all,
//     128 GiB of float64 before any gradient or optimiser state, which no
//     supported machine holds.
//   - MaxUnits (2^10) bounds the repeated structures of a graph: GD steps,
//     layers, heads, and steps × heads. Each one adds graph nodes, and the
//     time to build and compile the graph grows about quadratically with
//     them, so a model of tens of thousands of GD blocks would take hours
//     to build before its first step.
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
	// MaxElements is the most elements one tensor may hold.
	MaxElements = 1 << 31
	// MaxTotal is the most elements one model may allocate, all tensors
	// together.
	MaxTotal = 1 << 34
	// MaxUnits is the most repeated units (steps, layers, heads, steps ×
	// heads) one model may have.
	MaxUnits = 1 << 10
)

// Term is one tensor, or a group of tensors, that a constructor allocates
// or has the graph compute. What names it by the config fields whose
// product is its size, e.g. "batch·(N+1)·C (labels)" or
// "Layers·Heads·batch·(N+1)·N (kernel weights)", and Dims are those
// factors: the product of Dims is the term's elements in all. For a group,
// Tensor names its largest single tensor by its fields (e.g.
// "batch·(N+1)·N") and TensorDims are that tensor's factors; for a single
// tensor both are left empty and Dims is the tensor.
type Term struct {
	What       string
	Dims       []int
	Tensor     string
	TensorDims []int
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

// Elements checks every term's single tensors against MaxElements, every
// term and the sum of all of them against MaxTotal. The error names the
// offending term by its fields and factors.
func Elements(terms ...Term) error {
	total := 0
	for _, t := range terms {
		if err := t.checkTensor(); err != nil {
			return err
		}
		n, ok := Product(t.Dims...)
		if !ok || n > MaxTotal {
			return fmt.Errorf("%s = %s elements exceeds the limit of 2^34 elements in all (128 GiB of float64)", t.What, factors(t.Dims))
		}
		total += n
		if total > MaxTotal {
			whats := make([]string, len(terms))
			for i, t := range terms {
				whats[i] = t.What
			}
			return fmt.Errorf("%s together exceed the limit of 2^34 elements in all (128 GiB of float64)", strings.Join(whats, " + "))
		}
	}
	return nil
}

// checkTensor checks t's single (largest) tensor against MaxElements.
func (t Term) checkTensor() error {
	for _, d := range t.Dims {
		if d < 0 {
			return fmt.Errorf("%s = %s: a size is negative, want >= 0", t.What, factors(t.Dims))
		}
	}
	dims := t.TensorDims
	if t.Tensor == "" && dims == nil {
		dims = t.Dims
	}
	if n, ok := Product(dims...); ok && n <= MaxElements {
		return nil
	}
	if t.Tensor == "" {
		return fmt.Errorf("%s = %s elements exceeds the limit of 2^31 elements per tensor (graph.MaxElements)", t.What, factors(dims))
	}
	return fmt.Errorf("%s: one %s tensor = %s elements exceeds the limit of 2^31 elements per tensor (graph.MaxElements)", t.What, t.Tensor, factors(dims))
}

// Each checks every term on its own against MaxElements: the sizes of
// config fields, before their sums and products are formed (a field within
// the limit cannot overflow a sum of a few of them).
func Each(terms ...Term) error {
	for _, t := range terms {
		if err := t.checkTensor(); err != nil {
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
		return fmt.Errorf("%s = %s exceeds the limit 2^10 of repeated steps, layers or heads (internal/bounds.MaxUnits: a larger graph takes minutes to build and compile)", what, factors(dims))
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
