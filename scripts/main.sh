#!/usr/bin/env bash
# Installs the dependencies, configures and builds the default (Release) preset in build/, then runs
#   build/ncsde convergence "$@"   (default: --plots out/convergence)
# from the caller's directory (so relative output paths in the arguments mean what the caller meant).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$repo_root/scripts/build.sh"

# Without arguments: the default study, with its table on stdout and one PNG per problem in out/convergence.
if [[ $# -eq 0 ]]; then
  set -- --plots "$repo_root/out/convergence"
fi
exec "$repo_root/build/ncsde" convergence "$@"
