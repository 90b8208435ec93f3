package data

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/graph/npy"
)

// classFeatures returns features whose vector i of class c is
// (c, i, c+i, ...) repeated over dim, so every value names its origin.
func classFeatures(counts []int, maxCount, dim int) *Features {
	f := &Features{Dim: dim, MaxCount: maxCount, Counts: counts, X: make([]float64, len(counts)*maxCount*dim)}
	for c, n := range counts {
		for i := 0; i < n; i++ {
			v := f.X[(c*maxCount+i)*dim : (c*maxCount+i+1)*dim]
			for k := range v {
				v[k] = float64(1000*c + i + k%2*100000)
			}
		}
	}
	return f
}

// origin decodes the (class, index) of a vector made by classFeatures.
func origin(v []float64) (int, int) { return int(v[0]) / 1000, int(v[0]) % 1000 }

func TestFeaturesValidate(t *testing.T) {
	good := classFeatures([]int{2, 3}, 3, 2)
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	nan := classFeatures([]int{2, 3}, 3, 2)
	nan.X[(0*3+2)*2] = math.NaN() // padding slot of class 0: ignored
	if err := nan.Validate(); err != nil {
		t.Errorf("NaN in padding: %v, want nil", err)
	}
	tests := []struct {
		name string
		edit func(f *Features)
		want string
	}{
		{"nil", nil, "nil"},
		{"dim", func(f *Features) { f.Dim = 0 }, "Dim = 0"},
		{"max count", func(f *Features) { f.MaxCount = 0 }, "MaxCount = 0"},
		{"no classes", func(f *Features) { f.Counts = nil }, "no classes"},
		{"short X", func(f *Features) { f.X = f.X[:5] }, "len(X) = 5"},
		{"count too large", func(f *Features) { f.Counts[1] = 4 }, "count of class 1 is 4"},
		{"negative count", func(f *Features) { f.Counts[0] = -1 }, "count of class 0 is -1"},
		{"inf in use", func(f *Features) { f.X[3] = math.Inf(1) }, "class 0, vector 1, element 1"},
		{"names", func(f *Features) { f.Names = []string{"a"} }, "1 names for 2 classes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f *Features
			if tt.edit != nil {
				f = classFeatures([]int{2, 3}, 3, 2)
				tt.edit(f)
			}
			err := f.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestFeaturesSubsetMapStats(t *testing.T) {
	f := classFeatures([]int{2, 3, 1}, 3, 2)
	f.Names = []string{"a", "b", "c"}
	s, err := f.Subset([]int{2, 0})
	if err != nil {
		t.Fatal(err)
	}
	if s.Classes() != 2 || s.Counts[0] != 1 || s.Counts[1] != 2 || s.Names[0] != "c" || s.Names[1] != "a" {
		t.Fatalf("subset counts %v names %v, want [1 2] [c a]", s.Counts, s.Names)
	}
	if c, i := origin(s.Vector(1, 1)); c != 0 || i != 1 {
		t.Errorf("subset vector (1, 1) comes from (%d, %d), want (0, 1)", c, i)
	}
	for _, bad := range [][]int{nil, {3}, {0, 0}, {-1}} {
		if _, err := f.Subset(bad); err == nil {
			t.Errorf("Subset(%v): no error", bad)
		}
	}

	g, err := f.Map(func(v []float64) []float64 { return []float64{v[0] + 1} })
	if err != nil {
		t.Fatal(err)
	}
	if g.Dim != 1 || g.Vector(1, 2)[0] != 1003 || g.Names[2] != "c" {
		t.Errorf("Map: dim %d, vector (1, 2) = %v", g.Dim, g.Vector(1, 2))
	}
	if _, err := f.Map(func(v []float64) []float64 { return v[:1+int(v[0])%2] }); err == nil {
		t.Error("Map with varying lengths: no error")
	}

	// Stats over classes 0 and 2: first elements 0, 1, 2000.
	mean, std, err := f.Stats([]int{0, 2})
	if err != nil {
		t.Fatal(err)
	}
	wantMean := 2001.0 / 3
	wantStd := math.Sqrt((wantMean*wantMean + (1-wantMean)*(1-wantMean) + (2000-wantMean)*(2000-wantMean)) / 3)
	if math.Abs(mean[0]-wantMean) > 1e-9 || math.Abs(std[0]-wantStd) > 1e-9 || std[1] != std[0] {
		t.Errorf("Stats = %v, %v, want mean %v std %v", mean, std, wantMean, wantStd)
	}
	z, err := f.Standardize(mean, std, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := z.Vector(2, 0)[0]; math.Abs(got-(2000-wantMean)/wantStd) > 1e-12 {
		t.Errorf("standardised value %v", got)
	}
	u, err := f.Standardize(mean, std, true)
	if err != nil {
		t.Fatal(err)
	}
	for c, n := range u.Counts {
		for i := 0; i < n; i++ {
			v := u.Vector(c, i)
			if nrm := math.Hypot(v[0], v[1]); math.Abs(nrm-1) > 1e-12 {
				t.Errorf("class %d vector %d has norm %v, want 1", c, i, nrm)
			}
		}
	}
	if _, err := f.Standardize(mean[:1], std, false); err == nil {
		t.Error("Standardize with a short mean: no error")
	}
}

func TestSplitClasses(t *testing.T) {
	train, test, err := SplitClasses(345, 45, 7)
	if err != nil {
		t.Fatal(err)
	}
	if len(train) != 300 || len(test) != 45 {
		t.Fatalf("%d train, %d test classes, want 300, 45", len(train), len(test))
	}
	seen := map[int]bool{}
	for _, c := range append(append([]int(nil), train...), test...) {
		if seen[c] || c < 0 || c >= 345 {
			t.Fatalf("class %d repeated or out of range", c)
		}
		seen[c] = true
	}
	_, test2, _ := SplitClasses(345, 45, 7)
	_, test3, _ := SplitClasses(345, 45, 8)
	if fmt.Sprint(test) != fmt.Sprint(test2) {
		t.Error("same seed, different split")
	}
	if fmt.Sprint(test) == fmt.Sprint(test3) {
		t.Error("different seeds, same split")
	}
	for _, bad := range [][2]int{{5, 0}, {5, 5}, {5, -1}} {
		if _, _, err := SplitClasses(bad[0], bad[1], 1); err == nil {
			t.Errorf("SplitClasses(%d, %d): no error", bad[0], bad[1])
		}
	}
}

func writeNpy(t *testing.T, dir, name string, a *npy.Array) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := npy.WriteFile(p, a); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadWriteFeatures(t *testing.T) {
	dir := t.TempDir()
	f := classFeatures([]int{2, 3}, 4, 3)
	for _, dt := range []string{npy.Float32, npy.Float64} {
		fp, cp := filepath.Join(dir, dt+".npy"), filepath.Join(dir, dt+"-counts.npy")
		if err := WriteFeatures(fp, cp, f, dt); err != nil {
			t.Fatal(err)
		}
		g, err := ReadFeatures(fp, cp)
		if err != nil {
			t.Fatal(err)
		}
		if g.Dim != 3 || g.MaxCount != 4 || g.Counts[1] != 3 {
			t.Fatalf("%s: read dim %d max %d counts %v", dt, g.Dim, g.MaxCount, g.Counts)
		}
		for i := range f.X {
			c, rest := i/(4*3), i%(4*3)
			if rest/3 < f.Counts[c] && math.Abs(g.X[i]-f.X[i]) > 1e-3*math.Abs(f.X[i]) {
				t.Fatalf("%s: X[%d] = %v, want %v", dt, i, g.X[i], f.X[i])
			}
		}
	}
	if err := WriteFeatures(filepath.Join(dir, "x.npy"), filepath.Join(dir, "c.npy"), f, npy.Int64); err == nil {
		t.Error("WriteFeatures int64: no error")
	}
}

func TestReadFeaturesErrors(t *testing.T) {
	dir := t.TempDir()
	good := writeNpy(t, dir, "good.npy", &npy.Array{Shape: []int{2, 3, 2}, Dtype: npy.Float64, F64: make([]float64, 12)})
	counts := writeNpy(t, dir, "counts.npy", &npy.Array{Shape: []int{2}, Dtype: npy.Int64, I64: []int64{3, 1}})
	// NaN in padding is fine, NaN in use is not.
	padNaN := make([]float64, 12)
	padNaN[11] = math.NaN()
	nanPad := writeNpy(t, dir, "nanpad.npy", &npy.Array{Shape: []int{2, 3, 2}, Dtype: npy.Float64, F64: padNaN})
	if _, err := ReadFeatures(nanPad, counts); err != nil {
		t.Errorf("NaN in padding: %v", err)
	}
	useNaN := make([]float64, 12)
	useNaN[6] = math.NaN()
	nanUse := writeNpy(t, dir, "nanuse.npy", &npy.Array{Shape: []int{2, 3, 2}, Dtype: npy.Float64, F64: useNaN})

	rank2 := writeNpy(t, dir, "rank2.npy", &npy.Array{Shape: []int{2, 6}, Dtype: npy.Float64, F64: make([]float64, 12)})
	ints := writeNpy(t, dir, "ints.npy", &npy.Array{Shape: []int{2, 3, 2}, Dtype: npy.Int64, I64: make([]int64, 12)})
	empty := writeNpy(t, dir, "empty.npy", &npy.Array{Shape: []int{2, 0, 2}, Dtype: npy.Float64})
	tooMany := writeNpy(t, dir, "toomany.npy", &npy.Array{Shape: []int{2}, Dtype: npy.Int64, I64: []int64{3, 4}})
	negative := writeNpy(t, dir, "negative.npy", &npy.Array{Shape: []int{2}, Dtype: npy.Int64, I64: []int64{-1, 1}})
	three := writeNpy(t, dir, "three.npy", &npy.Array{Shape: []int{3}, Dtype: npy.Int64, I64: []int64{1, 1, 1}})
	counts2 := writeNpy(t, dir, "counts2.npy", &npy.Array{Shape: []int{2, 1}, Dtype: npy.Int64, I64: []int64{1, 1}})
	floatCounts := writeNpy(t, dir, "fcounts.npy", &npy.Array{Shape: []int{2}, Dtype: npy.Float64, F64: []float64{1, 1}})
	raw, _ := os.ReadFile(good)
	trunc := filepath.Join(dir, "trunc.npy")
	if err := os.WriteFile(trunc, raw[:len(raw)-5], 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name, f, c string
		want       string
		sentinel   error
	}{
		{"features rank 2", rank2, counts, "rank 2, want rank 3", ErrFeatures},
		{"integer features", ints, counts, "dtype int64", ErrFeatures},
		{"empty", empty, counts, "empty", ErrFeatures},
		{"count larger than the array", good, tooMany, "count of class 1 is 4, larger than the 3 slots", ErrFeatures},
		{"negative count", good, negative, "count of class 0 is -1", ErrFeatures},
		{"counts for 3 classes", good, three, "3 counts for the 2 classes", ErrFeatures},
		{"counts rank 2", good, counts2, "want rank 1", ErrFeatures},
		{"float counts", good, floatCounts, "want an integer type", ErrFeatures},
		{"NaN in use", nanUse, counts, "class 1, vector 0", ErrFeatures},
		{"truncated", trunc, counts, "trunc.npy", npy.ErrTruncated},
		{"missing", filepath.Join(dir, "nope.npy"), counts, "nope.npy", os.ErrNotExist},
		{"missing counts", good, filepath.Join(dir, "nope.npy"), "nope.npy", os.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadFeatures(tt.f, tt.c)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ReadFeatures = %v, want an error containing %q", err, tt.want)
			}
			if !errors.Is(err, tt.sentinel) {
				t.Errorf("error %v does not wrap %v", err, tt.sentinel)
			}
		})
	}
}

func TestPCA(t *testing.T) {
	// Points on the line t·(3, 4)/5 plus small noise along (-4, 3)/5: the
	// first component is ±(0.6, 0.8) with variance ≫ the second.
	n := 40
	f := &Features{Dim: 2, MaxCount: n, Counts: []int{n, n}, X: make([]float64, 2*n*2)}
	for i := 0; i < 2*n; i++ {
		s := float64(i - n)
		e := 0.01 * float64(i%3-1)
		f.X[2*i] = 0.6*s - 0.8*e + 5
		f.X[2*i+1] = 0.8*s + 0.6*e - 1
	}
	p, err := FitPCA(f, []int{0, 1}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(math.Abs(p.Components[0])-0.6) > 1e-4 || math.Abs(math.Abs(p.Components[1])-0.8) > 1e-4 {
		t.Errorf("first component %v, want ±(0.6, 0.8)", p.Components[:2])
	}
	if p.Variance[0] < 100*p.Variance[1] {
		t.Errorf("variances %v, want the first to dominate", p.Variance)
	}
	g, err := p.Apply(f)
	if err != nil {
		t.Fatal(err)
	}
	// Projections are centred: the mean of each coordinate is 0.
	for k := 0; k < 2; k++ {
		m := 0.0
		for i := 0; i < 2*n; i++ {
			m += g.X[2*i+k]
		}
		if math.Abs(m/float64(2*n)) > 1e-9 {
			t.Errorf("component %d has mean %v, want 0", k, m/float64(2*n))
		}
	}
	if _, err := FitPCA(f, []int{0}, 3); err == nil {
		t.Error("K > Dim: no error")
	}
	if _, err := FitPCA(f, []int{5}, 1); err == nil {
		t.Error("bad class: no error")
	}
	if _, err := p.Apply(classFeatures([]int{1}, 1, 3)); err == nil {
		t.Error("Apply to the wrong dimension: no error")
	}
}
