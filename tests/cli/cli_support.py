"""Helpers shared by the tests of the `ncsde` program (tests/cli/test_*.py).

The tests are plain unittest modules, run by ctest as

    python3 -B tests/cli/test_<name>.py            (NCSDE=<path to the ncsde program> in the environment)

or by hand, `NCSDE=build/ncsde python3 tests/cli/test_models.py [-v] [-k pattern]`. Standard
library only. Every run of the program gets stdin from /dev/null, pipes for stdout and stderr (so
it is never on a terminal) and a timeout, DEFAULT_TIMEOUT unless a check says less (a command that
must fail before a long run is given 10 s).

  CliTestCase.run_ok(*args)                  exit code 0; returns stdout
  CliTestCase.run_json(*args)                exit code 0; returns stdout parsed as strict JSON
  CliTestCase.expect_exit(code, texts, *args) that exit code, and every text on stderr
  CliTestCase.expect_usage_error(texts, *args)  exit code 2, and every text on stderr
  CliTestCase.expect_silent(*args)           exit code 0 and nothing on stderr
  CliTestCase.expect_unchanged(path, text)   the file still holds exactly `text`
  CliTestCase.expect_no_temporaries(dir)     no hidden temporary (.<name>.XXXXXX) left in `dir`
  CliTestCase.assert_near(what, x, y, tol)   |x - y| <= tol, failing on NaN
  CliTestCase.scratch_dir()                  a fresh directory, removed after the test
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from typing import Iterable, Sequence

# Seconds a run may take before it counts as hung (the slowest run of these tests takes about 2 s).
DEFAULT_TIMEOUT = 600

# The interpreter `ncsde --plots` runs its plot scripts with (validation/process.hpp).
PLOT_PYTHON = "/usr/bin/python3"


def ncsde_program() -> str:
    """The program under test: $NCSDE (ctest sets it to the built target)."""
    path = os.environ.get("NCSDE")
    if not path:
        sys.exit("set NCSDE to the path of the ncsde program, e.g. NCSDE=build/ncsde")
    if not os.access(path, os.X_OK):
        sys.exit(f"NCSDE={path} is not an executable program")
    return path


@functools.lru_cache(maxsize=None)
def plotting_available() -> bool:
    """Whether `ncsde --plots` can draw: /usr/bin/python3 imports matplotlib."""
    try:
        return subprocess.run([PLOT_PYTHON, "-c", "import matplotlib"], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@functools.lru_cache(maxsize=None)
def sanitizer_of(program: str) -> str | None:
    """"address" or "thread" when the program was built with that sanitizer, else None (its
    runtime's entry point is then among the program's symbol names)."""
    data = Path(program).read_bytes()
    if b"__asan_init" in data:
        return "address"
    if b"__tsan_init" in data:
        return "thread"
    return None


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def loads_strict(text: str):
    """json.loads that refuses NaN and ±Infinity, which are not JSON (json.loads accepts them)."""
    return json.loads(text, parse_constant=_reject_constant)


def without_timing(summary_json: str):
    """A JSON summary parsed, without its "seconds" (the one field that differs between runs); of
    an array of objects (convergence series), without each one's."""
    d = json.loads(summary_json)
    for item in d if isinstance(d, list) else [d]:
        if isinstance(item, dict):
            item.pop("seconds", None)
    return d


def table_without_timing(text: str) -> str:
    """A table summary with its times ("0.52 s") replaced by "<time> s"."""
    return re.sub(r"[0-9.]+(e[-+]?[0-9]+)? s\b", "<time> s", text)


def is_number(x) -> bool:
    """A JSON number (bool is an int subclass in Python, but not a JSON number)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool)


class Completed:
    """One finished run of the program."""

    def __init__(self, args: Sequence[str], returncode: int, stdout: str, stderr: str):
        self.args = list(args)
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr

    def describe(self) -> str:
        return "ncsde " + " ".join(self.args)


class CliTestCase(unittest.TestCase):
    """A TestCase with the program's path and the run/expect helpers."""

    maxDiff = None
    program: str = ""

    @classmethod
    def setUpClass(cls):
        cls.program = ncsde_program()

    # ---- running the program ----
    def run_program(self, args: Sequence[str], timeout: float = DEFAULT_TIMEOUT,
                    prefix: Sequence[str] = ()) -> Completed:
        """Runs `prefix + [program] + args` (prefix: e.g. a shell that sets a ulimit first)."""
        args = [str(a) for a in args]
        command = [*prefix, self.program, *args]
        try:
            p = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True,
                               timeout=timeout)
        except subprocess.TimeoutExpired:
            self.fail(f"ncsde {' '.join(args)}: did not finish within {timeout} s")
        return Completed(args, p.returncode, p.stdout.decode("utf-8"), p.stderr.decode("utf-8"))

    def run_ok(self, *args, timeout: float = DEFAULT_TIMEOUT) -> str:
        """Runs the program, requires exit code 0 and returns stdout."""
        r = self.run_program(args, timeout)
        if r.returncode != 0:
            self.fail(f"{r.describe()} failed (exit code {r.returncode}):\n{r.stderr}")
        return r.stdout

    def run_json(self, *args, timeout: float = DEFAULT_TIMEOUT):
        """Runs the program, requires exit code 0 and returns stdout parsed as JSON."""
        out = self.run_ok(*args, timeout=timeout)
        try:
            return loads_strict(out)
        except ValueError as e:
            self.fail(f"ncsde {' '.join(map(str, args))}: the output is not JSON ({e}):\n{out}")

    def expect_exit(self, code: int, texts: str | Iterable[str], *args,
                    timeout: float = DEFAULT_TIMEOUT) -> Completed:
        """Runs the program, requires the exit code and every text in its stderr."""
        if isinstance(texts, str):
            texts = [texts]
        r = self.run_program(args, timeout)
        if r.returncode != code:
            self.fail(f"{r.describe()}: expected exit code {code}, got {r.returncode}\n{r.stderr}")
        for text in texts:
            if text not in r.stderr:
                self.fail(f"{r.describe()}: the message does not contain '{text}':\n{r.stderr}")
        return r

    def expect_usage_error(self, texts: str | Iterable[str], *args,
                           timeout: float = DEFAULT_TIMEOUT) -> Completed:
        """Runs the program, requires exit code 2 (cli::exit_usage) and every text in stderr."""
        return self.expect_exit(2, texts, *args, timeout=timeout)

    def expect_silent(self, *args, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Runs the program (stderr a pipe, not a terminal): exit code 0 and an empty stderr."""
        r = self.run_program(args, timeout)
        if r.returncode != 0 or r.stderr != "":
            self.fail(f"{r.describe()}: exit code {r.returncode} (expected 0), stderr "
                      f"'{r.stderr}' (expected none)")

    # ---- files ----
    def scratch_dir(self) -> Path:
        """A new empty directory, removed when the test ends."""
        d = tempfile.TemporaryDirectory(prefix="ncsde-cli-")
        self.addCleanup(d.cleanup)
        return Path(d.name)

    def expect_unchanged(self, path: Path, contents: str) -> None:
        """The file exists and holds exactly `contents`."""
        path = Path(path)
        if not path.exists():
            self.fail(f"{path} was removed")
        now = path.read_text(encoding="utf-8")
        if now != contents:
            self.fail(f"{path} was changed: it holds {now!r}, expected {contents!r}")

    def expect_no_temporaries(self, directory: Path) -> None:
        """An output is written to a hidden temporary next to its target; none may be left."""
        left = sorted(p.name for p in Path(directory).iterdir()
                      if p.name.startswith(".") and not p.is_dir())
        if left:
            self.fail(f"temporary files left in {directory}: {left}")

    # ---- numbers ----
    def assert_near(self, what: str, actual, expected: float, tolerance: float) -> None:
        """|actual − expected| <= tolerance; a NaN, an infinity or a non-number fails."""
        if not is_number(actual) or not math.isfinite(actual) or \
                not abs(actual - expected) <= tolerance:
            self.fail(f"{what}: got {actual!r}, expected {expected!r} (tolerance {tolerance:g})")


def main() -> None:
    """unittest's command line (-v, -k pattern, test names), verbose by default."""
    unittest.main(module="__main__", verbosity=2)
