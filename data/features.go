package data

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/gdattn/gdattn/graph/npy"
)

// Features is a set of feature vectors grouped by class, the input of
// few-shot episodes (paper Section 5.2: VGG features of ImageNet images).
// Class c holds Counts[c] vectors of Dim values; vector i of class c is
// X[(c*MaxCount+i)*Dim : (c*MaxCount+i+1)*Dim], for i < Counts[c]. Slots
// i >= Counts[c] are padding and are never read.
//
// On disk this is the layout the authors' code writes: a features .npy of
// shape (classes, MaxCount, Dim), float32 or float64, and a counts .npy of
// shape (classes,), integer (see [ReadFeatures] and [WriteFeatures]).
type Features struct {
	// Dim is the dimension of each vector; MaxCount the number of slots per
	// class (at least the largest count).
	Dim, MaxCount int
	// Counts holds the number of vectors of each class; len(Counts) is the
	// number of classes.
	Counts []int
	// X holds the vectors, shape (len(Counts), MaxCount, Dim), row-major.
	X []float64
	// Names optionally names the classes (nil, or one name per class).
	Names []string
}

// Classes returns the number of classes, len(f.Counts).
func (f *Features) Classes() int { return len(f.Counts) }

// Vector returns vector i of class c (a view into f.X, not a copy). It
// panics if c or i is out of range: indices come from the caller's loops.
func (f *Features) Vector(c, i int) []float64 {
	if c < 0 || c >= len(f.Counts) || i < 0 || i >= f.Counts[c] {
		panic(fmt.Sprintf("data: Features.Vector(%d, %d) out of range (%d classes, count %v)", c, i, len(f.Counts), f.countOf(c)))
	}
	o := (c*f.MaxCount + i) * f.Dim
	return f.X[o : o+f.Dim : o+f.Dim]
}

func (f *Features) countOf(c int) any {
	if c >= 0 && c < len(f.Counts) {
		return f.Counts[c]
	}
	return "-"
}

// Validate checks that Dim and MaxCount are positive, there is at least one
// class, every count lies in 0..MaxCount, X has classes*MaxCount*Dim values
// (at most MaxElements), every vector in use is finite, and Names is nil or
// has one entry per class.
// It returns an error naming the first violation.
func (f *Features) Validate() error {
	switch {
	case f == nil:
		return fmt.Errorf("data: Features.Validate: features are nil")
	case f.Dim <= 0:
		return fmt.Errorf("data: Features.Validate: Dim = %d, want > 0", f.Dim)
	case f.MaxCount <= 0:
		return fmt.Errorf("data: Features.Validate: MaxCount = %d, want > 0", f.MaxCount)
	case len(f.Counts) == 0:
		return fmt.Errorf("data: Features.Validate: no classes")
	}
	n, err := checkedProduct("classes*MaxCount*Dim", len(f.Counts), f.MaxCount, f.Dim)
	switch {
	case err != nil:
		return fmt.Errorf("data: Features.Validate: %w", err)
	case len(f.X) != n:
		return fmt.Errorf("data: Features.Validate: len(X) = %d, want classes*MaxCount*Dim = %d*%d*%d",
			len(f.X), len(f.Counts), f.MaxCount, f.Dim)
	case f.Names != nil && len(f.Names) != len(f.Counts):
		return fmt.Errorf("data: Features.Validate: %d names for %d classes", len(f.Names), len(f.Counts))
	}
	for c, n := range f.Counts {
		if n < 0 || n > f.MaxCount {
			return fmt.Errorf("data: Features.Validate: count of class %d is %d, want 0..MaxCount = 0..%d", c, n, f.MaxCount)
		}
		for i := 0; i < n; i++ {
			for k, v := range f.Vector(c, i) {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return fmt.Errorf("data: Features.Validate: class %d, vector %d, element %d is %v, want a finite value", c, i, k, v)
				}
			}
		}
	}
	return nil
}

// Subset returns a copy of the listed classes of f, in the order given: class
// k of the result is class classes[k] of f (with its name, if any). It
// returns an error for an empty list, a class out of range or a repeated
// class. Only the selected classes are copied or read, so data of the other
// classes never reaches the result.
func (f *Features) Subset(classes []int) (*Features, error) {
	if f == nil || f.Dim <= 0 || f.MaxCount <= 0 {
		return nil, fmt.Errorf("data: Features.Subset: malformed features (check Validate)")
	}
	if n, err := checkedProduct("classes*MaxCount*Dim", len(f.Counts), f.MaxCount, f.Dim); err != nil || len(f.X) != n {
		return nil, fmt.Errorf("data: Features.Subset: malformed features (check Validate)")
	}
	if err := checkClassList("Features.Subset", classes, len(f.Counts)); err != nil {
		return nil, err
	}
	for _, c := range classes {
		if f.Counts[c] < 0 || f.Counts[c] > f.MaxCount {
			return nil, fmt.Errorf("data: Features.Subset: count of class %d is %d, want 0..MaxCount = 0..%d", c, f.Counts[c], f.MaxCount)
		}
	}
	out := &Features{Dim: f.Dim, MaxCount: f.MaxCount, Counts: make([]int, len(classes)),
		X: make([]float64, len(classes)*f.MaxCount*f.Dim)}
	if f.Names != nil {
		out.Names = make([]string, len(classes))
	}
	per := f.MaxCount * f.Dim
	for k, c := range classes {
		out.Counts[k] = f.Counts[c]
		copy(out.X[k*per:k*per+f.Counts[c]*f.Dim], f.X[c*per:c*per+f.Counts[c]*f.Dim])
		if f.Names != nil {
			out.Names[k] = f.Names[c]
		}
	}
	return out, nil
}

// Map returns new features with vector v of every class replaced by fn(v),
// which must return a slice of the same length for every vector (the new
// Dim). fn must not keep v. Counts, MaxCount and Names are kept.
func (f *Features) Map(fn func(v []float64) []float64) (*Features, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	var out *Features
	for c, n := range f.Counts {
		for i := 0; i < n; i++ {
			y := fn(f.Vector(c, i))
			if out == nil {
				if len(y) == 0 {
					return nil, fmt.Errorf("data: Features.Map: fn returned an empty vector")
				}
				n, err := checkedProduct("classes*MaxCount*len(fn(v))", len(f.Counts), f.MaxCount, len(y))
				if err != nil {
					return nil, fmt.Errorf("data: Features.Map: %w", err)
				}
				out = &Features{Dim: len(y), MaxCount: f.MaxCount, Counts: append([]int(nil), f.Counts...),
					X: make([]float64, n)}
				if f.Names != nil {
					out.Names = append([]string(nil), f.Names...)
				}
			}
			if len(y) != out.Dim {
				return nil, fmt.Errorf("data: Features.Map: fn returned %d values for class %d, vector %d, want %d", len(y), c, i, out.Dim)
			}
			copy(out.X[(c*f.MaxCount+i)*out.Dim:], y)
		}
	}
	if out == nil {
		return nil, fmt.Errorf("data: Features.Map: no vectors")
	}
	return out, nil
}

// Stats returns the mean and the standard deviation (population) of every
// dimension over all vectors of the listed classes; for a standardisation
// fitted on training classes only.
func (f *Features) Stats(classes []int) (mean, std []float64, err error) {
	if err := f.Validate(); err != nil {
		return nil, nil, err
	}
	if err := checkClassList("Features.Stats", classes, len(f.Counts)); err != nil {
		return nil, nil, err
	}
	mean, std = make([]float64, f.Dim), make([]float64, f.Dim)
	n := 0
	for _, c := range classes {
		for i := 0; i < f.Counts[c]; i++ {
			for k, v := range f.Vector(c, i) {
				mean[k] += v
			}
			n++
		}
	}
	if n == 0 {
		return nil, nil, fmt.Errorf("data: Features.Stats: the listed classes hold no vectors")
	}
	for k := range mean {
		mean[k] /= float64(n)
	}
	for _, c := range classes {
		for i := 0; i < f.Counts[c]; i++ {
			for k, v := range f.Vector(c, i) {
				std[k] += (v - mean[k]) * (v - mean[k])
			}
		}
	}
	for k := range std {
		std[k] = math.Sqrt(std[k] / float64(n))
	}
	return mean, std, nil
}

// Standardize returns features with (v - mean) / std applied per dimension,
// then (when unitNorm) each vector scaled to unit Euclidean norm (a zero
// vector stays zero). Dimensions with std below 1e-8 (constant over the
// fitting classes) are only centred. mean and std come from [Features.Stats],
// normally over the training classes.
func (f *Features) Standardize(mean, std []float64, unitNorm bool) (*Features, error) {
	if f == nil || len(mean) != f.Dim || len(std) != f.Dim {
		return nil, fmt.Errorf("data: Features.Standardize: mean and std need Dim values")
	}
	return f.Map(func(v []float64) []float64 {
		y := make([]float64, len(v))
		norm := 0.0
		for k, x := range v {
			y[k] = x - mean[k]
			if std[k] > 1e-8 {
				y[k] /= std[k]
			}
			norm += y[k] * y[k]
		}
		if unitNorm && norm > 0 {
			s := 1 / math.Sqrt(norm)
			for k := range y {
				y[k] *= s
			}
		}
		return y
	})
}

// SplitClasses splits the classes 0..n-1 into a training set of n-test
// classes and a disjoint test set of test classes, drawn uniformly with a
// PCG generator seeded by seed; both lists are sorted. It returns an error
// unless 0 < test < n <= MaxElements.
func SplitClasses(n, test int, seed uint64) (train, held []int, err error) {
	if test <= 0 || test >= n {
		return nil, nil, fmt.Errorf("data: SplitClasses: %d test classes of %d, want 0 < test < n", test, n)
	}
	if err := checkedSize("n (classes)", n); err != nil {
		return nil, nil, fmt.Errorf("data: SplitClasses: %w", err)
	}
	perm := rand.New(rand.NewPCG(seed, 0x5911)).Perm(n)
	held = append([]int(nil), perm[:test]...)
	train = append([]int(nil), perm[test:]...)
	sort.Ints(held)
	sort.Ints(train)
	return train, held, nil
}

// checkClassList checks a non-empty list of distinct classes in 0..n-1.
func checkClassList(fn string, classes []int, n int) error {
	if len(classes) == 0 {
		return fmt.Errorf("data: %s: no classes listed", fn)
	}
	seen := make(map[int]bool, len(classes))
	for _, c := range classes {
		if c < 0 || c >= n {
			return fmt.Errorf("data: %s: class %d out of range 0..%d", fn, c, n-1)
		}
		if seen[c] {
			return fmt.Errorf("data: %s: class %d listed twice", fn, c)
		}
		seen[c] = true
	}
	return nil
}

// ErrFeatures is wrapped by every error ReadFeatures returns for files whose
// contents do not form valid features (wrong rank, dtype or sizes, counts
// out of range, non-finite values); test it with errors.Is.
var ErrFeatures = errors.New("invalid features")

// ReadFeatures reads features stored as two .npy files: featuresPath of shape
// (classes, max_count, dim), float32 or float64, and countsPath of shape
// (classes,), integer (int64 or int32), with 0 <= counts[c] <= max_count.
// Slots beyond a class's count are ignored (they may hold anything,
// including NaN). Errors name the file and the problem, and wrap
// [ErrFeatures] or the npy package's sentinels; a file whose header claims
// more than MaxElements values (npy.ErrTooLarge) or more bytes than the file
// holds (npy.ErrTruncated) is refused before its data is allocated.
func ReadFeatures(featuresPath, countsPath string) (*Features, error) {
	// A header that claims more than MaxElements values is refused before
	// anything is allocated; npy refuses one that claims more bytes than the
	// file holds.
	fa, err := npy.ReadFileLimit(featuresPath, MaxElements)
	if err != nil {
		return nil, fmt.Errorf("data: features: %w", err)
	}
	ca, err := npy.ReadFileLimit(countsPath, MaxElements)
	if err != nil {
		return nil, fmt.Errorf("data: counts: %w", err)
	}
	fail := func(path, format string, a ...any) (*Features, error) {
		return nil, fmt.Errorf("data: %s: %w: %s", path, ErrFeatures, fmt.Sprintf(format, a...))
	}
	if len(fa.Shape) != 3 {
		return fail(featuresPath, "shape %v has rank %d, want rank 3 (classes, max_count, dim)", fa.Shape, len(fa.Shape))
	}
	if fa.Dtype != npy.Float32 && fa.Dtype != npy.Float64 {
		return fail(featuresPath, "dtype %s, want float32 or float64", fa.Dtype)
	}
	nc, mc, dim := fa.Shape[0], fa.Shape[1], fa.Shape[2]
	if nc == 0 || mc == 0 || dim == 0 {
		return fail(featuresPath, "shape %v is empty", fa.Shape)
	}
	if len(ca.Shape) != 1 {
		return fail(countsPath, "shape %v has rank %d, want rank 1 (classes,)", ca.Shape, len(ca.Shape))
	}
	if ca.Dtype != npy.Int64 {
		return fail(countsPath, "dtype %s, want an integer type", ca.Dtype)
	}
	if ca.Shape[0] != nc {
		return fail(countsPath, "%d counts for the %d classes of %s", ca.Shape[0], nc, featuresPath)
	}
	x := fa.F64 // read by us: no copy needed
	if fa.Dtype != npy.Float64 {
		x = fa.Float64s()
	}
	f := &Features{Dim: dim, MaxCount: mc, Counts: make([]int, nc), X: x}
	for c, n := range ca.I64 {
		if n < 0 || n > int64(mc) {
			return fail(countsPath, "count of class %d is %d, larger than the %d slots of %s (or negative)", c, n, mc, featuresPath)
		}
		f.Counts[c] = int(n)
	}
	if err := f.Validate(); err != nil {
		return fail(featuresPath, "%v", err)
	}
	return f, nil
}

// WriteFeatures writes f as the two .npy files ReadFeatures reads: features
// (classes, MaxCount, Dim) in dtype npy.Float32 or npy.Float64, with padding
// slots zero, and counts (classes,) int64. Each file is written atomically.
func WriteFeatures(featuresPath, countsPath string, f *Features, dtype string) error {
	if err := f.Validate(); err != nil {
		return err
	}
	shape := []int{len(f.Counts), f.MaxCount, f.Dim}
	a := &npy.Array{Shape: shape, Dtype: dtype}
	switch dtype {
	case npy.Float64:
		a.F64 = make([]float64, len(f.X))
	case npy.Float32:
		a.F32 = make([]float32, len(f.X))
	default:
		return fmt.Errorf("data: WriteFeatures: dtype %q, want %q or %q", dtype, npy.Float32, npy.Float64)
	}
	for c, n := range f.Counts {
		lo, hi := c*f.MaxCount*f.Dim, (c*f.MaxCount+n)*f.Dim // padding stays zero
		if a.F64 != nil {
			copy(a.F64[lo:hi], f.X[lo:hi])
		} else {
			for i := lo; i < hi; i++ {
				a.F32[i] = float32(f.X[i])
			}
		}
	}
	counts := &npy.Array{Shape: []int{len(f.Counts)}, Dtype: npy.Int64, I64: make([]int64, len(f.Counts))}
	for c, n := range f.Counts {
		counts.I64[c] = int64(n)
	}
	if err := npy.WriteFile(featuresPath, a); err != nil {
		return err
	}
	return npy.WriteFile(countsPath, counts)
}
