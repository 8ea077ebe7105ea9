#!/usr/bin/env bash
# Runs clang-tidy with the checks of .clang-tidy on C++ sources. Runnable from any directory.
#
#   scripts/tidy.sh                 every source file of build/compile_commands.json (ours only)
#   scripts/tidy.sh FILE...         only these (paths from the repository root or absolute)
#
# Needs build/compile_commands.json: `cmake --preset default` writes it (configuring is enough, no
# build). TIDY_JOBS=N runs N clang-tidy processes at once (default 1: each takes a core and about
# 1 GB for a minute on the Eigen-heavy files). CLANG_TIDY picks the binary (default clang-tidy).
# Prints the findings and "tidy: N findings in M files"; exits 1 when there is any.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
db=build/compile_commands.json
if [[ ! -f $db ]]; then
  echo "tidy: $db not found: run 'cmake --preset default' first (configure only)" >&2
  exit 2
fi
tidy=${CLANG_TIDY:-clang-tidy}
jobs=${TIDY_JOBS:-1}

if (($# > 0)); then
  files=("$@")
else
  # The translation units of the database that are ours (not the downstream example's build).
  mapfile -t files < <(/usr/bin/python3 - "$db" "$repo_root" <<'PY'
import json, os, sys
db, root = sys.argv[1], sys.argv[2]
seen = []
for entry in json.load(open(db)):
    path = os.path.relpath(os.path.join(entry["directory"], entry["file"]), root)
    if not path.startswith(("..", "build")) and path not in seen:
        seen.append(path)
print("\n".join(seen))
PY
  )
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
printf '%s\n' "${files[@]}" |
  xargs -P "$jobs" -I{} "$tidy" -p build --quiet {} >>"$log" 2>/dev/null || true
cat "$log"
# A finding in a header is reported once per source that includes it: count each once.
{ grep -E '^[^ ].*: (warning|error): ' "$log" || true; } | sort -u >"$log.findings"
findings=$(wc -l <"$log.findings")
in_files=$(cut -d: -f1 "$log.findings" | sort -u | wc -l)
rm -f "$log.findings"
echo "tidy: $findings findings in $in_files files (${#files[@]} sources checked)" >&2
((findings == 0))
