"""SDE against finite networks from Python: ncsde.validate runs `ncsde validate` (the program's own
code, in this process) and returns its report as Python data.

    report = ncsde.validate("attention", gamma2=1.0, tau0=0.5, widths=(32, 64, 128), networks=5000,
                            paths=5000)
    report["table"]["source"], report["table"]["bonferroni_p"]   # one entry per row of the report
    report["mean_ks"], report["floor_mean_ks"]                   # KS trend in n and its noise floor
    ncsde.plots.validate(report, ax, kind="ks")                  # or kind="smooth"

The numbers are those of `ncsde validate --format json` with the same flags, bit for bit (the
report's rows, p-values, fits and extrapolations; docs/maths.md §9.5 says what each one is).

A user's own parts go through the same report (the program's comparisons, fits and text):

    sde = ncsde.PythonSde(drift=b, noise_map=g, noise_dimension=k, state_space="psd_cone")
    def networks(n, d, count, seed):         # V = X Xᵀ/n at the layers 0..d
        return my_numpy_networks(n, d, count, seed)      # shape (count, d + 1, m, m)
    report = ncsde.validate(sde, V0, sampler=networks, variants=[("no drift", wrong_sde)],
                            name="tanh + ½tanh² MLP", plots="out/")

or samples={n: array (networks, d + 1, m, m), …} for networks sampled beforehand.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from . import _core
from . import models as _models


# The defaults of `ncsde validate` (cli::validate_defaults), one set for the program, scripts/main.sh
# and this function; empty in a build of the module without the program's commands.
_DEFAULTS: dict[str, Any] = (_core._validate_defaults() if hasattr(_core, "_validate_defaults")
                             else {})


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


def _is_registry(sde: Any) -> bool:
    return isinstance(sde, str) or isinstance(sde, _models.CovarianceSde)


def _wrong_sdes(variants: Any, sde: Any) -> list[tuple[str, Any, str]]:
    """The wrong SDEs as (name, SDE object, variant name of the right SDE or "")."""
    if isinstance(variants, str):
        # The program's rule (--variants): auto, none, or a list of the model's variants.
        return [(v, sde, v) for v in _core._validate_variants(variants, sde)]
    items = variants.items() if isinstance(variants, Mapping) else variants
    out = []
    for k, item in enumerate(items):
        if isinstance(item, str):
            out.append((item, sde, item))
            continue
        if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
            name, wrong = item
        else:
            name, wrong = f"wrong{k + 1}", item
        if isinstance(wrong, str):
            wrong = _models.covariance_sde(wrong)
        out.append((name, wrong, ""))
    return out


def _program_validate(model: Any, V0: Any, T: float, widths: Sequence[int], networks: int,
                      paths: int, dt: float, stop_level: float, tail_level: float,
                      unstopped_tail_level: float, nk: int, sampler: str | None, variants: str,
                      alpha: float, limit_exponent: float | str, seed: int, threads: int,
                      device: str, plots: str | None, params: dict[str, Any]) -> dict[str, Any]:
    """A registry model with the program's networks and variants: `ncsde validate` itself."""
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
            "--seed", str(int(seed)), "--threads", str(int(threads)), "--device", str(device)]
    if V0 is not None:
        v = np.asarray(V0, dtype=float)
        if v.ndim != 2:
            raise ValueError(f"validate: V0 must be a square matrix (got shape {v.shape})")
        args += ["--V0", ";".join(",".join(_number_text(x) for x in row) for row in v)]
    if sampler is not None:
        args += ["--sampler", sampler]
    if plots is not None:
        args += ["--plots", os.fspath(plots)]
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
    return json.loads(out)


def _user_validate(sde: Any, V0: Any, T: float, widths: Sequence[int], networks: int, paths: int,
                   dt: float, stop_level: float, tail_level: float, unstopped_tail_level: float,
                   nk: int, sampler: Any, samples: Mapping[int, Any] | None, variants: Any,
                   alpha: float, limit_exponent: float | str, seed: int, threads: int,
                   device: str, plots: str | None,
                   name: str | None) -> tuple[dict[str, Any], str]:
    """The program's report for a user's SDE, networks or wrong SDEs."""
    if not hasattr(_core, "_validate_report"):
        raise RuntimeError("ncsde.validate: this build of the module has no commands "
                           "(configure with NCSDE_BUILD_VALIDATION=ON)")
    v0 = _core._validate_reference_state() if V0 is None else np.asarray(V0, dtype=float)
    if v0.ndim != 2 or v0.shape[0] != v0.shape[1] or v0.shape[0] < 2:
        raise ValueError(f"validate: V0 must be a square matrix, at least 2x2 (got shape "
                         f"{v0.shape})")
    m = v0.shape[0]
    widths = [int(n) for n in widths]
    # The program's checks of the settings (check_validate_settings), with this function's names.
    given = _core._check_validate_settings(
        widths, float(stop_level), float(tail_level), float(unstopped_tail_level), float(alpha),
        limit_exponent if isinstance(limit_exponent, str) else _number_text(limit_exponent))
    registry = isinstance(sde, _models.CovarianceSde)
    if sampler is None and samples is None and not registry:
        raise ValueError("validate: an SDE that is not a registry model has no finite networks: "
                         "give sampler= (a callable (n, d, count, seed) -> V at the layers "
                         "0..d) or samples= ({n: array (networks, d + 1, m, m)})")
    if samples is not None and sampler is not None:
        raise ValueError("validate: give sampler= or samples=, not both")
    wrong = _wrong_sdes(variants, sde)

    # The SDE side: the program's seeds (the right SDE seed, the noise floor seed + 1, the wrong
    # SDEs seed + 2 + i).
    # The right SDE runs on `device`; the wrong SDEs on the CPU (as the program's).
    reference = _core._sample_stopped_sde(sde, v0, T, dt, widths, stop_level, paths, seed,
                                          threads, 20, device=device)
    floor = _core._sample_stopped_sde(sde, v0, T, dt, [widths[-1]], stop_level, paths, seed + 1,
                                      threads, 0, device=device)
    wrong_samples = [
        _core._sample_stopped_sde(w, v0, T, dt, widths, stop_level, paths, seed + 2 + i, threads,
                                  0, variant=variant)
        for i, (_, w, variant) in enumerate(wrong)]

    # The networks at each width (seed + 100 + i, as the program), V at every layer.
    nets, seconds, count = [], 0.0, None
    kept, kept_times = None, []
    for i, n in enumerate(widths):
        d = int(round(T * n))
        if d < 1:
            raise ValueError(f"validate: T = {T} gives depth d = T·n = {d} at n = {n} "
                             "(expected d >= 1)")
        start = time.perf_counter()
        if samples is not None:
            if n not in samples:
                raise ValueError(f"validate: samples has no width {n} (widths {widths})")
            layers = samples[n]
        elif callable(sampler):
            layers = sampler(n, d, int(networks), seed + 100 + i)
        else:
            layers = _core.sample_networks(sde, v0, n, d, networks=int(networks),
                                           sampler=sampler, n_k=nk if nk > 0 else None,
                                           seed=seed + 100 + i, threads=threads or None,
                                           depths=list(range(d + 1)))["V"]
        layers = np.asarray(layers, dtype=float)
        seconds += time.perf_counter() - start
        if layers.ndim != 4 or layers.shape[1:] != (d + 1, m, m):
            raise ValueError(f"validate: the networks of width n = {n} must have shape "
                             f"(networks, d + 1 = {d + 1}, {m}, {m}), V at the layers 0..d "
                             f"(got shape {layers.shape})")
        if count is None:
            count = layers.shape[0]
        elif layers.shape[0] != count:
            raise ValueError(f"validate: every width needs as many networks (got {count} at "
                             f"n = {widths[0]} and {layers.shape[0]} at n = {n})")
        nets.append(_core._network_sample(layers, stop_level))
        if i == len(widths) - 1:
            depths = sorted({int(round(d * k / 64)) for k in range(65)})
            kept = np.ascontiguousarray(layers[:20][:, depths])
            kept_times = [depth / n for depth in depths]

    if registry:
        title = ", ".join(f"{k} = {v}" for k, v in sde.params.items())
        params = dict(sde.params)
        model_name = name or sde.name
    else:
        title = name or "a user SDE"
        params = {}
        model_name = name or "python-sde"
    sampler_text = ("a Python sampler" if callable(sampler) else "samples given"
                    if samples is not None else f"{sampler} sampler" if sampler
                    else "the model's sampler")
    setup = {"model": model_name, "parameters": title,
             "parameters_json": json.dumps(params), "sampler": sampler_text,
             "n_k": str(nk) if nk > 0 else "n", "m": m, "T": float(T), "dt": float(dt),
             "paths": int(paths), "networks": int(count), "stop_level": float(stop_level),
             "tail_level": float(tail_level),
             "unstopped_tail_level": float(unstopped_tail_level), "alpha": float(alpha),
             "widths": widths, "limit_exponent": given}
    if plots is not None:
        os.makedirs(plots, exist_ok=True)
    markdown, text, *_ = _core._validate_report(
        setup, reference, floor, [w[0] for w in wrong], wrong_samples, nets, seconds,
        None if plots is None else os.fspath(plots), kept, kept_times, f"network_n{widths[-1]}")
    if plots is not None:
        script = os.path.join(os.path.dirname(__file__), "_validate_plot.py")
        done = subprocess.run([sys.executable, script, os.fspath(plots)], capture_output=True,
                              text=True)
        if done.returncode != 0:
            raise RuntimeError(f"ncsde.validate: the plot script failed (exit status "
                               f"{done.returncode}): {done.stderr.strip()}")
    return json.loads(text), markdown


def validate(model: Any = None, V0: Any = None, *, T: float = _DEFAULTS.get("T"),
             widths: Iterable[int] = _DEFAULTS.get("widths"),
             networks: int = _DEFAULTS.get("networks"), paths: int = _DEFAULTS.get("paths"),
             dt: float = _DEFAULTS.get("dt"), stop_level: float = _DEFAULTS.get("stop_level"),
             tail_level: float = _DEFAULTS.get("tail_level"),
             unstopped_tail_level: float = _DEFAULTS.get("unstopped_tail_level"),
             nk: int = _DEFAULTS.get("nk"),
             sampler: str | Callable[[int, int, int, int], Any] | None = None,
             samples: Mapping[int, Any] | None = None,
             variants: Any = _DEFAULTS.get("variants"), alpha: float = _DEFAULTS.get("alpha"),
             limit_exponent: float | str = _DEFAULTS.get("limit_exponent"),
             seed: int = _DEFAULTS.get("seed"), threads: int = 0, device: str = "cpu",
             plots: str | os.PathLike[str] | None = None, name: str | None = None,
             **params: float | int | bool | str) -> dict[str, Any]:
    """The finite networks of `model` at the widths `widths` (depth d = T·n) against its
    covariance SDE, as `ncsde validate` compares them: two-sample KS distances and mean gaps of ρ
    and V at T ∧ τ (τ: first time max_a V^aa > stop_level, the SDE monitored on each width's grid
    k/n), stopped fractions and tails, Bonferroni-adjusted per row, the SDE's noise floor (an
    independent SDE run), the wrong SDEs of `variants` (the power check), the rate fit of the
    smooth gaps and their extrapolation to n → ∞.

    model: a registry name with keyword parameters (c_plus, gamma2, tau0, heads, …), an
    ncsde.models.CovarianceSde, or an ncsde.PythonSde (state_space "psd_cone" or "symmetric";
    `name` titles the report); None: the default study, strong attention ("attention" with
    gamma2=1, tau0=0.5; a parameter given replaces its value). V0: the initial state (default: the
    3×3 reference state V3 of docs/maths.md §9.1). The defaults of every setting are the
    program's (`ncsde validate --help`): the run that shows power, 10⁵ networks per width and 10⁵
    SDE paths.

    The networks: the model's own (sampler "reduced" or "literal", registry models), or the
    user's: sampler a callable (n, d, count, seed) returning V = X Xᵀ/n of `count` networks of
    width n at the layers 0..d, shape (count, d + 1, m, m) (seed: the program's seed + 100 + i
    for the i-th width); or samples, {n: such an array} per width, sampled beforehand. A network
    stops at the first layer l ≥ 1 with max_a V^aa > stop_level (non-finite V: blown up).

    variants: the wrong SDEs of the power check: "auto" (vpv and no-attention for the attention
    models), "none", a comma list of variant names, or a list of wrong SDEs, each a variant name,
    a registry name, an ncsde.models.CovarianceSde, an ncsde.PythonSde or a (name, SDE) pair (or
    a dict name → SDE). Each runs on the seed + 2 + i stream and is compared with the networks at
    the widest n.

    device: where the right SDE's paths run (its reference and noise-floor runs; the wrong SDEs
    run on the CPU), as in ncsde.simulate: "cpu", "cuda" or "cuda:N", "auto" or "emulated"
    (docs/gpu.md); the report's "device" says which and how many paths the CPU resumed (absent
    for "cpu"). A PythonSde has no device form: a device other than "cpu" or "auto" is refused.

    A registry model with its own networks and variants runs `ncsde validate` itself (the numbers
    bit for bit the program's with the same flags); otherwise the SDEs are sampled here (the
    registry's and their variants by the program's sample_sde; a PythonSde by Euler–Maruyama
    ensembles, one per width, stopped on the width's grid) and the report is the program's,
    made from these samples. plots: a directory for the program's figures and data
    (rho_density, ks_vs_n, sample_paths, stopped_fraction, smooth_gaps as PNG, PDF and SVG;
    validation.md, validation.json, values.csv, paths.csv).

    Returns the report (the keys of `ncsde validate --format json`, lists of numbers as numpy
    arrays; "check" says "passed", "failed" or "lacks power", the last when a wrong SDE is not
    rejected, with "power_shortfall" estimating the samples that would reject it) plus "table":
    the rows as columns (source, reference, n, bonferroni_p, and each statistic's value and
    "<statistic> p"), and "markdown" (the program's table output) for runs
    made here. Bad arguments raise ValueError naming the argument and the value; a failed run
    raises RuntimeError. The runs release the GIL; Ctrl-C raises KeyboardInterrupt.
    """
    if not _DEFAULTS:
        raise RuntimeError("ncsde.validate: this build of the module has no commands "
                           "(configure with NCSDE_BUILD_VALIDATION=ON)")
    if model is None:  # the default study
        model, params = _DEFAULTS["model"], {**_DEFAULTS["params"], **params}
    widths = [int(n) for n in widths]
    own = (_is_registry(model) and (sampler is None or isinstance(sampler, str))
           and samples is None and isinstance(variants, str))
    if own:
        parsed = _program_validate(model, V0, T, widths, networks, paths, dt, stop_level,
                                   tail_level, unstopped_tail_level, nk, sampler, variants,
                                   alpha, limit_exponent, seed, threads, device, plots, params)
        markdown = None
    else:
        if isinstance(model, str):
            model = _models.covariance_sde(model, **params)
        elif isinstance(model, _models.CovarianceSde):
            if params:
                model = _models.covariance_sde(model.name, **{**model.params, **params})
        elif params:
            raise ValueError(f"validate: model parameters {sorted(params)} given for an SDE "
                             "object (they belong to registry models)")
        parsed, markdown = _user_validate(model, V0, T, widths, networks, paths, dt, stop_level,
                                          tail_level, unstopped_tail_level, nk, sampler,
                                          samples, variants, alpha, limit_exponent, seed,
                                          threads, device, plots, name)
    report = _to_arrays(parsed)
    report["table"] = _table(parsed["rows"])
    if markdown is not None:
        report["markdown"] = markdown
    return report
