package data

// Fuzz targets for every reader and decoder of the package. Plain `go test`
// replays their f.Add seeds and the files under testdata/fuzz/FuzzX (crashers
// found by fuzzing stay there); scripts/fuzz.sh fuzzes each for a while.

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/gdattn/gdattn/graph/npy"
)

// npyBytes returns a in .npy format.
func npyBytes(t testing.TB, a *npy.Array) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := npy.Write(&b, a); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// writeFile writes b to name in dir and returns the path.
func writeFile(t testing.TB, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
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

// isNpyError reports whether err wraps one of the npy package's sentinels.
func isNpyError(err error) bool {
	for _, s := range []error{npy.ErrFormat, npy.ErrUnsupported, npy.ErrTruncated, npy.ErrTooLarge} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// FuzzReadFeatures reads a features file and a counts file: either an error
// wrapping ErrFeatures or an npy sentinel, or valid features that survive
// WriteFeatures and ReadFeatures again unchanged.
func FuzzReadFeatures(f *testing.F) {
	nan := math.NaN()
	feats := func(dtype string, shape []int, v ...float64) []byte {
		a := &npy.Array{Shape: shape, Dtype: dtype}
		if dtype == npy.Float32 {
			for _, x := range v {
				a.F32 = append(a.F32, float32(x))
			}
		} else {
			a.F64 = v
		}
		return npyBytes(f, a)
	}
	counts := func(dtype string, c ...int64) []byte {
		if dtype == npy.Int64 {
			return npyBytes(f, &npy.Array{Shape: []int{len(c)}, Dtype: npy.Int64, I64: c})
		}
		// '<i4' (npy writes only int64): a hand-made header, 128 bytes.
		dict := fmt.Sprintf("{'descr': '<i4', 'fortran_order': False, 'shape': (%d,), }", len(c))
		dict += strings.Repeat(" ", 128-10-1-len(dict)) + "\n"
		b := append([]byte("\x93NUMPY\x01\x00"), byte(len(dict)), 0)
		b = append(b, dict...)
		for _, x := range c {
			b = append(b, byte(x), byte(x>>8), byte(x>>16), byte(x>>24))
		}
		return b
	}
	f.Add(feats(npy.Float64, []int{2, 2, 3}, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12), counts(npy.Int64, 2, 1))
	f.Add(feats(npy.Float32, []int{2, 2, 1}, 0.5, nan, -1, 2), counts(npy.Int64, 1, 2)) // NaN in padding: valid
	f.Add(feats(npy.Float64, []int{1, 3, 2}, 1, 2, 3, 4, 5, 6), counts("<i4", 3))
	f.Add(feats(npy.Float64, []int{2, 1, 1}, nan, 1), counts(npy.Int64, 1, 1)) // NaN in use
	f.Add(feats(npy.Float64, []int{2, 1, 1}, 1, 1), counts(npy.Int64, -1, 1))  // negative count
	f.Add(feats(npy.Float64, []int{2, 1, 1}, 1, 1), counts(npy.Int64, 2, 1))   // count past the slots
	f.Add(feats(npy.Float64, []int{2, 1, 1}, 1, 1), counts(npy.Int64, 1))      // one count for two classes
	f.Add(feats(npy.Float64, []int{2, 1}, 1, 1), counts(npy.Int64, 1, 1))      // rank 2
	f.Add(feats(npy.Float64, []int{0, 1, 1}), counts(npy.Int64))               // empty
	f.Add(npyBytes(f, &npy.Array{Shape: []int{1, 1, 1}, Dtype: npy.Int64, I64: []int64{1}}), counts(npy.Int64, 1))
	f.Add([]byte("\x93NUMPY\x01\x00"), []byte("not npy"))
	dir := fuzzDir(f)
	f.Fuzz(func(t *testing.T, fb, cb []byte) {
		fp := writeFile(t, dir, "features.npy", fb)
		cp := writeFile(t, dir, "counts.npy", cb)
		got, err := ReadFeatures(fp, cp)
		if err != nil {
			if got != nil {
				t.Fatalf("features and an error: %v", err)
			}
			if !errors.Is(err, ErrFeatures) && !isNpyError(err) {
				t.Fatalf("error %v wraps neither ErrFeatures nor an npy sentinel", err)
			}
			return
		}
		if err := got.Validate(); err != nil {
			t.Fatalf("ReadFeatures returned invalid features: %v", err)
		}
		if len(got.X) != len(got.Counts)*got.MaxCount*got.Dim || len(got.X) > MaxElements {
			t.Fatalf("len(X) = %d for %d classes, %d slots, dim %d", len(got.X), len(got.Counts), got.MaxCount, got.Dim)
		}
		for _, dtype := range []string{npy.Float64, npy.Float32} {
			fp2, cp2 := filepath.Join(dir, "f2.npy"), filepath.Join(dir, "c2.npy")
			if err := WriteFeatures(fp2, cp2, got, dtype); err != nil {
				t.Fatalf("WriteFeatures(%s): %v", dtype, err)
			}
			again, err := ReadFeatures(fp2, cp2)
			if dtype == npy.Float32 && !fitsFloat32(got) {
				if !errors.Is(err, ErrFeatures) {
					t.Fatalf("float32 copy of values beyond float32: got %v, want ErrFeatures (not finite)", err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("reading back the %s copy: %v", dtype, err)
			}
			if !reflect.DeepEqual(again.Counts, got.Counts) || again.Dim != got.Dim || again.MaxCount != got.MaxCount {
				t.Fatalf("%s copy: counts %v dim %d slots %d, want %v %d %d", dtype, again.Counts, again.Dim, again.MaxCount, got.Counts, got.Dim, got.MaxCount)
			}
			for c, n := range got.Counts {
				for i := 0; i < n; i++ {
					for k, v := range got.Vector(c, i) {
						w := again.Vector(c, i)[k]
						if dtype == npy.Float32 {
							v = float64(float32(v))
						}
						if math.Float64bits(v) != math.Float64bits(w) && !(v == 0 && w == 0) {
							t.Fatalf("%s copy: class %d vector %d element %d = %v, want %v", dtype, c, i, k, w, v)
						}
					}
				}
			}
		}
	})
}

// fitsFloat32 reports whether every vector in use stays finite as float32.
func fitsFloat32(f *Features) bool {
	for c, n := range f.Counts {
		for i := 0; i < n; i++ {
			for _, v := range f.Vector(c, i) {
				if math.IsInf(float64(float32(v)), 0) {
					return false
				}
			}
		}
	}
	return true
}

// quickDrawOracle parses ndjson drawings with encoding/json: it returns the
// pixels and the number of drawings, or ok = false where a reader must fail.
func quickDrawOracle(payload []byte) (px []float64, n int, ok bool) {
	rest := payload
	for len(rest) > 0 {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i+1], rest[i+1:]
		} else {
			rest = nil
		}
		// The reader's line buffer holds 1<<16 bytes, the newline included.
		if len(line) > 1<<16 || (len(line) == 1<<16 && line[len(line)-1] != '\n') {
			return nil, 0, false
		}
		t := bytes.Trim(line, jsonSpace)
		if len(t) == 0 {
			continue
		}
		var vals []json.RawMessage
		if err := json.Unmarshal(t, &vals); err != nil || len(vals) != QuickDrawPixels {
			return nil, 0, false
		}
		for _, v := range vals {
			if v[0] != '-' && (v[0] < '0' || v[0] > '9') {
				return nil, 0, false // not a number (a string, null, an array)
			}
			x, err := strconv.ParseFloat(string(v), 64)
			if err != nil || !(x >= 0 && x <= 1) {
				return nil, 0, false
			}
			px = append(px, x)
		}
		n++
	}
	return px, n, true
}

// FuzzReadQuickDrawFile reads a <category>.ndjson.gz file: raw bytes
// (gzip = false) or a gzip stream of the fuzzed text. A gzip stream of text
// must give exactly what encoding/json parses from it (784 numbers in
// [0, 1] per non-blank line), or an error wrapping ErrQuickDraw where it
// does not parse.
func FuzzReadQuickDrawFile(f *testing.F) {
	zeros := "[" + strings.TrimSuffix(strings.Repeat("0,", QuickDrawPixels), ",") + "]"
	f.Add([]byte(drawing(1)+"\n"+drawing(0.5)+"\n"), true)
	f.Add([]byte(zeros+"\r\n\n  \n"+zeros), true)
	f.Add([]byte(strings.Replace(zeros, "0,", "1e-3,", 3)+"\n"), true)
	f.Add([]byte(strings.Replace(zeros, "0,", "+0.5,", 1)), true) // not JSON
	f.Add([]byte(strings.Replace(zeros, "0,", "0x1p-1,", 1)), true)
	f.Add([]byte(strings.Replace(zeros, "0,", "NaN,", 1)), true)
	f.Add([]byte(strings.Replace(zeros, "0,", "null,", 1)), true)
	f.Add([]byte(strings.Replace(zeros, "0,", "1.5,", 1)), true)
	f.Add([]byte(strings.Replace(zeros, "]", ",0]", 1)), true)
	f.Add([]byte("[0, 1]\n"), true)
	f.Add([]byte(`{"word": "cat"}`), true)
	f.Add([]byte(""), true)
	f.Add([]byte("[0, 1]\n"), false)
	f.Add(gz(f, drawing(1)), false)
	f.Add(gz(f, drawing(1))[:40], false)
	dir := fuzzDir(f)
	f.Fuzz(func(t *testing.T, payload []byte, compress bool) {
		raw := payload
		if compress {
			var b bytes.Buffer
			zw := gzip.NewWriter(&b)
			zw.Write(payload)
			zw.Close()
			raw = b.Bytes()
		}
		path := writeFile(t, dir, "cat.ndjson.gz", raw)
		px, n, err := ReadQuickDrawFile(path)
		if err != nil {
			if !errors.Is(err, ErrQuickDraw) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %v does not wrap ErrQuickDraw or name the file", err)
			}
			if px != nil || n != 0 {
				t.Fatalf("%d drawings and an error", n)
			}
		} else {
			if len(px) != n*QuickDrawPixels {
				t.Fatalf("%d values for %d drawings", len(px), n)
			}
			for i, v := range px {
				if !(v >= 0 && v <= 1) {
					t.Fatalf("pixel %d = %v, want a grey level in [0, 1]", i, v)
				}
			}
		}
		if !compress {
			return
		}
		want, wantN, ok := quickDrawOracle(payload)
		if ok != (err == nil) {
			t.Fatalf("encoding/json says valid = %v, ReadQuickDrawFile error = %v", ok, err)
		}
		if ok && (n != wantN || !reflect.DeepEqual(px, want)) && !(n == 0 && wantN == 0) {
			t.Fatalf("%d drawings, encoding/json finds %d (values differ: %v)", n, wantN, !reflect.DeepEqual(px, want))
		}
	})
}

// withoutSpace returns s without its white space (unicode.IsSpace), invalid
// bytes kept.
func withoutSpace(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		if w > 1 || r != utf8.RuneError {
			if !unicode.IsSpace(r) {
				b.WriteString(s[i : i+w])
			}
		} else {
			b.WriteByte(s[i])
		}
		i += w
	}
	return b.String()
}

// FuzzParseStories cuts a corpus into stories and tokenises it: stories are
// trimmed and non-empty, keep every non-space character in order (less the
// end-of-text markers they were split on), and every story and the whole
// text survive Encode then Decode (and DecodeBytes) with the ids GPT-2's
// own encoder gives.
func FuzzParseStories(f *testing.F) {
	f.Add("Once upon a time, a cat.\n\nThe cat slept.\r\n\r\nOne day, it woke.\n\n\n\nOnce there was a dog.\nIt ran.\n\n  \n", uint8(0), "")
	f.Add("A.\n\nB.<|endoftext|>\nOnce upon a time C.\n<|endoftext|><|endoftext|>", uint8(0), "")
	f.Add("end of a story.\n\nOnce upon a time, new.", uint8(3), "One day")
	f.Add("x\x7fy\u00a0z  'll 'S 12345 —\t\n\n€😀", uint8(2), "")
	f.Add("<|endof<|endoftext|>text|>", uint8(1), "")
	f.Add("caf\xe9 \xff\xfe", uint8(2), "")
	f.Add(" \n\n\t\n", uint8(4), "")
	tok := newTok(f)
	f.Fuzz(func(t *testing.T, text string, mode uint8, opener string) {
		cfg := CorpusConfig{Split: SplitMode(mode % 5)}
		if opener != "" {
			cfg.Openers = []string{opener}
		}
		stories, err := ParseStories(text, cfg)
		if cfg.Split > SplitOpeners {
			if err == nil {
				t.Fatalf("split mode %d: no error", cfg.Split)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		eot := cfg.Split == SplitEOT || (cfg.Split == SplitAuto && strings.Contains(text, EOTText))
		for i, s := range stories {
			if s == "" || s != strings.TrimSpace(s) || strings.Contains(s, "\r\n") {
				t.Fatalf("story %d = %q: empty, untrimmed or with CRLF", i, s)
			}
			if eot && strings.Contains(s, EOTText) {
				t.Fatalf("story %d = %q holds the marker it was split on", i, s)
			}
			if cfg.Split == SplitParagraphs && strings.Contains(s, "\n\n") {
				t.Fatalf("paragraph %d = %q holds a blank line", i, s)
			}
		}
		want := text
		if eot {
			want = strings.ReplaceAll(text, EOTText, "")
		}
		// White space is dropped story by story: joined, two invalid UTF-8 fragments of
		// neighbouring stories can spell a space rune ("\xe2" + "\x80\x80" is U+2000).
		var got strings.Builder
		for _, s := range stories {
			got.WriteString(withoutSpace(s))
		}
		if got := got.String(); got != withoutSpace(want) {
			t.Fatalf("stories hold %q, the corpus %q (white space aside)", got, withoutSpace(want))
		}
		for _, s := range append(stories, text) {
			roundTrip(t, tok, s)
		}
		if utf8.ValidString(text) && !strings.ContainsRune(text, 0x7f) {
			got, _ := tok.Encode(text)
			if want := tiktokenIDs(t, text); !reflect.DeepEqual(got, want) {
				t.Fatalf("Encode(%q) = %v, tiktoken %v", text, got, want)
			}
		}
		ids, _ := tok.Encode(text)
		d1, err1 := DistinctN(ids, 2)
		r1, err2 := RepeatedNgramRate(ids, 2)
		if err1 != nil || err2 != nil || d1 < 0 || d1 > 1 || (len(ids) >= 2 && math.Abs(d1+r1-1) > 1e-12) {
			t.Fatalf("distinct-2 %v, repeated %v (%v %v) for %d ids", d1, r1, err1, err2, len(ids))
		}
	})
}

// isSubsequence reports whether a's bytes appear in b in order.
func isSubsequence(a, b string) bool {
	j := 0
	for i := 0; i < len(a); i++ {
		for j < len(b) && b[j] != a[i] {
			j++
		}
		if j == len(b) {
			return false
		}
		j++
	}
	return true
}

// FuzzParseGutenbergBook parses a book file as ReadGutenberg does (Latin-1
// unless valid UTF-8): stories are valid UTF-8, trimmed, without CRLF, at
// least 200 bytes when there are several, and hold only the book's
// characters, in order; ReadGutenberg and ReadCorpus on a folder holding the
// book give the same stories, or an error when there are none.
func FuzzParseGutenbergBook(f *testing.F) {
	f.Add([]byte(gutenbergBook))
	f.Add([]byte("[T]\n\n" + strings.Repeat("Caf\xe9 au lait. ", 20)))
	f.Add([]byte("[Title\n\nno closing bracket\n\nCHAPTER I\n\nshort\n\n     verse\n     lines"))
	f.Add([]byte("1:1 In the beginning God created the heaven and the earth.\r\n1:2 And the earth was without form.\r\n"))
	f.Add([]byte("ACT I\n\nSCENE 1\n\n" + strings.Repeat("word ", 60) + "\n\nBOOK II\n\n" + strings.Repeat("more ", 50)))
	f.Add([]byte("\r\r\n\xff\xfe]["))
	dir := fuzzDir(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		text := decodeLatin1(raw)
		if !utf8.ValidString(text) {
			t.Fatalf("decodeLatin1 gave invalid UTF-8 %q", text)
		}
		if !utf8.Valid(raw) && utf8.RuneCountInString(text) != len(raw) {
			t.Fatalf("Latin-1: %d runes for %d bytes", utf8.RuneCountInString(text), len(raw))
		}
		stories := ParseGutenbergBook(text)
		flat := withoutSpace(text)
		for i, s := range stories {
			if s == "" || s != strings.TrimSpace(s) || strings.Contains(s, "\r\n") || !utf8.ValidString(s) {
				t.Fatalf("story %d = %q: empty, untrimmed, with CRLF or invalid UTF-8", i, s)
			}
			if len(stories) > 1 && len(s) < 200 {
				t.Fatalf("story %d of %d has %d bytes, want >= 200 (short ones are merged)", i, len(stories), len(s))
			}
		}
		if !isSubsequence(withoutSpace(strings.Join(stories, "")), flat) {
			t.Fatalf("stories %q hold characters not in the book %q, or out of order", stories, text)
		}
		book := filepath.Join(dir, "book")
		os.RemoveAll(book)
		if err := os.Mkdir(book, 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, book, "a-book.txt", raw)
		for _, read := range []func() ([]string, error){
			func() ([]string, error) { return ReadGutenberg(book, nil) },
			func() ([]string, error) { return ReadGutenberg(book, []string{"a-book"}) },
			func() ([]string, error) { return ReadCorpus(book, CorpusConfig{}) },
		} {
			got, err := read()
			if len(stories) == 0 {
				if err == nil || !strings.Contains(err.Error(), "no text") {
					t.Fatalf("a book with no story: got %q, %v", got, err)
				}
				continue
			}
			if err != nil || !reflect.DeepEqual(got, stories) {
				t.Fatalf("reading the folder: %q, %v, want %q", got, err, stories)
			}
		}
	})
}

// fuzzLogit maps a byte to a logit: −Inf, NaN, +Inf, ±1e308 or k/8.
func fuzzLogit(b byte) float64 {
	switch b {
	case 0:
		return math.Inf(-1)
	case 1:
		return math.NaN()
	case 2:
		return math.Inf(1)
	case 3:
		return 1e308
	case 4:
		return -1e308
	}
	return float64(int8(b)) / 8
}

// greedyReference is Generate's greedy decoding written out from its
// contract on a bigram table: all live prompts step together; a step fails
// if a live row holds NaN or +Inf, or leaves no id that is allowed and above
// −Inf; the id is the largest allowed logit, the lowest on a tie.
func greedyReference(table [][]float64, prompts [][]int, maxNew, stop int, forbidden map[int]bool) ([][]int, bool) {
	out := make([][]int, len(prompts))
	done := make([]bool, len(prompts))
	last := func(i int) int {
		if len(out[i]) > 0 {
			return out[i][len(out[i])-1]
		}
		return prompts[i][len(prompts[i])-1]
	}
	for step := 0; step < maxNew; step++ {
		for i := range prompts {
			if done[i] {
				continue
			}
			for _, v := range table[last(i)] {
				if math.IsNaN(v) || math.IsInf(v, 1) {
					return nil, false
				}
			}
		}
		for i := range prompts {
			if done[i] {
				continue
			}
			best := -1
			for id, v := range table[last(i)] {
				if !forbidden[id] && !math.IsInf(v, -1) && (best < 0 || v > table[last(i)][best]) {
					best = id
				}
			}
			if best < 0 {
				return nil, false
			}
			out[i] = append(out[i], best)
			done[i] = best == stop
		}
	}
	return out, true
}

// FuzzGenerate decodes from a bigram model whose logits, vocabulary size,
// prompts and decoding configuration are fuzzed. Greedy decoding must equal
// greedyReference exactly (and beam search of width 1 must equal greedy);
// every strategy returns ids in range, never forbidden, never at −Inf, at
// most MaxNew of them with Stop only last, is deterministic, and gives each
// prompt the same result alone as in a batch.
func FuzzGenerate(f *testing.F) {
	f.Add([]byte{5, 40, 8, 0, 3, 9, 200, 17, 0}, uint8(0), uint8(5), uint8(0), uint8(2), 0.0, uint64(1), int8(4), uint16(0))
	f.Add([]byte{4, 40, 8, 0, 3, 9, 200, 17, 0}, uint8(1), uint8(9), uint8(2), uint8(0), 0.7, uint64(2), int8(-1), uint16(1))
	f.Add([]byte{4, 40, 8, 0, 3, 9, 200, 17, 0}, uint8(2), uint8(6), uint8(0), uint8(3), 0.0, uint64(3), int8(2), uint16(2))
	f.Add([]byte{2, 0, 0, 0, 0}, uint8(0), uint8(3), uint8(0), uint8(0), 0.0, uint64(0), int8(-1), uint16(0))      // all −Inf
	f.Add([]byte{3, 9, 9, 9, 9}, uint8(1), uint8(3), uint8(1), uint8(0), 0.0, uint64(0), int8(-1), uint16(0xffff)) // all forbidden
	f.Add([]byte{3, 3, 4, 0, 9, 2}, uint8(2), uint8(4), uint8(0), uint8(4), 0.0, uint64(0), int8(-1), uint16(0))
	f.Add([]byte{3, 3, 4, 1, 9}, uint8(0), uint8(4), uint8(0), uint8(0), 0.0, uint64(0), int8(-1), uint16(0)) // NaN
	f.Add([]byte{6, 3, 100, 100, 4, 9}, uint8(1), uint8(4), uint8(0), uint8(0), 5e-324, uint64(9), int8(-1), uint16(1))
	f.Add([]byte{6, 3, 100}, uint8(1), uint8(4), uint8(3), uint8(0), -1.0, uint64(9), int8(-1), uint16(0)) // bad temperature
	f.Fuzz(func(t *testing.T, data []byte, strategy, maxNew, topK, beams uint8, temp float64, seed uint64, stop int8, forbidMask uint16) {
		if len(data) == 0 {
			data = []byte{0}
		}
		V := 1 + int(data[0]%8)
		table := make([][]float64, V)
		for a := range table {
			table[a] = make([]float64, V)
			for b := range table[a] {
				table[a][b] = fuzzLogit(data[(1+a*V+b)%len(data)])
			}
		}
		var prompts [][]int
		for p := 0; p < 1+int(data[len(data)-1]%3); p++ {
			prompt := []int{int(data[p%len(data)]) % V}
			if p == 1 {
				prompt = append(prompt, (prompt[0]+1)%V)
			}
			prompts = append(prompts, prompt)
		}
		forbidden := map[int]bool{}
		var forbid []int
		for id := 0; id < 16; id++ {
			if forbidMask&(1<<id) != 0 {
				forbid = append(forbid, id) // ids >= V are ignored
				forbidden[id] = true
			}
		}
		cfg := DecodeConfig{
			Strategy:    []string{DecodeGreedy, DecodeSample, DecodeBeam}[strategy%3],
			MaxNew:      1 + int(maxNew%12),
			TopK:        int(topK % 10),
			Beams:       1 + int(beams%5),
			Temperature: temp,
			Seed:        seed,
			Stop:        StopNever(),
			Forbid:      forbid,
		}
		stopID := int(stop) % (V + 1) // -1: no stop id
		if stopID < 0 {
			stopID = -1
		} else {
			cfg.Stop = StopAt(stopID)
		}
		next := func(ctxs [][]int) ([][]float64, error) {
			out := make([][]float64, len(ctxs))
			for i, c := range ctxs {
				for _, id := range c {
					if id < 0 || id >= V {
						t.Fatalf("next got context %v with an id outside [0, %d)", c, V)
					}
				}
				out[i] = append([]float64(nil), table[c[len(c)-1]]...)
			}
			return out, nil
		}
		got, err := Generate(next, prompts, cfg)
		badTemp := temp != 0 && (!(temp > 0) || math.IsInf(temp, 0))
		if badTemp {
			if err == nil {
				t.Fatalf("Temperature = %v: no error", temp)
			}
			return
		}
		if cfg.Strategy == DecodeGreedy || (cfg.Strategy == DecodeBeam && cfg.Beams == 1) {
			want, ok := greedyReference(table, prompts, cfg.MaxNew, stopID, forbidden)
			if ok != (err == nil) || (ok && !reflect.DeepEqual(got, want)) {
				t.Fatalf("%s: got %v, %v, reference %v (ok %v)", cfg.Strategy, got, err, want, ok)
			}
		}
		if err != nil {
			if got != nil {
				t.Fatalf("ids and an error: %v", err)
			}
			return
		}
		if len(got) != len(prompts) {
			t.Fatalf("%d results for %d prompts", len(got), len(prompts))
		}
		for p, ids := range got {
			prev := prompts[p][len(prompts[p])-1]
			for k, id := range ids {
				if id < 0 || id >= V || forbidden[id] || math.IsInf(table[prev][id], -1) {
					t.Fatalf("prompt %d: id %d at %d is out of range, forbidden or at -Inf (ids %v)", p, id, k, ids)
				}
				if id == stopID && k != len(ids)-1 {
					t.Fatalf("prompt %d: Stop %d before the end of %v", p, id, ids)
				}
				prev = id
			}
			if len(ids) > cfg.MaxNew || (len(ids) < cfg.MaxNew && (len(ids) == 0 || ids[len(ids)-1] != stopID)) {
				t.Fatalf("prompt %d: %d ids (MaxNew %d, Stop %d): %v", p, len(ids), cfg.MaxNew, stopID, ids)
			}
		}
		again, err := Generate(next, prompts, cfg)
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Fatalf("not deterministic: %v then %v (%v)", got, again, err)
		}
		for p := range prompts {
			if cfg.Strategy == DecodeSample && p > 0 {
				break // prompt p samples from the stream (Seed, p): alone it would be stream 0
			}
			alone, err := Generate(next, prompts[p:p+1], cfg)
			if err == nil && !reflect.DeepEqual(alone[0], got[p]) {
				t.Fatalf("prompt %d: %v alone, %v in the batch", p, alone[0], got[p])
			}
		}
	})
}
