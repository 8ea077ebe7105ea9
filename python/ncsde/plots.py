"""Plots of ncsde's results on a matplotlib Axes (matplotlib is imported by the caller, not here).

    fig, ax = plt.subplots()
    ncsde.plots.convergence(ncsde.convergence("gbm", kind="strong"), ax)
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np


def convergence(series: Iterable[dict[str, Any]], ax, *, kind: str | None = None,
                problem: str | None = None):
    """Error against dt on log-log axes, one line per series of ncsde.convergence (optionally only
    of `kind` and `problem`), with ±2 standard-error bars and the measured order ± its standard
    error and the declared order in the legend. Returns ax."""
    chosen = [s for s in series
              if (kind is None or s["kind"] == kind) and (problem is None or s["problem"] == problem)]
    if not chosen:
        raise ValueError(f"plots.convergence: no series of kind={kind!r}, problem={problem!r}")
    for s in chosen:
        label = (f"{s['problem']} {s['scheme']} {s['kind']}: {s['order']:.3f} ± {s['stderr']:.3f}"
                 f" (expected {s['expected']:g})")
        ax.errorbar(s["dts"], s["errors"], yerr=2 * s["errors_stderr"], marker="o", ms=3,
                    capsize=2, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("dt")
    ax.set_ylabel("error")
    ax.legend(fontsize="small")
    return ax


def blowup(result, ax, *, grid: int = 50, label: str | None = None):
    """P(τ ≤ t) of an ncsde.Result against t with its 95% Wilson band (ncsde.blowup_curve). Returns
    ax."""
    from .blowup import blowup_curve

    c = blowup_curve(result, grid)
    line, = ax.step(c["t"], c["p"], where="post",
                    label=label or f"P(τ ≤ t), {result.paths} paths, {result.scheme}")
    ax.fill_between(c["t"], c["wilson_lower"], c["wilson_upper"], step="post", alpha=0.25,
                    color=line.get_color(), label="95% Wilson interval")
    ax.set_xlabel("t")
    ax.set_ylabel("P(τ ≤ t)")
    ax.set_ylim(0, max(0.05, float(c["wilson_upper"].max()) * 1.1))
    ax.legend(fontsize="small")
    return ax


def rank_collapse(table: dict[str, Any], ax_rho, ax_lambda=None):
    """The table of ncsde.rank_collapse: mean ρ̄ (±2 SE) against t = depth/n on ax_rho and, when
    given, the median of λ_min(V)/(tr V/m) with its quartiles on ax_lambda. Returns ax_rho."""
    t = table["t"]
    for form in ("unshaped", "shaped"):
        s = table[form]
        ax_rho.errorbar(t, s["mean_rho"], yerr=2 * s["mean_rho_stderr"], marker="o", ms=2,
                        capsize=1, label=f"{form} attention")
        if ax_lambda is not None:
            line, = ax_lambda.plot(t, s["lambda_median"], label=f"{form} attention")
            ax_lambda.fill_between(t, s["lambda_q25"], s["lambda_q75"], alpha=0.25,
                                   color=line.get_color())
    ax_rho.set_xlabel("t = depth / n")
    ax_rho.set_ylabel("mean ρ")
    ax_rho.legend(fontsize="small")
    if ax_lambda is not None:
        ax_lambda.set_xlabel("t = depth / n")
        ax_lambda.set_ylabel("λ_min(V) / (tr V / m)")
        ax_lambda.legend(fontsize="small")
    return ax_rho


def validate(report: dict[str, Any], ax, *, kind: str = "ks"):
    """A report of ncsde.validate on ax. kind="ks": the mean KS distance of the networks to the SDE
    against the width n (log-log), with the SDE's noise floor (an independent SDE run) and the KS
    critical distance at the report's level; it falls to the floor as n grows when the SDE is the
    limit. kind="smooth": the right SDE's mean gaps E_network − E_SDE of the smooth statistics
    (ρ^ab, min(V^aa, K) at T ∧ τ) against n with ±2 standard-error bars, the fitted rate n^−β in the
    title when the report resolves one, and each wrong SDE's largest |gap| (dashed), which does not
    fall. Returns ax."""
    widths = np.asarray(report["widths"], dtype=float)
    if kind == "ks":
        ax.plot(widths, report["mean_ks"], marker="o", label="networks vs SDE: mean KS distance")
        ax.axhline(report["floor_mean_ks"], color="grey", ls=":",
                   label="noise floor (independent SDE run)")
        ax.axhline(report["ks_critical"], color="grey", ls="--", lw=0.8,
                   label=f"KS critical distance (α = {report['alpha']:g})")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_ylabel("mean KS distance")
    elif kind == "smooth":
        limits = report["limit"]
        right = next((r for r in limits if r["source"] == "right SDE"), None)
        if right is None:
            raise ValueError("plots.validate: the report has no smooth gaps (it needs two widths)")
        for g in right["gaps"]:
            ax.errorbar(widths, g["by_width"], yerr=2 * np.asarray(g["by_width_stderr"]),
                        marker="o", ms=3, capsize=2, label=g["statistic"])
        for r in limits:
            if r["source"] == "right SDE":
                continue
            largest = np.max(np.abs(np.array([g["by_width"] for g in r["gaps"]])), axis=0)
            ax.plot(widths, largest, ls="--", color="grey", marker="x",
                    label=f"{r['source']}: largest |gap|")
        ax.axhline(0.0, color="black", lw=0.6)
        ax.set_xscale("log", base=2)
        ax.set_ylabel("E network − E SDE")
        fit = report.get("smooth_fit")
        if fit and fit.get("resolved"):
            ax.set_title(f"gaps ∝ n^−β, β = {fit['exponent']:.2f} ± {fit['exponent_stderr']:.2f}",
                         fontsize="small")
    else:
        raise ValueError(f"plots.validate: kind must be 'ks' or 'smooth' (got {kind!r})")
    ax.set_xlabel("width n (depth d = T n)")
    ax.legend(fontsize="small")
    return ax
