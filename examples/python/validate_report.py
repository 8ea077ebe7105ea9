"""`ncsde validate` from Python (ctest: python_example_validate_report): strong shaped attention
(γ² = 1, τ₀ = ½) against its finite networks at n = 16, 32, 64, the report as numpy data and its
two plots on matplotlib Axes.

    PYTHONPATH=build/python python3 examples/python/validate_report.py [OUTPUT_DIR]

Prints the report's rows and writes validate_report.png; exits 1 unless the mean KS distance falls
with n and the wrong SDE without attention is rejected at the largest width.
"""
import sys
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import ncsde  # noqa: E402

report = ncsde.validate("attention", gamma2=1.0, tau0=0.5, widths=(16, 32, 64), networks=4000,
                        paths=4000, seed=1)
table = report["table"]
for source, reference, p in zip(table["source"], table["reference"], table["bonferroni_p"]):
    print(f"{source:>26} vs {reference:<30} Bonferroni p = {p:.3g}")
print("mean KS by width:", report["mean_ks"], "noise floor:", report["floor_mean_ks"])
fig, (ax_ks, ax_gap) = plt.subplots(1, 2, figsize=(11, 4))
ncsde.plots.validate(report, ax_ks, kind="ks")
ncsde.plots.validate(report, ax_gap, kind="smooth")
out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="ncsde-"))
fig.tight_layout()
fig.savefig(out / "validate_report.png", dpi=110)
print(f"plot: {out / 'validate_report.png'}")
no_attention = table["bonferroni_p"][table["source"] == "wrong SDE: no-attention"]
ok = report["mean_ks"][-1] < report["mean_ks"][0] and no_attention.size == 1 and no_attention[0] < 0.01
sys.exit(0 if ok else "validate_report: the KS distance did not fall or no-attention was not rejected")
