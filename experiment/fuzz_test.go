package experiment

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzStoreLoad: whatever bytes a result file, a failure file and an older
// journal hold (a hand edit, a crash mid-write), Load and Convert return
// without panicking; every result they report has a key, a run file's
// result sits under the name its key gives, and Convert turns exactly the
// journal's results without a run file into run files that Load then reads
// with the same output.
func FuzzStoreLoad(f *testing.F) {
	f.Add([]byte(`{"key":"{\"a\":1}","config":{"a":1},"output":{"x":2}}`), []byte(`{"key":"k","error":"boom"}`),
		[]byte("{\"config\":{\"a\":1},\"top1\":0.5}\n{\"config\":{\"b\":2},\"train_seconds\":3}\n"))
	f.Add([]byte(`{`), []byte(``), []byte("{\"config\":1}\nnot json\n{\"config\":{\"c\":[1,2]},\"finished\":\"x\"}"))
	f.Fuzz(func(t *testing.T, result, failure, journal []byte) {
		dir := t.TempDir()
		runs := filepath.Join(dir, "runs")
		if err := os.MkdirAll(runs, 0o755); err != nil {
			t.Fatal(err)
		}
		name := FileName(`{"a":1}`)
		for path, b := range map[string][]byte{
			filepath.Join(runs, name):            result,
			filepath.Join(runs, "x.failed.json"): failure,
			filepath.Join(dir, JournalName):      journal,
		} {
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		s, err := OpenStore(dir)
		if err != nil {
			t.Fatal(err)
		}
		before, err := s.Load()
		if err != nil {
			return // refused as a whole (e.g. an oversize journal line): no panic is the property
		}
		check := func(c *Contents) {
			for k, r := range c.Results {
				if k == "" || r.Key != k {
					t.Fatalf("result under key %q has key %q", k, r.Key)
				}
				if filepath.Dir(r.Source) == runs && filepath.Base(r.Source) != FileName(k) {
					t.Fatalf("run file %s holds key %q (want file %s)", r.Source, k, FileName(k))
				}
			}
		}
		check(before)
		n, err := s.Convert()
		if err != nil {
			return
		}
		after, err := s.Load()
		if err != nil {
			t.Fatalf("Load after Convert: %v", err)
		}
		check(after)
		converted := 0
		for k, r := range before.Results {
			if filepath.Dir(r.Source) == runs {
				continue
			}
			a, ok := after.Results[k]
			if !ok || filepath.Dir(a.Source) != runs {
				t.Fatalf("journal result %q has no run file after Convert", k)
			}
			if !equalJSON(a.Output, r.Output) {
				t.Fatalf("journal result %q: output %s after Convert, %s before", k, a.Output, r.Output)
			}
			converted++
		}
		if n != converted {
			t.Fatalf("Convert says %d written, %d journal results had no run file", n, converted)
		}
	})
}
