"""ncsde.simulate on registry models: shapes and dtypes, bit-identity with the `ncsde simulate`
program and across thread counts, the GIL released during runs, and argument errors."""

from __future__ import annotations

import csv
import json
import subprocess
import threading
import time

import numpy as np
import pytest

import ncsde

V0 = np.array([[1.0, 0.5], [0.5, 1.0]])
V0_TEXT = "1,0.5;0.5,1"


def test_result_shapes_and_dtypes():
    sde = ncsde.models.covariance_sde("transformer")
    r = ncsde.simulate(sde, V0, 1.0, dt=0.01, paths=50, seed=4, save_times=[0.0, 0.5, 1.0])
    assert r.terminal.shape == (50, 2, 2) and r.terminal.dtype == np.float64
    assert r.saved.shape == (50, 3, 2, 2) and r.saved.dtype == np.float64
    assert r.status.shape == (50,) and r.status.dtype.kind == "U"
    assert r.t_stop.shape == (50,) and r.t_stop.dtype == np.float64
    assert r.state_shape == (2, 2)
    assert set(r.status) <= {"completed", "blown_up", "stopped"}
    assert r.paths == 50 and r.completed + r.blown_up + r.stopped == 50
    assert (r.scheme, r.seed, r.T, r.dt) == ("em", 4, 1.0, 0.01)
    assert r.coordinates == ["V11", "V12", "V22"]
    # Every path starts at V0 and a completed one ends at T.
    assert np.array_equal(r.saved[:, 0], np.broadcast_to(V0, (50, 2, 2)))
    assert np.all(r.t_stop[r.status == "completed"] == 1.0)
    # States are exactly symmetric on the cone.
    assert np.array_equal(r.terminal, r.terminal.transpose(0, 2, 1))
    # The summaries are the library's: the mean over completed paths, the functionals of the CLI.
    done = r.terminal[r.status == "completed"]
    assert np.allclose(r.terminal_mean, done.mean(axis=0), rtol=1e-12, atol=1e-14)
    assert set(r.functionals) == {"rho12", "V11", "V22"}
    assert r.functionals["rho12"]["quantiles_completed"].shape == (7,)
    assert json.loads(r.summary_json())["paths"] == 50
    for key in ("violations", "projected", "boundary", "paths_with_violations"):
        assert isinstance(r.pd[key], int)


def test_summaries_only_without_keep_paths():
    r = ncsde.simulate(ncsde.models.covariance_sde("mlp"), V0, 0.5, dt=0.01, paths=20,
                       keep_paths=False)
    assert r.terminal is None and r.status is None and r.saved is None and r.t_stop is None
    assert r.completed == 20 and r.terminal_mean.shape == (2, 2)


def test_covariance_of_the_entries():
    # The covariance of the packed entries is kept up to K = 136 (m = 16) unless asked otherwise;
    # without it terminal_covariance names the argument, and the means are the same bits.
    sde = ncsde.models.covariance_sde("mlp")
    full = ncsde.simulate(sde, V0, 0.1, dt=0.01, paths=100, seed=3, keep_paths=False)
    diagonal = ncsde.simulate(sde, V0, 0.1, dt=0.01, paths=100, seed=3, keep_paths=False,
                              covariance="diagonal")
    assert full.terminal_covariance.shape == (3, 3)
    assert np.array_equal(full.terminal_mean, diagonal.terminal_mean)
    with pytest.raises(ValueError, match="covariance full"):
        diagonal.terminal_covariance
    wide = ncsde.simulate(sde, np.eye(17), 0.01, dt=0.01, paths=10, keep_paths=False)
    with pytest.raises(ValueError, match="not kept"):
        wide.terminal_covariance
    with pytest.raises(ValueError, match="covariance must be one of"):
        ncsde.simulate(sde, V0, 0.1, covariance="some")


def test_threads_do_not_change_a_single_bit():
    sde = ncsde.models.covariance_sde("attention", tau0=0.5, gamma2=1.0)
    one = ncsde.simulate(sde, V0, 1.0, dt=0.01, paths=300, seed=9, threads=1)
    two = ncsde.simulate(sde, V0, 1.0, dt=0.01, paths=300, seed=9, threads=2)
    assert np.array_equal(one.terminal, two.terminal, equal_nan=True)
    assert np.array_equal(one.t_stop, two.t_stop) and np.array_equal(one.status, two.status)
    other_seed = ncsde.simulate(sde, V0, 1.0, dt=0.01, paths=300, seed=10, threads=1)
    assert not np.array_equal(one.terminal, other_seed.terminal)


def test_the_emulated_device_is_the_cpu_bit_for_bit_and_says_so():
    # The device engine's kernels on the CPU (docs/gpu.md): the same paths as the CPU engines, the
    # device in Result.device; a run the device does not take is refused naming why, "auto" runs
    # it on the CPU and says so.
    sde = ncsde.models.covariance_sde("attention", tau0=0.5, gamma2=1.0)
    cpu = ncsde.simulate(sde, V0, 1.0, dt=0.01, paths=300, seed=9, save_times=[0.5])
    dev = ncsde.simulate(sde, V0, 1.0, dt=0.01, paths=300, seed=9, save_times=[0.5],
                         device="emulated")
    assert np.array_equal(cpu.terminal, dev.terminal, equal_nan=True)
    assert np.array_equal(cpu.saved, dev.saved, equal_nan=True)
    assert np.array_equal(cpu.t_stop, dev.t_stop) and np.array_equal(cpu.status, dev.status)
    assert cpu.device == {"device": "cpu", "note": "", "handed_back": 0}
    assert dev.device["device"] == "emulated" and dev.device["handed_back"] >= 0
    with pytest.raises(ValueError, match="device 'emulated' does not run the scheme 'milstein'"):
        ncsde.simulate(sde, V0, 1.0, dt=0.01, paths=4, scheme="milstein", device="emulated")
    # The stop level runs on the device, by the CPU's rule.
    cpu = ncsde.simulate(sde, V0, 1.0, dt=0.01, paths=300, seed=9, stop_level=2.0)
    dev = ncsde.simulate(sde, V0, 1.0, dt=0.01, paths=300, seed=9, stop_level=2.0,
                         device="emulated")
    assert cpu.stopped > 0 and dev.stopped == cpu.stopped
    assert np.array_equal(cpu.terminal, dev.terminal, equal_nan=True)
    assert np.array_equal(cpu.t_stop, dev.t_stop) and np.array_equal(cpu.status, dev.status)
    auto = ncsde.simulate(sde, V0, 1.0, dt=0.01, paths=4, scheme="milstein", device="auto")
    assert auto.device["device"] == "cpu" and auto.device["note"].startswith("auto: the CPU")


def test_device_cuda_is_a_named_error_without_a_gpu():
    # Without the CUDA backend, or on a machine without a GPU, never a silent run on the CPU.
    sde = ncsde.models.covariance_sde("mlp")
    try:
        r = ncsde.simulate(sde, V0, 0.1, dt=0.01, paths=4, device="cuda")
    except ncsde.DeviceError as e:
        assert "device cuda" in str(e), str(e)
    else:
        assert r.device["device"] == "cuda:0"  # a machine with a GPU


def _cli_run(program, tmp_path, flags):
    out = tmp_path / "paths.csv"
    done = subprocess.run([program, "simulate", *flags, "--format", "json", "--out", str(out)],
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    return json.loads(done.stdout), rows


def _without_timing(summary):
    return {k: v for k, v in summary.items() if k not in ("seconds", "threads")}


@pytest.mark.parametrize(
    "model, params, flags, options",
    [
        ("transformer", {}, [], {}),
        # Blow-ups (strong attention explodes before T = 2 on a good fraction of paths).
        ("attention", dict(tau0=0.5, gamma2=1.0),
         ["--tau0", "0.5", "--gamma2", "1"], dict(T=2.0)),
        ("mlp", dict(c_plus=0.5, c_minus=-0.5),
         ["--c-plus", "0.5", "--c-minus", "-0.5", "--scheme", "milstein", "--stop-level", "1.3",
          "--pd-policy", "count"],
         dict(scheme="milstein", stop_level=1.3, policy="count")),
        ("resnet", dict(gamma2=0.5), ["--gamma2", "0.5", "--batched", "--scheme",
                                       "predictor-corrector"],
         dict(batched=True, scheme="predictor-corrector")),
        ("shaped-tanh", dict(a=0.7, activation="swish"),
         ["--a", "0.7", "--activation", "swish", "--scheme", "milstein-commutative"],
         dict(scheme="milstein-commutative")),
    ],
)
def test_bit_identical_to_the_cli(ncsde_program, tmp_path, model, params, flags, options):
    """The same run through `ncsde simulate` and ncsde.simulate: every path's status, t_stop and
    state (the CSV's 17 significant digits read back exactly) and the JSON summary (timing aside)
    are equal."""
    seed, paths, dt = 11, 150, 0.01
    T = options.pop("T", 1.0)
    summary, rows = _cli_run(ncsde_program, tmp_path,
                             ["--model", model, "--V0", V0_TEXT, "--T", str(T), "--dt", str(dt),
                              "--paths", str(paths), "--seed", str(seed), *flags])
    sde = ncsde.models.covariance_sde(model, **params)
    r = ncsde.simulate(sde, V0, T, dt=dt, paths=paths, seed=seed, **options)
    assert len(rows) == paths
    for p, row in enumerate(rows):
        assert int(row["path"]) == p
        assert row["status"] == r.status[p]
        assert float(row["t_stop"]) == r.t_stop[p]
        for name, (a, b) in (("V11", (0, 0)), ("V12", (0, 1)), ("V22", (1, 1))):
            x = float(row[name])
            assert x == r.terminal[p, a, b] or (np.isnan(x) and np.isnan(r.terminal[p, a, b]))
    assert _without_timing(json.loads(r.summary_json())) == _without_timing(summary)
    if model == "attention":
        assert 0 < r.blown_up < paths  # the case exercises blow-ups
    if "stop_level" in options:
        assert r.stopped > 0


def test_runs_release_the_gil():
    """A Python thread keeps running while a built-in ensemble runs."""
    ticks = 0
    stop = threading.Event()

    def count():
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            time.sleep(0.001)

    sde = ncsde.models.covariance_sde("transformer")
    t = threading.Thread(target=count)
    t.start()
    start = time.monotonic()
    ticks_before = ticks
    r = ncsde.simulate(sde, V0, 1.0, dt=1e-3, paths=4000, seed=1, threads=1, keep_paths=False)
    elapsed = time.monotonic() - start
    during = ticks - ticks_before
    stop.set()
    t.join()
    assert r.completed + r.blown_up == 4000
    # With the GIL held the thread could not tick at all; released, it ticks about once per ms
    # (asked: at least once per 10 ms of the run, room for a loaded machine).
    assert elapsed > 0.05 and during >= elapsed / 0.010


@pytest.mark.parametrize(
    "kwargs, texts",
    [
        (dict(dt=-0.1), ["dt", "-0.1"]),
        (dict(paths=0), ["paths", "0"]),
        (dict(scheme="rk4"), ["scheme", "rk4", "em"]),
        (dict(policy="clip"), ["policy", "clip"]),
        (dict(stop_level=-1.0), ["stop_level", "-1"]),
        (dict(seed=-3), ["seed", "-3"]),
        (dict(step_control="smart"), ["step_control", "smart"]),
        (dict(blowup_threshold=0.0), ["blowup_threshold", "0"]),
        (dict(save_times=[0.5, 2.0]), ["save", "2"]),
        (dict(threads=-1), ["threads", "-1"]),
        (dict(device="gpu"), ["device", "gpu", "cuda:N"]),
    ],
)
def test_bad_arguments_raise_value_error_naming_them(kwargs, texts):
    sde = ncsde.models.covariance_sde("mlp")
    with pytest.raises(ValueError) as e:
        ncsde.simulate(sde, V0, 1.0, **{"paths": 4, **kwargs})
    for text in texts:
        assert text in str(e.value), str(e.value)


def test_bad_initial_states_are_refused():
    sde = ncsde.models.covariance_sde("mlp")
    with pytest.raises(ValueError, match="V0"):
        ncsde.simulate(sde, np.array([[1.0, 2.0], [2.0, 1.0]]), 1.0, paths=4)  # not PSD
    with pytest.raises(ValueError, match=r"V0 must be a 2-D array"):
        ncsde.simulate(sde, np.ones(2), 1.0, paths=4)
    with pytest.raises(TypeError, match="sde must be"):
        ncsde.simulate("mlp", V0, 1.0)
    with pytest.raises(ValueError, match="T"):
        ncsde.simulate(sde, V0, -1.0, paths=4)


def test_convergence_matches_the_cli(ncsde_program):
    """ncsde.convergence and `ncsde convergence --format json` give the same series, bit for bit
    (orders, errors and their standard errors), on gbm's strong errors with 500 paths."""
    done = subprocess.run([ncsde_program, "convergence", "--problem", "gbm", "--kind", "strong",
                           "--paths", "500", "--seed", "3", "--format", "json"],
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    cli = json.loads(done.stdout)
    py = ncsde.convergence("gbm", kind="strong", paths=500, seed=3)
    assert [s["scheme"] for s in py] == [s["scheme"] for s in cli] and len(py) == 4
    for a, b in zip(py, cli):
        assert a["order"] == b["order"] and a["stderr"] == b["stderr"]
        assert a["errors"].tolist() == b["errors"] and a["dts"].tolist() == b["dts"]
        assert a["pass"] == b["pass"] and a["expected"] == b["expected"]


def test_convergence_arguments_are_checked():
    with pytest.raises(ValueError, match=r"problem must be one of gbm, .*\(got heat\)"):
        ncsde.convergence("heat")
    with pytest.raises(ValueError, match=r"kind must be one of both, strong, weak \(got orders\)"):
        ncsde.convergence("gbm", kind="orders")
    with pytest.raises(ValueError, match="rk4"):
        ncsde.convergence("gbm", "rk4")
    assert [p["name"] for p in ncsde.convergence_problems()][:1] == ["gbm"]


def test_blowup_curve_matches_the_cli(ncsde_program):
    """`ncsde blowup --format json` (adaptive steps, the increment controller by default) and
    ncsde.blowup_curve of the same ncsde.simulate run: the same blown_up_fraction and the same curve, bit
    for bit (strong attention blows up on a good fraction of paths before T = 2)."""
    v3 = "1,0.6324555320336759,0.25099800796022265;0.6324555320336759,1.6,0.7408103670980852;" \
         "0.25099800796022265,0.7408103670980852,0.7"  # the program's default V0
    done = subprocess.run([ncsde_program, "blowup", "--model", "attention", "--tau0", "0.5",
                           "--gamma2", "1", "--V0", v3, "--T", "2", "--dt", "0.01", "--paths",
                           "300", "--seed", "6", "--grid", "20", "--format", "json"],
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    cli = json.loads(done.stdout)
    sde = ncsde.models.covariance_sde("attention", tau0=0.5, gamma2=1.0)
    v0 = np.array([[float(x) for x in row.split(",")] for row in v3.split(";")])
    r = ncsde.simulate(sde, v0, 2.0, dt=0.01, paths=300, seed=6, step_control="increment")
    assert r.blown_up == cli["blown_up"] > 0 and r.blown_up_fraction == cli["blown_up_fraction"]
    c = ncsde.blowup_curve(r, grid=20)
    for key in ("t", "blown_up", "p", "stderr", "wilson_lower", "wilson_upper"):
        assert c[key].tolist() == [point[key] for point in cli["curve"]], key
    assert c["p"][-1] == r.blown_up_fraction and np.all(np.diff(c["p"]) >= 0)
    with pytest.raises(ValueError, match=r"grid must be an integer in \[1, 100000\] \(got 0\)"):
        ncsde.blowup_curve(r, grid=0)


@pytest.mark.parametrize("kwargs, texts", [
    (dict(paths=10**9), ["paths 1000000000", "memory"]),
    (dict(paths=2**62), ["paths must be in [1, 1000000000]"]),
    (dict(paths=10**12), ["paths must be in [1, 1000000000]"]),
    (dict(T=1e6, dt=1e-6), ["dt 1e-06 with T 1e+06", "steps per path"]),
    (dict(paths=10**6, T=1e6, dt=1e-3), ["paths 1000000", "steps in all"]),
    (dict(threads=10**6), ["threads must be in [0, 4096]"]),
])
def test_limits_are_the_programs(kwargs, texts):
    """The program's limits (ncsde.limits, validation/limits.hpp) refuse a run up front with
    ValueError naming the argument, the value and the limit, before anything is allocated (each
    of these ran, or grew until MemoryError, before)."""
    sde = ncsde.models.covariance_sde("transformer")
    args = dict(T=1.0, dt=0.01)
    args.update(kwargs)
    t_end = args.pop("T")
    started = time.monotonic()
    with pytest.raises(ValueError) as e:
        ncsde.simulate(sde, V0, t_end, **args)
    for text in texts:
        assert text in str(e.value), str(e.value)
    assert time.monotonic() - started < 30.0
    assert ncsde.limits["max_paths"] == 10**9 and ncsde.limits["max_threads"] == 4096


def test_network_and_curve_limits():
    model = ncsde.models.covariance_sde("mlp")
    with pytest.raises(ValueError, match="networks 1000000000"):
        ncsde.sample_networks(model, V0, 64, 64, networks=10**9)
    with pytest.raises(ValueError, match="^n 1000000: the run needs about"):
        ncsde.sample_networks(model, V0, 10**6, 4, networks=4, sampler="literal", threads=1)
    r = ncsde.simulate(ncsde.models.covariance_sde("transformer"), V0, 0.1, dt=0.01, paths=10)
    with pytest.raises(ValueError, match=r"grid must be an integer in \[1, 100000\]"):
        ncsde.blowup_curve(r, grid=10**9)


def test_complex_values_are_refused_not_truncated():
    sde = ncsde.models.covariance_sde("transformer")
    with pytest.raises(ValueError, match="V0 must hold real numbers"):
        ncsde.simulate(sde, V0 + 1e-3j, 0.1, dt=0.01, paths=5)
    with pytest.raises(ValueError, match="tau0 must be a real number"):
        ncsde.models.covariance_sde("attention", tau0=np.complex128(1 + 1j))
    with pytest.raises(ValueError, match="tau0 must be a real number"):
        ncsde.models.covariance_sde("attention", tau0=1 + 0j)
    complex_drift = ncsde.PythonSde(drift=lambda x, t: -x + 0j, noise_map=lambda x, xi, t: xi,
                                    noise_dimension=1)
    with pytest.raises(ValueError, match="drift returned complex values"):
        ncsde.simulate(complex_drift, np.zeros(1), 0.1, dt=0.01, paths=2)


def test_result_dicts_are_the_summary_json():
    # One description of the summary's pieces (ncsde/ensemble_io.hpp): Result.pd, .stepping and
    # .functionals hold the JSON summary's fields, under its names, with its values.
    sde = ncsde.models.covariance_sde("attention", gamma2=1.0, tau0=0.5)
    r = ncsde.simulate(sde, V0, 1.0, dt=0.05, paths=40, seed=6, step_control="increment",
                       tolerance=0.1, threads=1)
    summary = json.loads(r.summary_json())

    def same(ours, theirs):
        assert set(ours) == set(theirs)
        for key, value in theirs.items():
            mine = ours[key]
            if isinstance(value, list):
                assert [None if not np.isfinite(x) else x for x in mine] == \
                    [None if x in (None, "inf", "-inf") else x for x in value], key
            elif value is None:
                assert np.isnan(mine), key
            else:
                assert mine == value, key

    same(r.pd, summary["pd"])
    same(r.stepping, summary["step_control"])
    assert r.stepping["steps"] == r.steps and r.stepping["deepest_halving"] >= 0
    functionals = {f["name"]: f for f in summary["functionals"]}
    assert set(r.functionals) == set(functionals) and "rho12" in functionals
    for name, f in r.functionals.items():
        same(f, {k: v for k, v in functionals[name].items() if k != "name"})
