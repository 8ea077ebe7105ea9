#!/usr/bin/env bash
# The fidelity study of docs/validation.md: `ncsde validate` for every architecture (and the strong-attention
# settings), SAMPLES networks per width and SDE paths, n = 32, 64, 128, 256, seed 1; one JSON report
# per configuration in OUT, then the table (validation/plots/fidelity_table.py) on stdout and in
# OUT/fidelity.md.
#
#   scripts/fidelity_study.sh [OUT] [SAMPLES]          default: out/fidelity, 100000
#   NCSDE_LAUNCH="mpirun -np 4" scripts/fidelity_study.sh out/fidelity 1000000
#
# NCSDE_LAUNCH prefixes every run (an MPI launcher: the reports are byte-identical for any rank
# count, docs/distributed.md); NCSDE (default build/ncsde) is the program. Measured on 2 cores at 10⁵:
# 99–506 s per configuration, 30 minutes in all (a build sharing the machine).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-out/fidelity}"
samples="${2:-100000}"
ncsde="${NCSDE:-$repo_root/build/ncsde}"
read -r -a launch <<< "${NCSDE_LAUNCH:-}"
mkdir -p "$out"

# name|flags
configs=(
  "mlp|--model mlp"
  "resnet (r = 2)|--model resnet --hidden-ratio 2"
  "attention|--model attention"
  "attention, 4 heads + W^O|--model attention --heads 4 --output-projection"
  "causal attention|--model attention --causal"
  "transformer|--model transformer"
  "strong attention (γ² = 1, τ₀ = ½)|--model attention --gamma2 1 --tau0 0.5"
  "strong transformer (γ² = 1, τ₀ = ½)|--model transformer --gamma2 1 --tau0 0.5"
)
reports=()
for entry in "${configs[@]}"; do
  name="${entry%%|*}"
  read -r -a flags <<< "${entry#*|}"
  file="$out/$(echo "$name" | tr -c 'a-zA-Z0-9\n' '_' | tr -s '_').json"
  echo "fidelity study: $name …" >&2
  start=$(date +%s)
  "${launch[@]}" "$ncsde" validate "${flags[@]}" --networks "$samples" --paths "$samples" \
    --format json > "$file.tmp"
  mv "$file.tmp" "$file"
  echo "fidelity study: $name done in $(( $(date +%s) - start )) s" >&2
  reports+=("$name=$file")
done
/usr/bin/python3 "$repo_root/validation/plots/fidelity_table.py" "${reports[@]}" | tee "$out/fidelity.md"
