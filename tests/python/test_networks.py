"""ncsde.sample_networks: finite networks of registry models, bit-identical to `ncsde
sample-network`, shapes, and argument errors."""

from __future__ import annotations

import csv
import subprocess

import numpy as np
import pytest

import ncsde

V0 = np.array([[1.0, 0.5], [0.5, 1.0]])


def test_shapes_and_recorded_depths():
    sde = ncsde.models.covariance_sde("transformer")
    r = ncsde.sample_networks(sde, V0, 16, 32, networks=40, seed=2, depths=[0, 16, 32])
    assert r["V"].shape == (40, 3, 2, 2) and r["V"].dtype == np.float64
    assert r["stopped_V"].shape == (40, 2, 2) and r["status"].shape == (40,)
    assert r["depths"] == [0, 16, 32] and r["sampler"] == "reduced" and (r["n"], r["d"]) == (16, 32)
    # Depth 0 is V0 itself (V = X Xᵀ/n of the input), then the layers change it.
    assert np.allclose(r["V"][:, 0], V0, rtol=0, atol=1e-12)
    assert not np.allclose(r["V"][:, 2], V0)
    assert np.array_equal(r["V"], r["V"].transpose(0, 1, 3, 2))
    assert r["completed"] + r["stopped"] + r["blown_up"] == 40
    assert np.all(r["t_stop"] == r["stop_layer"] / 16)


@pytest.mark.parametrize("model, params, flags, options", [
    ("transformer", {}, [], {}),
    ("attention", dict(tau0=0.5, gamma2=1.0), ["--tau0", "0.5", "--gamma2", "1", "--sampler",
                                                "literal", "--stop-level", "3"],
     dict(sampler="literal", stop_level=3.0)),
    ("shaped-tanh", dict(a=0.7), ["--a", "0.7"], {}),
])
def test_bit_identical_to_the_cli(ncsde_program, tmp_path, model, params, flags, options):
    """The CSV of `ncsde sample-network --out` (V at τ∧d with 17 significant digits, status and
    t_stop = τ/n per network) equals ncsde.sample_networks with the same arguments."""
    out = tmp_path / "networks.csv"
    done = subprocess.run([ncsde_program, "sample-network", "--model", model, "--V0", "1,0.5;0.5,1",
                           "--n", "16", "--d", "32", "--networks", "60", "--seed", "4", *flags,
                           "--out", str(out)], capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    r = ncsde.sample_networks(ncsde.models.covariance_sde(model, **params), V0, 16, 32,
                              networks=60, seed=4, **options)
    assert len(rows) == 60
    for i, row in enumerate(rows):
        assert row["status"] == r["status"][i] and float(row["t_stop"]) == r["t_stop"][i]
        for name, (a, b) in (("V11", (0, 0)), ("V12", (0, 1)), ("V22", (1, 1))):
            assert float(row[name]) == r["stopped_V"][i, a, b]
    if "stop_level" in options:
        assert r["stopped"] > 0


def test_bad_arguments_name_the_parameter():
    sde = ncsde.models.covariance_sde("attention", heads=2)
    with pytest.raises(ValueError, match=r"sampler.*(got bogus)"):
        ncsde.sample_networks(sde, V0, 16, 8, sampler="bogus")
    with pytest.raises(ValueError, match=r"attention must be one of shaped, unshaped \(got soft\)"):
        ncsde.sample_networks(sde, V0, 16, 8, attention="soft")
    with pytest.raises(ValueError, match="heads"):
        ncsde.sample_networks(sde, V0, 15, 8)  # 2 heads do not divide n = 15
    with pytest.raises(ValueError, match="V0"):
        ncsde.sample_networks(sde, np.array([[1.0, 2.0], [2.0, 1.0]]), 16, 8)
    with pytest.raises(ValueError, match="stop_level"):
        ncsde.sample_networks(sde, V0, 16, 8, stop_level=0.0)


def test_rank_collapse_matches_the_cli(ncsde_program, tmp_path):
    """`ncsde rank-collapse --out` and ncsde.rank_collapse on the same networks (n = 16, d = 96,
    40 networks, seed 3): the same depth grid and network counts, mean ρ and its standard error to
    1e-12 (the sums run in another order), λ̃_min's quantiles to 1e-9 (another eigensolver: both
    accurate to O(m ε |V|)); unshaped attention collapses (ρ̄ → 1) where shaped does not."""
    out = tmp_path / "rank.csv"
    done = subprocess.run([ncsde_program, "rank-collapse", "--n", "16", "--d", "96", "--networks",
                           "40", "--seed", "3", "--out", str(out)], capture_output=True, text=True,
                          timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    r = ncsde.rank_collapse(ncsde.models.covariance_sde("attention"), n=16, d=96, networks=40,
                            seed=3)
    assert [int(row["depth"]) for row in rows] == r["depth"].tolist()
    for form in ("unshaped", "shaped"):
        s = r[form]
        for j, row in enumerate(rows):
            assert int(row[f"{form}_networks"]) == s["networks"][j]
            for key, tol in (("mean_rho", 1e-12), ("mean_rho_stderr", 1e-12),
                             ("lambda_median", 1e-9), ("lambda_q25", 1e-9), ("lambda_q75", 1e-9)):
                x = float(row[f"{form}_{key}"])
                assert abs(x - s[key][j]) <= tol * max(1.0, abs(x)), (form, key, j, x, s[key][j])
    assert r["unshaped"]["mean_rho"][-1] > 0.99 > r["shaped"]["mean_rho"][-1]
