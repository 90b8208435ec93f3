package data

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// drawing returns a JSON line of 784 grey levels, pixel k = (k%7)/6·scale.
func drawing(scale float64) string {
	vals := make([]string, QuickDrawPixels)
	for k := range vals {
		vals[k] = fmt.Sprint(float64(k%7) / 6 * scale)
	}
	return "[" + strings.Join(vals, ",") + "]"
}

func gz(t testing.TB, lines ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	for _, l := range lines {
		fmt.Fprintln(zw, l)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func writeCategory(t *testing.T, dir, name string, raw []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name+".ndjson.gz"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadQuickDraw(t *testing.T) {
	dir := t.TempDir()
	writeCategory(t, dir, "cat", gz(t, drawing(1), drawing(0.5), drawing(0)))
	writeCategory(t, dir, "ant", gz(t, drawing(1)))
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("not a category"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := ReadQuickDraw(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(f.Names) != "[ant cat]" || fmt.Sprint(f.Counts) != "[1 3]" || f.MaxCount != 3 || f.Dim != 784 {
		t.Fatalf("names %v counts %v max %d dim %d", f.Names, f.Counts, f.MaxCount, f.Dim)
	}
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := f.Vector(1, 1)[6]; got != 0.5 {
		t.Errorf("cat drawing 1, pixel 6 = %v, want 0.5", got)
	}
	g, err := ReadQuickDraw(dir, []string{"cat"})
	if err != nil || g.Classes() != 1 || g.Counts[0] != 3 {
		t.Errorf("ReadQuickDraw(cat) = %v classes, err %v", g, err)
	}
}

func TestReadQuickDrawErrors(t *testing.T) {
	good := gz(t, drawing(1), drawing(1), drawing(1))
	d := drawing(1)
	short := d[:strings.LastIndex(d, ",")] + "]"
	tests := []struct {
		name string
		raw  []byte
		want string
	}{
		{"truncated", good[:len(good)/2], "truncated"},
		{"truncated at the end", good[:len(good)-4], "truncated"},
		{"not gzip", []byte("[0, 1]\n"), "not a gzip stream"},
		{"short line", gz(t, drawing(1), short), "drawing 2: 783 values"},
		{"long line", gz(t, strings.Replace(drawing(1), "]", ",0]", 1)), "more than 784 values"},
		{"out of range", gz(t, drawing(2)), "want a grey level in [0, 1]"},
		{"not a number", gz(t, strings.Replace(drawing(1), "[0,", `["x",`, 1)), `pixel 0: "\"x\"" is not a number`},
		{"not an array", gz(t, `{"word": "cat"}`), "not a JSON array"},
		{"empty", gz(t), "no drawings"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeCategory(t, dir, "cat", tt.raw)
			_, err := ReadQuickDraw(dir, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ReadQuickDraw = %v, want an error containing %q", err, tt.want)
			}
			if !errors.Is(err, ErrQuickDraw) {
				t.Errorf("error %v does not wrap ErrQuickDraw", err)
			}
			if !strings.Contains(err.Error(), "cat.ndjson.gz") {
				t.Errorf("error %v does not name the file", err)
			}
		})
	}
	if _, err := ReadQuickDraw(t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), "fetch-quickdraw.sh") {
		t.Errorf("empty folder: %v", err)
	}
	if _, err := ReadQuickDraw(filepath.Join(t.TempDir(), "none"), nil); err == nil {
		t.Error("missing folder: no error")
	}
	if _, err := ReadQuickDraw(t.TempDir(), []string{"nope"}); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing category: %v", err)
	}
}

func TestQuickDrawDir(t *testing.T) {
	t.Setenv("GDATTN_QUICKDRAW", "")
	t.Setenv("GDATTN_CACHE", "/c")
	if got := QuickDrawDir(); got != filepath.Join("/c", "quickdraw") {
		t.Errorf("with GDATTN_CACHE: %q", got)
	}
	t.Setenv("GDATTN_QUICKDRAW", "/q")
	if got := QuickDrawDir(); got != "/q" {
		t.Errorf("with GDATTN_QUICKDRAW: %q", got)
	}
	t.Setenv("GDATTN_QUICKDRAW", "")
	t.Setenv("GDATTN_CACHE", "")
	t.Setenv("HOME", "/h")
	if got := QuickDrawDir(); got != filepath.Join("/h", ".cache", "gdattn", "quickdraw") {
		t.Errorf("default: %q", got)
	}
}

// TestQuickDrawPackage reads the real data set fetched by
// scripts/fetch-quickdraw.sh, when it is there.
func TestQuickDrawPackage(t *testing.T) {
	dir := QuickDrawDir()
	cats, err := QuickDrawCategories(dir)
	if err != nil {
		t.Skipf("Quick, Draw! data not found in %s (run scripts/fetch-quickdraw.sh, or set GDATTN_QUICKDRAW): %v", dir, err)
	}
	if len(cats) != 345 {
		t.Fatalf("%d categories in %s, want 345", len(cats), dir)
	}
	f, err := ReadQuickDraw(dir, cats[:3])
	if err != nil {
		t.Fatal(err)
	}
	for c, n := range f.Counts {
		if n != 100 {
			t.Errorf("category %q has %d drawings, want 100", f.Names[c], n)
		}
	}
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
}
