package data

// GPT-2's byte-level BPE encoder, written out here so that every byte of the
// input reaches a token.
//
// GPT-2 first cuts text into pieces with the regular expression
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// and then merges the bytes of each piece by rank. Its alternatives cover
// every character, but an implementation that scans for matches skips
// whatever text no match covers, so one character class wrong in the
// compiled expression loses those characters silently: github.com/tiktoken-go/
// tokenizer v0.10.0's generated matcher leaves U+007F (DEL) out of
// [^\s\p{L}\p{N}], and its Encode dropped every DEL. pretokenEnd below cuts
// the same pieces by a direct scan whose cases cover every byte, so nothing
// can fall between pieces; the merge ranks (the r50k_base vocabulary) still
// come from that package.

import (
	"fmt"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer"
)

// bpeTables is the r50k_base vocabulary: ranks maps a byte string to its id,
// which is also its merge rank; pieces maps an id below GPT2EOT back to its
// bytes.
type bpeTables struct {
	ranks  map[string]int
	pieces []string
}

var (
	r50kOnce   sync.Once
	r50kTables *bpeTables
	r50kErr    error
)

// loadR50k returns the r50k_base tables (built once, then shared: they are
// never written after).
func loadR50k() (*bpeTables, error) {
	r50kOnce.Do(func() { r50kTables, r50kErr = buildR50k() })
	return r50kTables, r50kErr
}

// buildR50k reads the bytes of every id below GPT2EOT from the tokenizer
// package and checks that they form a byte-level vocabulary: distinct,
// non-empty, with every single byte among them (so any byte string can be
// encoded).
func buildR50k() (*bpeTables, error) {
	c, err := tokenizer.Get(tokenizer.R50kBase)
	if err != nil {
		return nil, fmt.Errorf("data: GPT-2 tokenizer: %w", err)
	}
	c.SetErrorMode(tokenizer.ErrorModeNone) // raw bytes, even for partial characters
	t := &bpeTables{ranks: make(map[string]int, GPT2EOT), pieces: make([]string, GPT2EOT)}
	for id := 0; id < GPT2EOT; id++ {
		s, err := c.Decode([]uint{uint(id)})
		if err != nil {
			return nil, fmt.Errorf("data: GPT-2 tokenizer: id %d: %w", id, err)
		}
		if _, dup := t.ranks[s]; dup || s == "" {
			return nil, fmt.Errorf("data: GPT-2 tokenizer: id %d has bytes %q, empty or already taken", id, s)
		}
		t.ranks[s] = id
		t.pieces[id] = s
	}
	for b := 0; b < 256; b++ {
		if _, ok := t.ranks[string([]byte{byte(b)})]; !ok {
			return nil, fmt.Errorf("data: GPT-2 tokenizer: no token for byte %#02x", b)
		}
	}
	return t, nil
}

// encode appends the ids of text to out: text is cut into pieces by
// pretokenEnd, and each piece is merged by rank.
func (t *bpeTables) encode(text string, out []int) []int {
	for i := 0; i < len(text); {
		j := pretokenEnd(text, i)
		out = t.encodePiece(text[i:j], out)
		i = j
	}
	return out
}

// Character classes of the pre-tokeniser: \p{L}, \p{N}, \s (Go's
// unicode.IsSpace, as the regexp2 engine the expression was written for) and
// everything else, invalid UTF-8 bytes included.
const (
	classOther = iota
	classLetter
	classNumber
	classSpace
)

// asciiClass is the class of each ASCII byte.
var asciiClass = func() (c [utf8.RuneSelf]uint8) {
	for b := range c {
		switch r := rune(b); {
		case unicode.IsLetter(r):
			c[b] = classLetter
		case unicode.IsNumber(r):
			c[b] = classNumber
		case unicode.IsSpace(r):
			c[b] = classSpace
		}
	}
	return c
}()

// classAt returns the class of the character at s[i] and its width in bytes
// (1 for a byte that does not start valid UTF-8).
func classAt(s string, i int) (uint8, int) {
	if b := s[i]; b < utf8.RuneSelf {
		return asciiClass[b], 1
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	switch {
	case w == 1: // invalid UTF-8: a byte of its own, like U+FFFD
		return classOther, 1
	case unicode.IsLetter(r):
		return classLetter, w
	case unicode.IsNumber(r):
		return classNumber, w
	case unicode.IsSpace(r):
		return classSpace, w
	}
	return classOther, w
}

// runEnd returns the end of the run of characters of class c that starts at
// s[i].
func runEnd(s string, i int, c uint8) int {
	for i < len(s) {
		ci, w := classAt(s, i)
		if ci != c {
			break
		}
		i += w
	}
	return i
}

// contractions are the first alternatives of GPT-2's expression.
var contractions = [...]string{"'s", "'t", "'re", "'ve", "'m", "'ll", "'d"}

// pretokenEnd returns the end of the piece of s that starts at i < len(s):
// the match of GPT-2's expression at i, its alternatives tried in order.
// The result is always > i, so the pieces cover s.
func pretokenEnd(s string, i int) int {
	if s[i] == '\'' {
		for _, c := range contractions {
			if strings.HasPrefix(s[i:], c) {
				return i + len(c)
			}
		}
	}
	// " ?\p{L}+", " ?\p{N}+" and " ?[^\s\p{L}\p{N}]+" with the space.
	if s[i] == ' ' && i+1 < len(s) {
		if c, _ := classAt(s, i+1); c != classSpace {
			return runEnd(s, i+1, c)
		}
	}
	c, _ := classAt(s, i)
	if c != classSpace {
		return runEnd(s, i, c) // the same three without the space
	}
	// "\s+(?!\S)": the whitespace run, less its last character when a
	// non-space follows (that character may then lead the next piece);
	// "\s+" when the run is a single character.
	j := runEnd(s, i, classSpace)
	if j == len(s) {
		return j
	}
	if _, w := utf8.DecodeLastRuneInString(s[i:j]); j-w > i {
		return j - w
	}
	return j
}

// noRank marks a pair of parts that the vocabulary cannot merge.
const noRank = int(^uint(0) >> 1)

// scanLimit is the piece length from which encodePiece uses a heap instead
// of rescanning all pairs after every merge (quadratic in the length).
const scanLimit = 64

// encodePiece appends the ids of one piece: the piece itself if it is in
// the vocabulary, else the parts left when, starting from single bytes, the
// adjacent pair whose concatenation has the lowest rank (the leftmost on a
// tie) is merged until no pair is in the vocabulary.
func (t *bpeTables) encodePiece(piece string, out []int) []int {
	if id, ok := t.ranks[piece]; ok {
		return append(out, id)
	}
	if len(piece) < scanLimit {
		return t.mergeScan(piece, out)
	}
	return t.mergeHeap(piece, out)
}

// rank returns the rank of s, or noRank.
func (t *bpeTables) rank(s string) int {
	if r, ok := t.ranks[s]; ok {
		return r
	}
	return noRank
}

// mergeScan merges by scanning every pair for the lowest rank.
func (t *bpeTables) mergeScan(piece string, out []int) []int {
	var bb, rb [scanLimit + 1]int
	bounds := bb[:len(piece)+1] // start of each part, then len(piece)
	ranks := rb[:len(piece)+1]  // ranks[k]: parts k and k+1 merged
	for k := range bounds {
		bounds[k] = k
	}
	pair := func(k int) int {
		if k+2 < len(bounds) {
			return t.rank(piece[bounds[k]:bounds[k+2]])
		}
		return noRank
	}
	for k := range ranks {
		ranks[k] = pair(k)
	}
	for {
		best, at := noRank, -1
		for k := 0; k+1 < len(bounds); k++ {
			if ranks[k] < best {
				best, at = ranks[k], k
			}
		}
		if at < 0 {
			break
		}
		bounds = append(bounds[:at+1], bounds[at+2:]...)
		ranks = append(ranks[:at+1], ranks[at+2:]...)
		ranks[at] = pair(at)
		if at > 0 {
			ranks[at-1] = pair(at - 1)
		}
	}
	for k := 0; k+1 < len(bounds); k++ {
		out = append(out, t.ranks[piece[bounds[k]:bounds[k+1]]])
	}
	return out
}

// mergeItem is a candidate merge of the part starting at pos with the part
// after it; it is stale unless ver matches the part's current version.
type mergeItem struct{ rank, pos, ver int }

func (a mergeItem) less(b mergeItem) bool {
	return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos)
}

// mergeHeap merges like mergeScan in O(n log n): the parts form a linked
// list and the candidate merges a min-heap ordered by (rank, position), so
// the next merge is always the lowest rank, leftmost, as in mergeScan.
func (t *bpeTables) mergeHeap(piece string, out []int) []int {
	n := len(piece)
	next := make([]int, n) // start of the following part, or n
	prev := make([]int, n) // start of the preceding part, or -1
	ver := make([]int, n)  // bumped whenever the part's merge candidate changes
	for i := range next {
		next[i], prev[i] = i+1, i-1
	}
	pair := func(p int) int {
		if q := next[p]; q < n {
			return t.rank(piece[p:next[q]])
		}
		return noRank
	}
	var heap []mergeItem
	push := func(it mergeItem) {
		heap = append(heap, it)
		for k := len(heap) - 1; k > 0; {
			up := (k - 1) / 2
			if !heap[k].less(heap[up]) {
				break
			}
			heap[k], heap[up] = heap[up], heap[k]
			k = up
		}
	}
	pop := func() mergeItem {
		top := heap[0]
		last := len(heap) - 1
		heap[0] = heap[last]
		heap = heap[:last]
		for k := 0; ; {
			l, r, m := 2*k+1, 2*k+2, k
			if l < last && heap[l].less(heap[m]) {
				m = l
			}
			if r < last && heap[r].less(heap[m]) {
				m = r
			}
			if m == k {
				break
			}
			heap[k], heap[m] = heap[m], heap[k]
			k = m
		}
		return top
	}
	for p := 0; p < n; p++ {
		if r := pair(p); r != noRank {
			push(mergeItem{r, p, 0})
		}
	}
	for len(heap) > 0 {
		it := pop()
		if it.ver != ver[it.pos] {
			continue // stale: the part changed or was merged away
		}
		p, q := it.pos, next[it.pos]
		next[p] = next[q]
		if next[q] < n {
			prev[next[q]] = p
		}
		ver[q]++ // q is gone
		ver[p]++
		if r := pair(p); r != noRank {
			push(mergeItem{r, p, ver[p]})
		}
		if o := prev[p]; o >= 0 {
			ver[o]++
			if r := pair(o); r != noRank {
				push(mergeItem{r, o, ver[o]})
			}
		}
	}
	for p := 0; p < n; p = next[p] {
		out = append(out, t.ranks[piece[p:next[p]]])
	}
	return out
}
