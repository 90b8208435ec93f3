package layers

import (
	"math"
	"testing"
)

// FuzzMatrix: NewMatrix, At and Set never panic, whatever the sizes and
// indices (of a made matrix or of a hand-built one whose Data is too short):
// NewMatrix fails exactly for a negative size or too many elements, Set
// succeeds exactly in range and At then reads back the value, and out of
// range At is NaN.
func FuzzMatrix(f *testing.F) {
	f.Add(2, 3, 1, 2, 0)
	f.Add(-1, 3, 0, 0, 0)
	f.Add(4, 4, 15, 0, 3)
	f.Add(1<<40, 1<<40, 0, 0, 0)
	f.Fuzz(func(t *testing.T, rows, cols, r, c, short int) {
		n := float64(rows) * float64(cols)
		bad := rows < 0 || cols < 0 || n > float64(1<<31)
		if !bad && n > 1<<20 {
			return // a legal but large matrix: not worth allocating here
		}
		m, err := NewMatrix(rows, cols)
		if (err != nil) != bad {
			t.Fatalf("NewMatrix(%d, %d): %v", rows, cols, err)
		}
		if err != nil {
			return
		}
		if short > 0 && len(m.Data) > 0 {
			m.Data = m.Data[:len(m.Data)-min(short, len(m.Data))]
		}
		in := r >= 0 && c >= 0 && r < rows && c < cols && len(m.Data) == rows*cols
		if err := m.Set(r, c, 7); (err == nil) != in {
			t.Fatalf("Set(%d, %d) of %dx%d with %d values: %v", r, c, rows, cols, len(m.Data), err)
		}
		if v := m.At(r, c); (in && v != 7) || (!in && !math.IsNaN(v)) {
			t.Fatalf("At(%d, %d) of %dx%d with %d values = %v", r, c, rows, cols, len(m.Data), v)
		}
	})
}
