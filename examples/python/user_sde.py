"""A user SDE written in Python with numpy, run by ncsde's engine (ctest: python_example_user_sde).

    PYTHONPATH=build/python python3 examples/python/user_sde.py

The matrix SDE of the README's C++ example on the PSD cone,

    dV = −θ (V − I) dt + σ L (Ξ + Ξᵀ)/√2 Lᵀ,   L Lᵀ = V,   Ξ m×m with iid N(0, dt) entries (k = m²),

with the callables written for a whole batch of paths: v has shape (W, m, m), xi shape (W, m²).
The drift is linear and the noise a martingale, so E V_T = I + e^{−θT} (V0 − I) for the SDE and
E V_N = I + (1 − θ dt)^N (V0 − I) exactly for its Euler–Maruyama chain (N = T/dt steps; projections
back onto the cone, counted in r.pd, are rare here). The example checks the ensemble mean against
the chain's within 4 Monte Carlo standard errors and exits 1 otherwise.
"""

import math
import sys

import numpy as np

import ncsde

THETA, SIGMA, M = 1.0, 0.3, 3


def drift(v, t):
    return -THETA * (v - np.eye(M))


def noise_map(v, xi, t):
    l = np.linalg.cholesky(v)  # batched over the leading axis
    g = xi.reshape(-1, M, M)
    return SIGMA * l @ ((g + g.transpose(0, 2, 1)) / math.sqrt(2.0)) @ l.transpose(0, 2, 1)


sde = ncsde.PythonSde(drift=drift, noise_map=noise_map, noise_dimension=M * M,
                      state_space="psd_cone")
v0 = np.array([[2.0, 0.6, 0.0], [0.6, 1.0, 0.3], [0.0, 0.3, 0.5]])
T, dt, paths = 1.0, 1e-2, 4000
r = ncsde.simulate(sde, v0, T, dt=dt, paths=paths, seed=1)

exact = np.eye(M) + (1 - THETA * dt) ** round(T / dt) * (v0 - np.eye(M))
sde_mean = np.eye(M) + math.exp(-THETA * T) * (v0 - np.eye(M))
mean = r.terminal.mean(axis=0)
se = r.terminal.std(axis=0, ddof=1) / math.sqrt(paths)
print(f"{paths} paths in {r.seconds:.2f} s ({r.completed} completed, "
      f"{r.pd['projected']} projections)")
print("E V_T (ensemble):\n", np.round(mean, 4))
print("E V_N of the scheme (exact):\n", np.round(exact, 4))
print("E V_T of the SDE (exact):\n", np.round(sde_mean, 4))
print("|difference| / standard error:\n", np.round(np.abs(mean - exact) / se, 2))
if r.completed != paths or np.any(np.abs(mean - exact) > 4 * se):
    sys.exit("user_sde: the ensemble mean is more than 4 standard errors from the exact mean")
