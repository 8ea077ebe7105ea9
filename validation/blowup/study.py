#!/usr/bin/env python3
"""Convergence of blow-up laws: P(tau <= 2), P(tau <= 10) and the median explosion time (given
tau <= 10) of the transformer and strong-attention covariance SDEs as the adaptive tolerance halves,
for two schemes, beside the fixed-step schemes as their step halves. Runs `ncsde blowup` (one run
per setting, T = 10, the curve read at t = 2 and t = 10) and prints Markdown tables.

usage: study.py NCSDE [--quick] [--check] [--paths N] [--threads N] [--out FILE.md]

--check asserts, for every model and adaptive scheme:
  * the estimates settle: over the three finest tolerances, successive P(tau <= t) differ by at
    most 2 standard errors (the larger
    binomial standard error of the two) and successive medians by at most 2 standard errors of the
    median (from its distribution-free 95% interval, half-width / 1.96);
  * the schemes agree at the finest tolerance: |p_A - p_B| <= 2 sqrt(se_A^2 + se_B^2), and the
    medians likewise;
and exits 1 when one fails. --quick is the reduced size of the validation test (T = 4, 1500 paths,
tolerances 0.05, 0.025, 0.0125, no fixed-step rows).
"""
import argparse
import json
import math
import subprocess
import sys

V3 = ("1, 0.6324555320336759, 0.25099800796022265; 0.6324555320336759, 1.6, 0.7408103670980852; "
      "0.25099800796022265, 0.7408103670980852, 0.7")

MODELS = [
    ("transformer (gamma2 = 1/2, tau0 = 1)", ["--model", "transformer"]),
    ("strong attention (gamma2 = 1, tau0 = 1/2)",
     ["--model", "attention", "--gamma2", "1", "--tau0", "0.5"]),
]


def run(ncsde, model_flags, scheme, control, value, t_end, paths, threads, seed):
    args = [ncsde, "blowup", "--V0", V3, "--T", str(t_end), "--paths", str(paths),
            "--seed", str(seed), "--threads", str(threads), "--scheme", scheme,
            "--format", "json", "--grid", str(int(round(t_end)))] + model_flags
    if control == "fixed":
        args += ["--step-control", "fixed", "--dt", repr(value)]
    else:
        args += ["--step-control", control, "--tolerance", repr(value), "--dt", "0.01"]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def p_at(report, t):
    for c in report["curve"]:
        if abs(c["t"] - t) < 1e-9:
            return c["p"], c["stderr"]
    raise KeyError(t)


def median(report):
    m = report["explosion_time_quantiles"]["q0.5"]
    ci = report["explosion_time_median_ci95"]
    se = (ci[1] - ci[0]) / (2 * 1.959963984540054) if ci else float("nan")
    return m, se


def table_row(scheme, setting, ps, med, report):
    """One Markdown row: the probabilities and median with their standard errors, the cost."""
    return ("| {} | {} | ".format(scheme, setting) +
            " | ".join("{:.4f} ± {:.4f}".format(p, se) for p, se in ps) +
            " | {:.4f} ± {:.4f} | {:.0f} | {:.1f} |".format(med[0], med[1],
                                                            report["steps_per_path"],
                                                            report["seconds"]))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ncsde")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--paths", type=int)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--out")
    a = ap.parse_args(argv[1:])
    t_end = 4.0 if a.quick else 10.0
    paths = a.paths or (1500 if a.quick else 4000)
    tolerances = [0.05, 0.025, 0.0125] if a.quick else [0.2, 0.1, 0.05, 0.025, 0.0125]
    # The settling check covers the three finest tolerances (the coarse ones are there to show
    # where the estimate moves).
    settle_from = tolerances[-3]
    # Fixed-step rows beside (Milstein's Lévy areas make its small steps costly: two of them).
    fixed_steps = {} if a.quick else {"em": [1e-2, 5e-3, 2.5e-3, 1.25e-3],
                                      "milstein": [1e-2, 5e-3]}
    adaptive_schemes = ["em", "predictor-corrector"]
    times = [2.0, t_end]
    lines = []
    failures = []

    def emit(s=""):
        lines.append(s)
        print(s, flush=True)

    emit("Blow-up laws, m = 3, V0 = V3, threshold 1e6, {} paths, seed {}; adaptive runs: "
         "increment controller, largest step 0.01; median of tau given tau <= {:g} with its "
         "standard error.".format(paths, a.seed, t_end))
    for label, flags in MODELS:
        emit()
        emit("#### " + label)
        emit()
        header = "| scheme | steps | " + " | ".join("P(tau <= {:g})".format(t) for t in times) + \
                 " | median tau | steps/path | s |"
        emit(header)
        emit("|" + "---|" * (header.count("|") - 1))
        finest = {}
        for scheme in adaptive_schemes:
            previous = None
            for tol in tolerances:
                r = run(a.ncsde, flags, scheme, "increment", tol, t_end, paths, a.threads, a.seed)
                ps = [p_at(r, t) for t in times]
                med = median(r)
                emit(table_row(scheme, "tol {:g}".format(tol), ps, med, r))
                if previous is not None and tol < settle_from:
                    for t, (p, se), (q, sq) in zip(times, ps, previous[0]):
                        if abs(p - q) > 2 * max(se, sq):
                            failures.append("{} {}: P(tau <= {:g}) moved {:.4f} -> {:.4f} from tol "
                                            "{:g} to {:g} (more than 2 standard errors)".format(
                                                label, scheme, t, q, p, tol * 2, tol))
                    m0, s0 = previous[1]
                    if abs(med[0] - m0) > 2 * max(med[1], s0):
                        failures.append("{} {}: the median moved {:.4f} -> {:.4f} at tol {:g}".format(
                            label, scheme, m0, med[0], tol))
                previous = (ps, med)
            finest[scheme] = previous
        for scheme, steps in fixed_steps.items():
            for dt in steps:
                r = run(a.ncsde, flags, scheme, "fixed", dt, t_end, paths, a.threads, a.seed)
                ps = [p_at(r, t) for t in times]
                med = median(r)
                emit(table_row(scheme, "fixed dt {:g}".format(dt), ps, med, r))
        a_ps, a_med = finest[adaptive_schemes[0]]
        b_ps, b_med = finest[adaptive_schemes[1]]
        for t, (p, se), (q, sq) in zip(times, a_ps, b_ps):
            if abs(p - q) > 2 * math.hypot(se, sq):
                failures.append("{}: at the finest tolerance the schemes disagree on P(tau <= {:g}): "
                                "{:.4f} vs {:.4f}".format(label, t, p, q))
        if abs(a_med[0] - b_med[0]) > 2 * math.hypot(a_med[1], b_med[1]):
            failures.append("{}: at the finest tolerance the schemes disagree on the median: "
                            "{:.4f} vs {:.4f}".format(label, a_med[0], b_med[0]))
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    if failures:
        print("\n".join("FAIL: " + f for f in failures), file=sys.stderr)
    if a.check and failures:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
