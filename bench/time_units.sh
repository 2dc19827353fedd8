#!/usr/bin/env bash
# A compiler launcher that logs each translation unit's wall and CPU seconds and peak memory:
# "<wall> <cpu> <source> <MB>" appended to $EMBER_UNIT_TIMES (default build-unit-times.txt in the
# working directory of the compile). CPU seconds (the compiler's user + system time, its child
# processes included, as nvcc's) barely depend on what else runs beside the compile; wall
# seconds do. The memory is the largest single process's peak (of nvcc's phases, the largest).
#
#   cmake -B build/test -DCMAKE_CXX_COMPILER_LAUNCHER="$PWD/bench/time_units.sh" \
#         -DCMAKE_CUDA_COMPILER_LAUNCHER="$PWD/bench/time_units.sh"
#   EMBER_UNIT_TIMES=/tmp/units.txt scripts/test.sh
#   sort -k2 -rn /tmp/units.txt | head
start=$(date +%s.%N)
times_file=$(mktemp)
/usr/bin/time -f "%U %S %M" -o "$times_file" "$@"
status=$?
end=$(date +%s.%N)
read -r user system rss_kb < <(tail -n 1 "$times_file")  # after a failure's status line
rm -f "$times_file"
source=""
previous=""
for arg in "$@"; do
  [[ "$previous" == -c ]] && source=$arg
  previous=$arg
done
awk -v s="$start" -v e="$end" -v u="$user" -v k="$system" -v f="$source" -v m="$rss_kb" \
  'BEGIN { printf "%.1f %.1f %s %.0f\n", e - s, u + k, f, m / 1024 }' >>"${EMBER_UNIT_TIMES:-build-unit-times.txt}"
exit $status
