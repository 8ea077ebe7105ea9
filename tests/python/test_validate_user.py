"""ncsde.validate with a user's parts: an SDE object (ncsde.PythonSde), networks from a Python
callable or given as arrays, wrong SDEs of any kind; the report is the program's, made from these
samples."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

import ncsde

ROOT = Path(__file__).resolve().parents[2]
V0 = np.array([[1.0, 0.5, 0.3], [0.5, 1.6, 0.7], [0.3, 0.7, 0.7]])


def _example():
    """examples/python/validate_user_model.py: the user model (σ = tanh + ½tanh²), its SDE as a
    PythonSde and its numpy networks."""
    path = ROOT / "examples" / "python" / "validate_user_model.py"
    spec = importlib.util.spec_from_file_location("validate_user_model", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _plain(report):
    """The report as JSON data, without what differs by construction between the two routes (the
    parameters' spelling, the Markdown, the columns view)."""
    kept = {k: v for k, v in report.items() if k not in ("table", "markdown", "params")}
    return json.loads(json.dumps(kept, default=lambda x: x.tolist()))


def _networks_of(sde, v0):
    def sample(n, d, count, seed):
        return ncsde.sample_networks(sde, v0, n, d, networks=count, seed=seed,
                                     depths=list(range(d + 1)))["V"]
    return sample


def test_a_registry_model_through_the_hooks_is_the_programs_report():
    # The program's networks handed back through a callable and as arrays: every number of the
    # report (rows, p-values, fits, extrapolations) is the program's, bit for bit.
    sde = ncsde.models.covariance_sde("attention", gamma2=1.0, tau0=0.5)
    size = dict(widths=(16, 32), networks=400, paths=400, seed=7, threads=2)
    program = ncsde.validate(sde, V0, **size)
    sample = _networks_of(sde, V0)
    by_callable = ncsde.validate(sde, V0, sampler=sample, **size)
    assert _plain(by_callable) == _plain(program)
    arrays = {n: sample(n, n, 400, 7 + 100 + i) for i, n in enumerate((16, 32))}
    by_arrays = ncsde.validate(sde, V0, samples=arrays, **size)
    assert _plain(by_arrays) == _plain(program)
    assert "a Python sampler" in by_callable["markdown"]
    assert "samples given" in by_arrays["markdown"]


def test_a_shipped_model_written_as_a_python_sde_agrees_with_the_program():
    # shaped-tanh (b^{ab} = −V^{ab}(V^{aa} + V^{bb}), Wishart noise) written in numpy: the same
    # Brownian increments (ξ = vec G, column-major), so the paths agree with the program's to
    # round-off, and the report on the program's networks agrees with the program's report. A
    # stop decision may flip on round-off: at most 2 of 600 paths per sample, so each KS distance
    # and stopped fraction within 2/600 of the program's and each mean gap within 2·K/600.
    def drift(v, t):
        d = np.diagonal(v, axis1=1, axis2=2)
        return -v * (d[:, :, None] + d[:, None, :])

    sde = ncsde.PythonSde(drift=drift, noise_map=_example().noise_map, noise_dimension=9,
                          state_space="psd_cone")
    shipped = ncsde.models.covariance_sde("shaped-tanh")
    size = dict(widths=(16, 32), networks=600, paths=600, seed=11, threads=2)
    program = ncsde.validate(shipped, V0, **size)
    ours = ncsde.validate(sde, V0, sampler=_networks_of(shipped, V0), **size)
    a, b = program["table"], ours["table"]
    assert list(a["source"]) == list(b["source"])
    for key in a:
        if key.startswith("KS ") and not key.endswith(" p") or key == "stopped fraction":
            np.testing.assert_allclose(b[key], a[key], rtol=0, atol=2 / 600 + 1e-12)
        if key.startswith("E ") and not key.endswith(" p"):
            np.testing.assert_allclose(b[key], a[key], rtol=0, atol=2 * 5.0 / 600)
    assert ours["right_accepted"] == program["right_accepted"]


def test_a_user_model_with_numpy_networks_has_power(tmp_path):
    # The user model of examples/python/validate_user_model.py: its SDE is not rejected against
    # its numpy networks and the shipped shaped-tanh SDE (no ¼(V^{aa}V^{bb} + 2(V^{ab})²) term:
    # E V^{aa}∧K at T = 1 lower by ≈ 0.08, 7 standard errors at 2000 samples there) is.
    ex = _example()
    v0 = np.array([[1.0, 0.5, 0.3], [0.5, 1.0, 0.4], [0.3, 0.4, 0.8]])
    report = ncsde.validate(ex.sde(3), v0, sampler=ex.networks(v0), widths=(8, 16),
                            networks=1500, paths=1500, seed=3,
                            variants=[("tanh drift", ncsde.models.covariance_sde("shaped-tanh"))],
                            name="user MLP", plots=tmp_path)
    assert report["right_accepted"] and report["wrong_rejected"]
    assert list(report["table"]["source"]) == ["network n=8", "network n=16",
                                               "SDE, independent run", "wrong SDE: tanh drift"]
    assert report["model"] == "user MLP"
    for figure in ("rho_density", "ks_vs_n", "sample_paths", "stopped_fraction", "smooth_gaps"):
        for suffix in ("png", "pdf", "svg"):
            assert (tmp_path / f"{figure}.{suffix}").stat().st_size > 0
    assert json.loads((tmp_path / "validation.json").read_text())["rows"] == \
        json.loads(json.dumps(_plain(report)["rows"]))


def test_bad_user_parts_are_refused_naming_them():
    ex = _example()
    sde = ex.sde(3)
    with pytest.raises(ValueError, match="sampler="):
        ncsde.validate(sde, V0, widths=(8,), networks=10, paths=10)
    with pytest.raises(ValueError, match=r"shape \(networks, d \+ 1 = 9, 3, 3\)"):
        ncsde.validate(sde, V0, widths=(8,), networks=10, paths=10,
                       sampler=lambda n, d, count, seed: np.zeros((count, d, 3, 3)))
    with pytest.raises(ValueError, match="samples has no width 16"):
        ncsde.validate(sde, V0, widths=(8, 16), networks=10, paths=10,
                       samples={8: np.broadcast_to(V0, (10, 9, 3, 3))})
    with pytest.raises(ValueError, match="model parameters"):
        ncsde.validate(sde, V0, widths=(8,), gamma2=1.0,
                       sampler=lambda n, d, count, seed: np.broadcast_to(V0, (count, d + 1, 3, 3)))
    with pytest.raises(ValueError, match="none for model a PythonSde"):  # no variants to take
        ncsde.validate(sde, V0, widths=(8,), networks=10, paths=10, variants="vpv",
                       sampler=lambda n, d, count, seed: np.broadcast_to(V0, (count, d + 1, 3, 3)))
    with pytest.raises(TypeError, match="an SDE must be"):
        ncsde.validate(sde, V0, widths=(8,), networks=10, paths=10, variants=[("x", 3.0)],
                       sampler=lambda n, d, count, seed: np.broadcast_to(V0, (count, d + 1, 3, 3)))
    # The settings are checked by the program's rules (check_validate_settings), named as here.
    flat = lambda n, d, count, seed: np.broadcast_to(V0, (count, d + 1, 3, 3))  # noqa: E731
    for kwargs, text in ((dict(widths=(16, 8)), r"widths must be > 16 .* \(got 8\)"),
                         (dict(widths=()), "widths must be a list of widths"),
                         (dict(stop_level=float("inf")), "stop_level must be > 0 and finite"),
                         (dict(alpha=1.0), r"alpha must be in \(0, 1\)"),
                         (dict(limit_exponent=5.0), r"limit_exponent must be 'fitted' or a")):
        with pytest.raises(ValueError, match=text):
            ncsde.validate(sde, V0, **{"widths": (8,), "networks": 10, "paths": 10, **kwargs},
                           sampler=flat)


def test_the_registrys_general_activation_is_the_user_model():
    # shaped-activation with σ''(0) = 1, σ'''(0) = −2 is the SDE of the user model (σ = tanh +
    # ½tanh²): the same drift, and the shaped-tanh (Wishart) noise.
    ex = _example()
    general = ncsde.models.covariance_sde("shaped-activation", d2=1.0, d3=-2.0)
    for v in (V0, np.array([[2.0, -0.4, 0.1], [-0.4, 0.5, 0.2], [0.1, 0.2, 1.3]])):
        np.testing.assert_allclose(general.drift(v), ex.drift(v[None], 0.0)[0], rtol=0,
                                   atol=1e-14)
        np.testing.assert_array_equal(general.diffusion_covariance(v),
                                      ncsde.models.covariance_sde("shaped-tanh")
                                      .diffusion_covariance(v))
    with pytest.raises(ValueError, match="a"):
        ncsde.models.covariance_sde("shaped-activation", a=0.0)


def test_the_right_sde_on_the_emulated_device_is_the_cpus_report():
    # device= runs the right SDE (reference and noise floor) on the device engine: on the emulated
    # device the report is the CPU's number for number, and says where the SDE ran; the program's
    # route (a registry model) and the hooks' route (a user's networks) alike.
    sde = ncsde.models.covariance_sde("attention", gamma2=1.0, tau0=0.5)
    size = dict(widths=(8, 16), networks=200, paths=200, seed=3, threads=2)
    cpu = ncsde.validate(sde, V0, **size)
    emulated = ncsde.validate(sde, V0, device="emulated", **size)
    assert "device" not in cpu
    assert emulated["device"]["device"] == "emulated"
    assert emulated["device"]["wrong_sdes"] == "cpu"
    assert 0 <= emulated["device"]["handed_back"] <= 400
    assert _plain({k: v for k, v in emulated.items() if k != "device"}) == _plain(cpu)
    sample = _networks_of(sde, V0)
    hooks = ncsde.validate(sde, V0, sampler=sample, device="emulated", **size)
    assert hooks["device"]["device"] == "emulated"
    assert "SDE device: emulated" in hooks["markdown"]
    assert _plain({k: v for k, v in hooks.items() if k != "device"}) == _plain(cpu)
    # A PythonSde has no device form: refused by name; "auto" runs it on the CPU and says why.
    ex = _example()
    flat = lambda n, d, count, seed: np.broadcast_to(V0, (count, d + 1, 3, 3))  # noqa: E731
    with pytest.raises(ValueError, match="device form"):
        ncsde.validate(ex.sde(3), V0, widths=(8,), networks=10, paths=10, sampler=flat,
                       variants="none", device="emulated")
    auto = ncsde.validate(ex.sde(3), V0, widths=(8,), networks=10, paths=10, sampler=flat,
                          variants="none", device="auto")
    assert auto["device"]["device"] == "cpu"
    assert "device form" in auto["device"]["note"]
    with pytest.raises(ValueError, match="device"):
        ncsde.validate(sde, V0, device="gpu", **size)
