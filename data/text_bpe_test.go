package data

import (
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer"
)

func newTok(t testing.TB) *GPT2Tokenizer {
	t.Helper()
	tok, err := NewGPT2Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// roundTrip checks DecodeBytes(Encode(s)) == s and, for valid UTF-8,
// Decode(Encode(s)) == s.
func roundTrip(t testing.TB, tok *GPT2Tokenizer, s string) {
	t.Helper()
	ids, err := tok.Encode(s)
	if err != nil {
		t.Fatalf("Encode(%q): %v", s, err)
	}
	for _, id := range ids {
		if id < 0 || id >= GPT2EOT {
			t.Fatalf("Encode(%q) = %v: id %d is not a text token", s, ids, id)
		}
	}
	b, err := tok.DecodeBytes(ids)
	if err != nil || string(b) != s {
		t.Fatalf("DecodeBytes(Encode(%q)) = %q, %v (ids %v)", s, b, err, ids)
	}
	if utf8.ValidString(s) {
		d, err := tok.Decode(ids)
		if err != nil || d != s {
			t.Fatalf("Decode(Encode(%q)) = %q, %v (ids %v)", s, d, err, ids)
		}
	}
}

// TestTokenizerEveryByte encodes every byte value alone and in context, as a
// raw byte and as the character U+0000..U+00FF: all of them survive
// (U+007F used to vanish: the pre-tokeniser skipped it).
func TestTokenizerEveryByte(t *testing.T) {
	tok := newTok(t)
	for b := 0; b < 256; b++ {
		raw := string([]byte{byte(b)})
		char := string(rune(b))
		for _, s := range []string{raw, char, "a" + raw + "b", " " + raw, raw + raw + " x", "x" + char + "y", " " + char + char, char + "'s", "1" + char + "2"} {
			roundTrip(t, tok, s)
		}
	}
	ids, _ := tok.Encode("x\x7fy")
	if want := []int{87, 221, 88}; !reflect.DeepEqual(ids, want) { // x, DEL, y
		t.Errorf(`Encode("x\x7fy") = %v, want %v`, ids, want)
	}
}

// TestTokenizerRandom round-trips random valid UTF-8 (any rune) and random
// bytes.
func TestTokenizerRandom(t *testing.T) {
	tok := newTok(t)
	rng := rand.New(rand.NewPCG(7, 7))
	for i := 0; i < 2000; i++ {
		var sb strings.Builder
		for k := rng.IntN(40); k > 0; k-- {
			r := rune(rng.IntN(utf8.MaxRune + 1))
			if rng.IntN(2) == 0 {
				r = rune(rng.IntN(0x250)) // dense in ASCII and Latin
			}
			sb.WriteRune(r) // surrogates become U+FFFD: still valid UTF-8
		}
		roundTrip(t, tok, sb.String())
		raw := make([]byte, rng.IntN(40))
		for k := range raw {
			raw[k] = byte(rng.IntN(256))
		}
		roundTrip(t, tok, string(raw))
	}
}

var (
	tiktokenOnce sync.Once
	tiktoken     tokenizer.Codec
	tiktokenErr  error
)

// tiktokenIDs encodes s with github.com/tiktoken-go/tokenizer, GPT-2's
// encoder before this package had its own pre-tokeniser.
func tiktokenIDs(t testing.TB, s string) []int {
	t.Helper()
	tiktokenOnce.Do(func() { tiktoken, tiktokenErr = tokenizer.Get(tokenizer.R50kBase) })
	if tiktokenErr != nil {
		t.Fatal(tiktokenErr)
	}
	ids, _, err := tiktoken.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out
}

// randomText draws text from an alphabet that exercises every branch of the
// pre-tokeniser: letters of several scripts, digits and other numbers,
// spaces of several kinds and runs of them, punctuation, apostrophes and
// contractions, symbols and emoji.
func randomText(rng *rand.Rand, n int) string {
	parts := []string{"a", "Z", "é", "ß", "ж", "中", "文", "ا", "7", "0", "²", "Ⅻ", "٣",
		" ", "  ", "\t", "\n", "\n\n", "\r\n", "\u00a0", "\u2003", "\u3000", "\u0085",
		".", ",", "!", "?", "-", "—", "\"", "'", "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S",
		"$", "€", "😀", "\u0301", "\ufffd", " the", " cat", "ing", "Hello", "world", "1234567"}
	var sb strings.Builder
	for k := 0; k < n; k++ {
		sb.WriteString(parts[rng.IntN(len(parts))])
	}
	return sb.String()
}

// TestTokenizerMatchesGPT2 checks that the ids are GPT-2's: equal to those
// of the tiktoken encoder on valid UTF-8 without U+007F (which it drops),
// over single runes of every plane in context, random text, long pieces (the
// heap merge) and the shared TinyStories corpus when present.
func TestTokenizerMatchesGPT2(t *testing.T) {
	tok := newTok(t)
	check := func(s string) {
		t.Helper()
		got, _ := tok.Encode(s)
		if want := tiktokenIDs(t, s); !reflect.DeepEqual(got, want) {
			t.Fatalf("Encode(%q) = %v, tiktoken %v", s, got, want)
		}
	}
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if r >= 0x800 {
			r += 96 // every 97th rune past the first 2048
		}
		if r == 0x7f || !utf8.ValidRune(r) {
			continue
		}
		c := string(r)
		for _, s := range []string{c, "a" + c + "b", " " + c + c + " 1", c + "'s  x", "\n " + c} {
			check(s)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 3000; i++ {
		check(randomText(rng, rng.IntN(30)))
	}
	for _, n := range []int{63, 64, 65, 200, 3000} {
		check(strings.Repeat("a", n))
		check(strings.Repeat(" ", n) + "x")
		check(strings.Repeat("9", n))
		check(strings.Repeat("!?", n))
		var word []byte
		for k := 0; k < n; k++ {
			word = append(word, "abcdefghijklmnopqrstuvwxyzABCDE"[rng.IntN(31)])
		}
		check(string(word))
		check(" " + string(word) + "é")
	}
	if raw, err := os.ReadFile(tinyStoriesPath); err == nil {
		for _, s := range strings.SplitAfter(string(raw), "\n\n") {
			if !strings.ContainsRune(s, 0x7f) {
				check(s)
			}
		}
	} else {
		t.Logf("TinyStories not found (%v): compared on generated text only", err)
	}
}

// TestMergeScanHeap checks that the two merge loops agree on pieces short
// enough for both.
func TestMergeScanHeap(t *testing.T) {
	bpe, err := loadR50k()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 5000; i++ {
		piece := randomText(rng, 1+rng.IntN(12))
		if len(piece) >= scanLimit {
			piece = piece[:scanLimit-1]
		}
		a := bpe.mergeScan(piece, nil)
		b := bpe.mergeHeap(piece, nil)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("piece %q: scan %v, heap %v", piece, a, b)
		}
	}
}

func TestTokenizerNil(t *testing.T) {
	var tok *GPT2Tokenizer
	if _, err := tok.Encode("x"); err == nil {
		t.Error("Encode on a nil tokenizer: no error")
	}
	if _, err := tok.Decode([]int{1}); err == nil {
		t.Error("Decode on a nil tokenizer: no error")
	}
	if _, err := (&GPT2Tokenizer{}).DecodeBytes([]int{1}); err == nil {
		t.Error("DecodeBytes on a zero tokenizer: no error")
	}
	if _, err := newTok(t).DecodeBytes([]int{GPT2VocabSize}); err == nil {
		t.Error("DecodeBytes of an id past the vocabulary: no error")
	}
	if b, err := newTok(t).DecodeBytes([]int{40, GPT2EOT, GPT2Pad}); err != nil || string(b) != "I<|endoftext|>" {
		t.Errorf("DecodeBytes with special ids = %q, %v", b, err)
	}
}
