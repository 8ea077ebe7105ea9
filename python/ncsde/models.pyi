# Type stubs of ncsde.models.
import builtins
import os
from typing import Any

import numpy as np
import numpy.typing as npt

class CovarianceSde:
    """A registered model's covariance SDE dV = b(V) dt + G(V) dW on the PSD cone."""

    @property
    def name(self) -> str: ...
    @property
    def params(self) -> dict[str, float | int | bool | str]: ...
    def noise_dimension(self, m: int) -> int: ...
    def drift(self, V: npt.ArrayLike, t: float = 0.0) -> np.ndarray:
        """b(V), shape (m, m)."""
    def covariance(self, V: npt.ArrayLike, t: float = 0.0) -> np.ndarray:
        """Σ(V) over the packed upper-triangle pairs, shape (K, K), K = m(m+1)/2."""
    def diffusion_covariance(self, V: npt.ArrayLike, t: float = 0.0) -> np.ndarray:
        """C[a, b, c, d] = Cov(dV^ab, dV^cd)/dt, shape (m, m, m, m)."""

def covariance_sde(name: str, **params: float | int | bool | str) -> CovarianceSde:
    """The covariance SDE of the registered model `name`; ValueError naming a bad parameter."""

def list() -> builtins.list[dict[str, Any]]:
    """Every registered model: name, description, parameters, samplers."""

def names() -> builtins.list[str]:
    """The registered models' names, in registration order."""

def load_library(path: str | os.PathLike[str]) -> builtins.list[str]:
    """Adds the models of a C++ models library (NCSDE_MODELS_LIBRARY); returns their names."""
