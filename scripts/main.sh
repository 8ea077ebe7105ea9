#!/usr/bin/env bash
# Installs the dependencies, configures the default (Release) preset in build/ and builds the ncsde
# program only (no test suites or benchmarks; their output goes to stderr, so that
# `scripts/main.sh > results.txt` holds the results alone), then runs
#   build/ncsde validate "$@"   (default: --plots out/validate)
# i.e. the shaped-transformer SDE against its finite networks at n = 32, 64, 128, 256 (measured on 2
# cores: 41 s once built, of which the validation is 36 s; a first run builds the program first, about
# 7 minutes), from the caller's directory (so relative output paths in the arguments mean what the
# caller meant). A first argument naming another subcommand runs that one instead, e.g.
#   scripts/main.sh convergence --plots out/convergence
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
(
  cd "$repo_root"
  bash scripts/install-deps.sh
  cmake --preset default
  cmake --build --preset default --target ncsde
) >&2

case "${1:-}" in
  convergence|coefficients|simulate|merge|sample-network|rank-collapse|blowup|models|validate)
    exec "$repo_root/build/ncsde" "$@" ;;
esac
# Without arguments: the default validation, its tables on stdout, PNGs and data in out/validate.
if [[ $# -eq 0 ]]; then
  set -- --plots "$repo_root/out/validate"
fi
exec "$repo_root/build/ncsde" validate "$@"
