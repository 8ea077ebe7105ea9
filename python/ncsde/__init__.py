"""ncsde: stochastic numerics for matrix-valued SDEs (neural covariance SDEs) from Python.

    import ncsde
    sde = ncsde.models.covariance_sde("transformer", gamma2=0.5, tau0=1.0)
    r = ncsde.simulate(sde, [[1.0, 0.5], [0.5, 1.0]], T=1.0, dt=1e-3, paths=10_000, seed=1)
    r.terminal            # (paths, m, m): the states at T ∧ τ
    r.status, r.t_stop    # per path: "completed" | "blown_up" | "stopped", and the stopping time

User SDEs in Python: ncsde.PythonSde(drift=f, noise_map=g, noise_dimension=k, state_space=...).
Blow-up laws: ncsde.blowup_curve(result) (as `ncsde blowup`), drawn by ncsde.plots.blowup.
Rank collapse: ncsde.rank_collapse(model) (as `ncsde rank-collapse`), ncsde.plots.rank_collapse.
Finite networks: ncsde.sample_networks(model, V0, n, d, ...) (as `ncsde sample-network`).
SDE vs finite networks: ncsde.validate(model, ...) (as `ncsde validate`), ncsde.plots.validate.
Measured orders: ncsde.convergence(...) (as `ncsde convergence`), drawn by ncsde.plots.convergence.
The numbers are the C++ library's: a run with the same seed is bit-identical to
`ncsde simulate ... --seed` (same model, V0, T, dt, paths, scheme, policy).
"""

from . import models, plots
from .blowup import blowup_curve
from .rank_collapse import rank_collapse
from .validate import validate
from ._core import (
    DeviceError,
    EvaluationError,
    PdViolation,
    PythonSde,
    Result,
    __version__,
    convergence,
    convergence_problems,
    ks_two_sample,
    limits,
    sample_networks,
    simulate,
)

__all__ = [
    "DeviceError",
    "EvaluationError",
    "PdViolation",
    "PythonSde",
    "Result",
    "__version__",
    "blowup_curve",
    "convergence",
    "convergence_problems",
    "ks_two_sample",
    "limits",
    "models",
    "plots",
    "rank_collapse",
    "sample_networks",
    "simulate",
    "validate",
]
