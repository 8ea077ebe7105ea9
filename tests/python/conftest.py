"""Shared set-up of the Python tests (tests/python, run by ctest as the test `python`).

    PYTHONPATH=build/python python3 -m pytest -q tests/python          (NCSDE=build/ncsde for the CLI
                                                                        comparisons)

ncsde is the built package (PYTHONPATH=<build>/python); NCSDE, when set, is the `ncsde` program the
bit-identity tests compare with (they are skipped without it).
"""

from __future__ import annotations

import os

import pytest


@pytest.fixture
def ncsde_program() -> str:
    path = os.environ.get("NCSDE")
    if not path or not os.access(path, os.X_OK):
        pytest.skip("NCSDE (the ncsde program) not set: the CLI comparison needs it")
    return path
