"""Measured convergence orders from Python, and their plot (ctest: python_example_convergence_order).

    PYTHONPATH=build/python python3 examples/python/convergence_order.py [OUTPUT_DIR]

Strong errors E|X_dt(T) − X(T)| of the four registry schemes on geometric Brownian motion (its
pathwise exact solution is the reference) over six step sizes dt = T/2^l on common Brownian paths;
the order is the slope of log error on log dt. Writes convergence_order.png to OUTPUT_DIR (default: a
temporary directory) and exits 1 when a measured order is outside its declared order ± 0.05.
"""

import sys
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import ncsde  # noqa: E402

series = ncsde.convergence("gbm", kind="strong", paths=2000, seed=1)
for s in series:
    print(f"{s['scheme']:22} order {s['order']:.3f} ± {s['stderr']:.3f}  "
          f"95% CI [{s['ci_low']:.3f}, {s['ci_high']:.3f}]  expected {s['expected']:g}  "
          f"{'pass' if s['pass'] else 'FAIL'}")

out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="ncsde-"))
out.mkdir(parents=True, exist_ok=True)
fig, ax = plt.subplots(figsize=(6, 4.5))
ncsde.plots.convergence(series, ax)
ax.set_title("gbm: strong error at T against dt (±2 SE)")
fig.tight_layout()
fig.savefig(out / "convergence_order.png", dpi=120)
print(f"plot: {out / 'convergence_order.png'}")
if not all(s["pass"] for s in series):
    sys.exit("convergence_order: a measured order is outside its tolerance")
