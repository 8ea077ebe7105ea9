#!/usr/bin/env python3
"""Plot of `ncsde rank-collapse` output: unshaped against shaped attention, two panels against
depth l (symmetric-log axis, so the first layers and the whole depth both show): the mean
correlation (with ±2 standard-error bands) and the median normalised smallest eigenvalue lambda_min(V)/(tr V/m) (log
axis, with the interquartile band). Values at or below the round-off floor 1e-16 (a numerically
rank-one V) are drawn at the floor, marked by a dotted line.

usage: rank_collapse_plot.py RESULTS.csv OUTPUT_DIR [TITLE]
writes OUTPUT_DIR/rank_collapse.png
"""
import csv
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLOURS = {"unshaped": "tab:red", "shaped": "tab:blue"}
LABELS = {"unshaped": "unshaped: A = Softmax(S)", "shaped": "shaped: A = I + Softmax(S) - 11^T/m"}
FLOOR = 1e-16


def read_rows(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise ValueError("{}: no rows".format(path))
    return rows


def column(rows, name):
    return [float(r[name]) for r in rows]


def floored(values):
    return [v if math.isfinite(v) and v > FLOOR else FLOOR for v in values]


def main(argv):
    if len(argv) not in (3, 4):
        sys.stderr.write(__doc__)
        return 2
    rows = read_rows(argv[1])
    out_dir = argv[2]
    title = argv[3] if len(argv) == 4 else "rank collapse"
    os.makedirs(out_dir, exist_ok=True)
    depth = column(rows, "depth")
    t = column(rows, "t")
    n = depth[-1] / t[-1] if t[-1] > 0 else 1.0

    fig, (ax_rho, ax_lambda) = plt.subplots(1, 2, figsize=(11, 4.4))
    for form in ("unshaped", "shaped"):
        colour = COLOURS[form]
        rho = column(rows, form + "_mean_rho")
        se = [s if math.isfinite(s) else 0.0 for s in column(rows, form + "_mean_rho_stderr")]
        ax_rho.plot(depth, rho, marker="o", markersize=3, color=colour, label=LABELS[form])
        ax_rho.fill_between(depth, [r - 2 * s for r, s in zip(rho, se)],
                            [r + 2 * s for r, s in zip(rho, se)], color=colour, alpha=0.2,
                            linewidth=0)
        median = floored(column(rows, form + "_lambda_median"))
        q25 = floored(column(rows, form + "_lambda_q25"))
        q75 = floored(column(rows, form + "_lambda_q75"))
        ax_lambda.plot(depth, median, marker="o", markersize=3, color=colour, label=LABELS[form])
        ax_lambda.fill_between(depth, q25, q75, color=colour, alpha=0.2, linewidth=0)

    for ax in (ax_rho, ax_lambda):
        ax.set_xscale("symlog", linthresh=1)
        ax.set_xlim(0, depth[-1])
        ax.set_xlabel("depth l  (t = l/n, n = {:g})".format(n))
        ax.grid(True, which="both", alpha=0.3)
    ax_rho.set_ylabel("mean rho^ab over pairs a < b (±2 s.e.)")
    ax_rho.set_ylim(min(0.0, ax_rho.get_ylim()[0]), 1.02)
    ax_rho.axhline(1.0, color="0.5", linestyle=":", linewidth=1)
    ax_rho.legend(fontsize=8, loc="lower right")
    ax_lambda.set_yscale("log")
    ax_lambda.set_ylabel("median lambda_min(V)/(tr V/m)  (IQR band)")
    ax_lambda.axhline(FLOOR, color="0.5", linestyle=":", linewidth=1)
    ax_lambda.annotate("round-off floor", (depth[-1], FLOOR), textcoords="offset points",
                       xytext=(-2, 3), ha="right", fontsize=7, color="0.4")
    ax_lambda.legend(fontsize=8, loc="center left")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path = os.path.join(out_dir, "rank_collapse.png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print("wrote", path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
