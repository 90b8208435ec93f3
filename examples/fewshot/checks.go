package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/gdattn/gdattn/examples/internal/fewshot"
	"github.com/gdattn/gdattn/experiment"
	"github.com/gdattn/gdattn/internal/cli"
)

// checkRun checks the flags of a run (or of -plan, -index, -shard, -merge,
// -submit) before any work: the flags that apply only to some models or
// feature maps, the plan's size against -index, the outputs and inputs.
func checkRun(o fewshot.Options, exp experiment.Flags, set cli.Set) error {
	has := map[string]bool{}
	for _, m := range strings.Split(o.Models, ",") {
		m = strings.TrimSpace(m)
		has[m], has["gd"] = true, has["gd"] || strings.HasPrefix(m, "gd")
	}
	err := cli.First(
		cli.Needs(set, has["gd"], "a gd<K> model in -models", gdFlags...),
		cli.Needs(set, has["tf"], "tf in -models", tfFlags...),
		cli.Needs(set, has["gd"] || has["tf"], "a trained model (gd<K> or tf) in -models", trainedFlags...),
		cli.Needs(set, has["lp"], "lp in -models", probeFlags...),
		cli.Needs(set, strings.Contains(o.Features, "cnn"), "cnn in -features", cnnFlags...),
	)
	if err != nil {
		return err
	}
	plan := exp.Plan || exp.PlanJSON
	if o.Out == "" && (plan || exp.Merge || exp.Submit != "" || exp.Worker()) {
		return cli.Usagef("-out is empty: -plan, -index, -shard, -merge and -submit need the folder of the plan's runs")
	}
	e, err := fewshot.New(o)
	if err != nil {
		return cli.Usage(err)
	}
	if _, err := exp.Indices(len(e.Plan.Runs)); err != nil { // -index past the plan, or -index env unset
		return cli.Usage(err)
	}
	if plan {
		return nil // reads -out if it exists; needs no drawings
	}
	if exp.Merge || exp.Submit != "" {
		return cli.OutDir("out", o.Out)
	}
	return cli.First(checkFeatureInputs(o), cli.OutDir("out", o.Out), cli.OutDir("cache", o.Cache))
}

// modelRule accepts lp, tf or gd<K> with 1 <= K <= maxBlocks.
func modelRule(name string, v any) error {
	m := v.(string)
	if m == "lp" || m == "tf" {
		return nil
	}
	var k int
	if _, err := fmt.Sscanf(m, "gd%d", &k); err != nil || k < 1 || k > maxBlocks || fmt.Sprintf("gd%d", k) != m {
		return fmt.Errorf("%s: unknown model %q (want lp, tf or gd<K> with K in 1..%d)", name, m, maxBlocks)
	}
	return nil
}

// checkFeatureInputs refuses a -quickdraw that exists but is not a folder,
// and a run that has neither the drawings nor a cache to read features
// from. (Whether the cache holds the features of this run's settings is
// known only once a run needs them.)
func checkFeatureInputs(o fewshot.Options) error {
	if fi, err := os.Stat(o.QuickDraw); err == nil {
		if !fi.IsDir() { // a file or device: never a folder of drawings, cache or not
			return cli.Usagef("-quickdraw %s: not a folder (%v), want the folder of <category>.ndjson.gz files", o.QuickDraw, fi.Mode().Type())
		}
		return nil
	}
	if fi, err := os.Stat(o.Cache); err == nil && fi.IsDir() {
		return nil
	}
	return cli.Usagef("-quickdraw %s: no such folder (scripts/fetch-quickdraw.sh fetches the drawings), and no feature cache in -cache %s", o.QuickDraw, o.Cache)
}
