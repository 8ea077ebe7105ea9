#!/usr/bin/env python3
"""ctest python_pip: `pip install --no-build-isolation` of the Python module into a fresh virtual
environment made with --system-site-packages, offline (--no-index), then `import ncsde` from outside
the source and build trees, a small run, and `pip uninstall`, after which the import fails.

    python3 pip_install.py SOURCE_DIR BUILD_DIR WORK_DIR VERSION

The module is not compiled again: NCSDE_BUILD_DIR=BUILD_DIR makes setup.py reuse the extension the
build made (what CI does). The package's sources (setup.py, pyproject.toml, CMakeLists.txt for the
version, python/ncsde) are copied to WORK_DIR first, so that pip's build files stay out of the source
tree. Skipped (exit 77) when the interpreter has no venv or pip module (python3-venv, python3-pip).
"""
import os
import shutil
import subprocess
import sys


def run(*args, env=None, cwd=None):
    done = subprocess.run([str(a) for a in args], env=env, cwd=cwd, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=600)
    if done.returncode != 0:
        sys.exit(f"pip test: {' '.join(map(str, args))} failed ({done.returncode}):\n"
                 f"{done.stdout}\n{done.stderr}")
    return done.stdout


def main():
    source, build, work, version = sys.argv[1:5]
    for module in ("venv", "pip", "setuptools", "wheel"):
        if subprocess.run([sys.executable, "-c", f"import {module}"],
                          capture_output=True).returncode != 0:
            print(f"pip test: skipped, {sys.executable} cannot import {module}")
            sys.exit(77)
    shutil.rmtree(work, ignore_errors=True)
    src = os.path.join(work, "src")
    os.makedirs(os.path.join(src, "python"))
    for f in ("setup.py", "pyproject.toml", "CMakeLists.txt"):
        shutil.copy(os.path.join(source, f), src)
    shutil.copytree(os.path.join(source, "python", "ncsde"), os.path.join(src, "python", "ncsde"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    # validate's plot script, which the package carries as ncsde/_validate_plot.py.
    os.makedirs(os.path.join(src, "validation", "plots"))
    shutil.copy(os.path.join(source, "validation", "plots", "validate_plot.py"),
                os.path.join(src, "validation", "plots"))
    env_dir = os.path.join(work, "env")
    run(sys.executable, "-m", "venv", "--system-site-packages", env_dir)
    python = os.path.join(env_dir, "bin", "python")
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    environment["NCSDE_BUILD_DIR"] = build
    environment["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    run(python, "-m", "pip", "install", "--no-build-isolation", "--no-index", "--no-deps", src,
        env=environment)
    outside = os.path.join(work, "elsewhere")
    os.makedirs(outside)
    check = (
        "import ncsde, numpy as np, sys\n"
        f"assert ncsde.__file__.startswith({env_dir!r}), ncsde.__file__\n"
        f"assert ncsde.__version__ == {version!r}, ncsde.__version__\n"
        "sde = ncsde.models.covariance_sde('mlp')\n"
        "r = ncsde.simulate(sde, np.array([[1.0, 0.3], [0.3, 1.0]]), 0.1, dt=0.01, paths=16, seed=3)\n"
        "assert r.completed == 16 and np.all(np.isfinite(r.terminal))\n"
        "import os\n"
        "assert os.path.isfile(os.path.join(os.path.dirname(ncsde.__file__), '_validate_plot.py'))\n"
        "print('imported', ncsde.__file__)\n")
    print(run(python, "-c", check, env=environment, cwd=outside), end="")
    shown = run(python, "-m", "pip", "show", "ncsde", env=environment)
    if f"Version: {version}" not in shown:
        sys.exit(f"pip test: pip show ncsde does not say version {version}:\n{shown}")
    run(python, "-m", "pip", "uninstall", "-y", "ncsde", env=environment)
    gone = subprocess.run([python, "-c", "import ncsde"], env=environment, cwd=outside,
                          capture_output=True, text=True)
    if gone.returncode == 0:
        sys.exit("pip test: ncsde still imports after pip uninstall")
    print("pip test: installed, imported, ran and uninstalled")


if __name__ == "__main__":
    main()
