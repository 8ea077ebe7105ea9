#!/usr/bin/env bash
# P(tau <= t) against t for several gamma2, tau0 of shaped attention (m = 3, V0 = V3): runs
# `ncsde blowup --plots` once per setting and overlays the curves with blowup_plot.py.
#
#   validation/blowup/curves.sh NCSDE OUT_DIR [PATHS]
#
# writes OUT_DIR/<setting>/blowup.{csv,png} and OUT_DIR/blowup_curves.png. Adaptive steps
# (increment controller, tolerance 0.025), T = 4, PATHS paths (default 2000), seed 1.
set -euo pipefail
if [[ $# -lt 2 ]]; then
  echo "usage: $0 NCSDE OUT_DIR [PATHS]" >&2
  exit 2
fi
ncsde=$1
out=$2
paths=${3:-2000}
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mkdir -p "$out"
settings=("1 0.5" "0.5 0.5" "1 1" "0.5 1" "1 2")
csvs=()
labels=()
for s in "${settings[@]}"; do
  read -r g t <<<"$s"
  dir="$out/attention_g${g}_t${t}"
  "$ncsde" blowup --model attention --gamma2 "$g" --tau0 "$t" --T 4 --paths "$paths" \
    --tolerance 0.025 --grid 80 --plots "$dir" >/dev/null
  csvs+=("$dir/blowup.csv")
  labels+=("gamma2 = $g, tau0 = $t")
done
/usr/bin/python3 "$here/../plots/blowup_plot.py" "$out/blowup_curves.png" "${csvs[@]}" \
  --label "${labels[@]}"
echo "wrote $out/blowup_curves.png"
