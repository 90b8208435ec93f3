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
// Errors name the source "reader".
func Read(r io.Reader) (*Array, error) {
	return read(r, "reader")
}

// ReadFile reads the .npy file at path. Errors name the file.
func ReadFile(path string) (*Array, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("npy: %w", err)
	}
	defer f.Close()
	return read(bufio.NewReaderSize(f, 64<<10), path)
}

func read(r io.Reader, name string) (*Array, error) {
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
	data, err := io.ReadAll(io.LimitReader(r, want))
	if err != nil {
		return nil, fmt.Errorf("npy: %s: read data: %w", name, err)
	}
	if int64(len(data)) < want {
		return nil, fmt.Errorf("npy: %s: %w: want %d bytes of data, got %d", name, ErrTruncated, want, len(data))
	}
	var one [1]byte
	if k, _ := io.ReadFull(r, one[:]); k > 0 {
		return nil, fmt.Errorf("npy: %s: %w: trailing bytes after %d bytes of data", name, ErrFormat, want)
	}
	le := binary.LittleEndian
	switch h.descr {
	case "<f4":
		a.F32 = make([]float32, size)
		for i := range a.F32 {
			a.F32[i] = math.Float32frombits(le.Uint32(data[4*i:]))
		}
	case "<f8":
		a.F64 = make([]float64, size)
		for i := range a.F64 {
			a.F64[i] = math.Float64frombits(le.Uint64(data[8*i:]))
		}
	case "<i8":
		a.I64 = make([]int64, size)
		for i := range a.I64 {
			a.I64[i] = int64(le.Uint64(data[8*i:]))
		}
	case "<i4":
		a.I64 = make([]int64, size)
		for i := range a.I64 {
			a.I64[i] = int64(int32(le.Uint32(data[4*i:])))
		}
	}
	return a, nil
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
