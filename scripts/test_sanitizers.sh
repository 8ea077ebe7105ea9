#!/usr/bin/env bash
# The sanitizer part of CI (.ci/run runs it after scripts/test.sh). Runnable from any directory.
#
#  0. The layout check: scripts/format.sh --check (clang-format 16 against .clang-format) fails
#     when a C++ file is not laid out as the tree's style says.
#  1. The asan preset (Clang, address + undefined-behaviour sanitizers, leak detection) in
#     build-asan/: builds the C++ unit test programs only (build preset asan-unit: no benchmarks,
#     no ncsde program) and runs them (test preset asan-unit): every `unit` test except
#       cli_*                    they run the ncsde program, which is not built here; its text
#                                parsers are fuzzed under the same sanitizers in step 2, and the
#                                Release run has already run these tests;
#       package_downstream       it builds a consumer project without the sanitizer flags, which
#                                cannot link the instrumented library (it checks packaging, which
#                                the Release run covers);
#       allocation               it replaces the global operator new to count allocations, which
#                                the address sanitizer's own allocator owns (it crashes at start);
#                                the Release run checks that hot paths allocate nothing (its
#                                program is not built here)
#       own_convergence_example  the slowest test (27 s in Release, 200 000 weak paths; several
#                                minutes under the sanitizers) on integrate() and the Brownian
#                                sources, which core, spaces and convergence already exercise.
#     Inside the test programs a sanitizer build skips the doctest suite `statistical` (the large
#     Monte Carlo studies; tests/main.cpp says why; NCSDE_TEST_ALL=1 runs them too).
#  2. The tsan preset (thread sanitizer) in build-tsan/: builds ncsde_tests_core, the executor,
#     ensemble and batched tests (build preset tsan-core), and runs it (test preset tsan-core).
#  3. The fuzz preset (Clang, libFuzzer, address + undefined) in build-fuzz/: builds the three fuzz
#     targets of tests/fuzz (matrix and flag parsers, partial files) and fuzzes each for
#     NCSDE_FUZZ_SECONDS (default 60; two at once).
#
# The three presets build without the CUDA backend (NCSDE_WITH_CUDA=OFF): nvcc compiles and links
# through GCC, whose sanitizer runtimes clash with Clang's in one program (CMakeLists.txt refuses
# that mix by name). The device kernels' host form, which the unit tests run, is C++ compiled by
# the sanitized compiler, so it stays covered; the Release run of scripts/test.sh builds and tests
# the CUDA backend wherever a CUDA compiler is installed.
#
# A sanitizer report, a failed test or a fuzzing finding fails the script. The time of each step
# is printed at the end.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
bash scripts/install-deps.sh --sanitizers
CLANG_FORMAT=clang-format-16 bash scripts/format.sh --check

# One step: configure preset $1 (with the cache options after $2), build the build preset $2, run
# the test preset $2; appends "<name> build N s, <name> tests N s" to `times`.
times=""
step() {
  local configure=$1 preset=$2 start
  shift 2
  start=$SECONDS
  cmake --preset "$configure" "$@"
  cmake --build --preset "$preset"
  times+="${times:+, }$preset build $((SECONDS - start)) s"
  start=$SECONDS
  ctest --preset "$preset"
  times+=", $preset tests $((SECONDS - start)) s"
}

step asan asan-unit
step tsan tsan-core
step fuzz fuzz -DNCSDE_FUZZ_SECONDS="${NCSDE_FUZZ_SECONDS:-60}"

echo "sanitizers: $times"
