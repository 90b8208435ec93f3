// Package npy reads and writes NumPy .npy files, the format gdattn uses for
// checkpointed parameters, optimiser moments and exported arrays, so that
// anything gdattn saves can be opened with numpy.load and vice versa.
//
// Supported: format versions 1.0 and 2.0 (and 3.0, which differs from 2.0 only
// in the header's text encoding) for reading; Write produces version 1.0 (2.0
// only if the header would not fit a 1.0 header, which needs a rank in the
// thousands). Dtypes: little-endian float32 ('<f4'), float64 ('<f8') and int64
// ('<i8'); little-endian int32 ('<i4') can be read and is widened to int64.
// Arrays are C (row-major) order only: a header with fortran_order True is
// rejected. Any rank works, including 0-d scalars (shape ()) and empty arrays
// (a zero dimension).
//
// Shape conventions: [Array.Shape] lists the dimensions outermost first, as
// numpy's shape tuple does, and the data slice holds prod(Shape) elements in
// row-major order (1 element for a 0-d array).
//
// The header Write produces is byte-identical to numpy's np.save (numpy >=
// 1.23, which appends spare spaces for in-place growth of the first axis):
//
//	"\x93NUMPY" 0x01 0x00 <uint16 LE header length>
//	"{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }" + spaces + "\n"
//
// padded with spaces so that the data starts at a multiple of 64 bytes.
//
// Usage:
//
//	a := &npy.Array{Shape: []int{2, 3}, Dtype: npy.Float64, F64: []float64{1, 2, 3, 4, 5, 6}}
//	if err := npy.WriteFile("w.npy", a); err != nil { ... }
//	b, err := npy.ReadFile("w.npy") // b.Shape == [2 3], b.F64 == a.F64
//
// Errors wrap one of [ErrFormat], [ErrUnsupported], [ErrTruncated] or
// [ErrTooLarge] and name the file (or "reader" for [Read]).
//
// Untrusted files: [ReadLimit] and [ReadFileLimit] refuse a header whose shape
// has more elements than a limit (ErrTooLarge) before reading any data;
// [ReadFile] refuses a header that claims more bytes than the file holds
// (ErrTruncated) before allocating, and [Read] allocates as the data arrives,
// so a lying header costs at most about the bytes actually there.
package npy
