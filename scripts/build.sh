#!/usr/bin/env bash
# Installs the Debian dependencies that are missing, then configures and builds the default (Release)
# preset in build/. Runnable from any directory.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

bash scripts/install-deps.sh
cmake --preset default
cmake --build --preset default
