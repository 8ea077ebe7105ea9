#!/usr/bin/python3
"""What a researcher would otherwise write: a vectorised numpy Euler–Maruyama of the shaped attention
and shaped transformer covariance SDEs (docs/maths.md §3, structured noise of §4), all paths of an ensemble
advanced together as (P, m, m) arrays, timed in-process against ncsde on the same problems.

ncsde's side comes from the same run: the script runs the ncsde_bench_models binary on its
`ensemble/em/<model>/m:<m>/threads:1` benchmarks (run_ensemble, one thread) and reads from their
counters the number of paths and steps, dt and the model's parameters, then integrates the same SDE
from the same V₀ over the same number of paths and steps in numpy. Both sides run on one core (the
BLAS thread count is pinned to 1 before numpy loads) and are timed in process CPU time, which other
jobs on the machine distort less than wall-clock time.

Before timing, the numpy coefficients are checked against the library's own: the drift and the exact
covariance of the numpy noise map (a sum over the 2m² basis inputs, since the map is linear) must
equal `ncsde coefficients` at V₀ to 1e-12 relative (both are O(m³) sums of O(1) terms in double
precision: ~1e-15, with headroom), or the script stops: otherwise the comparison would time a
different SDE.

    /usr/bin/python3 bench/baselines/numpy_em.py --bench-binary build/bench/ncsde_bench_models \
        --cli build/validation/ncsde [--quick] [--repetitions 3] [--out numpy.json]
"""
import os

# One core, as ncsde's threads:1 runs: set before numpy (and its BLAS) is loaded.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import ctypes  # noqa: E402
import ctypes.util  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

MODELS = ("attention", "transformer")
UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
SIZES = (4, 16)


def keep_freed_memory():
    """numpy at its best: glibc serves blocks of ≥ 128 KB (a (1024, 4, 4) array is exactly that) by
    mmap and returns freed heap tops to the system, so every temporary of the step is page-faulted
    in afresh, and the timing depends on which sizes ran before (glibc raises the threshold after
    the first large free). Thresholds of 32 MB (glibc's maximum) for mmap and trimming make every
    run reuse its memory. Only this process is affected: ncsde runs in its own."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    m_trim_threshold, m_mmap_threshold = -1, -3
    libc.mallopt(m_mmap_threshold, 32 << 20)
    libc.mallopt(m_trim_threshold, 64 << 20)


def initial_state(m):
    """V₀ = I + C, C^{ab} = 0.3/(1 + |a − b|) off the diagonal (bench/common.hpp)."""
    a = np.arange(m)
    off = 0.3 / (1.0 + np.abs(a[:, None] - a[None, :]))
    return np.where(a[:, None] == a[None, :], 1.0, off)


class Model:
    """Coefficients of models::covariance_sde for attention (one head, no W^O) and transformer."""

    def __init__(self, name, p):
        self.name = name
        self.c_plus, self.c_minus = p["c_plus"], p["c_minus"]
        self.tau0 = p["tau0"]
        g2, r, heads = p["gamma2"], p["hidden_ratio"], p["heads"]
        self.g2 = g2
        k_lin = g2 * (2.0 - g2)  # attention without W^O
        if name == "transformer":
            k_lin += g2 * (2.0 - g2 + g2 / r)
        self.sqrt_k_lin = np.sqrt(k_lin)
        self.sqrt_k_att = np.sqrt(g2 * g2 / heads)

    def drift(self, v):
        b = self.g2 * b_att(v, self.tau0)
        if self.name == "transformer":
            b += self.g2 * b_relu(v, self.c_plus, self.c_minus)
        return b

    def noise(self, v, l, g, z):
        """√k_lin L W Lᵀ + √k_att (ζPV + VPζᵀ)/(mτ₀), W = (G + Gᵀ)/√2, ζ = L Z Lᵀ."""
        m = v.shape[-1]
        lt = np.swapaxes(l, -1, -2)
        lin = l @ g @ lt
        lin = (lin + np.swapaxes(lin, -1, -2)) * (self.sqrt_k_lin / np.sqrt(2.0))
        pv = v - v.mean(axis=-2, keepdims=True)
        y = (l @ z @ lt) @ pv
        att = (y + np.swapaxes(y, -1, -2)) * (self.sqrt_k_att / (m * self.tau0))
        return lin + att


def b_att(v, tau0):
    m = v.shape[-1]
    row_mean = v.mean(axis=-1)
    grand = row_mean.mean(axis=-1)
    diag = np.diagonal(v, axis1=-2, axis2=-1)
    pvp = v - row_mean[..., :, None] - row_mean[..., None, :] + grand[..., None, None]
    pvp_diag = np.diagonal(pvp, axis1=-2, axis2=-1)
    tr_pvp = pvp_diag.sum(axis=-1)
    tr_pvpv = np.einsum("...ab,...ab->...", pvp, v)
    u = 0.5 * (pvp_diag - tr_pvp[..., None] / m)
    vu = np.einsum("...ab,...b->...a", v, u)
    out = (diag[..., :, None] * vu[..., None, :] + vu[..., :, None] * diag[..., None, :]) / m
    out += v * (tr_pvpv / (m * m))[..., None, None]
    return out / (tau0 * tau0)


def b_relu(v, c_plus, c_minus):
    m = v.shape[-1]
    scale = (c_plus - c_minus) ** 2 / (2.0 * np.pi)
    s = np.sqrt(np.maximum(np.diagonal(v, axis1=-2, axis2=-1), 0.0))
    norm = s[..., :, None] * s[..., None, :]
    safe = np.where(norm > 0.0, norm, 1.0)
    rho = np.clip(v / safe, -1.0, 1.0)
    out = scale * (np.sqrt(1.0 - rho * rho) - rho * np.arccos(rho)) * norm
    idx = np.arange(m)
    out[..., idx, idx] = 0.0  # ν(1) = 0
    return out


def factor(v):
    """(V, L) with L Lᵀ = V for every path. When some V is not positive definite, the whole batch is
    projected onto the cone (eigenvalues clipped at 0, as ncsde's default pd policy does per path)
    and L is the eigen-factor."""
    try:
        return v, np.linalg.cholesky(v)
    except np.linalg.LinAlgError:
        w, q = np.linalg.eigh(v)
        root = np.sqrt(np.maximum(w, 0.0))[..., None, :]
        l = q * root
        return l @ np.swapaxes(l, -1, -2), l


def simulate(model, m, paths, steps, dt, seed, blowup=1e6):
    """Euler–Maruyama of `paths` paths for `steps` steps; returns (seconds, V_T, blown-up paths).
    A path whose state leaves max|V| <= blowup (or turns non-finite) is frozen at its last state,
    as ncsde stops it; the batch keeps computing it (the price of the batched form)."""
    rng = np.random.default_rng(seed)
    v = np.broadcast_to(initial_state(m), (paths, m, m)).copy()
    alive = np.ones(paths, dtype=bool)
    sqrt_dt = np.sqrt(dt)
    start = time.process_time()
    for _ in range(steps):
        g = rng.standard_normal((paths, m, m))
        z = rng.standard_normal((paths, m, m))
        v, l = factor(v)
        new = v + dt * model.drift(v) + sqrt_dt * model.noise(v, l, g, z)
        with np.errstate(invalid="ignore"):
            alive &= (np.abs(new) <= blowup).all(axis=(-1, -2))
        v = np.where(alive[:, None, None], new, v)
    return time.process_time() - start, v, int((~alive).sum())


def exact_covariance(model, v):
    """Σ^{ab,cd} of the numpy noise map at v: Σ_j N(e_j)^{ab} N(e_j)^{cd} over the 2m² inputs."""
    m = v.shape[-1]
    k = m * m
    basis = np.eye(k).reshape(k, m, m)
    zeros = np.zeros((k, m, m))
    vs = np.broadcast_to(v, (2 * k, m, m))
    l = np.broadcast_to(np.linalg.cholesky(v), (2 * k, m, m))
    n = model.noise(vs, l, np.concatenate([basis, zeros]), np.concatenate([zeros, basis]))
    flat = n.reshape(2 * k, m * m)
    return flat.T @ flat


def cli_coefficients(cli, name, params, v):
    """`ncsde coefficients` of model `name` at the m×m state v: (drift, Σ as an m²×m² array)."""
    m = v.shape[-1]
    text = ";".join(",".join(repr(float(x)) for x in row) for row in v)
    cmd = [cli, "coefficients", "--model", name, "--V", text,
           "--c-plus", repr(params["c_plus"]), "--c-minus", repr(params["c_minus"]),
           "--gamma2", repr(params["gamma2"]), "--tau0", repr(params["tau0"]),
           "--hidden-ratio", repr(params["hidden_ratio"]), "--heads", str(int(params["heads"]))]
    ref = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    return np.array(ref["drift"]), np.array(ref["diffusion"]).reshape(m * m, m * m)


def check_against_cli(cli, model, params, m):
    """Stops unless the numpy drift and Σ equal `ncsde coefficients` at V₀ (1e-12 relative)."""
    v = initial_state(m)
    drift_ref, sigma_ref = cli_coefficients(cli, model.name, params, v)
    drift_err = np.abs(model.drift(v) - drift_ref).max() / np.abs(drift_ref).max()
    sigma_err = np.abs(exact_covariance(model, v) - sigma_ref).max() / np.abs(sigma_ref).max()
    if not (drift_err <= 1e-12 and sigma_err <= 1e-12):
        sys.exit(f"numpy_em: {model.name}, m = {m}: numpy coefficients differ from ncsde's "
                 f"(drift {drift_err:.3g}, covariance {sigma_err:.3g} relative)")
    return {"drift_relative_error": float(drift_err), "covariance_relative_error": float(sigma_err)}


def run_ncsde(binary, quick, min_time, repetitions):
    """The threads:1 ensemble benchmarks (median over repetitions): process CPU time per iteration
    and the problems' counters."""
    cmd = [binary,
           "--benchmark_filter=^ensemble/em(_batched)?/(attention|transformer)/m:(4|16)/threads:1/",
           "--benchmark_format=json", f"--benchmark_min_time={min_time}",
           f"--benchmark_repetitions={repetitions}", "--benchmark_report_aggregates_only=true"]
    if quick:
        cmd.append("--quick")
    report = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    out = {}
    for b in report["benchmarks"]:
        if b.get("aggregate_name", "median") != "median":
            continue
        _, engine, model, m_field = b["run_name"].split("/")[:4]
        out[(model, int(m_field.split(":")[1]), engine == "em_batched")] = b
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench-binary", required=True, help="path to ncsde_bench_models")
    ap.add_argument("--cli", help="path to the ncsde program (coefficient check); skipped if absent")
    ap.add_argument("--quick", action="store_true", help="shorter paths (passed on to the binary)")
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=0.5)
    ap.add_argument("--out", help="write the results as JSON here")
    args = ap.parse_args()

    ncsde_runs = run_ncsde(args.bench_binary, args.quick, args.min_time, args.repetitions)
    keep_freed_memory()
    results = []
    for name in MODELS:
        for m in SIZES:
            b = ncsde_runs[(name, m, False)]
            batched = ncsde_runs.get((name, m, True))
            params = {key: b[key] for key in
                      ("c_plus", "c_minus", "gamma2", "hidden_ratio", "tau0", "heads")}
            model = Model(name, params)
            check = check_against_cli(args.cli, model, params, m) if args.cli else None
            paths, steps, dt = int(b["paths"]), int(b["steps"]), float(b["dt"])
            simulate(model, m, paths, 2, dt, seed=args.repetitions)  # warm-up: first-call costs
            times, blown_up = [], []
            for rep in range(args.repetitions):
                seconds, _, lost = simulate(model, m, paths, steps, dt, seed=rep)
                times.append(seconds)
                blown_up.append(lost)
            numpy_ns = statistics.median(times) / (paths * steps) * 1e9
            per_path_ns = b["cpu_time"] * UNIT_NS[b["time_unit"]] / b["path_steps_per_iteration"]
            batched_ns = (batched["cpu_time"] * UNIT_NS[batched["time_unit"]]
                          / batched["path_steps_per_iteration"] if batched else None)
            # ncsde's side: its faster engine (batched lane groups where the binary has them).
            ncsde_ns = min(per_path_ns, batched_ns) if batched_ns else per_path_ns
            results.append({
                "model": name, "m": m, "paths": paths, "steps": steps, "dt": dt,
                "numpy_ns_per_path_step": numpy_ns, "ncsde_ns_per_path_step": ncsde_ns,
                "ncsde_per_path_ns_per_path_step": per_path_ns,
                "ncsde_batched_ns_per_path_step": batched_ns,
                "numpy_over_ncsde": numpy_ns / ncsde_ns, "numpy_seconds": times,
                "numpy_blown_up_paths": blown_up,
                "coefficient_check": check,
            })
            print(f"numpy_em: {name:<11} m = {m:>2}: numpy {numpy_ns:10.1f} ns, ncsde {ncsde_ns:10.1f} "
                  f"ns per path-step, ratio {numpy_ns / ncsde_ns:6.2f}", file=sys.stderr)
    out = {"numpy_version": np.__version__, "threads": 1, "results": results}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=2)
    else:
        json.dump(out, sys.stdout, indent=2)


if __name__ == "__main__":
    main()
