#!/usr/bin/python3
"""Figures of `ncsde validate --plots DIR`, drawn from DIR/values.csv, DIR/paths.csv and
DIR/validation.json:

  rho_density           rho12 at T∧τ: each sample's CDF minus the SDE's (the networks at each n, the
                        wrong SDEs) with the 95% band under equal laws; beside it the densities of
                        the SDE and of the networks at every n, overlaid
  ks_vs_n               two-sample KS distance (network vs SDE) against n, log-log, per statistic,
                        with the noise floor (two SDE runs) and the critical distance at alpha
  sample_paths          rho12_t along SDE paths and along networks at the largest n, stopped
                        (frozen) once max_a V^aa > K at a recorded time
  stopped_fraction      P(max_a V^aa passes K before T) against n, with standard errors
  smooth_gaps           |E f(network) - E f(SDE)| of the smooth functionals against n, log-log, bars
                        ±1 SE, the fitted rate C_f n^-beta, the noise floor (two SDE runs) and each
                        wrong SDE's largest gap against the networks at every n

each as NAME.png, NAME.pdf and NAME.svg. The titles name the model's own parameters (every model of
the registry or of a models library, whatever its parameters are called).

Usage: validate_plot.py DIR
"""
import csv
import json
import math
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def packed_index(m, a, b):
    """Position of V^{ab} (0-indexed, a <= b) in the row-major upper triangle."""
    return a * m - a * (a - 1) // 2 + (b - a)


def rho12(row, m):
    v11 = row[packed_index(m, 0, 0)]
    v22 = row[packed_index(m, 1, 1)]
    v12 = row[packed_index(m, 0, 1)]
    if not (np.isfinite(v11) and np.isfinite(v22) and np.isfinite(v12)) or v11 <= 0 or v22 <= 0:
        return math.nan
    return max(-1.0, min(1.0, v12 / math.sqrt(v11 * v22)))


def read_values(path, m):
    out = defaultdict(list)
    with open(path) as f:
        reader = csv.reader(f)
        next(reader)
        for row in reader:
            if row[2] == "blown_up":
                continue
            packed = [float(x) for x in row[3:]]
            out[row[0]].append(rho12(packed, m))
    return {k: np.array([x for x in v if not math.isnan(x)]) for k, v in out.items()}


def read_paths(path, m, level):
    """rho12_t along each path of the stopped process: frozen from the first recorded time at which
    max_a V^aa > level (the comparison is between stopped processes; the second element of each
    path is the stopping point, or None)."""
    raw = defaultdict(lambda: defaultdict(list))
    with open(path) as f:
        reader = csv.reader(f)
        next(reader)
        for row in reader:
            raw[row[0]][int(row[1])].append([float(x) for x in row[2:]])
    diagonal = [packed_index(m, a, a) for a in range(m)]
    paths = defaultdict(dict)
    for source, by_path in raw.items():
        for p, points in by_path.items():
            out, stop = [], None
            for point in points:
                t, packed = point[0], point[1:]
                if stop is None:
                    out.append((t, rho12(packed, m)))
                    if max(packed[i] for i in diagonal) > level:
                        stop = out[-1]
                else:
                    out.append((t, stop[1]))
            paths[source][p] = (out, stop)
    return paths


# The figure formats: a raster for a quick look, vector ones for papers.
FORMATS = ("png", "pdf", "svg")

# Parameter names as mathtext where the library's models use them; any other name as it is.
PARAMETER_SYMBOLS = {"gamma2": r"$\gamma^2$", "tau0": r"$\tau_0$", "c_plus": "$c_+$",
                     "c_minus": "$c_-$"}


def save(fig, out, name):
    for fmt in FORMATS:
        fig.savefig(f"{out}/{name}.{fmt}", dpi=130)
    plt.close(fig)


def describe_parameters(params):
    """The model's parameters as "name = value" pairs, whatever they are (none: an empty string)."""
    return ", ".join(f"{PARAMETER_SYMBOLS.get(k, k)} = {v}" for k, v in params.items())


def pretty(name):
    """A statistic's name as mathtext: rho12 → ρ¹², V11 → V¹¹, V11∧K → min(V¹¹, K); other names as
    they are."""
    if name.endswith("∧K"):
        inner = pretty(name[:-2])
        return f"$\\min({inner.strip('$')}, K)$" if inner.startswith("$") else name
    for prefix, symbol in (("rho", r"\rho"), ("V", "V")):
        rest = name[len(prefix):]
        if name.startswith(prefix) and rest.isdigit():
            return f"${symbol}^{{{rest}}}$"
    return name


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    with open(f"{out}/validation.json") as f:
        report = json.load(f)
    m = report["m"]
    widths = report["widths"]
    values = read_values(f"{out}/values.csv", m)
    described = describe_parameters(report.get("params", {}))
    title = (f"{report['model']}: {described + ', ' if described else ''}m = {m}, T = {report['T']}, "
             f"stopped at $\\mathrm{{max}}_a V^{{aa}}$ > {report['stop_level']}")
    counts = f"{report['networks']} networks per n, {report['paths']} SDE paths"

    # 1. rho12 at T∧τ: each sample's CDF minus the SDE's (same grid 1/n), with the pointwise 95%
    # band of a difference of two independent empirical CDFs under equal laws; the SDE's density
    # beside it for orientation.
    fig, (ax, ax_d) = plt.subplots(1, 2, figsize=(11, 4.8), gridspec_kw={"width_ratios": [3, 2]})
    grid = np.linspace(-1, 1, 401)

    def cdf(sample):
        sample = np.sort(sample)
        return np.searchsorted(sample, grid, side="right") / max(len(sample), 1)

    sde_last = values.get(f"sde_n{widths[-1]}", np.array([]))
    colours = plt.cm.viridis(np.linspace(0.1, 0.85, len(widths)))
    band_drawn = False
    for n, c in zip(widths, colours):
        net = values.get(f"network_n{n}", np.array([]))
        sde = values.get(f"sde_n{n}", sde_last)
        if len(net) == 0 or len(sde) == 0:
            continue
        f_net, f_sde = cdf(net), cdf(sde)
        if not band_drawn:
            pooled = (f_net * len(net) + f_sde * len(sde)) / (len(net) + len(sde))
            half = 1.96 * np.sqrt(pooled * (1 - pooled) * (1 / len(net) + 1 / len(sde)))
            ax.fill_between(grid, -half, half, color="0.88",
                            label="95% band under equal laws")
            band_drawn = True
        ax.plot(grid, f_net - f_sde, color=c, lw=1.3, label=f"networks, n = d/T = {n}")
    for key, sample in values.items():
        if key.startswith("variant_") and len(sample) and len(sde_last):
            ax.plot(grid, cdf(sample) - cdf(sde_last), ls="--", lw=1.2,
                    label=f"wrong SDE: {key[len('variant_'):]}")
    ax.axhline(0, color="0.3", lw=0.6)
    ax.set_xlabel(r"$x$  ($\rho^{12}$ at $T\wedge\tau$)")
    ax.set_ylabel(r"$F_{\mathrm{sample}}(x) - F_{\mathrm{SDE}}(x)$")
    ax.set_title(f"CDF of $\\rho^{{12}}$ minus the SDE's ({counts})", fontsize=9)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3)
    bins = np.linspace(-1, 1, 51)
    ax_d.hist(sde_last, bins=bins, density=True, histtype="stepfilled", color="0.85",
              label=f"SDE (grid 1/{widths[-1]})")
    for n, c in zip(widths, colours):
        net = values.get(f"network_n{n}", np.array([]))
        if len(net):
            ax_d.hist(net, bins=bins, density=True, histtype="step", color=c, lw=1.3,
                      label=f"networks, n = {n}")
    ax_d.set_xlabel(r"$\rho^{12}$ at $T\wedge\tau$")
    ax_d.set_ylabel("density")
    ax_d.legend(fontsize=7, loc="upper left")
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    save(fig, out, "rho_density")

    # 2. KS distance vs n.
    rows = report["rows"]
    ks = defaultdict(list)
    for row in rows[: len(widths)]:
        for c in row["comparisons"]:
            if c["statistic"].startswith("KS "):
                ks[c["statistic"][3:]].append(c["value"])
    floor_row = rows[len(widths)]
    floor = np.mean([c["value"] for c in floor_row["comparisons"] if c["statistic"].startswith("KS ")])
    fig, ax = plt.subplots(figsize=(7, 5.5))
    for name, d in ks.items():
        ax.plot(widths, d, "o-", ms=4, label=pretty(name))
    ax.axhline(floor, color="0.4", ls=":", label="noise floor (two SDE runs, mean)")
    ax.axhline(report["ks_critical"], color="crimson", ls="--",
               label=f"critical distance, α = {report['alpha']}")
    variant_ks = []
    for row in rows[len(widths) + 1:]:
        d = max(c["value"] for c in row["comparisons"] if c["statistic"].startswith("KS "))
        variant_ks.append(d)
        ax.plot([widths[-1]], [d], "x", ms=9, mew=2, label=f"{row['source']} (largest KS)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(widths)
    ax.set_xticklabels([str(n) for n in widths])
    # Every marker inside the axes: the wrong SDEs' distances can be far above the networks'.
    shown = [v for d in ks.values() for v in d] + [floor, report["ks_critical"]] + variant_ks
    shown = [v for v in shown if v > 0 and math.isfinite(v)]
    if shown:
        ax.set_ylim(min(shown) / 1.5, max(shown) * 1.5)
    ax.set_xlabel("width n (depth d = T·n)")
    ax.set_ylabel("two-sample KS distance\nto the SDE")
    ax.set_title(f"{title}\n{counts}", fontsize=8)
    ax.legend(fontsize=7, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.15))
    fig.tight_layout()
    save(fig, out, "ks_vs_n")

    # 3. Sample paths of rho12.
    paths = read_paths(f"{out}/paths.csv", m, report["stop_level"])
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, (source, label) in zip(axes, [("sde", "SDE (Euler–Maruyama)"),
                                           (f"network_n{widths[-1]}", f"networks, n = {widths[-1]}")]):
        for pts, stop in paths.get(source, {}).values():
            t, r = zip(*pts)
            line, = ax.plot(t, r, lw=0.8, alpha=0.8)
            if stop is not None:
                ax.plot([stop[0]], [stop[1]], "o", ms=4, color=line.get_color())
        ax.set_title(label)
        ax.set_xlabel(r"$t = l/n$  (dot: stopped, $\mathrm{max}_a V^{aa} > K$)")
    axes[0].set_ylabel(r"$\rho^{12}_t$")
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    save(fig, out, "sample_paths")

    # 4. Stopped fractions.
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    net_p, net_se, sde_p, sde_se = [], [], [], []
    for row in rows[: len(widths)]:
        c = next(c for c in row["comparisons"] if c["statistic"] == "stopped fraction")
        net_p.append(c["value"])
        sde_p.append(c["reference"])
        net_se.append(math.sqrt(c["value"] * (1 - c["value"]) / report["networks"]))
        sde_se.append(math.sqrt(c["reference"] * (1 - c["reference"]) / report["paths"]))
    ax.errorbar(widths, net_p, yerr=net_se, fmt="o-", capsize=3,
                label=f"networks ({report['networks']} per n)")
    ax.errorbar(widths, sde_p, yerr=sde_se, fmt="s--", capsize=3,
                label=f"SDE on the grid k/n ({report['paths']} paths)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(widths)
    ax.set_xticklabels([str(n) for n in widths])
    ax.set_xlabel("width n")
    ax.set_ylabel(f"P($\\mathrm{{max}}_a V^{{aa}}$ > {report['stop_level']} before T)")
    ax.set_title(f"{title}\nbars: ±1 standard error", fontsize=8)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save(fig, out, "stopped_fraction")

    # 5. Smooth-statistic gaps against n.
    smooth_names = [c["statistic"] for c in rows[0]["comparisons"] if c["statistic"].startswith("E ")]
    if smooth_names:
        fit = report.get("smooth_fit") or {}
        fig, ax = plt.subplots(figsize=(7, 5.5))
        shown = []
        for k, name in enumerate(smooth_names):
            gap, se = [], []
            for row in rows[: len(widths)]:
                c = next(c for c in row["comparisons"] if c["statistic"] == name)
                gap.append(c["value"] - c["reference"])
                se.append(c["stderr"])
            gap, se = np.array(gap), np.array(se)
            x = np.array(widths, float) * (1.0 + 0.03 * (k - len(smooth_names) / 2))
            bars = ax.errorbar(x, np.abs(gap), yerr=se, fmt="o", ms=4, capsize=2,
                               label=pretty(name[2:]))
            shown += list(np.abs(gap)) + list(se)
            if fit.get("resolved"):
                beta = fit["exponent"]
                basis = np.array(widths, float) ** -beta
                w = 1.0 / se**2
                scale = np.sum(w * gap * basis) / np.sum(w * basis * basis)
                grid = np.geomspace(widths[0], widths[-1], 50)
                ax.plot(grid, np.abs(scale) * grid**-beta, "-", lw=0.8,
                        color=bars[0].get_color(), alpha=0.7)
        floor_row = rows[len(widths)]
        floor_se = np.mean([c["stderr"] for c in floor_row["comparisons"]
                            if c["statistic"].startswith("E ")])
        floor_gap = np.sqrt(np.mean([(c["value"] - c["reference"]) ** 2
                                     for c in floor_row["comparisons"]
                                     if c["statistic"].startswith("E ")]))
        ax.axhline(floor_gap, color="0.4", ls=":",
                   label=f"noise floor: RMS gap of two SDE runs ({floor_gap:.4f})")
        ax.axhline(2 * floor_se, color="0.6", ls="-.", label="2 SE (mean over f)")
        # The wrong SDEs against the networks at every width (the limit rows carry their gaps):
        # the functional with the largest gap at the widest n, which stays put as n grows.
        wrong_limits = (report.get("limit") or [])[1:]
        for lim in wrong_limits:
            g = max(lim["gaps"], key=lambda c: abs(c["by_width"][-1]))
            y = np.abs(np.array(g["by_width"]))
            shown += list(y)
            ax.errorbar(widths, y, yerr=g["by_width_stderr"], fmt="x--", ms=8, mew=2, lw=1,
                        capsize=2, label=f"{lim['source']}: {pretty(g['statistic'][2:])}")
        if not wrong_limits:
            for row in rows[len(widths) + 1:]:
                d = max(abs(c["value"] - c["reference"]) for c in row["comparisons"]
                        if c["statistic"].startswith("E "))
                shown.append(d)
                ax.plot([widths[-1] * 1.12], [d], "x", ms=9, mew=2,
                        label=f"{row['source']} (largest gap)")
        shown = [v for v in shown + [floor_gap, 2 * floor_se] if v > 0 and math.isfinite(v)]
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(widths)
        ax.set_xticklabels([str(n) for n in widths])
        if shown:
            ax.set_ylim(min(shown) / 2, max(shown) * 2)
        rate = (f"fitted $\\beta$ = {fit['exponent']:.2f} ± {fit['exponent_stderr']:.2f}"
                if fit.get("resolved") else "no rate resolved")
        ax.set_xlabel("width n (depth d = T·n)")
        ax.set_ylabel(r"$|\mathrm{E}\,f(\mathrm{network}) - \mathrm{E}\,f(\mathrm{SDE})|$")
        ax.set_title(f"{title}\n{counts}; bars ±1 SE; lines $C_f n^{{-\\beta}}$, {rate}",
                     fontsize=8)
        ax.legend(fontsize=7, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.15))
        fig.tight_layout()
        save(fig, out, "smooth_gaps")


if __name__ == "__main__":
    main()
