package theorem2

import (
	"fmt"
	"math"
	"path/filepath"

	"github.com/gdattn/gdattn/examples/internal/sweep"
	"github.com/gdattn/gdattn/internal/cli"
	"github.com/gdattn/gdattn/internal/infile"
	"github.com/gdattn/gdattn/internal/strictjson"
)

// CheckReplot reads the results file of -replot before Redraw redraws it
// and refuses (a usage error naming the file) one that is not a results
// file Run wrote: Redraw indexes its categories and divides by its batch.
func CheckReplot(path string) error {
	raw, err := cli.ReadInput("replot", path, cli.MaxResultsBytes)
	if err != nil {
		return err
	}
	var res results
	if err := strictjson.Decode(raw, &res); err != nil {
		return cli.Usagef("-replot %s: %v", path, err)
	}
	// Redraw rewrites the file and writes the figure beside it.
	if err := cli.OutFile("replot", path); err != nil {
		return err
	}
	return cli.InFile(path, checkResults(&res))
}

// checkResults checks what Redraw relies on in res.
func checkResults(res *results) error {
	if err := cli.First(
		cli.Check("task", res.Task, cli.OneOf(Tasks...)),
		cli.Check("batch", res.Batch, cli.Positive),
		cli.Check("contexts", res.Contexts, cli.NonNegative),
	); err != nil {
		return err
	}
	for i, kr := range res.Kernels {
		if kr == nil {
			return fmt.Errorf("kernels[%d] is null", i)
		}
		if err := checkKernelResult(fmt.Sprintf("kernels[%d] (%s): ", i, kr.Kernel), kr); err != nil {
			return err
		}
	}
	return nil
}

// checkKernelResult checks what redraw and printKernel rely on in one
// kernel's result; where (empty or ending in ": ") prefixes the errors.
func checkKernelResult(where string, kr *kernelResult) error {
	if len(kr.GD.Cats) < 4 {
		return fmt.Errorf("%sgd: %d categories, want at least 4", where, len(kr.GD.Cats))
	}
	c := kr.GD.Cats[3]
	if err := cli.First(
		cli.Check(where+"gd: contexts", kr.GD.Contexts, cli.NonNegative),
		cli.Check(where+"gd: categories[3].rank", c.Rank, cli.NonNegative),
		cli.Check(where+"gd: categories[3].f", c.F, cli.NonNegative),
		cli.Check(where+"scalar_fit: NewtonContexts", kr.Fit.NewtonContexts, cli.NonNegative),
	); err != nil {
		return err
	}
	for j, p := range kr.Perturbed {
		if (p.ChangeSymmetry == nil) != (p.ChangeAll == nil) {
			return fmt.Errorf("%sperturbed[%d]: ChangeSymmetry and ChangeAll must be both set or both absent", where, j)
		}
		if p.ChangeSymmetry != nil {
			if err := cli.Check(fmt.Sprintf("%sperturbed[%d]: eps", where, j), p.Eps, cli.Positive); err != nil {
				return err
			}
		}
	}
	return nil
}

// Redraw recomputes the resolutions and redraws the figure of a results
// file written by Run, rewriting the file, and copies the figure to figdir
// (unless empty). It refuses a file whose numbers it cannot use; CheckReplot
// also says so as a usage error, and checks that the file can be rewritten.
func Redraw(path, figdir string) error {
	raw, err := infile.ReadFile(path, cli.MaxResultsBytes)
	if err != nil {
		return err
	}
	var res results
	if err := strictjson.Decode(raw, &res); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := checkResults(&res); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, kr := range res.Kernels {
		kr.ScalarsPFitCorrected = scalarsPFitCorrected(kr, res.Batch)
		kr.Resolution = nil
		if r := resolution(kr); !math.IsNaN(r) {
			kr.Resolution = &r
		}
	}
	if err := sweep.WriteJSON(path, &res); err != nil {
		return err
	}
	if res.Figure == "" {
		return nil
	}
	res.Figure = filepath.Join(filepath.Dir(path), "theorem2_"+res.Task+".png")
	return saveFigure(&res, figdir)
}
