#!/usr/bin/python3
"""The CUDA backend against the CPU engine, on a machine with a GPU (scripts/gpu_check.sh runs it).

For every built-in model (each attention variant, the shaped activations) at m = 2, 3, 4, 8, one
ensemble on the GPU and the same on the CPU, every path written (`ncsde simulate --out`, doubles
to 17 digits):
  - models whose coefficients use only +, −, ×, ÷ and √ (attention, shaped activations) must give
    the same paths bit for bit: every CSV row equal, or the check fails;
  - models with the ReLU drift (mlp, resnet, transformer) call arccos, which the GPU's libm may
    round differently from the CPU's in the last bit: their rows are counted equal or not, and the
    largest relative difference of the states of the paths that end alike is reported; their laws
    must agree: a two-sample Kolmogorov–Smirnov test on every entry of V_T over completed paths at
    10^5 paths, GPU against CPU, rejected below 10^-3 after Bonferroni over the entries.
Also: the device's name in the output, a device that does not exist failing with a named error,
and the emulated device (the GPU's kernels on the CPU) equal to the CPU bit for bit.

    /usr/bin/python3 tests/gpu/check_gpu.py --ncsde build-gpu/ncsde [--out report.json] [--quick]
Exit status 0 when every check passes, 1 otherwise.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

CASES = [
    ("mlp", [], True),
    ("resnet", ["--model", "resnet"], True),
    ("attention", ["--model", "attention", "--gamma2", "0.6", "--tau0", "0.8"], False),
    ("attention, 2 heads, W^O", ["--model", "attention", "--gamma2", "0.6", "--tau0", "0.8",
                                 "--heads", "2", "--output-projection"], False),
    ("causal attention", ["--model", "attention", "--gamma2", "0.6", "--tau0", "0.8",
                          "--causal"], False),
    ("transformer", ["--model", "transformer", "--gamma2", "0.6", "--tau0", "0.8"], True),
    ("causal transformer", ["--model", "transformer", "--gamma2", "0.6", "--tau0", "0.8",
                            "--causal"], True),
    ("shaped tanh", ["--model", "shaped-tanh", "--a", "0.8"], False),
    ("shaped activation", ["--model", "shaped-activation", "--d2", "1", "--d3", "-1"], False),
]
SIZES = [2, 3, 4, 8]


def initial_state(m):
    """V0 with unit diagonal and correlations 0.5^|a−b| (positive definite)."""
    rows = [",".join(repr(0.5 ** abs(a - b)) for b in range(m)) for a in range(m)]
    return ";".join(rows)


def simulate(ncsde, flags, m, device, paths, out_csv=None, t_end=0.5, dt=0.01):
    cmd = [ncsde, "simulate", "--V0", initial_state(m), "--T", str(t_end), "--dt", str(dt),
           "--paths", str(paths), "--seed", "11", "--format", "json", "--device", device] + flags
    if out_csv:
        cmd += ["--out", out_csv]
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, (json.loads(p.stdout) if p.returncode == 0 else None), p.stderr


def read_rows(path):
    with open(path) as f:
        lines = f.read().splitlines()
    return lines[0], lines[1:]


def relative_difference(a, b):
    """Largest |x − y|/max(1, |y|) over the state entries of two rows that end alike."""
    xa, xb = a.split(","), b.split(",")
    if xa[1] != xb[1]:
        return None  # different status
    worst = 0.0
    for x, y in zip(xa[3:], xb[3:]):
        x, y = float(x), float(y)
        if math.isfinite(x) and math.isfinite(y):
            worst = max(worst, abs(x - y) / max(1.0, abs(y)))
    return worst


def ks_p_value(x, y):
    """Two-sample Kolmogorov–Smirnov statistic and its asymptotic p-value."""
    x, y = sorted(x), sorted(y)
    n, m = len(x), len(y)
    i = j = 0
    d = 0.0
    while i < n and j < m:
        v = min(x[i], y[j])
        while i < n and x[i] <= v:
            i += 1
        while j < m and y[j] <= v:
            j += 1
        d = max(d, abs(i / n - j / m))
    en = math.sqrt(n * m / (n + m))
    lam = (en + 0.12 + 0.11 / en) * d
    return d, kolmogorov_q(lam)


def kolmogorov_q(lam):
    """P(K > λ) of the Kolmogorov distribution: the theta series for small λ, the alternating
    series for large λ (each converges fast where it is used)."""
    if lam <= 0.0:
        return 1.0
    if lam < 1.18:
        y = math.exp(-math.pi ** 2 / (8.0 * lam * lam))
        s = sum(y ** ((2 * k - 1) ** 2) for k in range(1, 20))
        return min(1.0, max(0.0, 1.0 - math.sqrt(2.0 * math.pi) / lam * s))
    p = 2.0 * sum((-1) ** (k - 1) * math.exp(-2.0 * k * k * lam * lam) for k in range(1, 101))
    return min(1.0, max(0.0, p))


def law_check(ncsde, flags, m, paths, tmp, gpu_device):
    """KS per entry of V_T over completed paths, GPU against CPU."""
    samples = {}
    for device in (gpu_device, "cpu"):
        csv = os.path.join(tmp, f"law_{device}.csv")
        rc, _, err = simulate(ncsde, flags, m, device, paths, csv)
        if rc != 0:
            return {"error": err.strip()}
        header, rows = read_rows(csv)
        names = header.split(",")[3:]
        cols = [[] for _ in names]
        for r in rows:
            f = r.split(",")
            if f[1] == "completed":
                for c, x in enumerate(f[3:]):
                    cols[c].append(float(x))
        samples[device] = (names, cols)
    names, gpu = samples[gpu_device]
    _, cpu = samples["cpu"]
    tests = {}
    worst = 1.0
    for name, x, y in zip(names, gpu, cpu):
        d, p = ks_p_value(x, y)
        tests[name] = {"D": d, "p": p}
        worst = min(worst, p)
    level = 1e-3 / len(names)
    return {"paths": paths, "entries": tests, "smallest_p": worst, "level": level,
            "passed": worst >= level}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ncsde", required=True, help="the ncsde program (built with CUDA)")
    ap.add_argument("--out", help="write the report as JSON here")
    ap.add_argument("--quick", action="store_true", help="fewer paths (a smoke test)")
    ap.add_argument("--gpu-device", default="cuda",
                    help="the device under test (emulated: this script's own check, no GPU)")
    a = ap.parse_args()
    gpu_device = a.gpu_device
    paths = 64 if a.quick else 512
    law_paths = 2000 if a.quick else 100000
    report = {"cases": [], "failures": []}
    fail = report["failures"].append

    rc, out, err = simulate(a.ncsde, [], 2, gpu_device, 8)
    if rc != 0:
        print(f"check_gpu: the GPU does not run: {err.strip()}")
        report["failures"].append(f"no GPU run: {err.strip()}")
        if a.out:
            with open(a.out, "w") as f:
                json.dump(report, f, indent=2)
        return 1
    report["device"] = out["device"]
    print(f"device: {out['device']['device']}: {out['device']['note']}")
    if gpu_device.startswith("cuda"):
        rc, _, err = simulate(a.ncsde, [], 2, "cuda:99", 8)
        report["missing_device"] = {"exit": rc, "message": err.strip()}
        if rc != 1 or "CUDA device" not in err:
            fail(f"cuda:99: expected exit 1 naming the CUDA devices, got {rc}: {err.strip()}")

    with tempfile.TemporaryDirectory() as tmp:
        for name, flags, relu in CASES:
            for m in SIZES:
                csv = {d: os.path.join(tmp, f"{d}.csv") for d in (gpu_device, "cpu", "emulated")}
                runs = {d: simulate(a.ncsde, flags, m, d, paths, csv[d]) for d in csv}
                bad = [f"{d}: {r[2].strip()}" for d, r in runs.items() if r[0] != 0]
                if bad:
                    fail(f"{name}, m = {m}: " + "; ".join(bad))
                    continue
                _, gpu = read_rows(csv[gpu_device])
                _, cpu = read_rows(csv["cpu"])
                _, emu = read_rows(csv["emulated"])
                equal = sum(x == y for x, y in zip(gpu, cpu))
                diffs = [relative_difference(x, y) for x, y in zip(gpu, cpu) if x != y]
                same_status = [d for d in diffs if d is not None]
                case = {"model": name, "m": m, "paths": paths, "equal_rows": equal,
                        "different_status": len(diffs) - len(same_status),
                        "max_relative_difference": max(same_status, default=0.0),
                        "handed_back": runs[gpu_device][1]["device"]["handed_back"],
                        "seconds_gpu": runs[gpu_device][1]["seconds"],
                        "seconds_cpu": runs["cpu"][1]["seconds"]}
                report["cases"].append(case)
                if emu != cpu:
                    fail(f"{name}, m = {m}: the emulated device differs from the CPU")
                if not relu and equal != paths:
                    fail(f"{name}, m = {m}: {paths - equal} of {paths} GPU paths differ from "
                         f"the CPU's (this model's arithmetic is correctly rounded throughout)")
                print(f"{name:26s} m = {m}: {equal:4d}/{paths} paths bit-identical, "
                      f"{case['different_status']} with another status, largest relative "
                      f"difference {case['max_relative_difference']:.3g}, "
                      f"{case['handed_back']} handed back")
        for name, flags, relu in CASES:
            if relu and name in ("mlp", "transformer"):
                law = law_check(a.ncsde, flags, 4, law_paths, tmp, gpu_device)
                law["model"] = name
                report.setdefault("laws", []).append(law)
                if not law.get("passed"):
                    fail(f"{name}: the GPU's law differs from the CPU's: {law}")
                else:
                    print(f"{name:26s} m = 4: KS over {law_paths} paths, smallest p = "
                          f"{law['smallest_p']:.3g} (level {law['level']:.2g})")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(report, f, indent=2)
    for f in report["failures"]:
        print(f"FAILED: {f}")
    print("check_gpu: " + ("passed" if not report["failures"] else
                           f"{len(report['failures'])} failures"))
    return 0 if not report["failures"] else 1


if __name__ == "__main__":
    sys.exit(main())
