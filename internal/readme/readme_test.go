package readme

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// imports maps the package names a snippet may use to their import paths.
var imports = map[string]string{
	"fmt": "fmt", "os": "os", "math": "math", "rand": "math/rand/v2", "filepath": "path/filepath",
	"strings": "strings", "errors": "errors", "json": "encoding/json",
	"G": "gorgonia.org/gorgonia", "tensor": "gorgonia.org/tensor",
	"checkpoint": "github.com/gdattn/gdattn/checkpoint", "data": "github.com/gdattn/gdattn/data",
	"gd": "github.com/gdattn/gdattn/gd", "graph": "github.com/gdattn/gdattn/graph",
	"npy": "github.com/gdattn/gdattn/graph/npy", "layers": "github.com/gdattn/gdattn/layers",
	"losses": "github.com/gdattn/gdattn/losses", "ops": "github.com/gdattn/gdattn/ops",
	"tf": "github.com/gdattn/gdattn/tf", "train": "github.com/gdattn/gdattn/train",
}

// goBlocks returns the ```go blocks of markdown text with their first lines.
func goBlocks(text string) (blocks []string, lines []int) {
	var cur []string
	in, start := false, 0
	for i, l := range strings.Split(text, "\n") {
		switch {
		case !in && strings.TrimSpace(l) == "```go":
			in, start, cur = true, i+2, nil
		case in && strings.TrimSpace(l) == "```":
			in = false
			blocks, lines = append(blocks, strings.Join(cur, "\n")), append(lines, start)
		case in:
			cur = append(cur, l)
		}
	}
	return blocks, lines
}

// program makes a main package of a snippet.
func program(block string) string {
	if strings.HasPrefix(strings.TrimSpace(block), "package ") {
		return block
	}
	var paths []string
	for name, path := range imports {
		if regexp.MustCompile(`(^|[^.\w])` + name + `\.\w`).MatchString(block) {
			if name == "G" {
				path = `G "` + path + `"`
			} else {
				path = `"` + path + `"`
			}
			paths = append(paths, path)
		}
	}
	sort.Strings(paths)
	return fmt.Sprintf("package main\n\nimport (\n\t%s\n)\n\nfunc main() {\n%s\n}\n", strings.Join(paths, "\n\t"), block)
}

func TestReadmeSnippets(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and runs README's Go snippets")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	gosum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	_, haveShared := os.Stat(filepath.Join(root, "..", "shared"))
	blocks, lines := goBlocks(string(readme))
	if len(blocks) == 0 {
		t.Fatal("README.md has no ```go block")
	}
	for i, block := range blocks {
		t.Run(fmt.Sprintf("line%d", lines[i]), func(t *testing.T) {
			if strings.Contains(block, "../shared") && haveShared != nil {
				t.Skipf("the snippet reads ../shared, which is missing: %v", haveShared)
			}
			tmp := t.TempDir()
			mod := filepath.Join(tmp, "snippet")
			work := filepath.Join(tmp, "work")
			for _, d := range []string{mod, work} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if haveShared == nil {
				if err := os.Symlink(filepath.Join(root, "..", "shared"), filepath.Join(tmp, "shared")); err != nil {
					t.Fatal(err)
				}
			}
			// The checkout's requirements (what `go get` would add), the
			// module itself replaced by the checkout.
			body := strings.SplitN(string(gomod), "\n", 2)[1]
			m := "module example.com/snippet\n" + body + "\nrequire github.com/gdattn/gdattn v0.0.0\n\nreplace github.com/gdattn/gdattn => " + root + "\n"
			files := map[string][]byte{"go.mod": []byte(m), "go.sum": gosum, "main.go": []byte(program(block))}
			for name, b := range files {
				if err := os.WriteFile(filepath.Join(mod, name), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			bin := filepath.Join(tmp, "snippet.bin")
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			build := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
			build.Dir = mod
			build.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "GOSUMDB=off")
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("README.md line %d: the snippet does not compile: %v\n%s\n--- program:\n%s", lines[i], err, out, program(block))
			}
			run := exec.CommandContext(ctx, bin)
			run.Dir = work
			if out, err := run.CombinedOutput(); err != nil {
				t.Fatalf("README.md line %d: the snippet fails: %v\n%s", lines[i], err, out)
			} else {
				t.Logf("README.md line %d:\n%s", lines[i], out)
			}
		})
	}
}
