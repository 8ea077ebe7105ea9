"""ncsde.models: the registry from Python (names, parameters, errors, drift and diffusion covariance)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ncsde

V0 = np.array([[1.0, 0.5], [0.5, 1.0]])


def test_version_is_the_projects():
    assert isinstance(ncsde.__version__, str)
    assert [int(x) for x in ncsde.__version__.split(".")] >= [0, 1, 0]


def test_every_registered_model_is_listed_with_its_parameters():
    listed = {m["name"]: m for m in ncsde.models.list()}
    assert list(listed) == ncsde.models.names()
    assert {"mlp", "resnet", "attention", "transformer", "shaped-tanh"} <= set(listed)
    transformer = {p["name"]: p for p in listed["transformer"]["parameters"]}
    assert set(transformer) == {"c_plus", "c_minus", "gamma2", "tau0", "hidden_ratio", "heads",
                                "output_projection", "causal"}
    assert transformer["heads"]["kind"] == "integer"
    assert transformer["causal"]["kind"] == "flag" and transformer["causal"]["default"] is False
    tanh = {p["name"]: p for p in listed["shaped-tanh"]["parameters"]}
    assert tanh["activation"]["choices"] == ["tanh", "swish"]
    assert "literal" in listed["shaped-tanh"]["samplers"]


@pytest.mark.parametrize("name", ["mlp", "resnet", "attention", "transformer", "shaped-tanh"])
def test_each_model_has_drift_and_covariance_of_the_right_shape(name):
    sde = ncsde.models.covariance_sde(name)
    b = sde.drift(V0)
    c = sde.diffusion_covariance(V0)
    assert b.shape == (2, 2) and b.dtype == np.float64
    assert c.shape == (2, 2, 2, 2) and c.dtype == np.float64
    assert np.all(np.isfinite(b)) and np.all(np.isfinite(c))
    # Cov(dV^ab, dV^cd) is symmetric in a<->b, c<->d and (ab)<->(cd), exactly (one packed entry).
    assert np.array_equal(c, c.transpose(1, 0, 2, 3))
    assert np.array_equal(c, c.transpose(0, 1, 3, 2))
    assert np.array_equal(c, c.transpose(2, 3, 0, 1))
    # The packed K×K operator holds the same numbers: row/column (a, b) for a <= b.
    packed = sde.covariance(V0)
    pairs = [(0, 0), (0, 1), (1, 1)]
    for i, (a, b_) in enumerate(pairs):
        for j, (c_, d) in enumerate(pairs):
            assert packed[i, j] == c[a, b_, c_, d]
    # A covariance is positive semidefinite (as an operator on the packed pairs), up to round-off.
    assert np.linalg.eigvalsh(packed).min() >= -1e-12 * np.abs(packed).max()


def test_parameters_are_set_by_their_python_names():
    sde = ncsde.models.covariance_sde("transformer", gamma2=0.25, tau0=0.5, heads=2, causal=True,
                                      c_plus=0.5, hidden_ratio=2.0, output_projection=True)
    p = sde.params
    assert p["gamma2"] == 0.25 and p["tau0"] == 0.5 and p["heads"] == 2
    assert p["causal"] is True and p["output_projection"] is True
    assert p["c_plus"] == 0.5 and p["hidden_ratio"] == 2.0
    assert sde.name == "transformer"
    assert sde.noise_dimension(3) == 2 * 9  # attention: G then Z, 2 m² normals
    # A parameter changes the SDE: the temperature enters the attention drift.
    other = ncsde.models.covariance_sde("transformer", gamma2=0.25, tau0=1.0, heads=2, causal=True,
                                        c_plus=0.5, hidden_ratio=2.0, output_projection=True)
    assert not np.array_equal(sde.drift(V0), other.drift(V0))
    assert "tau0=0.5" in repr(sde)


def test_drift_and_covariance_match_one_euler_step_of_the_engine():
    """One Euler-Maruyama step from V0: ΔV = b dt + G ξ √dt, so E ΔV / dt = b(V0) and
    Cov(ΔV) / dt = Σ(V0) exactly. 40 000 paths, seed 3, policy count (the unmodified step);
    4 Monte Carlo standard errors: the mean's SE is √(Σ_aa / (N dt)), the sample covariance's
    √((Σ_ii Σ_jj + Σ_ij²) / N) (Gaussian increments)."""
    sde = ncsde.models.covariance_sde("attention", tau0=1.0, gamma2=0.5)
    dt, n = 1e-2, 40_000
    r = ncsde.simulate(sde, V0, dt, dt=dt, paths=n, seed=3, policy="count")
    assert r.completed == n
    dv = r.terminal - V0
    b = sde.drift(V0)
    sigma = sde.covariance(V0)
    pairs = [(0, 0), (0, 1), (1, 1)]
    for i, (a, c) in enumerate(pairs):
        se = math.sqrt(sigma[i, i] / (n * dt))
        assert abs(dv[:, a, c].mean() / dt - b[a, c]) <= 4 * se
    x = np.stack([dv[:, a, c] for a, c in pairs], axis=1) / math.sqrt(dt)
    cov = np.cov(x, rowvar=False)
    for i in range(3):
        for j in range(3):
            se = math.sqrt((sigma[i, i] * sigma[j, j] + sigma[i, j] ** 2) / n)
            assert abs(cov[i, j] - sigma[i, j]) <= 4 * se


@pytest.mark.parametrize(
    "kwargs, texts",
    [
        (dict(tau0=-1.0), ["tau0", "-1"]),
        (dict(gamma2=1.5), ["gamma2", "1.5"]),
        (dict(heads=0), ["heads", "0"]),
        (dict(heads=2.5), ["heads", "integer", "2.5"]),
        (dict(causal="yes"), ["causal", "True or False", "'yes'"]),
        (dict(tau0="big"), ["tau0", "real number", "'big'"]),
        (dict(gamma=0.5), ["gamma is not a parameter of transformer", "gamma2"]),
    ],
)
def test_bad_parameters_raise_value_error_naming_them(kwargs, texts):
    with pytest.raises(ValueError) as e:
        ncsde.models.covariance_sde("transformer", **kwargs)
    for text in texts:
        assert text in str(e.value)


def test_unknown_model_and_choice_name_the_value():
    with pytest.raises(ValueError, match=r"model must be one of mlp, .*\(got gpt\)"):
        ncsde.models.covariance_sde("gpt")
    with pytest.raises(ValueError, match=r"activation.*relu"):
        ncsde.models.covariance_sde("shaped-tanh", activation="relu")
    with pytest.raises(ValueError, match=r"a must be .*> 0.*-2"):
        ncsde.models.covariance_sde("shaped-tanh", a=-2.0)


def test_a_state_that_is_not_symmetric_is_refused():
    sde = ncsde.models.covariance_sde("mlp")
    with pytest.raises(ValueError, match="V"):
        sde.drift(np.array([[1.0, 0.5], [0.0, 1.0]]))
    with pytest.raises(ValueError, match=r"2-D array.*\(3,\)"):
        sde.drift(np.ones(3))
