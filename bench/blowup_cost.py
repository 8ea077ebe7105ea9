#!/usr/bin/python3
"""Cost at accuracy of blow-up probabilities: adaptive against fixed steps.

    bench/blowup_cost.py NCSDE [--paths N] [--threads N] [--out bench/blowup_cost.json]

For P(tau <= T) of the strong-attention covariance SDE (attention, gamma2 = 1, tau0 = 1/2, m = 3,
V0 = V3, T = 2, threshold 1e6: where fixed steps visibly fail, docs/validation.md, "Explosions"), one run per
setting with the same seed and paths:
  * the reference p_ref: the mean of the two finest adaptive runs (increment controller,
    tolerance 0.0125, schemes em and predictor-corrector);
  * the accuracy asked for: |p - p_ref| <= 2 se(p_ref), se the binomial standard error;
  * adaptive em at tolerances 0.2, 0.1, 0.05, ...: the first that reaches the accuracy, and its time;
  * fixed-step em and milstein at dt = 1e-2, 5e-3, 2.5e-3, 1.25e-3, 6.25e-4: the first that
    reaches it, or none (then the ratio is a lower bound: the finest fixed run's time).
Prints the table and the ratio time(fixed)/time(adaptive) at that accuracy; writes the numbers
as JSON. Times are the runs' own ("seconds": the ensemble's wall time), one run each.
"""
import argparse
import json
import subprocess
import sys

V3 = ("1, 0.6324555320336759, 0.25099800796022265; 0.6324555320336759, 1.6, 0.7408103670980852; "
      "0.25099800796022265, 0.7408103670980852, 0.7")


def blowup(ncsde, scheme, control, value, paths, threads, seed, t_end):
    args = [ncsde, "blowup", "--model", "attention", "--gamma2", "1", "--tau0", "0.5", "--V0", V3,
            "--T", str(t_end),
            "--paths", str(paths), "--seed", str(seed), "--threads", str(threads),
            "--scheme", scheme, "--format", "json", "--grid", "1"]
    if control == "fixed":
        args += ["--step-control", "fixed", "--dt", repr(value)]
    else:
        args += ["--step-control", control, "--tolerance", repr(value), "--dt", "0.01"]
    r = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
    return {"scheme": scheme, "control": control, "value": value, "p": r["blown_up_fraction"],
            "stderr": r["blown_up_fraction_stderr"], "seconds": r["seconds"],
            "steps_per_path": r["steps_per_path"]}


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ncsde")
    ap.add_argument("--paths", type=int, default=4000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--T", type=float, default=2.0)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv[1:])
    run = lambda *x: blowup(a.ncsde, *x, a.paths, a.threads, a.seed, a.T)  # noqa: E731
    finest = [run("em", "increment", 0.0125), run("predictor-corrector", "increment", 0.0125)]
    p_ref = sum(r["p"] for r in finest) / 2
    accuracy = 2 * max(r["stderr"] for r in finest)
    rows = []
    adaptive_hit = None
    for tol in (0.2, 0.1, 0.05, 0.025, 0.0125):
        r = finest[0] if tol == 0.0125 else run("em", "increment", tol)
        r["within"] = abs(r["p"] - p_ref) <= accuracy
        rows.append(r)
        if r["within"] and adaptive_hit is None:
            adaptive_hit = r
    fixed_hit = {}
    for scheme in ("em", "milstein"):
        for dt in (1e-2, 5e-3, 2.5e-3, 1.25e-3, 6.25e-4):
            r = run(scheme, "fixed", dt)
            r["within"] = abs(r["p"] - p_ref) <= accuracy
            rows.append(r)
            if r["within"] and scheme not in fixed_hit:
                fixed_hit[scheme] = r
        if scheme not in fixed_hit:
            fixed_hit[scheme] = None
    print("P(tau <= {:g}), strong attention m = 3, {} paths: p_ref = {:.4f}, accuracy ±{:.4f}".format(
        a.T, a.paths, p_ref, accuracy))
    print("| scheme | steps | P(tau <= T) | within accuracy | steps/path | s |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        setting = ("tol {:g}".format(r["value"]) if r["control"] != "fixed"
                   else "fixed dt {:g}".format(r["value"]))
        print("| {} | {} | {:.4f} ± {:.4f} | {} | {:.0f} | {:.2f} |".format(
            r["scheme"], setting, r["p"], r["stderr"], "yes" if r["within"] else "no",
            r["steps_per_path"], r["seconds"]))
    ratios = {}
    for scheme, hit in fixed_hit.items():
        if adaptive_hit is None:
            ratios[scheme] = None
            continue
        if hit is not None:
            ratios[scheme] = {"ratio": hit["seconds"] / adaptive_hit["seconds"], "bound": False}
        else:
            finest_fixed = [r for r in rows if r["scheme"] == scheme and r["control"] == "fixed"][-1]
            ratios[scheme] = {"ratio": finest_fixed["seconds"] / adaptive_hit["seconds"],
                              "bound": True}
        print("time({} fixed) / time(adaptive em) at the accuracy: {}{:.2f}".format(
            scheme, ">= " if ratios[scheme]["bound"] else "", ratios[scheme]["ratio"]))
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"T": a.T, "paths": a.paths, "p_ref": p_ref, "accuracy": accuracy,
                       "rows": rows, "ratios": ratios}, f, indent=2)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
