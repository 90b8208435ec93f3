package data

// Text corpora for the language-modelling experiments (Section 5.3 of the
// paper): reading plain UTF-8 corpora into stories, the GPT-2 (r50k)
// tokeniser with its end-of-text and pad ids, an optional vocabulary
// restricted to the training split, train/validation/test splits by story and
// fixed-length training windows. Files: text.go (corpora), text_gutenberg.go
// (the NLTK Project Gutenberg corpus), text_tokenizer.go (tokeniser and
// vocabularies), text_dataset.go (splits and windows), text_decode.go
// (greedy, sampled and beam-search generation) and text_metrics.go
// (distinct-n and repeated n-grams).
//
// Typical use:
//
//	stories, err := data.ReadCorpus("../shared/data/tinystories/tinystories.txt", data.CorpusConfig{})
//	tok, err := data.NewGPT2Tokenizer()
//	ds, err := data.NewTextData(stories, tok, data.TextDataConfig{Seed: 1, Restrict: true})
//	win, err := data.SampleWindows(ds.TrainStream, 16, 65, seed, step) // (16, 65) token ids

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/gdattn/gdattn/internal/infile"
)

// EOTText is the end-of-text marker GPT-2 uses between documents; in a plain
// corpus it separates stories.
const EOTText = "<|endoftext|>"

// SplitMode says how a plain-text corpus is cut into stories.
type SplitMode int

const (
	// SplitAuto splits on EOTText when the corpus contains it (SplitEOT),
	// and otherwise at blank lines followed by a story opener (SplitOpeners).
	SplitAuto SplitMode = iota
	// SplitEOT: stories are separated by EOTText only; blank lines inside a
	// story are paragraph breaks.
	SplitEOT
	// SplitParagraphs: every blank-line-separated block is a story.
	SplitParagraphs
	// SplitOpeners: paragraphs are separated by blank lines, and a new story
	// starts at each paragraph that begins with one of the openers
	// (CorpusConfig.Openers); other paragraphs continue the current story.
	SplitOpeners
)

func (m SplitMode) String() string {
	switch m {
	case SplitAuto:
		return "auto"
	case SplitEOT:
		return "eot"
	case SplitParagraphs:
		return "paragraphs"
	case SplitOpeners:
		return "openers"
	}
	return fmt.Sprintf("SplitMode(%d)", int(m))
}

// ParseSplitMode maps "auto", "eot", "paragraphs" or "openers" to a mode.
func ParseSplitMode(s string) (SplitMode, error) {
	for _, m := range []SplitMode{SplitAuto, SplitEOT, SplitParagraphs, SplitOpeners} {
		if s == m.String() {
			return m, nil
		}
	}
	return 0, fmt.Errorf("data: unknown split mode %q (want auto, eot, paragraphs or openers)", s)
}

// DefaultOpeners are the paragraph beginnings that start a new story under
// SplitOpeners.
//
// TinyStories separates stories by blank lines but also separates the
// paragraphs inside a story by blank lines, so story boundaries must be
// guessed. Most stories begin with "Once upon a time" or "Once there was";
// "One day" also begins many stories, but in the shared TinyStories file 160
// of its 270 "One day" paragraphs directly follow a "Once upon a time"
// paragraph, i.e. they continue a story, so "One day" is not an opener. A
// story that starts some other way ("Lily and Ben were ...") is merged into
// the story before it: stories come out a little long, never cut in the
// middle. Corpora that mark their boundaries with <|endoftext|> need none of
// this (SplitAuto uses the marker when present).
func DefaultOpeners() []string {
	return []string{"Once upon a time", "Once there was", "Once there lived", "Once, there was", "Once upon a"}
}

// CorpusConfig configures how a plain-text corpus is cut into stories. The
// zero value means SplitAuto with DefaultOpeners.
type CorpusConfig struct {
	Split   SplitMode
	Openers []string // for SplitOpeners (and SplitAuto); nil means DefaultOpeners()
	// Gutenberg, for a directory corpus, lists the book names to read
	// ("carroll-alice", ...); nil means every book. See ReadGutenberg.
	Gutenberg []string
}

// ParseStories cuts a corpus into stories as cfg says. Line endings are
// normalised to "\n"; every story is trimmed, keeps its paragraph breaks as
// "\n\n" and is non-empty. It returns no stories for a blank corpus.
func ParseStories(text string, cfg CorpusConfig) ([]string, error) {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	mode := cfg.Split
	if mode == SplitAuto {
		mode = SplitOpeners
		if strings.Contains(text, EOTText) {
			mode = SplitEOT
		}
	}
	openers := cfg.Openers
	if openers == nil {
		openers = DefaultOpeners()
	}
	var out []string
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	switch mode {
	case SplitEOT:
		for _, s := range strings.Split(text, EOTText) {
			add(joinParagraphs(paragraphs(s)))
		}
	case SplitParagraphs:
		for _, p := range paragraphs(text) {
			add(p)
		}
	case SplitOpeners:
		var cur []string
		for _, p := range paragraphs(text) {
			if len(cur) > 0 && hasOpener(p, openers) {
				add(joinParagraphs(cur))
				cur = cur[:0]
			}
			cur = append(cur, p)
		}
		add(joinParagraphs(cur))
	default:
		return nil, fmt.Errorf("data: unknown split mode %d", int(mode))
	}
	return out, nil
}

// paragraphs returns the non-blank blocks of text separated by one or more
// blank lines (lines holding only spaces count as blank), each trimmed.
func paragraphs(text string) []string {
	var out []string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.TrimSpace(strings.Join(cur, "\n")))
			cur = cur[:0]
		}
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		cur = append(cur, strings.TrimRight(line, " \t\r")) // a stray \r before the line end is line-ending debris
	}
	flush()
	return out
}

func joinParagraphs(ps []string) string { return strings.Join(ps, "\n\n") }

func hasOpener(p string, openers []string) bool {
	for _, o := range openers {
		if o != "" && strings.HasPrefix(p, o) {
			return true
		}
	}
	return false
}

// ReadCorpus reads the corpus at path: a directory is read as the NLTK
// Project Gutenberg corpus ([ReadGutenberg], fetched by
// scripts/fetch-gutenberg.sh), a file as plain UTF-8 text cut into stories
// by [ParseStories]. It returns an error for a missing path, a file that is
// not valid UTF-8, and a corpus with no story.
func ReadCorpus(path string, cfg CorpusConfig) ([]string, error) {
	if path == "" {
		return nil, errors.New("data: corpus path is empty")
	}
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("data: corpus %s does not exist (pass a plain-text file, or a directory fetched by scripts/fetch-gutenberg.sh)", path)
		}
		return nil, fmt.Errorf("data: corpus: %w", err)
	}
	if fi.IsDir() {
		return ReadGutenberg(path, cfg.Gutenberg)
	}
	raw, err := infile.ReadFile(path, MaxCorpusBytes)
	if err != nil {
		return nil, fmt.Errorf("data: corpus: %w", err)
	}
	if !utf8.Valid(raw) {
		return nil, fmt.Errorf("data: corpus %s is not valid UTF-8 (at byte %d)", path, firstInvalidUTF8(raw))
	}
	stories, err := ParseStories(string(raw), cfg)
	if err != nil {
		return nil, err
	}
	if len(stories) == 0 {
		return nil, fmt.Errorf("data: corpus %s holds no story (it is empty or blank)", path)
	}
	return stories, nil
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return -1
}
