# Type stubs of the package ncsde (the compiled core ncsde._core re-exported).
import os
from typing import Any, Callable, Iterable, Literal, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from . import models as models
from . import plots as plots
from .models import CovarianceSde

__version__: str
# The program's run limits (max_paths, max_threads, max_steps_per_path, max_total_steps,
# max_network_layers, max_network_work, max_curve_grid), which the functions apply too.
limits: dict[str, float]

StateSpace = Literal["euclidean", "symmetric", "psd_cone"]
Scheme = Literal["em", "milstein", "milstein-commutative", "predictor-corrector"]
Policy = Literal["automatic", "count", "project", "refine", "throw"]
StepControl = Literal["fixed", "increment", "doubling"]

class DeviceError(RuntimeError):
    """device='cuda' could not run (no CUDA backend in this build, no GPU, an old driver, out of
    memory); only device='auto' falls back to the CPU."""

class EvaluationError(RuntimeError):
    """A drift or noise map returned a non-finite value, or a non-symmetric matrix on a symmetric
    or cone state space, at a finite state."""

class PdViolation(RuntimeError):
    """A step left the positive-semidefinite cone under policy='throw'."""

class PythonSde:
    """dX = b(t, X) dt + G(t, X) dW with b = drift(x, t), G ξ = noise_map(x, xi, t) in Python.

    batched=True: x has shape (W, *state_shape), xi (W, k), results x's shape (W = 64 paths per call
    with the batched schemes, 1 otherwise); batched=False: one state and xi of shape (k,) per call (slow).
    """

    def __init__(
        self,
        *,
        drift: Callable[[np.ndarray, float], npt.ArrayLike],
        noise_map: Callable[[np.ndarray, np.ndarray, float], npt.ArrayLike],
        noise_dimension: int,
        state_space: StateSpace = "euclidean",
        batched: bool = True,
    ) -> None: ...
    @property
    def drift(self) -> Callable[[np.ndarray, float], npt.ArrayLike]: ...
    @property
    def noise_map(self) -> Callable[[np.ndarray, np.ndarray, float], npt.ArrayLike]: ...
    @property
    def noise_dimension(self) -> int: ...
    @property
    def state_space(self) -> StateSpace: ...
    @property
    def batched(self) -> bool: ...

class Result:
    """The outcome of simulate: per-path arrays (None with keep_paths=False) and summaries."""

    terminal: np.ndarray | None  # (paths, *state_shape) float64: states at T ∧ τ
    saved: np.ndarray | None  # (paths, len(save_times), *state_shape) float64, NaN once stopped
    status: np.ndarray | None  # (paths,) str: "completed" | "blown_up" | "stopped"
    t_stop: np.ndarray | None  # (paths,) float64
    @property
    def state_shape(self) -> tuple[int, ...]: ...
    @property
    def paths(self) -> int: ...
    @property
    def completed(self) -> int: ...
    @property
    def blown_up(self) -> int: ...
    @property
    def stopped(self) -> int: ...
    @property
    def exhausted(self) -> int: ...
    @property
    def blown_up_fraction(self) -> float: ...
    @property
    def blown_up_stderr(self) -> float: ...
    @property
    def steps(self) -> int: ...
    @property
    def pd(self) -> dict[str, int | float]: ...
    @property
    def stepping(self) -> dict[str, Any]: ...
    @property
    def seed(self) -> int: ...
    @property
    def scheme(self) -> str: ...
    @property
    def threads(self) -> int: ...
    @property
    def seconds(self) -> float: ...
    @property
    def device(self) -> dict[str, str | int]: ...
    @property
    def t0(self) -> float: ...
    @property
    def T(self) -> float: ...
    @property
    def dt(self) -> float: ...
    @property
    def state_space(self) -> StateSpace: ...
    @property
    def coordinates(self) -> list[str]: ...
    @property
    def save_times(self) -> np.ndarray: ...
    @property
    def explosion_times(self) -> np.ndarray: ...
    @property
    def stop_times(self) -> np.ndarray: ...
    @property
    def terminal_mean(self) -> np.ndarray: ...
    @property
    def terminal_covariance(self) -> np.ndarray: ...
    @property
    def saved_mean(self) -> list[np.ndarray]: ...
    @property
    def functionals(self) -> dict[str, dict[str, Any]]: ...
    def summary_json(self) -> str: ...
    def summary_table(self) -> str: ...

def simulate(
    sde: CovarianceSde | PythonSde,
    V0: npt.ArrayLike,
    T: float,
    *,
    dt: float = 1e-3,
    paths: int = 1000,
    scheme: Scheme | str = "em",
    seed: int = 1,
    threads: int | None = None,
    save_times: Sequence[float] | None = None,
    stop_level: float | None = None,
    policy: Policy | str = "automatic",
    blowup_threshold: float = 1e6,
    step_control: StepControl | str = "fixed",
    tolerance: float = 0.05,
    max_depth: int = 40,
    batched: bool | None = None,
    keep_paths: bool = True,
    progress: bool = False,
    covariance: Literal["automatic", "full", "diagonal"] | str = "automatic",
    device: str = "cpu",
) -> Result:
    """paths paths of sde from V0 on [0, T]; path p on the random stream (seed, p). Bit-identical to
    `ncsde simulate` with the same arguments; releases the GIL; Ctrl-C raises KeyboardInterrupt."""

def convergence_problems() -> list[dict[str, str]]:
    """The problems of convergence (name, description)."""

def convergence(
    problems: str | Sequence[str] | PythonSde | None = None,
    schemes: str | Sequence[str] | None = None,
    *,
    kind: Literal["both", "strong", "weak"] = "both",
    paths: int = 0,
    levels: int = 0,
    first_level: int = -1,
    seed: int = 1,
    threads: int | None = None,
    strong_tolerance: float = 0.05,
    weak_tolerance: float = 0.1,
    V0: npt.ArrayLike | None = None,
    T: float = 1.0,
    exact: Callable[[np.ndarray, np.ndarray, float], npt.ArrayLike] | None = None,
    weak: Callable[[np.ndarray], float] | None = None,
    noise: Literal["general", "commutative", "additive"] = "general",
    weak_differences: bool = False,
    name: str = "python-sde",
) -> list[dict[str, Any]]:
    """Measured strong/weak orders as `ncsde convergence`: one dict per series (problem, scheme,
    kind, order, stderr, ci_low, ci_high, expected, tolerance, pass, unresolved, pre_asymptotic,
    local_slopes, paths, seed, dts, errors, errors_stderr, cone_exits, failed_paths, error_measure,
    reference, functional, seconds: the program's JSON fields, all present). problems may be a
    PythonSde (with V0, T, and optionally exact and weak); without closed forms the weak orders
    come from coupled differences of successive levels."""

def sample_networks(
    model: CovarianceSde,
    V0: npt.ArrayLike,
    n: int,
    d: int,
    *,
    networks: int = 1000,
    sampler: str | None = None,
    n_k: int | None = None,
    attention: Literal["shaped", "unshaped"] = "shaped",
    seed: int = 1,
    threads: int | None = None,
    depths: Sequence[int] | None = None,
    stop_level: float | None = None,
) -> dict[str, Any]:
    """Finite networks of width n, depth d (as `ncsde sample-network`): V (networks, len(depths),
    m, m), stopped_V (networks, m, m), status, stop_layer, t_stop, depths and counts."""

def blowup_curve(result: Result, grid: int = 50) -> dict[str, np.ndarray]:
    """P(τ ≤ t_i) at t_i = t0 + (T − t0)·i/grid: arrays t, blown_up, p, stderr, wilson_lower,
    wilson_upper (the numbers of `ncsde blowup --grid`)."""

def rank_collapse(
    model: CovarianceSde,
    V0: npt.ArrayLike | None = None,
    *,
    n: int = 128,
    d: int = 512,
    networks: int = 200,
    sampler: str | None = None,
    n_k: int | None = None,
    seed: int = 1,
    threads: int | None = None,
) -> dict[str, Any]:
    """Unshaped against shaped attention in finite networks (as `ncsde rank-collapse`): depth, t
    and per form the arrays mean_rho, mean_rho_stderr, lambda_median, lambda_q25, lambda_q75,
    networks."""

def validate(
    model: str | CovarianceSde | PythonSde | None = None,
    V0: npt.ArrayLike | None = None,
    *,
    T: float = ...,
    widths: Iterable[int] = ...,
    networks: int = ...,
    paths: int = ...,
    dt: float = ...,
    stop_level: float = ...,
    tail_level: float = ...,
    unstopped_tail_level: float = ...,
    nk: int = ...,
    sampler: str | Callable[[int, int, int, int], npt.ArrayLike] | None = None,
    samples: Mapping[int, npt.ArrayLike] | None = None,
    variants: str | Sequence[Any] | Mapping[str, Any] = ...,
    alpha: float = ...,
    limit_exponent: float | str = ...,
    seed: int = ...,
    threads: int = 0,
    device: str = "cpu",
    plots: str | os.PathLike[str] | None = None,
    name: str | None = None,
    **params: float | int | bool | str,
) -> dict[str, Any]:
    """The model's finite networks against its covariance SDE, as `ncsde validate` (bit for bit,
    with the program's defaults; model None: its default study, strong attention): the report of
    `--format json` with numpy arrays, plus "table" (the rows as columns). A user's
    SDE (PythonSde), networks (sampler callable (n, d, count, seed) -> V at the layers 0..d, or
    samples {n: array}) and wrong SDEs (variants: a list) make the same report. device: where
    the right SDE's paths run ("cpu", "cuda[:N]", "auto", "emulated"; the wrong SDEs: the CPU)."""

def ks_two_sample(a: npt.ArrayLike, b: npt.ArrayLike) -> dict[str, float | int]:
    """Two-sample Kolmogorov–Smirnov test (the library's): distance, p_value, n1, n2."""
