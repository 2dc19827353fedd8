#!/usr/bin/env bash
# A compiler launcher that logs each translation unit's wall seconds: "<seconds> <source>" appended
# to $EMBER_UNIT_TIMES (default build-unit-times.txt in the working directory of the compile).
#
#   cmake -B build/test -DCMAKE_CXX_COMPILER_LAUNCHER="$PWD/bench/time_units.sh" \
#         -DCMAKE_CUDA_COMPILER_LAUNCHER="$PWD/bench/time_units.sh"
#   EMBER_UNIT_TIMES=/tmp/units.txt scripts/test.sh
#   sort -rn /tmp/units.txt | head
start=$(date +%s.%N)
"$@"
status=$?
end=$(date +%s.%N)
source=""
previous=""
for arg in "$@"; do
  [[ "$previous" == -c ]] && source=$arg
  previous=$arg
done
awk -v s="$start" -v e="$end" -v f="$source" 'BEGIN { printf "%.1f %s\n", e - s, f }' \
  >>"${EMBER_UNIT_TIMES:-build-unit-times.txt}"
exit $status
