#!/usr/bin/env bash
# Installs the dependencies, configures the default (Release) preset in build/ and builds the ncsde
# program only (no test suites or benchmarks; their output goes to stderr, so that
# `scripts/main.sh > results.txt` holds the results alone), then runs the main job
#   build/ncsde validate --plots out/validate
# i.e. validate's defaults (validate_defaults in validation/fidelity/validate_report.hpp: one set
# for the program, this script and ncsde.validate), the study that shows power: the shaped-attention
# SDE at strong attention (γ² = 1, τ₀ = ½) against 10⁵ finite networks per width n = 32, 64, 128,
# 256 and 10⁵ SDE paths (measured on 2 cores: about 1½ minutes once built; a first run builds the
# program first: 5 minutes in all from a fresh clone with the packages present), from the caller's
# directory (so relative output paths in the arguments mean what the caller meant). Arguments
# replace the defaults:
#   scripts/main.sh validate …            any validation, e.g. the second documented run
#   scripts/main.sh validate --model transformer --networks 1e4 --paths 1e4 --plots out/transformer
# and a first argument naming another subcommand runs that one instead, e.g.
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
# Without arguments: the main validation, its tables on stdout, PNGs and data in out/validate.
if [[ $# -eq 0 ]]; then
  set -- --plots "$repo_root/out/validate"
fi
exec "$repo_root/build/ncsde" validate "$@"
