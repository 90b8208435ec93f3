package readme

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeShape: README.md stays a page a new user reads in one sitting
// (at most 250 lines), and what a user needs first comes first: the
// sections Install, Quick start and Recipes, and the three recipes (a
// classifier, a language model, a regression model), all start within the
// first 120 lines. Reference material belongs in docs/.
func TestReadmeShape(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 250 {
		t.Errorf("README.md has %d lines, more than 250: move reference material to docs/", len(lines))
	}
	first := func(prefix string) int {
		for i, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return i + 1
			}
		}
		return 0
	}
	for _, want := range []string{"## Install", "## Quick start", "## Recipes",
		"**A GD classifier", "**A language model", "**A Gaussian GD regression model"} {
		switch n := first(want); {
		case n == 0:
			t.Errorf("README.md has no line starting with %q", want)
		case n > 120:
			t.Errorf("README.md: %q starts at line %d, after the first 120", want, n)
		}
	}
}
