"""The main validation from Python: the shaped transformer's covariance SDE against its finite
networks (ctest: python_example_validate): the
steps of `ncsde validate` in a few lines of numpy.

    PYTHONPATH=build/python python3 examples/python/validate.py [OUTPUT_DIR]

ρ = V¹²/√(V¹¹V²²) at T ∧ τ (τ: first time max_a V^aa > 10) from 20 000 SDE paths and from 10 000
networks of widths n = 16, 32, 64 at depth d = nT (reduced sampler); the two-sample KS distance
shrinks as n grows (exits 1 otherwise). Writes validate_rho.png (densities of ρ) to OUTPUT_DIR.
"""
import sys
import tempfile
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import ncsde  # noqa: E402


def rho(v):
    return v[..., 0, 1] / np.sqrt(v[..., 0, 0] * v[..., 1, 1])


sde, v0, T, K = ncsde.models.covariance_sde("transformer"), np.array([[1, .5], [.5, 1]]), 1.0, 10.0
sde_rho = rho(ncsde.simulate(sde, v0, T, dt=1e-3, paths=20000, stop_level=K).terminal)
fig, ax = plt.subplots(figsize=(6, 4))
ax.hist(sde_rho, bins=60, density=True, histtype="step", lw=2, color="k", label="SDE")
distances = []
for n in (16, 32, 64):
    net = ncsde.sample_networks(sde, v0, n, int(n * T), networks=10000, stop_level=K)
    ks = ncsde.ks_two_sample(rho(net["stopped_V"]), sde_rho)
    distances.append(ks["distance"])
    ax.hist(rho(net["stopped_V"]), bins=60, density=True, histtype="step", label=f"n = {n}")
    print(f"n = {n:3}: KS distance to the SDE {ks['distance']:.4f} (p = {ks['p_value']:.2g})")
out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="ncsde-"))
ax.set_xlabel("ρ at T ∧ τ")
ax.legend()
fig.savefig(out / "validate_rho.png", dpi=120)
print(f"plot: {out / 'validate_rho.png'}")
sys.exit(0 if distances[-1] < distances[0] else "validate: the KS distance did not shrink with n")
