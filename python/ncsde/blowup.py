"""The blow-up law P(τ ≤ t) of an ensemble, as `ncsde blowup` reports it.

    r = ncsde.simulate(sde, V0, T=2.0, dt=1e-2, paths=4000, step_control="increment")
    c = ncsde.blowup_curve(r)          # dict of arrays over t_i = T·i/grid
    ncsde.plots.blowup(r, ax)

τ is the first time max|V^{ab}| exceeds the run's blow-up threshold. With fixed steps the estimate is
the scheme's and the step's; the adaptive step controllers ("increment", "doubling") resolve the
explosion, so that the estimate converges as their tolerance shrinks.
"""

from __future__ import annotations

import math

import numpy as np

from . import _core

Z95 = 1.959963984540054  # the 97.5% quantile of the standard normal


def wilson_interval(k: int, n: int) -> tuple[float, float]:
    """The 95% Wilson score interval of the binomial proportion k/n (0 and 1 exactly at k = 0, n)."""
    z, nn = Z95, float(n)
    p = k / nn
    centre = (p + z * z / (2 * nn)) / (1 + z * z / nn)
    half = z / (1 + z * z / nn) * math.sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn))
    return (0.0 if k == 0 else max(0.0, centre - half), 1.0 if k == n else min(1.0, centre + half))


def blowup_curve(result, grid: int = 50) -> dict[str, np.ndarray]:
    """P(τ ≤ t_i) at t_i = t0 + (T − t0)·i/grid, i = 1..grid, from an ncsde.Result: the arrays t,
    blown_up (paths with τ ≤ t_i), p, stderr (√(p(1 − p)/N)) and the 95% Wilson interval
    wilson_lower, wilson_upper. The numbers of `ncsde blowup --grid` for the same run."""
    most = _core.limits["max_curve_grid"]  # the program's limit on --grid
    if isinstance(grid, bool) or not isinstance(grid, int) or not 1 <= grid <= most:
        raise ValueError(f"blowup_curve: grid must be an integer in [1, {most}] (got {grid!r})")
    times, n = result.explosion_times, result.paths
    t0, t_end = result.t0, result.T
    t = np.array([t_end if i == grid else t0 + (t_end - t0) * i / grid for i in range(1, grid + 1)])
    blown_up = np.searchsorted(times, t, side="right")
    p = blown_up / n
    stderr = np.sqrt(p * (1 - p) / n)
    bounds = np.array([wilson_interval(int(k), n) for k in blown_up])
    return {"t": t, "blown_up": blown_up, "p": p, "stderr": stderr,
            "wilson_lower": bounds[:, 0], "wilson_upper": bounds[:, 1]}
