"""ncsde.convergence of a user's SDE (an ncsde.PythonSde): strong and weak orders with a pathwise
solution written in Python, or without one (the fine-grid reference and the coupled differences
of successive levels)."""

from __future__ import annotations

import numpy as np
import pytest

import ncsde

MU, S = 0.5, 0.5


def gbm():
    """The library's gbm problem (dX = μX dt + σX dW, X0 = 1, T = 1) written in Python, with the
    same arithmetic as its C++ form."""
    def noise(x, xi, t):
        return S * x * xi[:, :, None]
    return ncsde.PythonSde(drift=lambda x, t: MU * x, noise_map=noise, noise_dimension=1,
                           state_space="psd_cone")


def exact(x0, w, t):
    return x0 * np.exp((MU - S * S / 2) * t + S * w[0])


def test_a_python_sde_has_the_librarys_strong_errors():
    # The same streams and the same steps: the EM strong errors of the Python gbm are those of the
    # library's gbm problem to round-off (the exact solution's exp is numpy's here; measured:
    # relative differences below 1e-15).
    library = ncsde.convergence("gbm", "em", kind="strong", paths=200, threads=2)[0]
    ours = ncsde.convergence(gbm(), "em", kind="strong", V0=[[1.0]], T=1.0, paths=200, threads=2,
                             first_level=4, levels=len(library["dts"]), exact=exact, name="gbm")[0]
    assert ours["problem"] == "gbm" and ours["reference"] == "exact"
    np.testing.assert_array_equal(ours["dts"], library["dts"])
    np.testing.assert_allclose(ours["errors"], library["errors"], rtol=1e-12, atol=0)
    assert ours["order"] == pytest.approx(library["order"], abs=1e-10)


def test_weak_orders_of_a_python_sde_without_a_closed_form():
    # dX = (X − X³) dt + ½X dW: no solution, no moments. The weak series are the coupled
    # differences of successive levels; at 2000 paths and dt = 1/4 … 1/16 EM's slope is within
    # 3 standard errors of 1 (the precise measurement, 40 000 paths at dt = 1/16 … 1/256, is the
    # C++ unit test of the same SDE: 1.03 ± 0.04).
    sde = ncsde.PythonSde(drift=lambda x, t: x - x ** 3, noise_map=lambda x, xi, t: 0.5 * x * xi,
                          noise_dimension=1)
    rows = ncsde.convergence(sde, "em", kind="weak", V0=[0.5], T=1.0, paths=2000, levels=4,
                             first_level=2, weak=lambda x: x[0] ** 2, threads=2)
    assert len(rows) == 1
    r = rows[0]
    assert r["kind"] == "weak" and "successive levels" in r["reference"]
    assert r["functional"] == "<lambda>" and len(r["dts"]) == 3
    assert abs(r["order"] - 1.0) <= 3 * r["stderr"]
    assert np.all(r["errors"] > 2 * r["errors_stderr"])


def test_without_exact_the_strong_reference_is_fine_grid_milstein():
    rows = ncsde.convergence(gbm(), ["em"], kind="strong", V0=[[1.0]], paths=50, levels=3,
                             threads=1)
    assert rows[0]["reference"].startswith("milstein on the fine grid")
    assert np.all(rows[0]["errors"] > 0)


def test_bad_user_studies_are_refused_naming_the_argument():
    with pytest.raises(ValueError, match="V0="):
        ncsde.convergence(gbm(), "em")
    with pytest.raises(ValueError, match="weak="):
        ncsde.convergence(gbm(), "em", kind="weak", V0=[[1.0]])
    with pytest.raises(TypeError, match="exact must be a callable"):
        ncsde.convergence(gbm(), "em", V0=[[1.0]], exact=3.0)
    with pytest.raises(ValueError, match="noise"):
        ncsde.convergence(gbm(), "em", V0=[[1.0]], noise="diagonal")
    with pytest.raises(ValueError, match="exact returned shape"):
        ncsde.convergence(gbm(), "em", V0=[[1.0]], paths=4, levels=3,
                          exact=lambda x0, w, t: np.zeros(3))
    with pytest.raises(ValueError, match="belong to a study of an ncsde.PythonSde"):
        ncsde.convergence("gbm", "em", V0=[[1.0]])
    # A registry model and other objects that are not names: a ValueError that says what to give.
    with pytest.raises(ValueError, match="problems is a registry model"):
        ncsde.convergence(ncsde.models.covariance_sde("attention"), "em", V0=np.eye(2))
    with pytest.raises(ValueError, match=r"schemes must be None, a name or a list of .* \(got 3\)"):
        ncsde.convergence("gbm", 3)


def test_a_series_has_the_fields_of_the_programs_json(ncsde_program):
    # One description of a series (series_fields): every key of `ncsde convergence --format json`
    # is in the Python dict with the same value (null there, NaN here), and the dict has every
    # field, those the document writes only where they say something included.
    import json
    import math
    import subprocess

    rows = ncsde.convergence("gbm", "em", kind="both", paths=300, seed=3, threads=2)
    done = subprocess.run([ncsde_program, "convergence", "--problem", "gbm", "--scheme", "em",
                           "--paths", "300", "--seed", "3", "--threads", "2", "--format", "json"],
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert len(rows) == len(document) == 2
    every = {"problem", "scheme", "kind", "order", "stderr", "ci_low", "ci_high", "expected",
             "tolerance", "pass", "unresolved", "pre_asymptotic", "local_slopes", "paths", "seed",
             "dts", "errors", "errors_stderr", "cone_exits", "failed_paths", "error_measure",
             "reference", "functional", "seconds"}
    for ours, theirs in zip(rows, document):
        assert set(ours) == every
        assert set(theirs) <= every
        for key, value in theirs.items():
            if key == "seconds":
                continue
            mine = ours[key]
            if isinstance(value, list):
                assert len(mine) == len(value), key
                for a, b in zip(mine, value):
                    assert (b is None and math.isnan(a)) or a == b, key
            elif value is None:
                assert math.isnan(mine), key
            else:
                assert mine == value, key
