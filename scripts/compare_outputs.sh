#!/usr/bin/env bash
# Runs a fixed set of `ncsde` commands with two builds of the program and compares their outputs byte
# for byte (timing fields aside): the check that a change meant to keep every number kept them.
#
#   scripts/compare_outputs.sh OLD_NCSDE NEW_NCSDE [--quick]
#
# Timing fields ("seconds" in JSON, "(… s)" and "… s" columns in tables) are removed before comparing;
# everything else must match exactly. --quick skips the long runs (full convergence study, validate).
# Exit 0 when every output matches, 1 otherwise (the differing files are listed and left in the work
# directory printed at the end).
set -euo pipefail

if [[ $# -lt 2 ]]; then
  echo "usage: $0 OLD_NCSDE NEW_NCSDE [--quick]" >&2
  exit 2
fi
old=$(realpath "$1")
new=$(realpath "$2")
quick=${3:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/ncsde-compare.XXXXXX")

# name, then the arguments of one run. Outputs written with --out go to <dir>/<name>.csv.
runs=(
  "coef_attention|coefficients --model attention --gamma2 1 --V 1,0.5;0.5,1 --format json"
  "coef_transformer3|coefficients --model transformer --V 1,0.5,0.3;0.5,1.6,0.7;0.3,0.7,0.7 --format json"
  "sim_transformer_json|simulate --model transformer --V0 1,0.5;0.5,1 --paths 3000 --stop-level 5 --threads 2 --format json --out @.csv"
  "sim_transformer3_table|simulate --model transformer --V0 1,0.5,0.3;0.5,1.6,0.7;0.3,0.7,0.7 --T 2 --paths 2000 --threads 2 --out @.csv"
  "sim_attention_milstein|simulate --model attention --gamma2 1 --tau0 0.5 --V0 1,0.5;0.5,1 --paths 500 --scheme milstein --threads 2 --format json --out @.csv"
  "sim_mlp_m5_count|simulate --model mlp --V0 1,0.2,0.1,0,0;0.2,1,0.2,0.1,0;0.1,0.2,1,0.2,0.1;0,0.1,0.2,1,0.2;0,0,0.1,0.2,1 --paths 400 --dt 0.01 --pd-policy count --threads 2 --format json --out @.csv"
  "sim_resnet_refine|simulate --model resnet --V0 1,0.99;0.99,1 --paths 400 --dt 0.05 --pd-policy refine --threads 2 --format json --out @.csv"
  "sim_causal_m1|simulate --model attention --causal --V0 1 --paths 300 --threads 2 --format json --out @.csv"
  "net_reduced|sample-network --model transformer --V0 1,0.5;0.5,1 --n 64 --d 64 --networks 2000 --threads 2 --out @.csv"
  "net_literal|sample-network --model attention --V0 1,0.5;0.5,1 --n 32 --d 32 --networks 200 --sampler literal --stop-level 5 --threads 2 --out @.csv"
  "conv_gbm|convergence --problem gbm --paths 400 --threads 2 --format json"
  "conv_wishart|convergence --problem wishart --paths 300 --threads 2 --format json"
)
if [[ "$quick" != "--quick" ]]; then
  runs+=(
    "convergence_default|convergence --threads 2 --format json"
    "validate_transformer|validate --model transformer --networks 1e4 --paths 1e4 --threads 2 --format json"
    "validate_attention_strong|validate --model attention --gamma2 1 --tau0 0.5 --networks 1e4 --paths 1e4 --threads 2 --format json"
  )
fi

# Removes timing fields so that only numbers that must reproduce are compared.
normalise() {
  /usr/bin/python3 - "$1" <<'EOF'
import json, re, sys
path = sys.argv[1]
text = open(path, encoding="utf-8").read()
def strip(x):
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if k not in ("seconds", "elapsed_seconds")}
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x
try:
    doc = json.loads(text)
    text = json.dumps(strip(doc), indent=1)
except ValueError:
    text = re.sub(r"\(\d+(\.\d+)? s\)", "(t s)", text)
    text = re.sub(r"\b\d+(\.\d+)?s\b", "ts", text)
open(path, "w", encoding="utf-8").write(text)
EOF
}

status=0
for entry in "${runs[@]}"; do
  name=${entry%%|*}
  args=${entry#*|}
  for side in old new; do
    bin=$old
    [[ $side == new ]] && bin=$new
    dir="$work/$side"
    mkdir -p "$dir"
    # Word-split the arguments on spaces (none of them contains one), placing --out files in dir.
    read -r -a argv <<<"${args//@/$dir/$name}"
    if ! "$bin" "${argv[@]}" >"$dir/$name.out" 2>"$dir/$name.err"; then
      echo "compare: $side run of '$name' failed (see $dir/$name.err)" >&2
      status=1
    fi
    normalise "$dir/$name.out"
  done
  for f in "$work/old/$name".*; do
    g="$work/new/$(basename "$f")"
    [[ $(basename "$f") == *.err ]] && continue
    if cmp -s "$f" "$g"; then
      echo "same      $(basename "$f")"
    else
      echo "DIFFERENT $(basename "$f")"
      status=1
    fi
  done
done
echo "compare: outputs in $work"
exit $status
