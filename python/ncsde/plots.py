"""Plots of ncsde's results on a matplotlib Axes (matplotlib is imported by the caller, not here).

    fig, ax = plt.subplots()
    ncsde.plots.convergence(ncsde.convergence("gbm", kind="strong"), ax)
"""

from __future__ import annotations

from typing import Any, Iterable


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
