"""SDE against finite networks from Python: ncsde.validate runs `ncsde validate` (the program's own
code, in this process) and returns its report as Python data.

    report = ncsde.validate("attention", gamma2=1.0, tau0=0.5, widths=(32, 64, 128), networks=5000,
                            paths=5000)
    report["table"]["source"], report["table"]["bonferroni_p"]   # one entry per row of the report
    report["mean_ks"], report["floor_mean_ks"]                   # KS trend in n and its noise floor
    ncsde.plots.validate(report, ax, kind="ks")                  # or kind="smooth"

The numbers are those of `ncsde validate --format json` with the same flags, bit for bit (the
report's rows, p-values, fits and extrapolations; docs/maths.md §9.5 says what each one is).
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from . import _core
from . import models as _models


def _number_text(x: float) -> str:
    return repr(float(x))  # the shortest text that reads back as the same double


def _to_arrays(value: Any) -> Any:
    """Lists of numbers (or of such lists) as numpy arrays; dicts and other lists recursively."""
    if isinstance(value, dict):
        return {k: _to_arrays(v) for k, v in value.items()}
    if isinstance(value, list):
        if value and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            return np.asarray(value, dtype=float if any(isinstance(v, float) for v in value)
                              else np.int64)
        if value and all(isinstance(v, list) for v in value):
            try:
                return np.asarray(value, dtype=float)
            except ValueError:
                pass
        return [_to_arrays(v) for v in value]
    return value


def _table(rows: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    """The report's rows as columns: source, reference, n, bonferroni_p, and each statistic's value
    and p-value ("<statistic>" and "<statistic> p")."""
    table: dict[str, Any] = {
        "source": np.array([r["source"] for r in rows]),
        "reference": np.array([r["reference"] for r in rows]),
        "n": np.array([r["n"] for r in rows], dtype=np.int64),
        "bonferroni_p": np.array([r["bonferroni_p"] for r in rows], dtype=float),
    }
    statistics = [c["statistic"] for c in rows[0]["comparisons"]] if rows else []
    for s in statistics:
        found = [next((c for c in r["comparisons"] if c["statistic"] == s), None) for r in rows]
        table[s] = np.array([np.nan if c is None else c["value"] for c in found], dtype=float)
        table[s + " p"] = np.array([np.nan if c is None else c["p_value"] for c in found],
                                   dtype=float)
    return table


def validate(model: Any = "transformer", V0: Any = None, *, T: float = 1.0,
             widths: Iterable[int] = (32, 64, 128, 256), networks: int = 10000,
             paths: int = 10000, dt: float = 1.0 / 1024, stop_level: float = 5.0,
             tail_level: float = 2.5, unstopped_tail_level: float = 20.0, nk: int = 0,
             sampler: str | None = None, variants: str = "auto", alpha: float = 0.01,
             limit_exponent: float | str = "fitted", seed: int = 1, threads: int = 0,
             **params: float | int | bool | str) -> dict[str, Any]:
    """The finite networks of `model` (a registry name with keyword parameters, or an
    ncsde.models.CovarianceSde) at the widths `widths` (depth d = T·n) against its covariance SDE,
    as `ncsde validate` compares them: two-sample KS distances and mean gaps of ρ and V at T ∧ τ
    (τ: first time max_a V^aa ≥ stop_level), stopped fractions and tails, Bonferroni-adjusted per
    row, the SDE's noise floor (an independent SDE run), the wrong SDEs of `variants` (the power
    check), the rate fit of the smooth gaps and their extrapolation to n → ∞.

    Keyword arguments: T, widths, networks, paths, dt, stop_level, tail_level,
    unstopped_tail_level, nk, sampler, variants, alpha, limit_exponent, seed, threads, and the
    model's parameters (c_plus, gamma2, tau0, heads, output_projection, causal, …). V0: the initial
    state (default: the 3×3 reference state V3 of docs/maths.md §9.1).

    Returns the report (the keys of `ncsde validate --format json`, lists of numbers as numpy
    arrays) plus "table": the rows as columns (source, reference, n, bonferroni_p, and each
    statistic's value and "<statistic> p"). Bad arguments raise ValueError with the program's
    message naming the flag and the value; a failed run raises RuntimeError. The run releases the
    GIL; Ctrl-C raises KeyboardInterrupt once the current block of paths or networks is done.
    """
    import json

    if not hasattr(_core, "run_command"):
        raise RuntimeError("ncsde.validate: this build of the module has no commands "
                           "(configure with NCSDE_BUILD_VALIDATION=ON)")
    # The model's parameters are checked by the registry first (ValueError naming a bad one, in
    # Python spelling); then every parameter is passed as its flag.
    if isinstance(model, str):
        sde = _models.covariance_sde(model, **params)
    else:  # an ncsde.models.CovarianceSde, with `params` overriding its parameters
        sde = _models.covariance_sde(model.name, **{**model.params, **params}) if params else model
    model, params = sde.name, dict(sde.params)
    args = ["validate", "--model", model, "--T", _number_text(T),
            "--n", ",".join(str(int(n)) for n in widths), "--networks", str(int(networks)),
            "--paths", str(int(paths)), "--dt", _number_text(dt),
            "--stop-level", _number_text(stop_level), "--tail-level", _number_text(tail_level),
            "--unstopped-tail-level", _number_text(unstopped_tail_level), "--nk", str(int(nk)),
            "--variants", variants, "--alpha", _number_text(alpha),
            "--limit-exponent", limit_exponent if isinstance(limit_exponent, str)
            else _number_text(limit_exponent),
            "--seed", str(int(seed)), "--threads", str(int(threads))]
    if V0 is not None:
        v = np.asarray(V0, dtype=float)
        if v.ndim != 2:
            raise ValueError(f"validate: V0 must be a square matrix (got shape {v.shape})")
        args += ["--V0", ";".join(",".join(_number_text(x) for x in row) for row in v)]
    if sampler is not None:
        args += ["--sampler", sampler]
    for name, value in params.items():
        flag = "--" + name.replace("_", "-")
        if isinstance(value, (bool, np.bool_)):
            if value:
                args.append(flag)
        else:
            args += [flag, value if isinstance(value, str) else _number_text(value)
                     if isinstance(value, float) else str(value)]
    args += ["--format", "json"]
    rc, out, err = _core.run_command(args)
    message = err.strip().replace("ncsde validate: error: ", "").replace("ncsde: error: ", "")
    if rc == 2:
        raise ValueError(message or "ncsde.validate: bad arguments")
    if rc != 0:
        raise RuntimeError(message or f"ncsde.validate: the run failed (exit code {rc})")
    parsed = json.loads(out)
    report = _to_arrays(parsed)
    report["table"] = _table(parsed["rows"])
    return report
