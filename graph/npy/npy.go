package npy

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gdattn/gdattn/internal/infile"
)

// Dtype names used in [Array.Dtype].
const (
	Float32 = "float32" // '<f4'
	Float64 = "float64" // '<f8'
	Int64   = "int64"   // '<i8' ('<i4' files are read into this dtype too)
)

// Sentinel errors, wrapped by every error Read, ReadFile, Write and WriteFile
// return for bad input; test them with errors.Is.
var (
	// ErrFormat reports data that is not a well-formed .npy file: bad magic
	// string, a header that does not parse, or bytes after the array data.
	ErrFormat = errors.New("invalid npy data")
	// ErrUnsupported reports a well-formed file this package does not handle:
	// an unknown format version, a dtype other than '<f4', '<f8', '<i8' or
	// '<i4', or Fortran order.
	ErrUnsupported = errors.New("unsupported")
	// ErrTruncated reports a file that ends before its header or data do.
	ErrTruncated = errors.New("truncated")
	// ErrTooLarge reports a header whose shape has more elements than the
	// caller's limit (ReadLimit, ReadFileLimit); it is returned before any of
	// the data is read.
	ErrTooLarge = errors.New("array too large")
)

// magic is the 6-byte prefix of every .npy file.
const magic = "\x93NUMPY"

// align is numpy's ARRAY_ALIGN: data starts at a multiple of it.
const align = 64

// growthDigits is numpy's GROWTH_AXIS_MAX_DIGITS: np.save pads the header
// dict with 21 - len(repr(shape[0])) spaces so the first axis can grow in
// place.
const growthDigits = 21

// maxElems bounds the element count of a header, so the byte count of the
// data (at most 8 bytes per element) cannot overflow an int.
const maxElems = math.MaxInt / 8

// Array is an n-dimensional array in row-major (C) order. Exactly one of F32,
// F64 and I64 holds the data, the one Dtype names; it has prod(Shape)
// elements (1 for a 0-d array, whose Shape is empty).
type Array struct {
	Shape []int     // dimensions, outermost first; empty for a 0-d scalar
	Dtype string    // Float32, Float64 or Int64
	F32   []float32 // data when Dtype is Float32
	F64   []float64 // data when Dtype is Float64
	I64   []int64   // data when Dtype is Int64
}

// Size returns the number of elements the shape describes: the product of
// the dimensions, 1 for a 0-d array. It returns -1 if a dimension is
// negative or the product overflows.
func (a *Array) Size() int {
	n := 1
	for _, d := range a.Shape {
		if d < 0 {
			return -1
		}
		if d != 0 && n > maxElems/d {
			return -1
		}
		n *= d
	}
	return n
}

// Validate checks that Dtype is known, the shape is valid and the data slice
// for Dtype has exactly Size() elements.
func (a *Array) Validate() error {
	if a == nil {
		return fmt.Errorf("npy: array is nil")
	}
	n := a.Size()
	if n < 0 {
		return fmt.Errorf("npy: invalid shape %v", a.Shape)
	}
	var got int
	switch a.Dtype {
	case Float32:
		got = len(a.F32)
	case Float64:
		got = len(a.F64)
	case Int64:
		got = len(a.I64)
	default:
		return fmt.Errorf("npy: %w dtype %q (want %q, %q or %q)", ErrUnsupported, a.Dtype, Float32, Float64, Int64)
	}
	if got != n {
		return fmt.Errorf("npy: shape %v needs %d elements, the %s data has %d", a.Shape, n, a.Dtype, got)
	}
	return nil
}

// Float64s returns a copy of the data converted to float64 (int64 values
// beyond 2^53 lose precision). It returns nil for a nil Array or an unknown
// Dtype.
func (a *Array) Float64s() []float64 {
	if a == nil {
		return nil
	}
	switch a.Dtype {
	case Float32:
		out := make([]float64, len(a.F32))
		for i, v := range a.F32 {
			out[i] = float64(v)
		}
		return out
	case Float64:
		out := make([]float64, len(a.F64))
		copy(out, a.F64)
		return out
	case Int64:
		out := make([]float64, len(a.I64))
		for i, v := range a.I64 {
			out[i] = float64(v)
		}
		return out
	}
	return nil
}

// descr returns numpy's dtype descriptor and the item size for a Dtype.
func descr(dtype string) (string, int) {
	switch dtype {
	case Float32:
		return "<f4", 4
	case Float64:
		return "<f8", 8
	case Int64:
		return "<i8", 8
	}
	return "", 0
}

// shapeRepr formats a shape as Python's repr of a tuple: (), (5,), (2, 3).
func shapeRepr(shape []int) string {
	var b strings.Builder
	b.WriteByte('(')
	for i, d := range shape {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(d))
	}
	if len(shape) == 1 {
		b.WriteByte(',')
	}
	b.WriteByte(')')
	return b.String()
}

// header returns the complete preamble (magic, version, length, padded
// header dict) for a, exactly as numpy's np.save writes it.
func header(a *Array) []byte {
	d, _ := descr(a.Dtype)
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", d, shapeRepr(a.Shape))
	if len(a.Shape) > 0 {
		dict += strings.Repeat(" ", max(0, growthDigits-len(strconv.Itoa(a.Shape[0]))))
	}
	hlen := len(dict) + 1 // + '\n'
	pre := len(magic) + 2 + 2
	major := byte(1)
	pad := align - (pre+hlen)%align
	if hlen+pad > math.MaxUint16 {
		major, pre = 2, len(magic)+2+4
		pad = align - (pre+hlen)%align
	}
	out := make([]byte, 0, pre+hlen+pad)
	out = append(out, magic...)
	out = append(out, major, 0)
	if major == 1 {
		out = binary.LittleEndian.AppendUint16(out, uint16(hlen+pad))
	} else {
		out = binary.LittleEndian.AppendUint32(out, uint32(hlen+pad))
	}
	out = append(out, dict...)
	out = append(out, bytes.Repeat([]byte{' '}, pad)...)
	return append(out, '\n')
}

// Write writes a to w in .npy format (version 1.0, C order, little endian).
// It validates a first and writes nothing if a is invalid.
func Write(w io.Writer, a *Array) error {
	if err := a.Validate(); err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	if _, err := bw.Write(header(a)); err != nil {
		return fmt.Errorf("npy: write: %w", err)
	}
	const chunk = 4096
	buf := make([]byte, 0, chunk*8)
	flush := func() error {
		_, err := bw.Write(buf)
		buf = buf[:0]
		return err
	}
	var err error
	switch a.Dtype {
	case Float32:
		for i, v := range a.F32 {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
			if (i+1)%chunk == 0 {
				if err = flush(); err != nil {
					break
				}
			}
		}
	case Float64:
		for i, v := range a.F64 {
			buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(v))
			if (i+1)%chunk == 0 {
				if err = flush(); err != nil {
					break
				}
			}
		}
	case Int64:
		for i, v := range a.I64 {
			buf = binary.LittleEndian.AppendUint64(buf, uint64(v))
			if (i+1)%chunk == 0 {
				if err = flush(); err != nil {
					break
				}
			}
		}
	}
	if err == nil {
		err = flush()
	}
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return fmt.Errorf("npy: write: %w", err)
	}
	return nil
}

// WriteFile writes a to path atomically: it writes a temporary file in the
// same directory, fsyncs it, renames it over path and fsyncs the directory,
// so path holds either its old content or all of the new one, never a part.
// The file gets mode 0644.
func WriteFile(path string, a *Array) (err error) {
	if err := a.Validate(); err != nil {
		return fmt.Errorf("%w (writing %s)", err, path)
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("npy: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = Write(f, a); err != nil {
		return fmt.Errorf("%w (writing %s)", err, path)
	}
	if err = f.Chmod(0o644); err != nil {
		return fmt.Errorf("npy: %w", err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("npy: sync %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("npy: close %s: %w", path, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("npy: %w", err)
	}
	if err = syncDir(dir); err != nil {
		return fmt.Errorf("npy: sync directory of %s: %w", path, err)
	}
	return nil
}

// syncDir fsyncs a directory so a rename inside it is durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Read reads one .npy array from r, which must hold exactly one array: bytes
// after the data are an error (Read reads one byte past the data to check).
// Errors name the source "reader". Memory grows with the bytes actually read,
// so a header that claims more data than r holds costs no more than the data
// r does hold.
func Read(r io.Reader) (*Array, error) {
	return read(r, "reader", maxElems, -1)
}

// ReadLimit is Read, but a header whose shape has more than maxElems elements
// is an error wrapping ErrTooLarge, returned before any data is read.
func ReadLimit(r io.Reader, maxElems int) (*Array, error) {
	return read(r, "reader", maxElems, -1)
}

// ReadFile reads the .npy file at path. Errors name the file. A header that
// claims more bytes than the file holds is refused (ErrTruncated) before its
// data is read or allocated.
func ReadFile(path string) (*Array, error) {
	return ReadFileLimit(path, maxElems)
}

// ReadFileLimit is ReadFile, but a header whose shape has more than maxElems
// elements is an error wrapping ErrTooLarge, returned before any data is read.
func ReadFileLimit(path string, maxElems int) (*Array, error) {
	// Only a regular file is read (never a device or a FIFO, which could
	// stream forever or block), of at most the bytes maxElems elements of
	// 8 bytes and a header of 1 MiB take.
	limit := int64(1<<20) + 8*int64(max(0, min(maxElems, math.MaxInt64/16)))
	f, size, err := infile.Open(path, limit)
	if err != nil {
		return nil, fmt.Errorf("npy: %w", err)
	}
	defer f.Close()
	return read(bufio.NewReaderSize(f, 64<<10), path, maxElems, size)
}

// read reads one array from r, named name in errors, refusing shapes of more
// than limit elements. fileSize is the number of bytes r holds, or -1 if
// unknown; when known, a header that claims more is refused before reading.
func read(r io.Reader, name string, limit int, fileSize int64) (*Array, error) {
	var pre [8]byte
	n, err := io.ReadFull(r, pre[:])
	if n < len(magic) || string(pre[:len(magic)]) != magic {
		return nil, fmt.Errorf("npy: %s: %w: bad magic string %q (want %q)", name, ErrFormat, pre[:n], magic)
	}
	if err != nil {
		return nil, fmt.Errorf("npy: %s: %w: file ends inside the format version (%d bytes)", name, ErrTruncated, n)
	}
	major, minor := pre[6], pre[7]
	var lenBytes int
	switch {
	case major == 1 && minor == 0:
		lenBytes = 2
	case (major == 2 || major == 3) && minor == 0:
		lenBytes = 4
	default:
		return nil, fmt.Errorf("npy: %s: %w format version %d.%d (want 1.0, 2.0 or 3.0)", name, ErrUnsupported, major, minor)
	}
	var lb [4]byte
	if n, err := io.ReadFull(r, lb[:lenBytes]); err != nil {
		return nil, fmt.Errorf("npy: %s: %w: want %d bytes of header length, got %d", name, ErrTruncated, lenBytes, n)
	}
	var hlen int64
	if lenBytes == 2 {
		hlen = int64(binary.LittleEndian.Uint16(lb[:2]))
	} else {
		hlen = int64(binary.LittleEndian.Uint32(lb[:4]))
	}
	preLen := int64(len(pre) + lenBytes)
	if fileSize >= 0 && hlen > fileSize-preLen {
		return nil, fmt.Errorf("npy: %s: %w: want %d bytes of header, got %d", name, ErrTruncated, hlen, max(0, fileSize-preLen))
	}
	hb, err := io.ReadAll(io.LimitReader(r, hlen))
	if err != nil {
		return nil, fmt.Errorf("npy: %s: read header: %w", name, err)
	}
	if int64(len(hb)) < hlen {
		return nil, fmt.Errorf("npy: %s: %w: want %d bytes of header, got %d", name, ErrTruncated, hlen, len(hb))
	}
	h, err := parseHeader(string(hb))
	if err != nil {
		return nil, fmt.Errorf("npy: %s: %w: header %s: %v", name, ErrFormat, quoteShort(string(hb)), err)
	}
	if h.fortran {
		return nil, fmt.Errorf("npy: %s: %w: fortran_order True (only C order is supported)", name, ErrUnsupported)
	}
	a := &Array{Shape: h.shape}
	size := a.Size()
	if size < 0 {
		return nil, fmt.Errorf("npy: %s: %w: shape %v is too large", name, ErrFormat, h.shape)
	}
	if size > limit {
		return nil, fmt.Errorf("npy: %s: %w: shape %v has %d elements, more than the limit of %d", name, ErrTooLarge, h.shape, size, limit)
	}
	var item int
	switch h.descr {
	case "<f4":
		a.Dtype, item = Float32, 4
	case "<f8":
		a.Dtype, item = Float64, 8
	case "<i8":
		a.Dtype, item = Int64, 8
	case "<i4":
		a.Dtype, item = Int64, 4
	default:
		return nil, fmt.Errorf("npy: %s: %w dtype %q (want '<f4', '<f8', '<i8' or '<i4')", name, ErrUnsupported, h.descr)
	}
	want := int64(size) * int64(item)
	if fileSize >= 0 {
		if left := fileSize - preLen - hlen; want > left {
			return nil, fmt.Errorf("npy: %s: %w: want %d bytes of data, got %d", name, ErrTruncated, want, left)
		}
	}
	if err := readData(r, a, h.descr, size, item, fileSize >= 0); err != nil {
		var got truncatedAt
		if errors.As(err, &got) {
			return nil, fmt.Errorf("npy: %s: %w: want %d bytes of data, got %d", name, ErrTruncated, want, int64(got))
		}
		return nil, fmt.Errorf("npy: %s: read data: %w", name, err)
	}
	var one [1]byte
	if k, _ := io.ReadFull(r, one[:]); k > 0 {
		return nil, fmt.Errorf("npy: %s: %w: trailing bytes after %d bytes of data", name, ErrFormat, want)
	}
	return a, nil
}

// truncatedAt is the error readData returns when r ends after that many
// bytes of data.
type truncatedAt int64

func (t truncatedAt) Error() string { return fmt.Sprintf("data ends after %d bytes", int64(t)) }

// readData decodes size elements of item bytes (dtype descr) from r into the
// data slice of a, in chunks: memory grows with the bytes actually read, so a
// header that claims more data than r holds cannot make it allocate more than
// about twice what r holds. sized says the bytes are known to be there
// (the file size was checked), so the slice is allocated at once.
func readData(r io.Reader, a *Array, descr string, size, item int, sized bool) error {
	const chunk = 64 << 10 // bytes; a multiple of every item size
	capacity := size
	if !sized {
		capacity = min(size, chunk/item)
	}
	switch descr {
	case "<f4":
		a.F32 = make([]float32, 0, capacity)
	case "<f8":
		a.F64 = make([]float64, 0, capacity)
	default: // "<i8", "<i4"
		a.I64 = make([]int64, 0, capacity)
	}
	buf := make([]byte, min(chunk, size*item))
	le := binary.LittleEndian
	var got int64
	for left := size * item; left > 0; {
		b := buf[:min(len(buf), left)]
		k, err := io.ReadFull(r, b)
		got += int64(k)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return truncatedAt(got)
		}
		if err != nil {
			return err
		}
		left -= k
		switch descr {
		case "<f4":
			for i := 0; i < k; i += 4 {
				a.F32 = append(a.F32, math.Float32frombits(le.Uint32(b[i:])))
			}
		case "<f8":
			for i := 0; i < k; i += 8 {
				a.F64 = append(a.F64, math.Float64frombits(le.Uint64(b[i:])))
			}
		case "<i8":
			for i := 0; i < k; i += 8 {
				a.I64 = append(a.I64, int64(le.Uint64(b[i:])))
			}
		case "<i4":
			for i := 0; i < k; i += 4 {
				a.I64 = append(a.I64, int64(int32(le.Uint32(b[i:]))))
			}
		}
	}
	return nil
}

// quoteShort quotes s for an error message, eliding the middle of long
// strings.
func quoteShort(s string) string {
	const limit = 160
	if len(s) > limit {
		s = s[:limit/2] + "..." + s[len(s)-limit/2:]
	}
	return strconv.Quote(s)
}

// hdr is the content of a .npy header dict.
type hdr struct {
	descr   string
	fortran bool
	shape   []int
}

// parseHeader parses the Python dict literal of a .npy header, e.g.
// "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", followed by
// optional whitespace. Keys may come in any order; all three are required
// and no others are allowed, as in numpy.
func parseHeader(s string) (hdr, error) {
	var h hdr
	p := &parser{s: s}
	p.space()
	if err := p.expect('{'); err != nil {
		return h, err
	}
	seen := map[string]bool{}
	for {
		p.space()
		if p.peek() == '}' {
			p.i++
			break
		}
		key, err := p.str()
		if err != nil {
			return h, err
		}
		if seen[key] {
			return h, fmt.Errorf("duplicate key %q", key)
		}
		seen[key] = true
		p.space()
		if err := p.expect(':'); err != nil {
			return h, err
		}
		p.space()
		switch key {
		case "descr":
			h.descr, err = p.str()
		case "fortran_order":
			h.fortran, err = p.boolean()
		case "shape":
			h.shape, err = p.tuple()
		default:
			err = fmt.Errorf("unexpected key %q", key)
		}
		if err != nil {
			return h, err
		}
		p.space()
		switch p.peek() {
		case ',':
			p.i++
			continue
		case '}':
			p.i++
		default:
			return h, p.errorf("want ',' or '}'")
		}
		break
	}
	p.space()
	if p.i != len(p.s) {
		return h, p.errorf("unexpected text after the dict")
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return h, fmt.Errorf("missing key %q", k)
		}
	}
	return h, nil
}

// parser is a cursor over a header string.
type parser struct {
	s string
	i int
}

func (p *parser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *parser) errorf(format string, args ...any) error {
	if p.i >= len(p.s) {
		return fmt.Errorf(format+" at end of header", args...)
	}
	return fmt.Errorf(format+" at offset %d, found %q", append(args, p.i, p.s[p.i])...)
}

func (p *parser) space() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *parser) expect(c byte) error {
	if p.peek() != c {
		return p.errorf("want %q", c)
	}
	p.i++
	return nil
}

// str parses a Python string literal without escapes: '...' or "...".
func (p *parser) str() (string, error) {
	q := p.peek()
	if q != '\'' && q != '"' {
		return "", p.errorf("want a quoted string")
	}
	end := strings.IndexByte(p.s[p.i+1:], q)
	if end < 0 {
		return "", p.errorf("unterminated string")
	}
	v := p.s[p.i+1 : p.i+1+end]
	if strings.IndexByte(v, '\\') >= 0 {
		return "", p.errorf("escapes in strings are not supported")
	}
	p.i += end + 2
	return v, nil
}

func (p *parser) boolean() (bool, error) {
	switch {
	case strings.HasPrefix(p.s[p.i:], "True"):
		p.i += 4
		return true, nil
	case strings.HasPrefix(p.s[p.i:], "False"):
		p.i += 5
		return false, nil
	}
	return false, p.errorf("want True or False")
}

// tuple parses a tuple of non-negative integers: (), (5,), (2, 3). Python 2's
// long suffix (3L) is accepted, as numpy does.
func (p *parser) tuple() ([]int, error) {
	if err := p.expect('('); err != nil {
		return nil, err
	}
	out := []int{}
	for {
		p.space()
		if p.peek() == ')' {
			p.i++
			return out, nil
		}
		start := p.i
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
		}
		if p.i == start {
			return nil, p.errorf("want a non-negative integer dimension")
		}
		d, err := strconv.Atoi(p.s[start:p.i])
		if err != nil {
			return nil, fmt.Errorf("dimension %s: %w", p.s[start:p.i], err)
		}
		out = append(out, d)
		if p.peek() == 'L' {
			p.i++
		}
		p.space()
		switch p.peek() {
		case ',':
			p.i++
		case ')':
		default:
			return nil, p.errorf("want ',' or ')'")
		}
	}
}
