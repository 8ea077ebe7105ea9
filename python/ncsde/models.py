"""The model registry's covariance SDEs: ncsde.models.covariance_sde(name, **params).

    sde = ncsde.models.covariance_sde("attention", tau0=0.5, gamma2=1.0, heads=2, causal=True)
    sde.drift(V)                    # (m, m)
    sde.diffusion_covariance(V)     # (m, m, m, m): Cov(dV^ab, dV^cd) / dt
    ncsde.models.list()             # every model with its parameters (name, kind, default, domain)
    ncsde.models.load_library("libmy_models.so")   # models written in C++ (models_library.hpp)
"""

from ._core import models as _models

CovarianceSde = _models.CovarianceSde
covariance_sde = _models.covariance_sde
list = _models.list  # noqa: A001 (the registry's listing, as ncsde.models.list())
names = _models.names
load_library = _models.load_library

__all__ = ["CovarianceSde", "covariance_sde", "list", "load_library", "names"]
