"""Models written in C++ in a library of their own (ncsde/models/models_library.hpp), loaded with
ncsde.models.load_library and then used like the built-in models. The library of the tests
(tests/python/models_library/wishart_models.cpp, NCSDE_TEST_MODELS_LIBRARY) registers the Wishart
process "wishart-test": dV = p·I dt + L dB + dBᵀLᵀ, E[V_t] = V0 + p t I, which Euler–Maruyama
reproduces exactly in the mean."""

from __future__ import annotations

import csv
import json
import os
import subprocess

import numpy as np
import pytest

import ncsde


@pytest.fixture(scope="module")
def library() -> str:
    path = os.environ.get("NCSDE_TEST_MODELS_LIBRARY")
    if not path:
        pytest.skip("NCSDE_TEST_MODELS_LIBRARY (the tests' models library) not set")
    if "wishart-test" not in ncsde.models.names():
        assert ncsde.models.load_library(path) == ["wishart-test", "wishart-noise-map-test"]
    return path


def test_loaded_model_is_a_registry_model(library):
    assert "wishart-test" in ncsde.models.names()
    entry = next(e for e in ncsde.models.list() if e["name"] == "wishart-test")
    assert [p["name"] for p in entry["parameters"]] == ["degrees_of_freedom"]
    sde = ncsde.models.covariance_sde("wishart-test", degrees_of_freedom=3.0)
    V = np.array([[2.0, 0.5], [0.5, 1.0]])
    np.testing.assert_array_equal(sde.drift(V), 3.0 * np.eye(2))
    # Cov(dV^ab, dV^cd)/dt = V^ac δ^bd + V^ad δ^bc + V^bc δ^ad + V^bd δ^ac.
    C = sde.diffusion_covariance(V)
    d = np.eye(2)
    expected = (np.einsum("ac,bd->abcd", V, d) + np.einsum("ad,bc->abcd", V, d)
                + np.einsum("bc,ad->abcd", V, d) + np.einsum("bd,ac->abcd", V, d))
    np.testing.assert_allclose(C, expected, rtol=1e-14, atol=1e-14)


def test_loaded_model_mean_matches_exact(library):
    # E[V_T] = V0 + p T I; 4 standard errors of the sample mean per entry.
    p, T, paths = 4.0, 0.5, 20000
    V0 = np.array([[1.0, 0.3], [0.3, 2.0]])
    sde = ncsde.models.covariance_sde("wishart-test", degrees_of_freedom=p)
    r = ncsde.simulate(sde, V0, T, dt=1e-2, paths=paths, seed=7)
    assert r.terminal.shape == (paths, 2, 2) and r.completed == paths
    mean = r.terminal.mean(axis=0)
    se = r.terminal.std(axis=0, ddof=1) / np.sqrt(paths)
    assert np.all(np.abs(mean - (V0 + p * T * np.eye(2))) <= 4 * se), (mean, se)


def test_loaded_model_is_bit_identical_to_the_cli(library, ncsde_program, tmp_path):
    """The same library loaded by `ncsde --models-library` gives the same paths, bit for bit."""
    V0, T, dt, paths, seed = [[1.0, 0.3], [0.3, 2.0]], 0.25, 0.01, 64, 11
    sde = ncsde.models.covariance_sde("wishart-test", degrees_of_freedom=4.0)
    r = ncsde.simulate(sde, V0, T, dt=dt, paths=paths, seed=seed)
    out = tmp_path / "paths.csv"
    done = subprocess.run([ncsde_program, "--models-library", library, "simulate", "--model",
                           "wishart-test", "--degrees-of-freedom", "4", "--V0", "1,0.3;0.3,2",
                           "--T", str(T), "--dt", str(dt), "--paths", str(paths), "--seed",
                           str(seed), "--out", str(out)],
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == paths
    # The library may be named among the command's flags too: the same run, the same bytes.
    after = tmp_path / "paths_after.csv"
    done = subprocess.run([ncsde_program, "simulate", "--model", "wishart-test",
                           "--degrees-of-freedom", "4", "--V0", "1,0.3;0.3,2", "--T", str(T), "--dt",
                           str(dt), "--paths", str(paths), "--seed", str(seed), "--out", str(after),
                           f"--models-library={library}"],
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert after.read_bytes() == out.read_bytes()
    for p, row in enumerate(rows):
        assert row["status"] == r.status[p] and float(row["t_stop"]) == r.t_stop[p]
        for name, (a, b) in (("V11", (0, 0)), ("V12", (0, 1)), ("V22", (1, 1))):
            assert float(row[name]) == r.terminal[p, a, b]


def test_bad_parameter_names_it(library):
    with pytest.raises(ValueError, match="p must be > 0"):
        ncsde.models.covariance_sde("wishart-test", degrees_of_freedom=-1.0)


def test_second_load_refuses_the_taken_name(library):
    with pytest.raises(ValueError, match="wishart-test"):
        ncsde.models.load_library(library)


def test_refusals_name_the_path(tmp_path):
    missing = tmp_path / "missing.so"
    with pytest.raises(ValueError, match=f"path {missing} cannot be loaded"):
        ncsde.models.load_library(missing)
    # A shared library that is not a models library.
    libm = next((p for p in ("/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6",
                             "/lib64/libm.so.6") if os.path.exists(p)), None)
    if libm is not None:
        with pytest.raises(ValueError, match="defines no models"):
            ncsde.models.load_library(libm)


def test_validate_and_its_plots_run_on_a_models_library_model(library, ncsde_program, tmp_path):
    # The library's own network sampler ("walk": V = X Xᵀ for a matrix Brownian motion X, the
    # Wishart process's law at every width) through `ncsde validate --plots`, and the same run
    # from Python: the right SDE is not rejected, every figure is drawn in every format.
    flags = ["--model", "wishart-test", "--degrees-of-freedom", "3", "--V0", "1,0.3;0.3,0.8",
             "--n", "8,16,32", "--networks", "400", "--paths", "400", "--threads", "2"]
    plots = tmp_path / "cli"
    done = subprocess.run([ncsde_program, "validate", *flags, "--plots", str(plots), "--check",
                           "--models-library", library],
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert "walk sampler" in done.stdout
    figures = ("rho_density", "ks_vs_n", "sample_paths", "stopped_fraction", "smooth_gaps")
    for figure in figures:
        for suffix in ("png", "pdf", "svg"):
            assert (plots / f"{figure}.{suffix}").stat().st_size > 0
    report = ncsde.validate("wishart-test", [[1.0, 0.3], [0.3, 0.8]], degrees_of_freedom=3.0,
                            widths=(8, 16, 32), networks=400, paths=400, threads=2,
                            plots=tmp_path / "python")
    assert report["right_accepted"]
    for figure in figures:
        assert (tmp_path / "python" / f"{figure}.png").stat().st_size > 0


def test_coefficients_of_a_model_without_its_dense_covariance(library, ncsde_program):
    # The drift, and what is missing, instead of an error.
    done = subprocess.run([ncsde_program, "--models-library", library, "coefficients", "--model",
                           "wishart-noise-map-test", "--degrees-of-freedom", "3", "--V",
                           "1,0.3;0.3,2", "--format", "json"],
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["drift"] == [[3.0, 0.0], [0.0, 3.0]] and out["diffusion"] is None
    assert "dense Sigma" in out["diffusion_missing"]
    done = subprocess.run([ncsde_program, "--models-library", library, "coefficients", "--model",
                           "wishart-noise-map-test", "--V", "1,0.3;0.3,2", "--format", "table"],
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 0 and "diffusion: the model gives its noise map" in done.stdout


def test_merge_of_library_shards_names_the_library_it_needs(library, ncsde_program, tmp_path):
    # Shards of a models-library model record the library (by its checksum); a merge that has not
    # loaded it names it and the flag, and with it merges.
    flags = ["validate", "--model", "wishart-test", "--degrees-of-freedom", "3", "--V0",
             "1,0.3;0.3,0.8", "--n", "8,16", "--networks", "60", "--paths", "60",
             "--models-library", library]
    shards = []
    for k, cut in enumerate(("0:30", "30:60")):
        shards.append(str(tmp_path / f"part{k}"))
        done = subprocess.run([ncsde_program, *flags, "--paths-range", cut, "--partial",
                               shards[-1]], capture_output=True, text=True, timeout=600,
                              stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr
    done = subprocess.run([ncsde_program, "merge", *shards], capture_output=True, text=True,
                          timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 2
    assert "models library" in done.stderr and "--models-library" in done.stderr
    done = subprocess.run([ncsde_program, "merge", *shards, "--models-library", library],
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert "wishart-test" in done.stdout
