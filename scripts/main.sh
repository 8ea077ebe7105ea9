#!/usr/bin/env bash
# Installs the dependencies, configures and builds the default (Release) preset in build/, then runs
#   build/ncsde validate "$@"   (default: --plots out/validate)
# i.e. the shaped-transformer SDE against its finite networks at n = 32, 64, 128, 256 (a few minutes on
# 2 cores), from the caller's directory (so relative output paths in the arguments mean what the
# caller meant). A first argument naming another subcommand runs that one instead, e.g.
#   scripts/main.sh convergence --plots out/convergence
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$repo_root/scripts/build.sh"

case "${1:-}" in
  convergence|coefficients|simulate|sample-network|rank-collapse|validate)
    exec "$repo_root/build/ncsde" "$@" ;;
esac
# Without arguments: the default validation, its tables on stdout, PNGs and data in out/validate.
if [[ $# -eq 0 ]]; then
  set -- --plots "$repo_root/out/validate"
fi
exec "$repo_root/build/ncsde" validate "$@"
