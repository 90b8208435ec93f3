package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/internal/cli/clitest"
)

// TestPlanCommandLine: -plan prints the full plan of RESULTS.md's tables;
// -index runs one tiny run into its own result file (a second -index of it
// is skipped); -merge lists the missing runs and refuses the tables without
// -partial; bad plan flags are refused with one line naming the flag.
func TestPlanCommandLine(t *testing.T) {
	bin := clitest.Build(t, ".")
	corpus := writeCorpus(t)
	res := filepath.Join(t.TempDir(), "results")
	code, stdout, stderr := clitest.Exec(t, bin, "-plan")
	if code != 0 || !strings.HasPrefix(stdout, "plan language-small: 11 runs, estimated ") {
		t.Fatalf("-plan: exit %d, stdout %.200q, stderr %q", code, stdout, stderr)
	}
	for _, w := range []string{"tinystories gd seed 1 [main,kernels]", "tinystories gd-diagp seed 1 [diag-p]",
		"tinystories gdff-rbf seed 1 [kernels]", "tinystories+gutenberg gpt seed 1 [combined]"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("-plan does not list %q", w)
		}
	}
	tiny := []string{"-preset", "tiny", "-corpora", "tinystories", "-variants", "gd,gpt", "-steps", "2", "-stories", "3",
		"-tinystories", corpus, "-results", res, "-quiet"}
	a := func(s ...string) []string { return append(append([]string(nil), tiny...), s...) }
	if code, stdout, stderr = clitest.Exec(t, bin, a("-index", "1")...); code != 0 {
		t.Fatalf("-index 1: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "== run 1: tinystories gpt seed 1") || !strings.Contains(stdout, "\n| GPT (1 layer) |") {
		t.Errorf("-index 1 printed %q", stdout)
	}
	files, _ := filepath.Glob(filepath.Join(res, "runs", "*.json"))
	if len(files) != 1 {
		t.Fatalf("-index 1 left the result files %v, want one", files)
	}
	before, _ := os.ReadFile(files[0])
	if code, stdout, _ = clitest.Exec(t, bin, a("-index", "1")...); code != 0 || strings.Contains(stdout, "| GPT") {
		t.Errorf("-index 1 again: exit %d, ran again: %q", code, stdout)
	}
	if after, _ := os.ReadFile(files[0]); string(after) != string(before) {
		t.Errorf("-index 1 again changed its result file")
	}
	code, stdout, stderr = clitest.Exec(t, bin, a("-plan")...)
	if code != 0 || !strings.Contains(stdout, "2 runs") || !strings.Contains(stdout, "gpt seed 1 [main,kernels] done") {
		t.Errorf("-plan after a run: exit %d, %q %q", code, stdout, stderr)
	}
	code, stdout, stderr = clitest.Exec(t, bin, a("-merge")...)
	if code != 1 || !strings.Contains(stdout, "missing: 0\n") || !strings.Contains(stderr, "1 of 2 runs of plan language-tiny have no result") {
		t.Errorf("-merge with a run missing: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(res, "language.md")); err == nil {
		t.Errorf("a refused -merge wrote language.md")
	}
	code, stdout, stderr = clitest.Exec(t, bin, a("-merge", "-partial")...)
	if code != 0 || !strings.Contains(stdout, "PARTIAL: 1 of 2 runs") || !strings.Contains(stdout, "| GPT (1 layer) | 256 |") {
		t.Errorf("-merge -partial: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	for _, f := range []string{"language.md", "language.json", "language.csv"} {
		if _, err := os.Stat(filepath.Join(res, f)); err != nil {
			t.Errorf("-merge -partial: %v", err)
		}
	}
	clitest.Run(t, bin, "language", []clitest.Case{
		clitest.OK("plan help", []string{"-plan", "-h"}, "Flags of the plan:", "-variants", "-shard"),
		clitest.Usage("unknown variant", []string{"-variants", "gd,lstm", "-plan"}, "-variants"),
		clitest.Usage("unknown corpus", []string{"-corpora", "wiki", "-plan"}, "-corpora"),
		clitest.Usage("no run", []string{"-corpora", "tinystories+gutenberg", "-variants", "gd-rbf", "-plan"}, "-variants"),
		clitest.Usage("index past the plan", a("-index", "2"), "-index 2", "0..1"),
		clitest.Usage("index env unset", a("-index", "env"), "-index env"),
		clitest.Usage("partial without merge", a("-partial"), "-partial"),
		clitest.Usage("two modes", a("-plan", "-merge"), "exclude"),
		clitest.Usage("bad shard", a("-shard", "2/2"), "-shard"),
		clitest.Usage("zero seeds", a("-seeds", "0", "-plan"), "-seeds"),
		clitest.Usage("missing corpus", []string{"-tinystories", "/nonexistent/ts.txt", "-index", "0"}, "-tinystories"),
		clitest.Usage("missing gutenberg", []string{"-tinystories", corpus, "-gutenberg", "/nonexistent/g", "-index", "8"}, "-gutenberg"),
		clitest.Usage("time without submit", a("-time", "1:00:00"), "-time needs -submit"),
	})
}
