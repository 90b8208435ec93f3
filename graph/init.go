package graph

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gorgonia.org/tensor"
)

// Initializer fills out (row-major, len = shape.TotalSize()) for a parameter
// of the given shape, drawing any randomness from rng only.
type Initializer func(rng *rand.Rand, shape tensor.Shape, out []float64) error

// Zeros initialises to 0.
func Zeros() Initializer { return Constant(0) }

// Ones initialises to 1.
func Ones() Initializer { return Constant(1) }

// Constant initialises every element to v.
func Constant(v float64) Initializer {
	return func(_ *rand.Rand, _ tensor.Shape, out []float64) error {
		for i := range out {
			out[i] = v
		}
		return nil
	}
}

// FromValues initialises from vals, which must have exactly the parameter's size.
func FromValues(vals []float64) Initializer {
	return func(_ *rand.Rand, shape tensor.Shape, out []float64) error {
		if len(vals) != len(out) {
			return fmt.Errorf("initial values: got %d, want %d for shape %v", len(vals), len(out), shape)
		}
		copy(out, vals)
		return nil
	}
}

// Normal draws i.i.d. N(0, std^2).
func Normal(std float64) Initializer {
	return func(rng *rand.Rand, _ tensor.Shape, out []float64) error {
		for i := range out {
			out[i] = std * rng.NormFloat64()
		}
		return nil
	}
}

// Uniform draws i.i.d. U(lo, hi).
func Uniform(lo, hi float64) Initializer {
	return func(rng *rand.Rand, _ tensor.Shape, out []float64) error {
		for i := range out {
			out[i] = lo + (hi-lo)*rng.Float64()
		}
		return nil
	}
}

// GlorotUniform draws U(-a, a) with a = sqrt(6/(fanIn+fanOut)), the fans
// being the last two dimensions (a vector uses its length for both).
func GlorotUniform() Initializer {
	return func(rng *rand.Rand, shape tensor.Shape, out []float64) error {
		in, o := fans(shape)
		a := math.Sqrt(6 / float64(in+o))
		for i := range out {
			out[i] = a * (2*rng.Float64() - 1)
		}
		return nil
	}
}

// GlorotNormal draws N(0, 2/(fanIn+fanOut)).
func GlorotNormal() Initializer {
	return func(rng *rand.Rand, shape tensor.Shape, out []float64) error {
		in, o := fans(shape)
		std := math.Sqrt(2 / float64(in+o))
		for i := range out {
			out[i] = std * rng.NormFloat64()
		}
		return nil
	}
}

func fans(shape tensor.Shape) (int, int) {
	switch len(shape) {
	case 0:
		return 1, 1
	case 1:
		return shape[0], shape[0]
	}
	recept := 1
	for _, d := range shape[:len(shape)-2] {
		recept *= d
	}
	return shape[len(shape)-2] * recept, shape[len(shape)-1] * recept
}
