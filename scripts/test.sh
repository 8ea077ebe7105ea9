#!/usr/bin/env bash
# The unit test run: install the Debian dependencies, configure and build the default (Release) preset
# in build/, run every test labelled `unit`. Runnable from any directory.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$repo_root/scripts/build.sh"
cd "$repo_root"
ctest --preset unit
