package npy

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// sameArray reports whether a and b have the same shape, dtype and data,
// bit for bit (NaN payloads included).
func sameArray(a, b *Array) bool {
	if a.Dtype != b.Dtype || !reflect.DeepEqual(append([]int{}, a.Shape...), append([]int{}, b.Shape...)) {
		return false
	}
	if len(a.F32) != len(b.F32) || len(a.F64) != len(b.F64) || len(a.I64) != len(b.I64) {
		return false
	}
	for i := range a.F32 {
		if math.Float32bits(a.F32[i]) != math.Float32bits(b.F32[i]) {
			return false
		}
	}
	for i := range a.F64 {
		if math.Float64bits(a.F64[i]) != math.Float64bits(b.F64[i]) {
			return false
		}
	}
	for i := range a.I64 {
		if a.I64[i] != b.I64[i] {
			return false
		}
	}
	return true
}

// fuzzDir returns a folder for the files a fuzz target writes on every
// input: in /dev/shm when there is one (fsync and writes cost nothing in
// memory, which multiplies the executions per second), else f.TempDir().
func fuzzDir(f *testing.F) string {
	if d, err := os.MkdirTemp("/dev/shm", "gdattn-fuzz-"); err == nil {
		f.Cleanup(func() { os.RemoveAll(d) })
		return d
	}
	return f.TempDir()
}

// FuzzRead reads arbitrary bytes as .npy: either an error wrapping one of
// the package's sentinels, or a valid array that Write and Read return
// unchanged (and whose written form is a fixed point). ReadFile on the same
// bytes agrees with Read, and ReadLimit refuses the array one element short.
func FuzzRead(f *testing.F) {
	for _, a := range []*Array{
		{Shape: []int{2, 3}, Dtype: Float64, F64: []float64{1, 2, 3, math.NaN(), math.Inf(-1), math.Copysign(0, -1)}},
		{Shape: []int{4}, Dtype: Float32, F32: []float32{1, -2, 0.5, float32(math.Inf(1))}},
		{Shape: []int{}, Dtype: Int64, I64: []int64{-7}},
		{Shape: []int{0, 5}, Dtype: Float64, F64: []float64{}},
		{Shape: []int{1, 1, 1, 2}, Dtype: Int64, I64: []int64{math.MinInt64, math.MaxInt64}},
	} {
		var b bytes.Buffer
		if err := Write(&b, a); err != nil {
			f.Fatal(err)
		}
		f.Add(b.Bytes())
		f.Add(b.Bytes()[:b.Len()-3]) // truncated data
	}
	f.Add(rawFile(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", []byte{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}))
	f.Add(rawFile(2, "{'shape': (1,), 'fortran_order': False, 'descr': '<f8'}", le64(3)))
	f.Add(rawFile(3, "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (1L,), }", []byte{0, 0, 128, 63}))
	f.Add(rawFile(1, "{'descr': '<f8', 'fortran_order': True, 'shape': (1,), }", le64(1)))
	f.Add(rawFile(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", nil))
	f.Add(rawFile(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999,), }", nil))
	f.Add([]byte("\x93NUMPY\x02\x00\xff\xff\xff\xff{"))
	f.Add([]byte("not numpy at all"))
	dir := fuzzDir(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		a, err := Read(bytes.NewReader(in))
		path := filepath.Join(dir, "in.npy")
		if werr := os.WriteFile(path, in, 0o644); werr != nil {
			t.Fatal(werr)
		}
		fa, ferr := ReadFile(path)
		if (err == nil) != (ferr == nil) {
			t.Fatalf("Read error %v, ReadFile error %v", err, ferr)
		}
		if err != nil {
			if a != nil || fa != nil {
				t.Fatal("an array and an error")
			}
			if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrUnsupported) && !errors.Is(err, ErrTruncated) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
			return
		}
		if err := a.Validate(); err != nil {
			t.Fatalf("Read returned an invalid array: %v", err)
		}
		if !sameArray(a, fa) {
			t.Fatalf("Read %+v, ReadFile %+v", a, fa)
		}
		var out bytes.Buffer
		if err := Write(&out, a); err != nil {
			t.Fatalf("Write of a read array: %v", err)
		}
		b, err := Read(bytes.NewReader(out.Bytes()))
		if err != nil {
			t.Fatalf("reading back: %v", err)
		}
		if !sameArray(a, b) {
			t.Fatalf("round trip: %+v became %+v", a, b)
		}
		var again bytes.Buffer
		if err := Write(&again, b); err != nil || !bytes.Equal(again.Bytes(), out.Bytes()) {
			t.Fatalf("writing the round trip gave other bytes (%v)", err)
		}
		if n := a.Size(); n > 0 {
			if _, err := ReadLimit(bytes.NewReader(in), n-1); !errors.Is(err, ErrTooLarge) {
				t.Fatalf("ReadLimit(%d) of %d elements: %v, want ErrTooLarge", n-1, n, err)
			}
		}
		if c, err := ReadLimit(bytes.NewReader(in), a.Size()); err != nil || !sameArray(a, c) {
			t.Fatalf("ReadLimit(%d): %v", a.Size(), err)
		}
	})
}
