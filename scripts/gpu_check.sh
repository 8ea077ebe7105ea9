#!/usr/bin/env bash
# The CUDA backend's checks and benchmark, on a machine with an NVIDIA GPU (docs/gpu.md).
#
#   scripts/gpu_check.sh                 on a GPU machine with the project's packages and nvcc:
#                                        builds the program with the CUDA backend in build-gpu/,
#                                        runs the device tests of the unit suite, the GPU checks
#                                        (tests/gpu/check_gpu.py) and the benchmark
#                                        (bench/gpu/gpu_bench.py), reports in out/gpu/
#   scripts/gpu_check.sh pack DEST       on a machine with nvcc but no GPU: builds the program with
#                                        the CUDA backend and packs it with the shared libraries it
#                                        needs into DEST (for a GPU machine without the project's
#                                        packages: copy DEST and the working tree there)
#   scripts/gpu_check.sh run DEST [OUT]  on that GPU machine: the checks and the benchmark with the
#                                        packed program DEST/ncsde.sh, reports in OUT (out/gpu/)
#
# Options through the environment: CUDA_ARCHS (CMake's CUDA architectures, default 90: H100 and
# H200), QUICK=1 (smaller runs: a smoke test), BENCH=0 (the checks only).
# Exit status: 0 when every check passes; the first failing step's status otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-all}
archs=${CUDA_ARCHS:-90}
quick=()
[[ ${QUICK:-0} == 1 ]] && quick=(--quick)

build_program() {  # build_program DIR [extra cmake args…]: the program with the CUDA backend
  local dir=$1
  shift
  command -v nvcc >/dev/null || [[ -n ${CUDACXX:-} ]] || {
    echo "gpu_check: no CUDA compiler (nvcc on PATH, or CUDACXX): the backend cannot be built" >&2
    exit 2
  }
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$archs" "$@" \
    | tee "$dir.configure.log" | grep "ncsde:" || true
  grep -q "ncsde: CUDA backend on" "$dir.configure.log" || {
    echo "gpu_check: CMake did not build the CUDA backend (see $dir.configure.log)" >&2
    exit 2
  }
  cmake --build "$dir" -j"$(nproc)" --target ncsde
}

run_checks() {  # run_checks PROGRAM OUT
  local program=$1 out=$2
  mkdir -p "$out"
  echo "== the GPU against the CPU (tests/gpu/check_gpu.py)"
  python3 tests/gpu/check_gpu.py --ncsde "$program" --out "$out/check_gpu.json" "${quick[@]}"
  if [[ ${BENCH:-1} != 0 ]]; then
    echo "== the benchmark (bench/gpu/gpu_bench.py)"
    python3 bench/gpu/gpu_bench.py --ncsde "$program" --out "$out/results.json" "${quick[@]}"
  fi
}

case $mode in
  all)
    build_program build-gpu
    cmake --build build-gpu -j"$(nproc)" --target ncsde_tests_models
    echo "== the device tests of the unit suite"
    build-gpu/tests/ncsde_tests_models -tc="*device*,*emulated*,parse_device*"
    run_checks build-gpu/ncsde out/gpu
    ;;
  pack)
    dest=${2:?usage: scripts/gpu_check.sh pack DEST}
    build_program build-gpu-pack -DNCSDE_BUILD_TESTS=OFF -DNCSDE_BUILD_BENCHMARKS=OFF \
      -DNCSDE_WITH_PYTHON=OFF -DNCSDE_WITH_MPI=OFF
    mkdir -p "$dest/lib"
    cp -L build-gpu-pack/ncsde "$dest/ncsde"
    # Every shared library but the C and C++ runtimes', which the GPU machine has.
    ldd build-gpu-pack/ncsde | awk '/=> \//{print $3}' | while read -r lib; do
      case "$(basename "$lib")" in
        libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | ld-linux* | libgcc_s.so* | \
          libstdc++.so*) ;;
        *) cp -Ln "$lib" "$dest/lib/" ;;
      esac
    done
    cat >"$dest/ncsde.sh" <<'W'
#!/usr/bin/env bash
d=$(cd "$(dirname "$0")" && pwd)
LD_LIBRARY_PATH="$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$d/ncsde" "$@"
W
    chmod +x "$dest/ncsde.sh"
    du -sh "$dest" | awk '{print "gpu_check: packed " $2 " (" $1 ")"}'
    ;;
  run)
    dest=${2:?usage: scripts/gpu_check.sh run DEST [OUT]}
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
    run_checks "$dest/ncsde.sh" "${3:-out/gpu}"
    ;;
  *)
    echo "usage: scripts/gpu_check.sh [pack DEST | run DEST [OUT]]" >&2
    exit 2
    ;;
esac
