"""ncsde.PythonSde: user SDEs written in Python against exact moments, the batched and per-path
forms, exceptions, Ctrl-C, and no leaks."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import textwrap
import time
import traceback

import numpy as np
import pytest

import ncsde

MU, SIGMA = 0.5, 0.2


def gbm():
    """dX = μ X dt + σ X dW on scalar states (x of shape (W,), xi of shape (W, 1))."""
    return ncsde.PythonSde(drift=lambda x, t: MU * x,
                           noise_map=lambda x, xi, t: SIGMA * x * xi[:, 0],
                           noise_dimension=1)


def test_gbm_matches_its_exact_moments():
    """E X_T = X0 e^{μT}, E X_T² = X0² e^{(2μ + σ²)T}. 4000 paths, seed 5; 4 Monte Carlo standard
    errors (SE = sample std / √N of X_T and of X_T²). Euler–Maruyama's own bias, exactly
    (1 + μ dt)^N − e^{μT} for the mean and ((1 + μ dt)² + σ² dt)^N − e^{(2μ + σ²)T} for the second
    moment, is checked to be below a quarter of the SE first."""
    n, dt, T = 4000, 2e-3, 1.0
    r = ncsde.simulate(gbm(), 1.0, T, dt=dt, paths=n, seed=5)
    assert r.terminal.shape == (n,) and r.state_shape == ()
    assert r.completed == n and r.pd["violations"] == 0
    x = r.terminal
    steps = round(T / dt)
    for values, exact, em in (
        (x, math.exp(MU * T), (1 + MU * dt) ** steps),
        (x ** 2, math.exp((2 * MU + SIGMA ** 2) * T), ((1 + MU * dt) ** 2 + SIGMA ** 2 * dt) ** steps),
    ):
        se = values.std(ddof=1) / math.sqrt(n)
        assert abs(em - exact) < 0.25 * se
        assert abs(values.mean() - exact) <= 4 * se, (values.mean(), exact, se)


THETA, S = 1.5, 0.3


def symmetric_ou():
    """dV = −θ (V − I) dt + s (Ξ + Ξᵀ)/√2 on symmetric 2×2 states, Ξ with iid N(0, dt) entries
    (k = 4): each entry is an OU process, with noise variance 2 s² on the diagonal and s² off it."""

    def drift(v, t):
        return -THETA * (v - np.eye(2))

    def noise(v, xi, t):
        g = xi.reshape(-1, 2, 2)
        return S * (g + g.transpose(0, 2, 1)) / math.sqrt(2.0)

    return ncsde.PythonSde(drift=drift, noise_map=noise, noise_dimension=4,
                           state_space="symmetric")


def test_matrix_ou_matches_its_exact_moments():
    """E V_T = I + e^{−θT}(V0 − I); Var V^{ab}_T = q (1 − e^{−2θT}) / (2θ), q = 2 s² (a = b) or
    s² (a ≠ b). 8000 paths, seed 8; 4 standard errors: the mean's SE is std/√N, the sample
    variance's √(2/(N−1)) Var (Gaussian). EM's bias (the chain's exact moments against the SDE's)
    is checked to be below a quarter of each SE first."""
    n, dt, T = 8000, 2e-3, 0.5
    v0 = np.array([[2.0, 0.3], [0.3, 0.5]])
    r = ncsde.simulate(symmetric_ou(), v0, T, dt=dt, paths=n, seed=8)
    assert r.terminal.shape == (n, 2, 2) and r.completed == n
    assert np.array_equal(r.terminal, r.terminal.transpose(0, 2, 1))
    steps = round(T / dt)
    decay = math.exp(-THETA * T)
    em_decay = (1 - THETA * dt) ** steps
    for a, b in ((0, 0), (0, 1), (1, 1)):
        x = r.terminal[:, a, b]
        eye = 1.0 if a == b else 0.0
        q = (2 if a == b else 1) * S ** 2
        mean = eye + decay * (v0[a, b] - eye)
        var = q * (1 - math.exp(-2 * THETA * T)) / (2 * THETA)
        em_mean = eye + em_decay * (v0[a, b] - eye)
        em_var = q * dt * (1 - (1 - THETA * dt) ** (2 * steps)) / (1 - (1 - THETA * dt) ** 2)
        se_mean = math.sqrt(var / n)
        se_var = math.sqrt(2 / (n - 1)) * var
        assert abs(em_mean - mean) < 0.25 * se_mean and abs(em_var - var) < 0.25 * se_var
        assert abs(x.mean() - mean) <= 4 * se_mean, (a, b, x.mean(), mean)
        assert abs(x.var(ddof=1) - var) <= 4 * se_var, (a, b, x.var(ddof=1), var)


def test_batched_per_path_and_threads_give_the_same_bits():
    """A path draws from its own (seed, path) stream whatever the grouping: the batched form (8
    paths per call), the per-path form (batched=False) and two threads give the same numbers."""
    kwargs = dict(dt=0.01, paths=21, seed=3)
    batched = ncsde.simulate(symmetric_ou(), np.eye(2), 1.0, **kwargs)
    per_path_sde = ncsde.PythonSde(
        drift=lambda v, t: -THETA * (v - np.eye(2)),
        noise_map=lambda v, xi, t: S * (xi.reshape(2, 2) + xi.reshape(2, 2).T) / math.sqrt(2.0),
        noise_dimension=4, state_space="symmetric", batched=False)
    per_path = ncsde.simulate(per_path_sde, np.eye(2), 1.0, **kwargs)
    threaded = ncsde.simulate(symmetric_ou(), np.eye(2), 1.0, threads=2, **kwargs)
    assert np.array_equal(batched.terminal, per_path.terminal)
    assert np.array_equal(batched.terminal, threaded.terminal)
    # Other schemes call with W = 1 and reach the same law; Milstein on additive noise is EM.
    milstein = ncsde.simulate(symmetric_ou(), np.eye(2), 1.0, scheme="milstein", **kwargs)
    assert milstein.terminal.shape == (21, 2, 2) and milstein.scheme == "milstein"


def test_the_callables_see_batches_of_the_documented_shapes():
    seen = []

    def drift(x, t):
        seen.append(("drift", x.shape, x.dtype, type(t)))
        return np.zeros_like(x)

    def noise(x, xi, t):
        seen.append(("noise", x.shape, xi.shape))
        return xi[:, :3].reshape(x.shape)

    sde = ncsde.PythonSde(drift=drift, noise_map=noise, noise_dimension=5)
    r = ncsde.simulate(sde, np.zeros(3), 0.1, dt=0.05, paths=8, seed=1)
    # One call per lane group of W = 64 paths (the rows past the run's 8 paths are masked lanes).
    assert ("drift", (64, 3), np.float64, float) in seen and ("noise", (64, 3), (64, 5)) in seen
    assert r.terminal.shape == (8, 3) and r.pd["violations"] == 0
    # A 2×3 euclidean matrix state.
    seen.clear()
    sde = ncsde.PythonSde(drift=lambda x, t: -x, noise_map=lambda x, xi, t: xi.reshape(x.shape),
                          noise_dimension=6)
    r = ncsde.simulate(sde, np.ones((2, 3)), 0.1, dt=0.05, paths=10)
    assert r.terminal.shape == (10, 2, 3) and r.coordinates[:2] == ["X11", "X12"]


def test_a_python_exception_propagates_with_its_traceback():
    def bad_drift(x, t):
        if t > 0.05:
            raise ZeroDivisionError("drift undefined after t = 0.05")
        return -x

    sde = ncsde.PythonSde(drift=bad_drift, noise_map=lambda x, xi, t: xi, noise_dimension=1)
    with pytest.raises(ZeroDivisionError, match="undefined after") as e:
        ncsde.simulate(sde, np.zeros(1), 1.0, dt=0.01, paths=16)
    frames = [f.name for f in traceback.extract_tb(e.value.__traceback__)]
    assert "bad_drift" in frames


def test_a_wrong_result_shape_is_a_value_error_naming_the_callable():
    sde = ncsde.PythonSde(drift=lambda x, t: x[:, :1], noise_map=lambda x, xi, t: x,
                          noise_dimension=2)
    with pytest.raises(ValueError, match=r"drift returned an array of shape \(64, 1\) for x of "
                                         r"shape \(64, 2\)"):
        ncsde.simulate(sde, np.zeros(2), 1.0, dt=0.1, paths=8)
    sde = ncsde.PythonSde(drift=lambda x, t: x, noise_map=lambda x, xi, t: "noise",
                          noise_dimension=2)
    with pytest.raises(TypeError, match="noise_map returned 'noise'"):
        ncsde.simulate(sde, np.zeros(2), 1.0, dt=0.1, paths=8)


def test_bad_constructions_are_refused():
    with pytest.raises(ValueError, match=r"state_space must be one of .*'cone'"):
        ncsde.PythonSde(drift=lambda x, t: x, noise_map=lambda x, xi, t: x, noise_dimension=1,
                        state_space="cone")
    with pytest.raises(ValueError, match=r"noise_dimension must be .*\(got 0\)"):
        ncsde.PythonSde(drift=lambda x, t: x, noise_map=lambda x, xi, t: x, noise_dimension=0)
    with pytest.raises(TypeError, match="drift must be callable"):
        ncsde.PythonSde(drift=3, noise_map=lambda x, xi, t: x, noise_dimension=1)
    sym = ncsde.PythonSde(drift=lambda x, t: x, noise_map=lambda x, xi, t: x, noise_dimension=1,
                          state_space="psd_cone")
    with pytest.raises(ValueError, match=r"square matrix on the psd_cone state space"):
        ncsde.simulate(sym, np.ones(2), 1.0)
    with pytest.raises(ValueError, match="policy"):
        ncsde.simulate(gbm(), 1.0, 1.0, policy="project")  # no cone on euclidean states


def test_a_non_symmetric_noise_on_a_symmetric_space_is_an_evaluation_error():
    sde = ncsde.PythonSde(drift=lambda x, t: 0 * x,
                          noise_map=lambda x, xi, t: np.stack([np.triu(np.ones((2, 2)))] * len(x))
                          * xi[:, :1, None],
                          noise_dimension=1, state_space="symmetric")
    with pytest.raises(ncsde.EvaluationError, match="non-symmetric"):
        ncsde.simulate(sde, np.eye(2), 1.0, dt=0.1, paths=8)


LONG_RUN = textwrap.dedent("""
    import sys, numpy as np, ncsde
    which = sys.argv[1]
    if which == "python":
        sde = ncsde.PythonSde(drift=lambda x, t: -x, noise_map=lambda x, xi, t: xi,
                              noise_dimension=1)
        v0 = np.zeros(1)
    else:
        sde = ncsde.models.covariance_sde("transformer")
        v0 = np.eye(4)
    print("running", flush=True)
    if which == "networks":  # minutes of networks, 64 a block
        ncsde.sample_networks(sde, v0, 128, 512, networks=10**6, threads=1)
    elif which == "deep_networks":  # a block of 16 networks of 10⁶ layers each: about a minute
        ncsde.sample_networks(ncsde.models.covariance_sde("mlp"), np.eye(2), 64, 10**6,
                              networks=100, threads=1)
    elif which == "validate":  # the program's command in this process: minutes of samples
        ncsde.validate("transformer", widths=(64, 128), networks=200000, paths=200000,
                       threads=1)
    else:
        ncsde.simulate(sde, v0, 1000.0, dt=1e-4, paths=100000, threads=1)
    print("finished", flush=True)
""")


@pytest.mark.parametrize("which", ["python", "model", "networks", "deep_networks", "validate"])
def test_ctrl_c_interrupts_a_long_run(which):
    """SIGINT to a process running a simulation of about 10⁷ steps per path, a sample of 10⁶
    networks, networks of 10⁶ layers or a validation of minutes ends it with KeyboardInterrupt
    within 3 seconds (the executor checks between blocks of 64 paths or networks; the engine
    between steps; a network between layers)."""
    p = subprocess.Popen([sys.executable, "-c", LONG_RUN, which], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=os.environ.copy())
    try:
        assert p.stdout.readline().strip() == "running"
        time.sleep(1.0)  # well inside the run
        assert p.poll() is None
        sent = time.monotonic()
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=30)
        elapsed = time.monotonic() - sent
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert "KeyboardInterrupt" in err, err
    assert elapsed < 3.0, elapsed


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")
def test_no_leak_over_1000_calls():
    """1000 runs of a Python SDE and 1000 of a model, 64 paths each: the resident set grows by less
    than 8 MB after a warm-up of 100 (a leaked result alone would hold ≥ 64·4·8 B of states plus
    the records, ≈ 10 kB, i.e. ≥ 10 MB over 1000 calls), and the callables' reference counts return
    to where they were."""
    def drift(x, t):
        return -x

    def noise(x, xi, t):
        return xi.reshape(x.shape)

    sde = ncsde.PythonSde(drift=drift, noise_map=noise, noise_dimension=4)
    model = ncsde.models.covariance_sde("mlp")
    v0 = np.eye(2)

    def calls(k):
        for _ in range(k):
            ncsde.simulate(sde, v0, 0.05, dt=0.01, paths=64, seed=2)
            ncsde.simulate(model, v0, 0.05, dt=0.01, paths=64, seed=2)

    calls(100)
    refs = (sys.getrefcount(drift), sys.getrefcount(noise))
    before = _rss_bytes()
    calls(1000)
    growth = _rss_bytes() - before
    assert growth < 8 * 2 ** 20, growth
    assert (sys.getrefcount(drift), sys.getrefcount(noise)) == refs


@pytest.mark.parametrize("space", ["euclidean", "symmetric", "psd_cone"])
def test_every_scheme_policy_and_step_control_takes_a_python_sde(space):
    """The symmetric OU on each state space with every scheme, cone policy and step controller
    (9 paths, 4 steps): the batched and per-path forms give the same bits in every combination,
    and the cone's policies are refused off the cone with a message naming the policy."""

    def per_path(v, xi, t):
        g = xi.reshape(2, 2)
        return S * (g + g.T) / math.sqrt(2.0)

    batched = symmetric_ou()
    batched = ncsde.PythonSde(drift=batched.drift, noise_map=batched.noise_map, noise_dimension=4,
                              state_space=space)
    single = ncsde.PythonSde(drift=lambda v, t: -THETA * (v - np.eye(2)), noise_map=per_path,
                             noise_dimension=4, state_space=space, batched=False)
    for scheme in ("em", "milstein", "milstein-commutative", "predictor-corrector"):
        for policy in ("automatic", "count", "project", "refine", "throw"):
            for control in ("fixed", "increment", "doubling"):
                kwargs = dict(dt=0.05, paths=9, seed=2, scheme=scheme, policy=policy,
                              step_control=control)
                if space != "psd_cone" and policy in ("project", "refine", "throw"):
                    with pytest.raises(ValueError, match=f"pd policy '{policy}' acts on the "
                                                         "positive-semidefinite cone"):
                        ncsde.simulate(batched, np.eye(2), 0.2, **kwargs)
                    continue
                a = ncsde.simulate(batched, np.eye(2), 0.2, **kwargs)
                b = ncsde.simulate(single, np.eye(2), 0.2, **kwargs)
                assert a.completed == 9 and a.scheme == scheme
                assert np.array_equal(a.terminal, b.terminal), (scheme, policy, control)


def test_leaving_the_cone_under_policy_throw_is_a_pd_violation():
    """dV = −10 V dt from I with dt = 0.2 steps to −I: outside the cone at the first step."""
    sde = ncsde.PythonSde(drift=lambda v, t: -10.0 * v, noise_map=lambda v, xi, t: 0.0 * v,
                          noise_dimension=1, state_space="psd_cone")
    with pytest.raises(ncsde.PdViolation, match=r"path 0 left the positive-semidefinite cone at "
                                                r"step 0, t = 0.2 \(smallest eigenvalue -1\)"):
        ncsde.simulate(sde, np.eye(2), 1.0, dt=0.2, paths=8, policy="throw")
    # The default policy counts the exits and leaves the steps as they are (I, −I, I, …).
    r = ncsde.simulate(sde, np.eye(2), 1.0, dt=0.2, paths=8)
    assert r.pd["projected"] == 0 and r.pd["violations"] > 0
    assert np.all(r.terminal == -np.eye(2))
    # project, by name, projects and counts it.
    r = ncsde.simulate(sde, np.eye(2), 1.0, dt=0.2, paths=8, policy="project")
    assert r.pd["projected"] == r.pd["violations"] > 0 and np.all(r.terminal == 0.0)
