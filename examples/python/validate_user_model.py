"""A model ncsde does not ship, validated from Python with the user's own SDE and numpy networks
(ctest: python_example_validate_user_model).

    PYTHONPATH=build/python python3 examples/python/validate_user_model.py [OUTPUT_DIR] [--full]

The model: a shaped MLP with σ(y) = tanh y + ½ tanh² y (σ''(0) = 1, σ'''(0) = −2), layers
X_{l+1} = σ_s(X_l W_l/√n), σ_s(x) = √n σ(x/√n), W_l with iid N(0, 1) entries. Its covariance
V = X Xᵀ/n has, as n, d → ∞ with d/n = t, the Itô SDE (docs/validation.md)

    dV = b(V) dt + L W Lᵀ,  b^{ab} = ¼(V^{aa}V^{bb} + 2(V^{ab})²) − V^{ab}(V^{aa} + V^{bb}),

L Lᵀ = V, W = (G + Gᵀ)/√2 with G an m×m matrix of iid Brownian increments (Wishart noise).
Below, in a dozen lines each: the SDE as an ncsde.PythonSde, the networks in numpy, and
ncsde.validate, whose report is the program's: KS distances and mean gaps per width, the noise
floor, a rate fit, the power check against a wrong SDE (the shipped shaped-tanh model, which lacks
the ¼(…) term), plots. Exits 1 unless the right SDE is not rejected and the wrong one is.
The default run is small (widths 8, 16, 32; 2 000 samples: about ten seconds); --full runs
widths 16 … 128 with 10⁴ samples.
"""

import sys
import tempfile
from pathlib import Path

import numpy as np

import ncsde


def drift(v, t):  # v: (W, m, m), a batch of states
    d = np.diagonal(v, axis1=1, axis2=2)
    return 0.25 * (d[:, :, None] * d[:, None, :] + 2 * v**2) - v * (d[:, :, None] + d[:, None, :])


def factor(v):
    """L with L Lᵀ = V for each state: Cholesky (as ncsde's models), or on a batch with a singular
    state (on the cone's boundary, where a projection puts a path) the clipped eigen-factor."""
    try:
        return np.linalg.cholesky(v)
    except np.linalg.LinAlgError:
        w, u = np.linalg.eigh(v)
        return u * np.sqrt(np.clip(w, 0, None))[:, None, :]


def noise_map(v, xi, t):  # xi: (W, m²), the Brownian increments
    m = v.shape[-1]
    l = factor(v)
    g = xi.reshape(-1, m, m).transpose(0, 2, 1)  # G read column-major, as ncsde's models do
    lgl = l @ g @ l.transpose(0, 2, 1)
    return (lgl + lgl.transpose(0, 2, 1)) / np.sqrt(2.0)


def sde(m):
    return ncsde.PythonSde(drift=drift, noise_map=noise_map, noise_dimension=m * m,
                           state_space="psd_cone")


def sigma(y):
    return np.tanh(y) + 0.5 * np.tanh(y) ** 2


def networks(v0):
    """The finite networks as ncsde.validate takes them: (n, d, count, seed) -> V at the layers
    0..d, shape (count, d + 1, m, m). Given X_l, the pre-activations H = X_l W_l/√n have iid
    N(0, V_l) columns, so a layer draws H = L_l Z (Z: m×n normals) instead of the n×n weights:
    the same law at O(m²n) per layer."""

    def sample(n, d, count, seed):
        rng = np.random.default_rng(seed)
        m = v0.shape[0]
        out = np.empty((count, d + 1, m, m))
        v = np.broadcast_to(v0, (count, m, m)).copy()
        out[:, 0] = v
        s = np.sqrt(n)
        for layer in range(1, d + 1):
            h = factor(v) @ rng.standard_normal((count, m, n))
            x = s * sigma(h / s)
            v = x @ x.transpose(0, 2, 1) / n
            out[:, layer] = v
        return out

    return sample


def main():
    args = [a for a in sys.argv[1:] if a != "--full"]
    full = "--full" in sys.argv[1:]
    out = Path(args[0]) if args else Path(tempfile.mkdtemp(prefix="ncsde-user-model-"))
    v0 = np.array([[1.0, 0.5, 0.3], [0.5, 1.0, 0.4], [0.3, 0.4, 0.8]])
    size = dict(widths=(16, 32, 64, 128), networks=10000, paths=10000) if full else \
        dict(widths=(8, 16, 32), networks=2000, paths=2000)
    wrong = ncsde.models.covariance_sde("shaped-tanh")  # b^{ab} = −V^{ab}(V^{aa} + V^{bb})
    report = ncsde.validate(sde(3), v0, sampler=networks(v0), variants=[("tanh drift", wrong)],
                            name="MLP, σ = tanh + ½tanh²", plots=out, seed=3, **size)
    print(report["markdown"])
    print(f"plots and data in {out}")
    if not (report["right_accepted"] and report["wrong_rejected"]):
        sys.exit("validate_user_model: the right SDE was rejected or the wrong one was not")


if __name__ == "__main__":
    main()
