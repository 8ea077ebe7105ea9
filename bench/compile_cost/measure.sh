#!/usr/bin/env bash
# Compile time and peak memory of the consumer translation unit (consumer.cpp) at -O2:
#   bench/compile_cost/measure.sh [INCLUDE_DIR]   (default: this tree's include/)
# Prints "<wall s> <user s> <max RSS MB>" of `g++ -std=c++20 -O2 -c consumer.cpp`. Run it on a quiet
# machine; for a before/after comparison, point INCLUDE_DIR at the other tree's include/.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
include="${1:-$here/../../include}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
/usr/bin/time -f "%e %U %M" -o "$out/time" \
  "${CXX:-g++}" -std=c++20 -O2 -DNDEBUG -I "$include" -I /usr/include/eigen3 \
  -c "$here/consumer.cpp" -o "$out/consumer.o"
read -r wall user rss < "$out/time"
echo "$wall s wall, $user s user, $((rss / 1024)) MB max RSS"
