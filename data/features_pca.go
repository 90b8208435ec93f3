package data

import (
	"fmt"

	"gonum.org/v1/gonum/mat"
)

// PCA is a principal-component projection v ↦ Wᵀ(v − Mean) onto the K
// leading eigenvectors of the covariance of the vectors it was fitted on: the
// raw-pixel baseline of the few-shot experiment, fitted on the training
// classes only.
type PCA struct {
	// Dim is the input dimension and K the number of components.
	Dim, K int
	// Mean is the fitted mean (Dim).
	Mean []float64
	// Components holds the components as rows, shape (K, Dim), by
	// decreasing variance; each row has unit norm.
	Components []float64
	// Variance holds the variance along each component (K).
	Variance []float64
}

// FitPCA fits a K-component PCA on every vector of the listed classes of f.
// It returns an error if f is invalid, the class list is bad, k is not in
// 1..Dim, Dim*Dim exceeds MaxElements, or the classes hold fewer than 2
// vectors.
func FitPCA(f *Features, classes []int, k int) (*PCA, error) {
	mean, _, err := f.Stats(classes)
	if err != nil {
		return nil, fmt.Errorf("data: FitPCA: %w", err)
	}
	if k <= 0 || k > f.Dim {
		return nil, fmt.Errorf("data: FitPCA: K = %d, want 1..Dim = 1..%d", k, f.Dim)
	}
	// The covariance is Dim×Dim (and the eigenvectors another).
	if _, err := checkedProduct("Dim*Dim (covariance)", f.Dim, f.Dim); err != nil {
		return nil, fmt.Errorf("data: FitPCA: %w", err)
	}
	// Σ (v-m)(v-m)ᵀ, accumulated as a symmetric rank-k update per chunk of
	// centred vectors (rows of buf).
	d := f.Dim
	const chunk = 512
	sum := mat.NewDense(d, d, nil)
	var prod mat.Dense
	buf := make([]float64, 0, chunk*d)
	n := 0
	flush := func() {
		if len(buf) > 0 {
			x := mat.NewDense(len(buf)/d, d, buf)
			prod.Reset()
			prod.Mul(x.T(), x) // a parallel GEMM: much faster than a rank-k update here
			sum.Add(sum, &prod)
			buf = buf[:0]
		}
	}
	for _, cl := range classes {
		for i := 0; i < f.Counts[cl]; i++ {
			for a, v := range f.Vector(cl, i) {
				buf = append(buf, v-mean[a])
			}
			n++
			if len(buf) == cap(buf) {
				flush()
			}
		}
	}
	flush()
	if n < 2 {
		return nil, fmt.Errorf("data: FitPCA: %d vectors, want at least 2", n)
	}
	cov := mat.NewSymDense(d, nil)
	for a := 0; a < d; a++ {
		for b := a; b < d; b++ {
			cov.SetSym(a, b, (sum.At(a, b)+sum.At(b, a))/2/float64(n-1))
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(cov, true) {
		return nil, fmt.Errorf("data: FitPCA: the eigendecomposition did not converge")
	}
	vals := eig.Values(nil) // ascending
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	p := &PCA{Dim: d, K: k, Mean: mean, Components: make([]float64, k*d), Variance: make([]float64, k)}
	for j := 0; j < k; j++ {
		col := d - 1 - j
		p.Variance[j] = max(vals[col], 0)
		for a := 0; a < d; a++ {
			p.Components[j*d+a] = vecs.At(a, col)
		}
	}
	return p, nil
}

// Apply projects every vector of f, returning features of dimension K with
// the same classes and counts. It returns an error if f's Dim differs from
// the fitted one.
func (p *PCA) Apply(f *Features) (*Features, error) {
	if p == nil || p.K <= 0 || p.Dim <= 0 || len(p.Mean) != p.Dim {
		return nil, fmt.Errorf("data: PCA.Apply: malformed PCA (use FitPCA)")
	}
	if n, err := checkedProduct("K*Dim", p.K, p.Dim); err != nil || len(p.Components) != n {
		return nil, fmt.Errorf("data: PCA.Apply: malformed PCA (use FitPCA)")
	}
	if f == nil || f.Dim != p.Dim {
		return nil, fmt.Errorf("data: PCA.Apply: features of dimension %v, the PCA was fitted on %d", dimOf(f), p.Dim)
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	n, err := checkedProduct("classes*MaxCount*K", len(f.Counts), f.MaxCount, p.K)
	if err != nil {
		return nil, fmt.Errorf("data: PCA.Apply: %w", err)
	}
	out := &Features{Dim: p.K, MaxCount: f.MaxCount, Counts: append([]int(nil), f.Counts...),
		X: make([]float64, n)}
	if f.Names != nil {
		out.Names = append([]string(nil), f.Names...)
	}
	w := mat.NewDense(p.K, p.Dim, p.Components)
	buf := make([]float64, f.MaxCount*p.Dim)
	for c, n := range f.Counts {
		if n == 0 {
			continue
		}
		for i := 0; i < n; i++ {
			for a, v := range f.Vector(c, i) {
				buf[i*p.Dim+a] = v - p.Mean[a]
			}
		}
		y := mat.NewDense(n, p.K, out.X[c*f.MaxCount*p.K:(c*f.MaxCount+n)*p.K])
		y.Mul(mat.NewDense(n, p.Dim, buf[:n*p.Dim]), w.T()) // (n, K)
	}
	return out, nil
}

func dimOf(f *Features) any {
	if f == nil {
		return "nil"
	}
	return f.Dim
}
