#!/usr/bin/env bash
# Lays out the C++ sources with .clang-format. Runnable from any directory.
#
#   scripts/format.sh                  rewrites every tracked *.cpp, *.hpp and *.h in place
#   scripts/format.sh FILE...          only these
#   scripts/format.sh --check [FILE...]  changes nothing: lists the files clang-format would change
#                                        and exits 1 if there are any (0 if none)
#
# clang-format: $CLANG_FORMAT if set, else clang-format-16 (what .clang-format was written for:
# apt-get install clang-format-16), else clang-format with a warning (Debian 12's is version 14,
# which lays out requires-clauses differently, so its result differs in a few files).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

check=0
if [[ ${1:-} == --check ]]; then
  check=1
  shift
fi

if [[ -n ${CLANG_FORMAT:-} ]]; then
  cf=$CLANG_FORMAT
elif command -v clang-format-16 >/dev/null 2>&1; then
  cf=clang-format-16
elif command -v clang-format >/dev/null 2>&1; then
  cf=clang-format
  echo "format: clang-format-16 not found, using $(clang-format --version | head -n1);" \
       "requires-clauses may come out differently (apt-get install clang-format-16)" >&2
else
  echo "format: no clang-format found (apt-get install clang-format-16)" >&2
  exit 2
fi

if (($# > 0)); then
  files=("$@")
else
  mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h')
fi

if ((check == 0)); then
  "$cf" -i "${files[@]}"
  exit 0
fi

changed=0
for f in "${files[@]}"; do
  if ! "$cf" --dry-run -Werror "$f" >/dev/null 2>&1; then
    echo "$f"
    changed=$((changed + 1))
  fi
done
echo "format: $changed of ${#files[@]} files would change ($cf)" >&2
((changed == 0))
