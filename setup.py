"""`pip install --no-build-isolation .`: the Python module ncsde, built by the project's CMake build.

The extension ncsde._core is the CMake target ncsde_python; setuptools only packages it with the
pure-Python files of python/ncsde. Two ways to get the extension:

  - NCSDE_BUILD_DIR=<a configured and built Release tree>: reuse its python/ncsde/_core*.so (what CI
    does after its Release build; nothing is compiled again), when it was built for this interpreter;
  - otherwise configure build/pip (Release, no tests, benchmarks or program-only parts) with this
    interpreter and build the one target (about ten minutes on 2 cores).

Offline on Debian 12: setuptools, wheel, pybind11-dev, cmake and python3-numpy from apt; no package
index is needed with --no-build-isolation (pip's isolated build would fetch setuptools). In a virtual
environment made with --system-site-packages, numpy and matplotlib come from the system.
"""

import os
import re
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.abspath(__file__))
SETUPTOOLS_DIR = os.path.join(ROOT, "build", "pip-setuptools")
os.makedirs(SETUPTOOLS_DIR, exist_ok=True)


def project_version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        match = re.search(r"project\(ncsde VERSION ([0-9.]+)", f.read())
    if not match:
        sys.exit("setup.py: no 'project(ncsde VERSION …)' in CMakeLists.txt")
    return match.group(1)


def built_extension(build_dir):
    """The extension in a build tree, if it was built for this interpreter (its suffix), else None."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    path = os.path.join(build_dir, "python", "ncsde", "_core" + suffix)
    return path if os.path.isfile(path) else None


class cmake_build_ext(build_ext):
    def build_extension(self, ext):
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        reuse = os.environ.get("NCSDE_BUILD_DIR")
        if reuse:
            found = built_extension(os.path.abspath(reuse))
            if found is None:
                sys.exit(f"setup.py: NCSDE_BUILD_DIR={reuse} holds no python/ncsde/_core"
                         f"{sysconfig.get_config_var('EXT_SUFFIX')} (build the target ncsde_python "
                         "there with this Python, or unset NCSDE_BUILD_DIR to build here)")
            print(f"setup.py: reusing {found}")
            shutil.copyfile(found, target)
            return
        build_dir = os.path.join(ROOT, "build", "pip")
        configure = ["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                     f"-DPython3_EXECUTABLE={sys.executable}", "-DNCSDE_BUILD_TESTS=OFF",
                     "-DNCSDE_BUILD_BENCHMARKS=OFF", "-DNCSDE_WITH_MPI=OFF"]
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
        subprocess.run(configure, check=True)
        subprocess.run(["cmake", "--build", build_dir, "--target", "ncsde_python", "--parallel",
                        jobs], check=True)
        found = built_extension(build_dir)
        if found is None:
            sys.exit("setup.py: the CMake build made no Python module (see its status lines: "
                     "pybind11-dev, python3-dev and python3-numpy are needed)")
        shutil.copyfile(found, target)


class build_py_with_plot_script(build_py):
    """The package's files, and validate's plot script (validation/plots/validate_plot.py) as
    ncsde/_validate_plot.py, which ncsde.validate(..., plots=DIR) runs."""

    def run(self):
        super().run()
        self.copy_file(os.path.join(ROOT, "validation", "plots", "validate_plot.py"),
                       os.path.join(self.build_lib, "ncsde", "_validate_plot.py"))


setup(
    name="ncsde",
    version=project_version(),
    description="Stochastic numerics for matrix-valued (neural covariance) SDEs",
    packages=["ncsde"],
    package_dir={"ncsde": "python/ncsde"},
    package_data={"ncsde": ["*.pyi", "py.typed"]},
    ext_modules=[Extension("ncsde._core", sources=[])],
    cmdclass={"build_ext": cmake_build_ext, "build_py": build_py_with_plot_script},
    python_requires=">=3.8",
    install_requires=["numpy"],
    zip_safe=False,
    # setuptools' own build files away from the CMake build in build/.
    options={"build": {"build_base": SETUPTOOLS_DIR}, "egg_info": {"egg_base": SETUPTOOLS_DIR}},
)
