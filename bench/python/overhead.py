#!/usr/bin/python3
"""The cost of calling ncsde from Python (nothing here asserts a time).

    PYTHONPATH=build/python /usr/bin/python3 bench/python/overhead.py --cli build/ncsde [--paths 10000]

1. A built-in model from Python against the same run of the `ncsde` program: the transformer
   covariance SDE, m = 2, T = 1, dt = 1e-3, 10⁴ paths, one thread, summaries only on both sides.
   The engine time is the run's own `seconds` on both sides (the same run_ensemble, bit for bit);
   Python's call time adds V0's conversion, the thread that watches for Ctrl-C and the result's
   conversion. Reported: the ratio Python / program of the median over --repetitions runs.
2. A user SDE in Python against what a user would otherwise write: a 2×2 symmetric OU, dV = −θ(V − I)dt
   + s(Ξ + Ξᵀ)/√2, as ncsde.PythonSde (numpy callables on 8 paths per call, the engine's checks,
   streams and summaries) and as a plain numpy Euler–Maruyama advancing all paths as one (P, 2, 2)
   array, and as a batched PyTorch Euler–Maruyama (the baseline of bench/baselines/torch_em.py:
   paths as the batch dimension, one thread, float64). Reported: ns per path-step of each, in
   process CPU time, and the ratios PythonSde / numpy and PythonSde / torch.
"""
import argparse
import json
import math
import statistics
import subprocess
import time

import numpy as np

import ncsde

V0 = np.array([[1.0, 0.5], [0.5, 1.0]])
THETA, S = 1.5, 0.3


def model_overhead(cli, paths, repetitions):
    sde = ncsde.models.covariance_sde("transformer")
    program, python_engine, python_call = [], [], []
    for _ in range(repetitions):
        out = subprocess.run([cli, "simulate", "--model", "transformer", "--V0", "1,0.5;0.5,1",
                              "--T", "1", "--dt", "1e-3", "--paths", str(paths), "--threads", "1",
                              "--format", "json"], capture_output=True, text=True, check=True)
        program.append(json.loads(out.stdout)["seconds"])
        start = time.perf_counter()
        r = ncsde.simulate(sde, V0, 1.0, dt=1e-3, paths=paths, threads=1, keep_paths=False)
        python_call.append(time.perf_counter() - start)
        python_engine.append(r.seconds)
    p, e, c = (statistics.median(x) for x in (program, python_engine, python_call))
    return {"paths": paths, "program_s": p, "python_engine_s": e, "python_call_s": c,
            "ratio_call_over_program": c / p}


def user_sde_cost(paths, steps):
    def drift(v, t):
        return -THETA * (v - np.eye(2))

    def noise(v, xi, t):
        g = xi.reshape(-1, 2, 2)
        return S * (g + g.transpose(0, 2, 1)) / math.sqrt(2.0)

    sde = ncsde.PythonSde(drift=drift, noise_map=noise, noise_dimension=4, state_space="symmetric")
    dt = 1.0 / steps
    start = time.process_time()
    ncsde.simulate(sde, np.eye(2), 1.0, dt=dt, paths=paths, keep_paths=False)
    engine = time.process_time() - start

    rng = np.random.default_rng(1)
    start = time.process_time()
    v = np.broadcast_to(np.eye(2), (paths, 2, 2)).copy()
    for i in range(steps):
        xi = rng.standard_normal((paths, 4)) * math.sqrt(dt)
        v = v + dt * drift(v, i * dt) + noise(v, xi, i * dt)
    plain = time.process_time() - start
    n = paths * steps
    out = {"paths": paths, "steps": steps, "python_sde_ns_per_path_step": engine / n * 1e9,
           "plain_numpy_ns_per_path_step": plain / n * 1e9, "ratio": engine / plain}
    torch_s = torch_cost(paths, steps)
    if torch_s is not None:
        out["torch_ns_per_path_step"] = torch_s / n * 1e9
        out["python_sde_over_torch"] = engine / torch_s
    return out


def torch_cost(paths, steps):
    """The same OU as a batched PyTorch Euler–Maruyama (paths as the batch dimension, one thread,
    float64, the baseline of bench/baselines/torch_em.py): process CPU seconds, or None without
    torch."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    dt = 1.0 / steps
    eye = torch.eye(2, dtype=torch.float64)
    gen = torch.Generator().manual_seed(1)
    start = time.process_time()
    v = eye.expand(paths, 2, 2).clone()
    for _ in range(steps):
        g = (torch.randn((paths, 4), generator=gen, dtype=torch.float64)
             * math.sqrt(dt)).reshape(paths, 2, 2)
        v = v - (THETA * dt) * (v - eye) + (S / math.sqrt(2.0)) * (g + g.transpose(1, 2))
    return time.process_time() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", required=True, help="the ncsde program")
    ap.add_argument("--paths", type=int, default=10_000)
    ap.add_argument("--repetitions", type=int, default=3)
    a = ap.parse_args()
    out = {"model": model_overhead(a.cli, a.paths, a.repetitions),
           "user_sde": user_sde_cost(a.paths, 200)}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
