package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/internal/cli/clitest"
)

// TestCommandLine runs the theorem2 binary on bad command lines and bad
// -replot files: each must be refused before any work, with exit status 2
// and one line on stderr naming the flag or file, never a stack trace.
func TestCommandLine(t *testing.T) {
	bin := clitest.Build(t, ".")
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// cats is the four categories redraw reads at the GD point.
	const cats = `"categories": [{}, {}, {}, {"rank": 2, "f": 1.5}]`
	ok := file("ok.json", `{"task": "uniform", "n": 6, "batch": 20, "contexts": 400, "kernels": [{"kernel": "linear", "gd": {"contexts": 400, `+cats+`}}]}`)
	a := func(s ...string) []string { return s }
	clitest.Run(t, bin, "theorem2", []clitest.Case{
		clitest.OK("help", a("-h"), "Usage:", "-replot"),
		clitest.OK("replot", a("-replot", ok, "-figdir", "")),
		clitest.Usage("stray argument", a("-quick", "softmax"), `unexpected argument "softmax"`),
		clitest.Usage("unknown flag", a("-kernel", "rbf"), "-kernel"),
		clitest.Usage("unparsable int", a("-N", "ten"), "-N"),
		clitest.Usage("zero N", a("-N", "0"), "-N"),
		clitest.Usage("huge N", a("-N", "1000000000"), "-N"),
		clitest.Usage("batch of one", a("-batch", "1"), "-batch"),
		clitest.Usage("nb of one", a("-nb", "1"), "-nb"),
		clitest.Usage("zero pert-nb", a("-pert-nb", "0"), "-pert-nb"),
		clitest.Usage("negative scale", a("-scales", "0.1,-1"), "-scales"),
		clitest.Usage("NaN scale", a("-scales", "NaN"), "-scales"),
		clitest.Usage("negative dirs", a("-dirs", "-1"), "-dirs"),
		clitest.Usage("zero adam-steps", a("-adam-steps", "0"), "-adam-steps"),
		clitest.Usage("negative newton", a("-newton", "-1"), "-newton"),
		clitest.Usage("newton-batches of one", a("-newton-batches", "1"), "-newton-batches"),
		clitest.Usage("zero hess-batches", a("-hess-batches", "0"), "-hess-batches"),
		clitest.Usage("NaN aniso", a("-task", "anisotropic", "-aniso", "NaN"), "-aniso: NaN is not a finite positive number"),
		clitest.Usage("aniso without its task", a("-aniso", "2"), "-aniso needs -task anisotropic"),
		clitest.Usage("unknown task", a("-task", "cube"), "-task", "cube"),
		clitest.Usage("unknown kernel", a("-kernels", "softmax,cosine"), "-kernels", "cosine"),
		clitest.Usage("run flag with replot", a("-replot", ok, "-N", "10"), "-N does not apply to -replot"),
		clitest.Usage("quick with replot", a("-replot", ok, "-quick"), "-quick does not apply to -replot"),
		clitest.Usage("missing replot file", a("-replot", filepath.Join(dir, "nope.json")), "-replot", "nope.json"),
		clitest.Usage("garbage replot file", a("-replot", file("garbage.json", "results?")), "garbage.json"),
		clitest.Usage("nested replot file", a("-replot", file("nested.json", strings.Repeat(`{"kernels": [`, 20000))), "nested.json"),
		clitest.Usage("huge number", a("-replot", file("huge.json", `{"task": "uniform", "batch": 1e400}`)), "huge.json"),
		clitest.Usage("no task", a("-replot", file("empty.json", `{}`)), "empty.json", "task"),
		clitest.Usage("task naming a path", a("-replot", file("path.json", `{"task": "../../x", "batch": 1}`)), "path.json", "task"),
		clitest.Usage("zero batch", a("-replot", file("batch.json", `{"task": "uniform", "batch": 0}`)), "batch.json", "batch"),
		clitest.Usage("null kernel", a("-replot", file("null.json", `{"task": "uniform", "batch": 1, "kernels": [null]}`)), "null.json", "kernels[0]"),
		clitest.Usage("no categories", a("-replot", file("cats.json", `{"task": "uniform", "batch": 1, "kernels": [{"kernel": "rbf"}]}`)), "cats.json", "categories"),
		clitest.Usage("negative rank", a("-replot", file("rank.json", `{"task": "uniform", "batch": 1, "contexts": 400, "kernels": [{"kernel": "rbf", "gd": {"contexts": 400, "categories": [{}, {}, {}, {"rank": -3}]}}]}`)), "rank.json", "rank"),
		clitest.Usage("half a change", a("-replot", file("change.json", `{"task": "uniform", "batch": 1, "kernels": [{"kernel": "rbf", "gd": {`+cats+`}, "perturbed": [{"eps": 0.1, "ChangeSymmetry": {}}]}]}`)), "change.json", "ChangeAll"),
		clitest.Usage("zero eps", a("-replot", file("eps.json", `{"task": "uniform", "batch": 1, "kernels": [{"kernel": "rbf", "gd": {`+cats+`}, "perturbed": [{"eps": 0, "ChangeSymmetry": {}, "ChangeAll": {}}]}]}`)), "eps.json", "eps"),
		// A file that passes the checks but whose points cannot be drawn
		// on a log axis: the drawing fails once redraw has started.
		clitest.Failure("zero norms", a("-replot", file("zeros.json", `{"task": "uniform", "batch": 1, "figure": "x.png", "kernels": [{"kernel": "rbf", "gd": {`+cats+`}, "perturbed": [{"eps": 0.1, "ChangeSymmetry": {}, "ChangeAll": {}}, {"eps": 0.3, "ChangeSymmetry": {}, "ChangeAll": {}}]}]}`), "-figdir", ""), "theorem2_uniform.png", "log axis"),
	})
}
