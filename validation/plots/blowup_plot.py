#!/usr/bin/env python3
"""Plot of `ncsde blowup` output: P(tau <= t) against t with its 95% Wilson band (left) and the
density of the explosion time given tau <= T (right, a normalised histogram), one curve per CSV
(each CSV's first line, a '# ...' description of the run, is its legend label).

usage: blowup_plot.py OUTPUT.png RESULTS.csv [RESULTS.csv ...] [--label TEXT ...]
With --label, one label per CSV replaces the descriptions.
"""
import csv
import math
import sys
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_run(path):
    with open(path) as f:
        lines = f.read().splitlines()
    if not lines or not lines[0].startswith("#"):
        raise ValueError("{}: not an `ncsde blowup` CSV (no description line)".format(path))
    label = lines[0][1:].strip()
    body = [line for line in lines[1:] if not line.startswith("#")]
    rows = list(csv.DictReader(body))
    if not rows:
        raise ValueError("{}: no curve rows".format(path))
    taus = [float(line.split(",")[1]) for line in lines if line.startswith("# tau,")]
    return label, rows, taus


def main(argv):
    args = argv[1:]
    labels = None
    if "--label" in args:
        i = args.index("--label")
        labels = args[i + 1:]
        args = args[:i]
    if len(args) < 2:
        sys.stderr.write(__doc__)
        return 2
    out, paths = args[0], args[1:]
    if labels is not None and len(labels) != len(paths):
        sys.stderr.write("blowup_plot.py: {} labels for {} CSVs\n".format(len(labels), len(paths)))
        return 2
    fig, (ax_p, ax_d) = plt.subplots(1, 2, figsize=(11, 4.8))
    t_end = 0.0
    for k, path in enumerate(paths):
        label, rows, taus = read_run(path)
        if labels is not None:
            label = labels[k]
        elif len(paths) == 1:
            # One run: its description is the figure's title, the legend says what is drawn.
            fig.suptitle("\n".join(textwrap.wrap(label, 120)), fontsize=8)
            label = "P(tau <= t)"
        else:
            label = textwrap.shorten(label, 60, placeholder=" ...")
        t = [0.0] + [float(r["t"]) for r in rows]
        p = [0.0] + [float(r["p"]) for r in rows]
        lo = [0.0] + [float(r["wilson_lower"]) for r in rows]
        hi = [0.0] + [float(r["wilson_upper"]) for r in rows]
        t_end = max(t_end, t[-1])
        line, = ax_p.plot(t, p, label=label)
        ax_p.fill_between(t, lo, hi, color=line.get_color(), alpha=0.2, linewidth=0)
        if len(taus) >= 2:
            bins = max(5, min(40, int(math.sqrt(len(taus)))))
            ax_d.hist(taus, bins=bins, range=(0.0, t[-1]), density=True, histtype="step",
                      color=line.get_color(), label="{} (n = {})".format(label, len(taus)))
    ax_p.set_xlabel("t")
    ax_p.set_ylabel("P(tau <= t)")
    ax_p.set_title("blow-up probability, 95% Wilson band")
    ax_p.set_xlim(0.0, t_end)
    ax_p.set_ylim(bottom=0.0)
    ax_p.grid(alpha=0.3)
    ax_p.legend(fontsize=7)
    ax_d.set_xlabel("explosion time tau")
    ax_d.set_ylabel("density of tau given tau <= T")
    ax_d.set_title("explosion-time distribution")
    ax_d.grid(alpha=0.3)
    if ax_d.has_data():
        ax_d.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
