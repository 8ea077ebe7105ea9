"""Rank collapse of unshaped softmax attention against shaped attention in finite networks, as
`ncsde rank-collapse` measures it, on top of ncsde.sample_networks.

unshaped: A = Softmax(S), τ = τ₀√n_k (standard softmax attention); shaped: A = I + Softmax(S) − 11ᵀ/m,
τ = τ₀√(n n_k). Per recorded depth l and form, over the networks whose V is finite:
    mean ρ  = mean over networks of ρ̄ = (2/(m(m−1))) Σ_{a<b} ρ^{ab} (ρ clamped to [−1, 1]), ± its
              standard error;
    λ̃_min  = λ_min(V)/(tr V/m), scale-free (1 for V ∝ I, 0 at rank collapse): median and quartiles.
Rank collapse is ρ̄ → 1 and λ̃_min → 0.
"""

from __future__ import annotations

import math

import numpy as np

from ._core import sample_networks

# docs/maths.md §9.1 reference state V3: diag (1, 1.6, 0.7), ρ¹² = 0.5, ρ¹³ = 0.3, ρ²³ = 0.7.
V3 = np.array([[1.0, 0.6324555320336759, 0.25099800796022265],
               [0.6324555320336759, 1.6, 0.7408103670980852],
               [0.25099800796022265, 0.7408103670980852, 0.7]])


def depth_grid(d: int) -> list[int]:
    """About 64 depths in [0, d]: 32 evenly spaced and 32 geometrically spaced (every depth when
    d ≤ 64), the grid of `ncsde rank-collapse`."""
    if d <= 64:
        return list(range(d + 1))
    points = 32
    depths = [_round_half_away(k * d / points) for k in range(points + 1)]
    depths += [_round_half_away(math.exp(math.log(d) * k / (points - 1))) for k in range(points)]
    return sorted(set(depths))


def _round_half_away(x: float) -> int:  # std::lround
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))


def _summary(v: np.ndarray) -> dict[str, np.ndarray]:
    """Per depth statistics of V of shape (networks, depths, m, m)."""
    m = v.shape[-1]
    a, b = np.triu_indices(m, 1)
    diag = np.maximum(np.diagonal(v, axis1=-2, axis2=-1), 0.0)
    scale = np.sqrt(diag[..., a] * diag[..., b])
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.where(scale > 0, np.clip(v[..., a, b] / scale, -1.0, 1.0), 0.0).mean(axis=-1)
        mean_diag = np.trace(v, axis1=-2, axis2=-1) / m
    finite = np.isfinite(v).all(axis=(-2, -1))
    out = {k: [] for k in ("mean_rho", "mean_rho_stderr", "lambda_median", "lambda_q25",
                           "lambda_q75", "networks")}
    for j in range(v.shape[1]):
        ok = finite[:, j]
        r = rho[ok, j]
        lam = np.linalg.eigvalsh(v[ok, j])[:, 0] if ok.any() else np.empty(0)
        lam = np.where(mean_diag[ok, j] > 0, lam / np.where(mean_diag[ok, j] > 0,
                                                            mean_diag[ok, j], 1.0), 0.0)
        out["networks"].append(int(ok.sum()))
        out["mean_rho"].append(r.mean() if r.size else math.nan)
        out["mean_rho_stderr"].append(r.std(ddof=1) / math.sqrt(r.size) if r.size > 1 else math.nan)
        for key, q in (("lambda_median", 0.5), ("lambda_q25", 0.25), ("lambda_q75", 0.75)):
            out[key].append(np.quantile(lam, q) if lam.size else math.nan)
    return {k: np.array(x) for k, x in out.items()}


def rank_collapse(model, V0=None, *, n: int = 128, d: int = 512, networks: int = 200,
                  sampler: str | None = None, n_k: int | None = None, seed: int = 1,
                  threads: int | None = None) -> dict:
    """Unshaped against shaped attention of `model` (an ncsde.models.CovarianceSde with attention)
    in networks of width n and depth d from V0 (default: V3), on the same seeds and depths:
    {"depth", "t" (= depth/n), "unshaped": {...}, "shaped": {...}}, each form a dict of arrays over
    the depths: mean_rho, mean_rho_stderr, lambda_median, lambda_q25, lambda_q75, networks.
    The defaults are those of `ncsde rank-collapse` (its numbers to round-off: λ_min comes from
    numpy's eigensolver here)."""
    v0 = V3 if V0 is None else np.asarray(V0, dtype=float)
    if v0.ndim != 2 or v0.shape[0] < 2:
        raise ValueError(f"rank_collapse: V0 must be an m×m matrix with m >= 2 (got shape "
                         f"{v0.shape})")
    depths = depth_grid(d)
    out = {"depth": np.array(depths), "t": np.array(depths) / n}
    for form in ("unshaped", "shaped"):
        e = sample_networks(model, v0, n, d, networks=networks, sampler=sampler, n_k=n_k,
                            attention=form, seed=seed, threads=threads, depths=depths)
        out[form] = _summary(e["V"])
    return out
