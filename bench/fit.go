package bench

import (
	"errors"
	"fmt"
	"math"
)

// FitPowers fits y ≈ Σ_k c_k x^{p_k} by least squares on the relative
// error, minimising Σ_i ((y_i − ŷ_i)/y_i)², so that the small and the large
// points of a sweep over decades count alike. It returns the coefficients
// c_k in the order of powers.
func FitPowers(xs, ys, powers []float64) ([]float64, error) {
	n, k := len(xs), len(powers)
	if n != len(ys) || k == 0 || n < k {
		return nil, fmt.Errorf("bench: FitPowers: %d points, %d values, %d powers: want as many values as points and at least as many points as powers", n, len(ys), k)
	}
	// Normal equations AᵀA c = Aᵀb with rows a_i = x_i^p / y_i, b_i = 1.
	ata := make([]float64, k*k)
	atb := make([]float64, k)
	for i := range xs {
		if !(ys[i] > 0) || !(xs[i] > 0) {
			return nil, fmt.Errorf("bench: FitPowers: point %d (%v, %v): want positive x and y", i, xs[i], ys[i])
		}
		row := make([]float64, k)
		for j, p := range powers {
			row[j] = math.Pow(xs[i], p) / ys[i]
		}
		for a := 0; a < k; a++ {
			atb[a] += row[a]
			for b := 0; b < k; b++ {
				ata[a*k+b] += row[a] * row[b]
			}
		}
	}
	return solve(ata, atb, k)
}

// solve solves the k×k system m x = v by Gaussian elimination with partial
// pivoting (m and v are overwritten).
func solve(m, v []float64, k int) ([]float64, error) {
	for c := 0; c < k; c++ {
		p := c
		for r := c + 1; r < k; r++ {
			if math.Abs(m[r*k+c]) > math.Abs(m[p*k+c]) {
				p = r
			}
		}
		if m[p*k+c] == 0 {
			return nil, errors.New("bench: singular fit (repeated or too few distinct points)")
		}
		for j := 0; j < k; j++ {
			m[c*k+j], m[p*k+j] = m[p*k+j], m[c*k+j]
		}
		v[c], v[p] = v[p], v[c]
		for r := c + 1; r < k; r++ {
			f := m[r*k+c] / m[c*k+c]
			for j := c; j < k; j++ {
				m[r*k+j] -= f * m[c*k+j]
			}
			v[r] -= f * v[c]
		}
	}
	x := make([]float64, k)
	for r := k - 1; r >= 0; r-- {
		s := v[r]
		for j := r + 1; j < k; j++ {
			s -= m[r*k+j] * x[j]
		}
		x[r] = s / m[r*k+r]
	}
	return x, nil
}

// LogLogSlope returns the least-squares slope of log y against log x: the
// exponent e of y ∝ x^e over the points.
func LogLogSlope(xs, ys []float64) (float64, error) {
	if len(xs) != len(ys) || len(xs) < 2 {
		return 0, fmt.Errorf("bench: LogLogSlope: %d points and %d values, want at least 2 of each", len(xs), len(ys))
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		if !(xs[i] > 0) || !(ys[i] > 0) {
			return 0, fmt.Errorf("bench: LogLogSlope: point %d (%v, %v): want positive x and y", i, xs[i], ys[i])
		}
		lx, ly := math.Log(xs[i]), math.Log(ys[i])
		sx, sy, sxx, sxy = sx+lx, sy+ly, sxx+lx*lx, sxy+lx*ly
	}
	n := float64(len(xs))
	den := n*sxx - sx*sx
	if den == 0 {
		return 0, errors.New("bench: LogLogSlope: all x equal")
	}
	return (n*sxy - sx*sy) / den, nil
}
