#!/usr/bin/env bash
# Installs the Debian packages ncsde needs to build, test and plot (python3 also runs the
# command-line tests, tests/cli, with its standard library only), and the Python module's (python3-dev
# and pybind11-dev to build it, python3-pytest for its tests, tests/python; python3-venv, -pip,
# -setuptools and -wheel for `pip install .`, which a test runs in a scratch virtual environment).
#   scripts/install-deps.sh               the build, the tests and the plots
#   scripts/install-deps.sh --sanitizers  also Clang and its sanitizer and libFuzzer runtimes, for
#                                         scripts/test_sanitizers.sh (the fuzz preset), and
#                                         clang-format-16 for its layout check (scripts/format.sh)
# Non-interactive and idempotent: a no-op when everything is present.
set -euo pipefail

packages=(
  build-essential cmake
  libeigen3-dev libboost-dev libfmt-dev doctest-dev libbenchmark-dev
  librandom123-dev libcli11-dev nlohmann-json3-dev libhwy-dev
  libopenmpi-dev openmpi-bin
  python3 python3-numpy python3-matplotlib
  python3-dev pybind11-dev python3-pytest
  python3-venv python3-pip python3-setuptools python3-wheel
)
case "${1:-}" in
  "") ;;
  --sanitizers) packages+=(clang libclang-rt-14-dev clang-format-16) ;;
  *) echo "usage: $0 [--sanitizers]" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then
  if ! command -v sudo > /dev/null; then
    echo "install-deps: not root and no sudo: as root, run" >&2
    echo "  apt-get update && apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
  sudo_cmd=(sudo)
fi
# Passed through `env`: sudo resets the environment, so an exported DEBIAN_FRONTEND would not reach
# apt-get; keep existing configuration files rather than prompting about them.
apt=("${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o Dpkg::Options::=--force-confdef
     -o Dpkg::Options::=--force-confold)
"${apt[@]}" update -qq
"${apt[@]}" install -y -qq --no-install-recommends "${missing[@]}"
