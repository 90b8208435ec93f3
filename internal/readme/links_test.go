package readme

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mdLink matches an inline markdown link or image, [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// fence matches a fenced code block, whose text is not markdown.
var fence = regexp.MustCompile("(?s)```.*?```")

// headingAnchors returns the anchors GitHub gives the headings of a markdown
// text: lower case, punctuation but hyphens and underscores dropped, spaces
// as hyphens.
func headingAnchors(text string) map[string]bool {
	drop := regexp.MustCompile(`[^\p{L}\p{N}_\- ]`)
	out := map[string]bool{}
	for _, l := range strings.Split(fence.ReplaceAllString(text, ""), "\n") {
		h := strings.TrimLeft(l, "#")
		if h == l || !strings.HasPrefix(h, " ") {
			continue
		}
		h = drop.ReplaceAllString(strings.ToLower(strings.TrimSpace(h)), "")
		out[strings.ReplaceAll(h, " ", "-")] = true
	}
	return out
}

// TestDocLinks: every relative link of README.md, docs/ and the examples'
// RESULTS.md names a file or folder of the checkout, and every #anchor into a
// markdown file names one of its headings.
func TestDocLinks(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{filepath.Join(root, "README.md")}
	if err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	results, err := filepath.Glob(filepath.Join(root, "examples", "*", "RESULTS.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, results...)
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		for _, m := range mdLink.FindAllStringSubmatch(fence.ReplaceAllString(string(b), ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			dest := f
			if path != "" {
				dest = filepath.Join(filepath.Dir(f), filepath.FromSlash(path))
			}
			checked++
			if _, err := os.Stat(dest); err != nil {
				t.Errorf("%s: link %q: no such file or folder", rel, target)
				continue
			}
			if anchor == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			db, err := os.ReadFile(dest)
			if err != nil {
				t.Fatal(err)
			}
			if !headingAnchors(string(db))[anchor] {
				t.Errorf("%s: link %q: no heading with that anchor", rel, target)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link found: the file list is wrong")
	}
}

func TestHeadingAnchors(t *testing.T) {
	a := headingAnchors("# Title\n### Where the `paper` step goes\n## Real-valued y (Appendix G)\n```\n# not a heading\n```\n#nospace\n")
	for _, want := range []string{"title", "where-the-paper-step-goes", "real-valued-y-appendix-g"} {
		if !a[want] {
			t.Errorf("anchor %q missing from %v", want, a)
		}
	}
	if len(a) != 3 {
		t.Errorf("anchors %v, want 3", a)
	}
}
