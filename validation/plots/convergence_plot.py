#!/usr/bin/env python3
"""Plots of `ncsde convergence --format json` output: one PNG per problem, error against dt on
log-log axes (one line per scheme and kind, with ±2 standard-error bars) and reference slopes 1/2 and 1.

usage: convergence_plot.py RESULTS.json OUTPUT_DIR [SCHEMES]
writes OUTPUT_DIR/convergence_<problem>.png. SCHEMES: the registry's scheme names, comma-separated
(`ncsde convergence` passes them), which fix each scheme's colour whatever the run holds; without
them the colours follow the order of the schemes in the results.
"""
import json
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# Colours by the schemes' place in the registry: no list of names here to keep.
PALETTE = ["tab:blue", "tab:red", "tab:green", "black", "tab:purple", "tab:orange", "tab:brown",
           "tab:pink", "tab:olive", "tab:cyan"]


def scheme_colours(registry, series):
    """A colour per scheme name: the registry's order, then any other scheme of the results."""
    names = list(registry)
    for s in series:
        if s["scheme"] not in names:
            names.append(s["scheme"])
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}
STYLES = {"strong": ("o", "-"), "weak": ("s", "--")}


def reference_line(ax, dts, anchor_dt, anchor_err, slope, label):
    lo, hi = min(dts), max(dts)
    xs = [lo, hi]
    ys = [anchor_err * (x / anchor_dt) ** slope for x in xs]
    ax.plot(xs, ys, color="0.6", linestyle=":", linewidth=1)
    ax.annotate(label, (xs[0], ys[0]), textcoords="offset points", xytext=(2, -10), fontsize=8,
                color="0.4")


def main(argv):
    if len(argv) not in (3, 4):
        sys.stderr.write(__doc__)
        return 2
    with open(argv[1]) as f:
        series = json.load(f)
    out_dir = argv[2]
    colours = scheme_colours(argv[3].split(",") if len(argv) == 4 else [], series)
    os.makedirs(out_dir, exist_ok=True)
    problems = []
    for s in series:
        if s["problem"] not in problems:
            problems.append(s["problem"])
    for problem in problems:
        rows = [s for s in series if s["problem"] == problem]
        fig, ax = plt.subplots(figsize=(6.4, 4.8))
        anchors = []
        for s in rows:
            pts = [(d, e, se) for d, e, se in zip(s["dts"], s["errors"], s["errors_stderr"])
                   if d is not None and e is not None and e > 0]
            if not pts:
                continue
            dts, errs, ses = zip(*pts)
            marker, line = STYLES.get(s["kind"], ("x", "-"))
            order = s["order"]
            label = "{} {}: {} (expected {:g})".format(
                s["scheme"], s["kind"], "n/a" if order is None else "{:.3f}".format(order),
                s["expected"])
            lower = [min(2 * (se or 0.0), 0.999 * e) for e, se in zip(errs, ses)]
            upper = [2 * (se or 0.0) for se in ses]
            ax.errorbar(dts, errs, yerr=[lower, upper], marker=marker, linestyle=line,
                        color=colours[s["scheme"]], label=label, capsize=2, markersize=4)
            anchors.append((dts, errs))
        if anchors:
            all_dts = [d for dts, _ in anchors for d in dts]
            mid = math.exp(sum(math.log(d) for d in all_dts) / len(all_dts))
            geo = [e for _, errs in anchors for e in errs]
            anchor = math.exp(sum(math.log(e) for e in geo) / len(geo))
            reference_line(ax, all_dts, mid, anchor, 0.5, "slope 1/2")
            reference_line(ax, all_dts, mid, anchor, 1.0, "slope 1")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("dt")
        ax.set_ylabel("error (strong: E|V_dt - V|_F, weak: |E f(V_dt) - E f(V)|)")
        ax.set_title("{} ({} paths)".format(problem, rows[0]["paths"]))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
        fig.tight_layout()
        path = os.path.join(out_dir, "convergence_{}.png".format(problem))
        fig.savefig(path, dpi=120)
        plt.close(fig)
        print("wrote", path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
