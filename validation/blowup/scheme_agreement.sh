#!/usr/bin/env bash
# STATISTICAL VALIDATION (not a unit test; minutes of CPU): under the defaults, Euler–Maruyama
# and Milstein estimate the same blow-up probability (docs/maths.md §8.5).
#
#   validation/blowup/scheme_agreement.sh NCSDE [PATHS] [THREADS]
#
# Runs `ncsde blowup --model transformer --V0 V3' --T 2 --seed 9` with --scheme em and
# --scheme milstein (adaptive increment steps, the default cone policy: nothing else is set),
# PATHS paths (default 4000), and prints both P(tau <= 2) with their standard errors, the
# difference in units of its standard error z = (p_mil − p_em)/√(se_em² + se_mil²), the seconds,
# steps and exhausted paths of each. Exits 1 when |z| > 3. V3' is V3 of docs/maths.md §9.1 with
# the last digits of the issue's command.
set -euo pipefail
if [[ $# -lt 1 ]]; then
  echo "usage: $0 NCSDE [PATHS] [THREADS]" >&2
  exit 2
fi
ncsde=$1
paths=${2:-4000}
threads=${3:-2}
v3="1,0.6324555320336759,0.25099800796022265;0.6324555320336759,1.6,0.7408103670980879;"
v3+="0.25099800796022265,0.7408103670980879,0.7"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for scheme in em milstein; do
  "$ncsde" blowup --model transformer --V0 "$v3" --T 2 --paths "$paths" --seed 9 \
    --threads "$threads" --scheme "$scheme" --format json >"$out/$scheme.json"
done
python3 - "$out/em.json" "$out/milstein.json" <<'PY'
import json, math, sys
em, mil = (json.load(open(f)) for f in sys.argv[1:3])
for name, r in (("em", em), ("milstein", mil)):
    print(f"{name:9s} P(tau <= 2) = {r['blown_up_fraction']:.4f} ± {r['blown_up_fraction_stderr']:.4f}  "
          f"({r['blown_up']} of {r['paths']}; {r['steps_per_path']:.1f} steps per path, "
          f"exhausted {r.get('exhausted', 0)}, {r['seconds']:.2f} s)")
z = (mil["blown_up_fraction"] - em["blown_up_fraction"]) / math.hypot(em["blown_up_fraction_stderr"], mil["blown_up_fraction_stderr"])
print(f"z = {z:.2f}: {'agree' if abs(z) <= 3 else 'DISAGREE'} within 3 standard errors")
sys.exit(0 if abs(z) <= 3 else 1)
PY
