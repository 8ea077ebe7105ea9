#!/usr/bin/python3
"""What torch-based SDE code does: a batched PyTorch Euler–Maruyama, every path of an ensemble in
one tensor (paths as the batch dimension) and one tensor operation per step, timed in-process
against ncsde on the same problems, one thread on both sides.

Problems (float64, dt and the numbers of paths and steps read from ncsde's benchmark counters):
  - gbm:       scalar dX = μX dt + σX dW (μ = σ = 0.5, X₀ = 1), against ncsde's batched/gbm/scalar;
  - lincov:    the linear covariance SDE dV = L W Lᵀ (docs/maths.md §4.1, W = (Ξ + Ξᵀ)/√2 · √dt,
               L the batched Cholesky factor), m = 4, 8, against batched/lincov/m:<m>;
  - attention, transformer: the structured noise and drift of bench/baselines/numpy_em.py
               written with torch tensors, m = 4, 16, against ensemble/em/<model>/m:<m>/threads:1.
ncsde's side comes from the same run: ncsde_bench_solvers (per-path and batched ensembles) and
ncsde_bench_models (the model ensembles), in wall time per path-step (both sides on one thread).

Before timing, the torch coefficients are checked: the model drift and the exact covariance of the
torch noise maps (sums over the basis inputs, the maps being linear) must equal `ncsde coefficients`
at V₀ (models) or Σ_lin^{ab,cd} = V^{ac}V^{bd} + V^{ad}V^{bc} (lincov) to 1e-12 relative, or the
script stops.

    /usr/bin/python3 bench/baselines/torch_em.py --solvers-binary build/bench/ncsde_bench_solvers \
        --models-binary build/bench/ncsde_bench_models --cli build/ncsde [--quick] [--out torch.json]
"""
import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy_em  # noqa: E402  (initial_state, Model's parameters, the ncsde model runs)

torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)
UNIT_NS = numpy_em.UNIT_NS


def tr(x):
    return x.transpose(-1, -2)


class TorchModel(numpy_em.Model):
    """numpy_em.Model's coefficients on torch tensors."""

    def drift(self, v):
        b = self.g2 * b_att(v, self.tau0)
        if self.name == "transformer":
            b = b + self.g2 * b_relu(v, self.c_plus, self.c_minus)
        return b

    def noise(self, v, l, g, z):
        m = v.shape[-1]
        lin = l @ g @ tr(l)
        lin = (lin + tr(lin)) * (float(self.sqrt_k_lin) / math.sqrt(2.0))
        pv = v - v.mean(dim=-2, keepdim=True)
        y = (l @ z @ tr(l)) @ pv
        return lin + (y + tr(y)) * (float(self.sqrt_k_att) / (m * self.tau0))


def b_att(v, tau0):
    m = v.shape[-1]
    row_mean = v.mean(dim=-1)
    grand = row_mean.mean(dim=-1)
    diag = torch.diagonal(v, dim1=-2, dim2=-1)
    pvp = v - row_mean[..., :, None] - row_mean[..., None, :] + grand[..., None, None]
    pvp_diag = torch.diagonal(pvp, dim1=-2, dim2=-1)
    tr_pvp = pvp_diag.sum(dim=-1)
    tr_pvpv = (pvp * v).sum(dim=(-1, -2))
    u = 0.5 * (pvp_diag - tr_pvp[..., None] / m)
    vu = (v @ u[..., :, None])[..., 0]
    out = (diag[..., :, None] * vu[..., None, :] + vu[..., :, None] * diag[..., None, :]) / m
    out = out + v * (tr_pvpv / (m * m))[..., None, None]
    return out / (tau0 * tau0)


def b_relu(v, c_plus, c_minus):
    m = v.shape[-1]
    scale = (c_plus - c_minus) ** 2 / (2.0 * math.pi)
    s = torch.sqrt(torch.clamp(torch.diagonal(v, dim1=-2, dim2=-1), min=0.0))
    norm = s[..., :, None] * s[..., None, :]
    safe = torch.where(norm > 0.0, norm, torch.ones_like(norm))
    rho = torch.clamp(v / safe, -1.0, 1.0)
    out = scale * (torch.sqrt(1.0 - rho * rho) - rho * torch.arccos(rho)) * norm
    # ν(1) = 0 on the diagonal (the mask in v's dtype and on its device)
    return out * (1.0 - torch.eye(m, dtype=v.dtype, device=v.device))


def factor(v):
    """(V, L) with L Lᵀ = V; when some V is not positive definite, the batch is projected onto the
    cone (eigenvalues clipped at 0) and L is the eigen-factor, as numpy_em does."""
    l, info = torch.linalg.cholesky_ex(v)
    if bool((info == 0).all()):
        return v, l
    w, q = torch.linalg.eigh(v)
    l = q * torch.sqrt(torch.clamp(w, min=0.0))[..., None, :]
    return l @ tr(l), l


def lincov_noise(l, xi):
    w = (xi + tr(xi)) / math.sqrt(2.0)
    return l @ w @ tr(l)


def simulate_model(model, m, paths, steps, dt, seed, blowup=1e6):
    gen = torch.Generator().manual_seed(seed)
    v = torch.tensor(numpy_em.initial_state(m)).expand(paths, m, m).clone()
    alive = torch.ones(paths, dtype=torch.bool)
    sqrt_dt = math.sqrt(dt)
    start = time.perf_counter()
    for _ in range(steps):
        g = torch.randn((paths, m, m), generator=gen)
        z = torch.randn((paths, m, m), generator=gen)
        v, l = factor(v)
        new = v + dt * model.drift(v) + sqrt_dt * model.noise(v, l, g, z)
        alive &= (new.abs() <= blowup).all(dim=-1).all(dim=-1)
        v = torch.where(alive[:, None, None], new, v)
    return time.perf_counter() - start


def simulate_lincov(m, paths, steps, dt, seed):
    gen = torch.Generator().manual_seed(seed)
    v = torch.tensor(numpy_em.initial_state(m)).expand(paths, m, m).clone()
    sqrt_dt = math.sqrt(dt)
    start = time.perf_counter()
    for _ in range(steps):
        xi = torch.randn((paths, m, m), generator=gen)
        v, l = factor(v)
        v = v + sqrt_dt * lincov_noise(l, xi)
        v = 0.5 * (v + tr(v))
    return time.perf_counter() - start


def simulate_gbm(paths, steps, dt, seed, mu=0.5, sigma=0.5):
    gen = torch.Generator().manual_seed(seed)
    x = torch.ones(paths)
    sqrt_dt = math.sqrt(dt)
    start = time.perf_counter()
    for _ in range(steps):
        z = torch.randn(paths, generator=gen)
        x = x + mu * x * dt + sigma * x * (sqrt_dt * z)
    return time.perf_counter() - start


def covariance_of(noise, m, k):
    """Σ^{ab,cd} of a linear noise map: Σ_j N(e_j)^{ab} N(e_j)^{cd} over its k basis inputs."""
    n = noise(torch.eye(k))
    flat = n.reshape(k, m * m)
    return (flat.T @ flat).numpy()


def check_lincov(m):
    v = torch.tensor(numpy_em.initial_state(m))
    l = torch.linalg.cholesky(v)
    sigma = covariance_of(lambda e: lincov_noise(l.expand(m * m, m, m), e.reshape(-1, m, m)),
                          m, m * m)
    vn = v.numpy()
    exact = np.einsum("ac,bd->abcd", vn, vn) + np.einsum("ad,bc->abcd", vn, vn)
    err = np.abs(sigma - exact.reshape(m * m, m * m)).max() / np.abs(exact).max()
    if not err <= 1e-12:
        sys.exit(f"torch_em: lincov, m = {m}: torch covariance differs from Σ_lin ({err:.3g})")
    return {"covariance_relative_error": float(err)}


def check_model(cli, model, params, m):
    v = torch.tensor(numpy_em.initial_state(m))
    drift_ref, sigma_ref = numpy_em.cli_coefficients(cli, model.name, params, v.numpy())
    k = m * m
    l = torch.linalg.cholesky(v)
    zeros = torch.zeros(k, m, m)

    def noise(e):
        basis = e.reshape(k, m, m)
        vs, ls = v.expand(2 * k, m, m), l.expand(2 * k, m, m)
        return model.noise(vs, ls, torch.cat([basis, zeros]), torch.cat([zeros, basis]))

    n = noise(torch.eye(k)).reshape(2 * k, m * m)
    sigma = (n.T @ n).numpy()
    drift_err = np.abs(model.drift(v).numpy() - drift_ref).max() / np.abs(drift_ref).max()
    sigma_err = np.abs(sigma - sigma_ref).max() / np.abs(sigma_ref).max()
    if not (drift_err <= 1e-12 and sigma_err <= 1e-12):
        sys.exit(f"torch_em: {model.name}, m = {m}: torch coefficients differ from ncsde's "
                 f"(drift {drift_err:.3g}, covariance {sigma_err:.3g} relative)")
    return {"drift_relative_error": float(drift_err), "covariance_relative_error": float(sigma_err)}


def run_solvers(binary, min_time, repetitions):
    """ncsde's batched/* ensembles (median wall time per iteration) by run name."""
    cmd = [binary, "--benchmark_filter=^batched/", "--benchmark_format=json",
           f"--benchmark_min_time={min_time}", f"--benchmark_repetitions={repetitions}",
           "--benchmark_report_aggregates_only=true"]
    report = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    out = {}
    for b in report["benchmarks"]:
        if b.get("aggregate_name", "median") != "median":
            continue
        out[b["run_name"].removesuffix("/real_time")] = b
    return out


def ns_per_path_step(b):
    return b["real_time"] * UNIT_NS[b["time_unit"]] / (b["paths"] * b["steps"])


def median_ns(simulate, paths, steps, repetitions):
    simulate(2, 0)  # warm-up: first-call costs
    times = [simulate(steps, rep) for rep in range(repetitions)]
    return statistics.median(times) / (paths * steps) * 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--solvers-binary", required=True, help="path to ncsde_bench_solvers")
    ap.add_argument("--models-binary", required=True, help="path to ncsde_bench_models")
    ap.add_argument("--cli", help="path to the ncsde program (model coefficient check)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=0.5)
    ap.add_argument("--out", help="write the results as JSON here")
    args = ap.parse_args()

    solver_runs = run_solvers(args.solvers_binary, args.min_time, args.repetitions)
    model_runs = numpy_em.run_ncsde(args.models_binary, args.quick, args.min_time,
                                    args.repetitions)
    dt = 1e-3
    results = []

    def report(problem, m, torch_ns, per_path, batched, check, paths, steps):
        entry = {"problem": problem, "m": m, "paths": paths, "steps": steps, "dt": dt,
                 "torch_ns_per_path_step": torch_ns, "ncsde_per_path_ns_per_path_step": per_path,
                 "ncsde_batched_ns_per_path_step": batched, "coefficient_check": check}
        best = batched if batched is not None else per_path
        entry["torch_over_ncsde"] = torch_ns / best
        results.append(entry)
        print(f"torch_em: {problem:<11} m = {m:>2}: torch {torch_ns:9.1f} ns, ncsde per path "
              f"{per_path:9.1f} ns, batched {batched if batched is not None else float('nan'):9.1f}"
              f" ns per path-step, torch/ncsde {entry['torch_over_ncsde']:6.2f}", file=sys.stderr)

    per, bat = solver_runs["batched/gbm/scalar/per_path"], solver_runs["batched/gbm/scalar/batched"]
    paths, steps = int(bat["paths"]), int(bat["steps"])
    report("gbm", 1, median_ns(lambda n, s: simulate_gbm(paths, n, dt, s), paths, steps,
                               args.repetitions),
           ns_per_path_step(per), ns_per_path_step(bat), None, paths, steps)
    for m in (4, 8):
        per = solver_runs[f"batched/lincov/m:{m}/per_path"]
        bat = solver_runs[f"batched/lincov/m:{m}/batched"]
        paths, steps = int(bat["paths"]), int(bat["steps"])
        check = check_lincov(m)
        report("lincov", m, median_ns(lambda n, s: simulate_lincov(m, paths, n, dt, s), paths,
                                      steps, args.repetitions),
               ns_per_path_step(per), ns_per_path_step(bat), check, paths, steps)
    for name in numpy_em.MODELS:
        for m in numpy_em.SIZES:
            b = model_runs[(name, m, False)]
            nb = model_runs.get((name, m, True))
            params = {key: b[key] for key in
                      ("c_plus", "c_minus", "gamma2", "hidden_ratio", "tau0", "heads")}
            model = TorchModel(name, params)
            check = check_model(args.cli, model, params, m) if args.cli else None
            paths, steps, mdt = int(b["paths"]), int(b["steps"]), float(b["dt"])
            torch_ns = median_ns(lambda n, s: simulate_model(model, m, paths, n, mdt, s), paths,
                                 steps, args.repetitions)
            ncsde_ns = b["real_time"] * UNIT_NS[b["time_unit"]] / b["path_steps_per_iteration"]
            batched_ns = (nb["real_time"] * UNIT_NS[nb["time_unit"]] / nb["path_steps_per_iteration"]
                          if nb else None)
            report(name, m, torch_ns, ncsde_ns, batched_ns, check, paths, steps)
    out = {"torch_version": torch.__version__, "threads": 1, "results": results}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=2)
    else:
        json.dump(out, sys.stdout, indent=2)


if __name__ == "__main__":
    main()
