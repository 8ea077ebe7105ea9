#!/usr/bin/env python3
"""The fidelity study's table (scripts/fidelity_study.sh): one row per `ncsde validate --format
json` report.

Usage: fidelity_table.py NAME=REPORT.json ...

Columns, all from the report: the largest |z| of the smooth-statistic gaps E f(network) − E f(SDE)
at the smallest and the largest width (z = gap / SE; two independent SDE runs give |z| ≲ 2.5), the
mean KS distance at the smallest and largest width against the two-run noise floor, the rate β of
the gaps fitted as C_f·n^−β (± SE, χ²/dof), the Bonferroni p of the right SDE at the largest width,
the wrong SDEs' Bonferroni p there, and the right SDE's gaps extrapolated to n → ∞ (the p of
"every intercept is 0", information).
"""

import json
import sys


def smooth_z(row):
    return max(abs(c["value"] - c["reference"]) / c["stderr"] for c in row["comparisons"]
               if c["statistic"].startswith("E "))


def p(x):
    return f"{x:.1e}" if x < 1e-3 else f"{x:.3f}"


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    first = None
    print("| configuration | max \\|z\\| at n = 32 → 256 (floor) | mean KS n = 32 → 256 (floor) | "
          "rate β ± SE (χ²/dof) | Bonferroni p, right SDE at n = 256 | wrong SDEs at n = 256 | "
          "right SDE at n → ∞ (β) |")
    print("|---|---|---|---|---|---|---|")
    for arg in sys.argv[1:]:
        name, _, path = arg.rpartition("=")
        with open(path) as f:
            r = json.load(f)
        first = first or r
        widths = r["widths"]
        rows = r["rows"]
        nets = rows[: len(widths)]
        floor = rows[len(widths)]
        wrong = rows[len(widths) + 1:]
        fit = r.get("smooth_fit") or {}
        rate = (f"{fit['exponent']:.2f} ± {fit['exponent_stderr']:.2f} "
                f"({fit['chi2']:.0f}/{fit['dof']})" if fit.get("resolved") else "not resolved")
        wrong_p = ", ".join(f"{w['source'].removeprefix('wrong SDE: ')} {p(w['bonferroni_p'])}"
                            for w in wrong) or "—"
        limit = r.get("limit") or []
        lim = f"{p(limit[0]['bonferroni_p'])} ({r['limit_exponent']:.2f})" if limit else "—"
        print(f"| {name} | {smooth_z(nets[0]):.1f} → {smooth_z(nets[-1]):.1f} "
              f"({smooth_z(floor):.1f}) | {r['mean_ks'][0]:.4f} → {r['mean_ks'][-1]:.4f} "
              f"({r['floor_mean_ks']:.4f}) | {rate} | {p(nets[-1]['bonferroni_p'])} | {wrong_p} "
              f"| {lim} |")
    if first:
        print(f"\n{first['networks']} networks per width and {first['paths']} SDE paths (EM, dt = "
              f"{first['dt']:g}), T = {first['T']:g}, n = {', '.join(map(str, first['widths']))}, "
              f"seed 1; α = {first['alpha']}.")


if __name__ == "__main__":
    main()
