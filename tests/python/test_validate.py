"""ncsde.validate: `ncsde validate` run in the module's process, its report as Python data (bit
for bit the program's JSON), its errors as ValueError naming the parameter, and its plots on a
matplotlib Axes."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

import ncsde

SMALL = dict(widths=(16, 32, 64), networks=300, paths=300, seed=5)


@pytest.fixture(scope="module")
def report():
    return ncsde.validate("attention", gamma2=1.0, tau0=0.5, **SMALL)


def test_report_is_the_programs_json_bit_for_bit(report, ncsde_program):
    done = subprocess.run(
        [ncsde_program, "validate", "--model", "attention", "--gamma2", "1", "--tau0", "0.5",
         "--n", "16,32,64", "--networks", "300", "--paths", "300", "--seed", "5", "--format",
         "json"], capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    cli = json.loads(done.stdout)
    ours = {k: v for k, v in report.items() if k != "table"}

    def same(a, b):  # exact equality, numpy arrays against JSON lists
        if isinstance(b, dict):
            return isinstance(a, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in b)
        if isinstance(b, list):
            return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
        if isinstance(b, float):
            return float(a) == b or (np.isnan(a) and np.isnan(b))
        return a == b

    assert same(ours, cli)


def test_table_columns(report):
    t = report["table"]
    rows = len(report["rows"])
    assert rows == 6  # three widths, the noise floor, two wrong SDEs (VPV, no attention)
    assert list(t["source"][:3]) == ["network n=16", "network n=32", "network n=64"]
    assert t["n"].dtype == np.int64 and t["bonferroni_p"].dtype == np.float64
    for key in ("KS rho12", "KS rho12 p", "E V11∧K", "stopped fraction"):
        assert t[key].shape == (rows,) and t[key].dtype == np.float64
    assert report["mean_ks"].shape == (3,) and isinstance(report["widths"], np.ndarray)
    assert np.all((t["bonferroni_p"] >= 0) & (t["bonferroni_p"] <= 1))


@pytest.mark.parametrize("kwargs, text", [
    (dict(tau0=-1.0), "tau0"),
    (dict(bogus=1), "bogus is not a parameter"),
    (dict(widths=(64, 32)), "--n"),
    (dict(alpha=2.0), "alpha"),
    (dict(V0=[[1.0, 2.0], [2.0, 1.0]]), "--V0"),
])
def test_bad_arguments_raise_value_error_naming_them(kwargs, text):
    with pytest.raises(ValueError, match=text):
        ncsde.validate("transformer", **{**SMALL, **kwargs})


def test_a_model_object_and_its_name_agree():
    sde = ncsde.models.covariance_sde("transformer", gamma2=0.25)
    small = dict(widths=(16, 32), networks=100, paths=100, seed=2)
    a = ncsde.validate(sde, **small)
    b = ncsde.validate("transformer", gamma2=0.25, **small)
    np.testing.assert_array_equal(a["table"]["bonferroni_p"], b["table"]["bonferroni_p"])
    assert a["params"]["gamma2"] == 0.25


def test_plots_draw_on_an_axes(report):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2)
    assert ncsde.plots.validate(report, ax1, kind="ks") is ax1
    assert len(ax1.lines) == 3  # the mean KS distances, the noise floor, the critical distance
    np.testing.assert_array_equal(ax1.lines[0].get_ydata(), report["mean_ks"])
    ncsde.plots.validate(report, ax2, kind="smooth")
    # Six smooth statistics with error bars, and one dashed line per wrong SDE.
    assert len(ax2.containers) == 6 and sum(ln.get_linestyle() == "--" for ln in ax2.lines) == 2
    with pytest.raises(ValueError, match="kind"):
        ncsde.plots.validate(report, ax1, kind="nope")
    plt.close(fig)


def test_one_set_of_defaults_with_the_program(ncsde_program):
    # ncsde.validate's defaults are the program's (validate_defaults in the library): the signature
    # shows the values `ncsde validate --help` shows, and no model is the program's default study.
    import inspect
    import re

    signature = inspect.signature(ncsde.validate).parameters
    assert signature["model"].default is None
    help_text = subprocess.run([ncsde_program, "validate", "--help"], capture_output=True,
                               text=True, timeout=60, stdin=subprocess.DEVNULL).stdout
    for name, flag in (("T", "--T"), ("networks", "--networks"), ("paths", "--paths"),
                       ("dt", "--dt"), ("stop_level", "--stop-level"),
                       ("tail_level", "--tail-level"),
                       ("unstopped_tail_level", "--unstopped-tail-level"), ("nk", "--nk"),
                       ("alpha", "--alpha"), ("seed", "--seed")):
        shown = re.search(re.escape(flag) + r" [^\n=]*=(\S+)", help_text)
        assert shown is not None, flag
        assert float(shown.group(1)) == pytest.approx(float(signature[name].default),
                                                      rel=1e-5), name
    for name, flag in (("variants", "--variants"), ("limit_exponent", "--limit-exponent")):
        assert re.search(re.escape(flag) + r" TEXT=" + signature[name].default, help_text), name
    shown = re.search(r"--n INT=\[([0-9,]+)\]", help_text)
    assert [int(n) for n in shown.group(1).split(",")] == list(signature["widths"].default)
    assert signature["networks"].default == 100000 and signature["paths"].default == 100000

    report = ncsde.validate(widths=(8, 16), networks=60, paths=60, dt=1 / 128, variants="none")
    done = subprocess.run(
        [ncsde_program, "validate", "--n", "8,16", "--networks", "60", "--paths", "60", "--dt",
         "0.0078125", "--variants", "none", "--format", "json"], capture_output=True, text=True,
        timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    cli = json.loads(done.stdout)
    assert (report["model"], report["params"]["gamma2"], report["params"]["tau0"]) == \
        ("attention", 1.0, 0.5)
    assert report["params"] == cli["params"]
    assert json.dumps(_lists(report["rows"]), sort_keys=True) == json.dumps(cli["rows"],
                                                                            sort_keys=True)
    assert report["check"] == cli["check"]


def _lists(value):
    """numpy arrays back to lists (for comparing a report with the program's JSON as text)."""
    if isinstance(value, dict):
        return {k: _lists(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_lists(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value
