"""ncsde.ks_two_sample: the library's two-sample Kolmogorov–Smirnov test from Python."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ncsde


def test_distance_is_the_sup_of_the_empirical_cdfs():
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=300), rng.normal(0.3, 1.0, size=200)
    x = np.concatenate([a, b])
    expected = np.abs(np.searchsorted(np.sort(a), x, "right") / 300
                      - np.searchsorted(np.sort(b), x, "right") / 200).max()
    r = ncsde.ks_two_sample(a, b)
    assert (r["n1"], r["n2"]) == (300, 200)
    assert abs(r["distance"] - expected) <= 1e-15
    # Stephens' λ = (√nₑ + 0.12 + 0.11/√nₑ) D and Q(λ) = 2 Σ (−1)^{k−1} e^{−2k²λ²}.
    ne = 300 * 200 / 500
    lam = (math.sqrt(ne) + 0.12 + 0.11 / math.sqrt(ne)) * r["distance"]
    q = 2 * sum((-1) ** (k - 1) * math.exp(-2 * k * k * lam * lam) for k in range(1, 101))
    assert abs(r["p_value"] - q) <= 1e-12


def test_equal_samples_and_infinities():
    same = ncsde.ks_two_sample([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])
    assert same["distance"] == 0.0 and same["p_value"] == 1.0
    # Blown-up paths are +inf: they count at the top of the distribution.
    r = ncsde.ks_two_sample([0.0, 1.0, math.inf, math.inf], [0.0, 1.0, 2.0, 3.0])
    assert r["distance"] == 0.5


def test_bad_samples_are_refused():
    with pytest.raises(ValueError, match="empty"):
        ncsde.ks_two_sample([], [1.0])
    with pytest.raises(ValueError, match="NaN"):
        ncsde.ks_two_sample([1.0, math.nan], [1.0])
    with pytest.raises(TypeError, match="b must be an array of real numbers"):
        ncsde.ks_two_sample([1.0], "x")
