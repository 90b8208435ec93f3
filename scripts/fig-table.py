#!/usr/bin/env python3
"""Print a figure's CSV (examples/synthetic's fig2.csv or fig4.csv, as -merge writes
them) as the markdown table of examples/synthetic/RESULTS.md: one row per L, top-1
and NLL (mean ± std over the seeds) per series, in the CSV's order. A CSV with
several panels (fig2: one per kernel) needs the panel named.

    python3 scripts/fig-table.py docs/results/synthetic-fig4.csv
    python3 scripts/fig-table.py docs/results/synthetic-fig2.csv "RBF kernel"
"""
import csv
import sys


def main(path, panel=None):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    panels = sorted({r["panel"] for r in rows})
    if panel is None and len(panels) > 1:
        sys.exit("fig-table.py: %s has panels %s: name one" % (path, ", ".join(panels)))
    if panel is not None and panel not in panels:
        sys.exit("fig-table.py: no panel %r in %s (it has %s)" % (panel, path, ", ".join(panels)))
    names, xs, cell = [], [], {}
    for r in rows:
        if panel is None or r["panel"] == panel:
            if r["series"] not in names:
                names.append(r["series"])
            if r["x"] not in xs:
                xs.append(r["x"])
            vals = tuple(float(r[k]) for k in ("top1_mean", "top1_std", "nll_mean", "nll_std"))
            cell[(r["x"], r["series"])] = "%.3f ± %.3f | %.3f ± %.3f" % vals
    print("| L | " + " | ".join("%s: top-1 | %s: NLL" % (n, n) for n in names) + " |")
    print("| ---: |" + " ---: | ---: |" * len(names))
    for x in xs:
        print("| %s | " % x + " | ".join(cell.get((x, n), "– | –") for n in names) + " |")


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: fig-table.py FIG.csv [PANEL]")
    main(*sys.argv[1:])
