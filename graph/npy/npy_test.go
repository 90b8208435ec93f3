package npy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// randArray returns a seeded array of the given dtype and shape.
func randArray(rng *rand.Rand, dtype string, shape []int) *Array {
	a := &Array{Shape: shape, Dtype: dtype}
	n := a.Size()
	switch dtype {
	case Float32:
		a.F32 = make([]float32, n)
		for i := range a.F32 {
			a.F32[i] = float32(rng.NormFloat64())
		}
	case Float64:
		a.F64 = make([]float64, n)
		for i := range a.F64 {
			a.F64[i] = rng.NormFloat64()
		}
	case Int64:
		a.I64 = make([]int64, n)
		for i := range a.I64 {
			a.I64[i] = rng.Int64() - math.MaxInt64/2
		}
	}
	return a
}

// arrayOpts compares arrays bit-for-bit apart from NaN payloads and treats
// nil and empty slices alike.
var arrayOpts = cmp.Options{cmpopts.EquateNaNs(), cmpopts.EquateEmpty()}

func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	tests := []struct {
		name  string
		dtype string
		shape []int
	}{
		{"f64 scalar", Float64, []int{}},
		{"f32 scalar", Float32, nil},
		{"i64 scalar", Int64, []int{}},
		{"f64 empty", Float64, []int{0}},
		{"f32 empty 2d", Float32, []int{3, 0}},
		{"f64 vector", Float64, []int{5}},
		{"f32 matrix", Float32, []int{2, 3}},
		{"i64 matrix", Int64, []int{4, 7}},
		{"f64 rank4", Float64, []int{2, 3, 4, 5}},
		{"f32 chunked", Float32, []int{3, 4097}}, // crosses Write's 4096-element chunks
		{"f64 chunked", Float64, []int{10000}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := randArray(rng, tc.dtype, tc.shape)
			var buf bytes.Buffer
			if err := Write(&buf, a); err != nil {
				t.Fatalf("Write: %v", err)
			}
			if off := headerLen(t, buf.Bytes()); off%64 != 0 || buf.Bytes()[off-1] != '\n' {
				t.Errorf("data starts at %d (want a multiple of 64) after %q", off, buf.Bytes()[off-1])
			}
			b, err := Read(&buf)
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			if diff := cmp.Diff(a, b, arrayOpts); diff != "" {
				t.Errorf("round trip mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSpecialValues(t *testing.T) {
	f64 := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), math.SmallestNonzeroFloat64, math.MaxFloat64}
	f32 := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.NaN()), math.SmallestNonzeroFloat32, math.MaxFloat32}
	for _, a := range []*Array{
		{Shape: []int{len(f64)}, Dtype: Float64, F64: f64},
		{Shape: []int{len(f32)}, Dtype: Float32, F32: f32},
		{Shape: []int{3}, Dtype: Int64, I64: []int64{math.MinInt64, -1, math.MaxInt64}},
	} {
		t.Run(a.Dtype, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Write(&buf, a); err != nil {
				t.Fatal(err)
			}
			b, err := Read(&buf)
			if err != nil {
				t.Fatal(err)
			}
			// Compare bits so -0 and the NaN payload count too.
			for i := range a.F64 {
				if got, want := math.Float64bits(b.F64[i]), math.Float64bits(a.F64[i]); got != want {
					t.Errorf("F64[%d] bits: got %x, want %x", i, got, want)
				}
			}
			for i := range a.F32 {
				if got, want := math.Float32bits(b.F32[i]), math.Float32bits(a.F32[i]); got != want {
					t.Errorf("F32[%d] bits: got %x, want %x", i, got, want)
				}
			}
			if diff := cmp.Diff(a.I64, b.I64); diff != "" {
				t.Errorf("I64 (-want +got):\n%s", diff)
			}
		})
	}
}

// headerLen returns the offset of the data in an encoded file.
func headerLen(t *testing.T, b []byte) int {
	t.Helper()
	switch b[6] {
	case 1:
		return 10 + int(binary.LittleEndian.Uint16(b[8:]))
	case 2, 3:
		return 12 + int(binary.LittleEndian.Uint32(b[8:]))
	}
	t.Fatalf("unexpected version %d", b[6])
	return 0
}

// TestHeaderBytes pins the exact preamble against what numpy's np.save
// writes (numpy/lib/format.py, _write_array_header and _wrap_header):
// the dict repr with sorted keys, then (numpy >= 1.23) 21-len(str(shape[0]))
// growth spaces, then space padding and '\n' so that 10 + header length is a
// multiple of 64.
func TestHeaderBytes(t *testing.T) {
	tests := []struct {
		name string
		a    *Array
		want string
	}{
		{
			// 10 + 59 (dict) + 58 spaces + '\n' = 128; header length 118 = 0x76.
			name: "f8 (2, 3)",
			a:    &Array{Shape: []int{2, 3}, Dtype: Float64, F64: make([]float64, 6)},
			want: "\x93NUMPY\x01\x00\x76\x00" + "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }" + strings.Repeat(" ", 58) + "\n",
		},
		{
			// 0-d: no growth padding; 10 + 55 + 62 + 1 = 128.
			name: "f4 ()",
			a:    &Array{Dtype: Float32, F32: []float32{1}},
			want: "\x93NUMPY\x01\x00\x76\x00" + "{'descr': '<f4', 'fortran_order': False, 'shape': (), }" + strings.Repeat(" ", 62) + "\n",
		},
		{
			// 1-d tuples keep Python's trailing comma; 10 + 57 + 60 + 1 = 128.
			name: "i8 (3,)",
			a:    &Array{Shape: []int{3}, Dtype: Int64, I64: make([]int64, 3)},
			want: "\x93NUMPY\x01\x00\x76\x00" + "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }" + strings.Repeat(" ", 60) + "\n",
		},
		{
			// The dict is 116 bytes: without growth spaces the file would
			// start its data at 128, with them (20 for shape[0] = 0) at 192:
			// 10 + 116 + 65 spaces + '\n' = 192; header length 182 = 0xb6.
			name: "f8 long shape",
			a:    &Array{Shape: []int{0, 1000000000, 1000000000, 1000000000, 1000000000, 1000000000}, Dtype: Float64},
			want: "\x93NUMPY\x01\x00\xb6\x00" + "{'descr': '<f8', 'fortran_order': False, 'shape': (0, 1000000000, 1000000000, 1000000000, 1000000000, 1000000000), }" + strings.Repeat(" ", 65) + "\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Write(&buf, tc.a); err != nil {
				t.Fatal(err)
			}
			got := buf.String()[:len(tc.want)]
			if got != tc.want {
				t.Errorf("header:\n got %q\nwant %q", got, tc.want)
			}
			if n := tc.a.Size() * 8; tc.a.Dtype != Float32 && buf.Len() != len(tc.want)+n {
				t.Errorf("file length %d, want %d", buf.Len(), len(tc.want)+n)
			}
		})
	}
}

// rawFile assembles a .npy file by hand: version, header dict (padded to 64
// like numpy) and data bytes.
func rawFile(major byte, dict string, data []byte) []byte {
	pre := 10
	if major != 1 {
		pre = 12
	}
	hlen := len(dict) + 1
	pad := 64 - (pre+hlen)%64
	var b []byte
	b = append(b, magic...)
	b = append(b, major, 0)
	if major == 1 {
		b = binary.LittleEndian.AppendUint16(b, uint16(hlen+pad))
	} else {
		b = binary.LittleEndian.AppendUint32(b, uint32(hlen+pad))
	}
	b = append(b, dict...)
	b = append(b, bytes.Repeat([]byte{' '}, pad)...)
	b = append(b, '\n')
	return append(b, data...)
}

func le64(vs ...float64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}

func TestReadVariants(t *testing.T) {
	var i32 []byte
	for _, v := range []int32{-2, 0, 7, math.MaxInt32} {
		i32 = binary.LittleEndian.AppendUint32(i32, uint32(v))
	}
	tests := []struct {
		name string
		file []byte
		want *Array
	}{
		{
			name: "version 2.0",
			file: rawFile(2, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", le64(1.5, -2)),
			want: &Array{Shape: []int{2}, Dtype: Float64, F64: []float64{1.5, -2}},
		},
		{
			name: "version 3.0",
			file: rawFile(3, "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", le64(3)),
			want: &Array{Shape: []int{1}, Dtype: Float64, F64: []float64{3}},
		},
		{
			name: "int32 widened",
			file: rawFile(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }", i32),
			want: &Array{Shape: []int{2, 2}, Dtype: Int64, I64: []int64{-2, 0, 7, math.MaxInt32}},
		},
		{
			name: "keys reordered, double quotes, python2 longs, no trailing comma",
			file: rawFile(1, `{"shape": (1L, 2L), "fortran_order": False, "descr": "<f8"}`, le64(4, 5)),
			want: &Array{Shape: []int{1, 2}, Dtype: Float64, F64: []float64{4, 5}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Read(bytes.NewReader(tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, arrayOpts); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadErrors(t *testing.T) {
	good := rawFile(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", le64(1, 2, 3, 4, 5, 6))
	dict := func(d string) []byte { return rawFile(1, d, le64(1)) }
	tests := []struct {
		name    string
		file    []byte
		wantErr error
		wantMsg string
	}{
		{"empty", nil, ErrFormat, "npy: reader: invalid npy data: bad magic string"},
		{"bad magic", append([]byte("PK\x03\x04NUMPY"), good[10:]...), ErrFormat, "bad magic string"},
		{"short", good[:7], ErrTruncated, "ends inside the format version"},
		{"version 4.0", append(append([]byte(magic), 4, 0), good[8:]...), ErrUnsupported, "unsupported format version 4.0"},
		{"version 1.1", append(append([]byte(magic), 1, 1), good[8:]...), ErrUnsupported, "format version 1.1"},
		{"no header length", good[:9], ErrTruncated, "want 2 bytes of header length, got 1"},
		{"truncated header", good[:40], ErrTruncated, "want 118 bytes of header, got 30"},
		{"truncated data", good[:128+20], ErrTruncated, "npy: reader: truncated: want 48 bytes of data, got 20"},
		{"no data", good[:128], ErrTruncated, "want 48 bytes of data, got 0"},
		{"trailing garbage", append(append([]byte{}, good...), 'x'), ErrFormat, "trailing bytes after 48 bytes of data"},
		{"big endian", dict("{'descr': '>f8', 'fortran_order': False, 'shape': (1,), }"), ErrUnsupported, `unsupported dtype ">f8"`},
		{"complex", dict("{'descr': '<c16', 'fortran_order': False, 'shape': (1,), }"), ErrUnsupported, `dtype "<c16"`},
		{"fortran", dict("{'descr': '<f8', 'fortran_order': True, 'shape': (1,), }"), ErrUnsupported, "fortran_order True"},
		{"missing key", dict("{'descr': '<f8', 'shape': (1,), }"), ErrFormat, `missing key "fortran_order"`},
		{"extra key", dict("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), 'x': 1}"), ErrFormat, `unexpected key "x"`},
		{"duplicate key", dict("{'descr': '<f8', 'descr': '<f8', 'fortran_order': False, 'shape': (1,)}"), ErrFormat, `duplicate key "descr"`},
		{"not a dict", dict("descr"), ErrFormat, "want '{'"},
		{"bad bool", dict("{'descr': '<f8', 'fortran_order': false, 'shape': (1,), }"), ErrFormat, "want True or False"},
		{"negative dim", dict("{'descr': '<f8', 'fortran_order': False, 'shape': (-1,), }"), ErrFormat, "non-negative integer"},
		{"unclosed tuple", dict("{'descr': '<f8', 'fortran_order': False, 'shape': (1 2), }"), ErrFormat, "want ',' or ')'"},
		{"text after dict", dict("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), } x"), ErrFormat, "unexpected text after the dict"},
		{"huge shape", dict("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }"), ErrFormat, "too large"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(tc.file))
			if err == nil {
				t.Fatal("got nil error")
			}
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("error %q does not wrap %v", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("got error %q, want it to contain %q", err, tc.wantMsg)
			}
		})
	}
}

func TestWriteInvalid(t *testing.T) {
	tests := []struct {
		name    string
		a       *Array
		wantMsg string
	}{
		{"nil", nil, "array is nil"},
		{"unknown dtype", &Array{Shape: []int{1}, Dtype: "int8"}, `unsupported dtype "int8"`},
		{"empty dtype", &Array{Shape: []int{1}, F64: []float64{1}}, `dtype ""`},
		{"length mismatch", &Array{Shape: []int{2, 2}, Dtype: Float64, F64: []float64{1, 2, 3}}, "shape [2 2] needs 4 elements, the float64 data has 3"},
		{"wrong slice", &Array{Shape: []int{1}, Dtype: Float32, F64: []float64{1}}, "the float32 data has 0"},
		{"negative dim", &Array{Shape: []int{-1}, Dtype: Float64}, "invalid shape [-1]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := Write(&buf, tc.a)
			if err == nil || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("got error %v, want it to contain %q", err, tc.wantMsg)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %d bytes for an invalid array", buf.Len())
			}
		})
	}
}

// failWriter fails after n bytes.
type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		k := w.n
		w.n = 0
		return k, errors.New("disk full")
	}
	w.n -= len(p)
	return len(p), nil
}

func TestWriteError(t *testing.T) {
	a := randArray(rand.New(rand.NewPCG(1, 2)), Float64, []int{100000})
	for _, n := range []int{0, 100, 200000} {
		if err := Write(&failWriter{n: n}, a); err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Errorf("fail after %d bytes: got %v, want the writer's error", n, err)
		}
	}
}

func TestFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "w.npy")
	rng := rand.New(rand.NewPCG(1, 3))
	for i, a := range []*Array{randArray(rng, Float32, []int{3, 4}), randArray(rng, Float64, []int{7})} {
		if err := WriteFile(path, a); err != nil {
			t.Fatalf("WriteFile %d: %v", i, err)
		}
		b, err := ReadFile(path)
		if err != nil {
			t.Fatalf("ReadFile %d: %v", i, err)
		}
		if diff := cmp.Diff(a, b, arrayOpts); diff != "" {
			t.Errorf("file %d (-want +got):\n%s", i, diff)
		}
	}
	// An invalid array leaves the previous file alone, and no temporary
	// files remain.
	if err := WriteFile(path, &Array{Dtype: "bad"}); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("WriteFile(invalid): got %v, want an error naming %s", err, path)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "w.npy" {
		t.Errorf("directory holds %v, want only w.npy", entries)
	}
	if b, err := ReadFile(path); err != nil || b.Dtype != Float64 {
		t.Errorf("after failed write: %v, %v", b, err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing.npy")); err == nil || !strings.Contains(err.Error(), "missing.npy") {
		t.Errorf("ReadFile(missing): got %v, want an error naming the file", err)
	}
	// File errors name the file.
	bad := filepath.Join(dir, "bad.npy")
	if err := os.WriteFile(bad, []byte("not numpy"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(bad); err == nil || !strings.Contains(err.Error(), "npy: "+bad+": invalid npy data: bad magic") {
		t.Errorf("ReadFile(bad): got %v", err)
	}
}

func TestFloat64s(t *testing.T) {
	tests := []struct {
		name string
		a    *Array
		want []float64
	}{
		{"f32", &Array{Shape: []int{2}, Dtype: Float32, F32: []float32{0.5, -1}}, []float64{0.5, -1}},
		{"f64", &Array{Shape: []int{1}, Dtype: Float64, F64: []float64{3}}, []float64{3}},
		{"i64", &Array{Shape: []int{2}, Dtype: Int64, I64: []int64{-4, 9}}, []float64{-4, 9}},
		{"nil", nil, nil},
		{"unknown", &Array{Dtype: "x"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.a.Float64s()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	// The result is a copy.
	a := &Array{Shape: []int{1}, Dtype: Float64, F64: []float64{1}}
	a.Float64s()[0] = 2
	if a.F64[0] != 1 {
		t.Error("Float64s aliases the array's data")
	}
}

// TestNumpy round-trips through numpy when python3 with numpy is installed.
func TestNumpy(t *testing.T) {
	if err := exec.Command("python3", "-c", "import numpy").Run(); err != nil {
		t.Skip("python3 with numpy not available")
	}
	dir := t.TempDir()
	in := &Array{Shape: []int{2, 3}, Dtype: Float32, F32: []float32{1, 2, 3, 4, 5, 6}}
	if err := WriteFile(filepath.Join(dir, "in.npy"), in); err != nil {
		t.Fatal(err)
	}
	script := `
import numpy as np, sys, io
d = sys.argv[1]
a = np.load(d + "/in.npy")
assert a.dtype == np.float32 and a.shape == (2, 3), (a.dtype, a.shape)
np.save(d + "/out.npy", (a * 2).astype(np.float64))
np.save(d + "/s.npy", np.int64(7))
buf = io.BytesIO(); np.save(buf, a)
open(d + "/same.npy", "wb").write(buf.getvalue())
`
	if out, err := exec.Command("python3", "-c", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	out, err := ReadFile(filepath.Join(dir, "out.npy"))
	if err != nil {
		t.Fatal(err)
	}
	want := &Array{Shape: []int{2, 3}, Dtype: Float64, F64: []float64{2, 4, 6, 8, 10, 12}}
	if diff := cmp.Diff(want, out, arrayOpts); diff != "" {
		t.Errorf("numpy output (-want +got):\n%s", diff)
	}
	s, err := ReadFile(filepath.Join(dir, "s.npy"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&Array{Shape: []int{}, Dtype: Int64, I64: []int64{7}}, s, arrayOpts); diff != "" {
		t.Errorf("numpy scalar (-want +got):\n%s", diff)
	}
	ours, _ := os.ReadFile(filepath.Join(dir, "in.npy"))
	theirs, _ := os.ReadFile(filepath.Join(dir, "same.npy"))
	if !bytes.Equal(ours, theirs) {
		t.Errorf("np.save bytes differ from ours:\n got %q\nwant %q", ours, theirs)
	}
}
