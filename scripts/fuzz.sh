#!/usr/bin/env bash
# Fuzzes ember's readers of outside bytes with libFuzzer under AddressSanitizer and
# UndefinedBehaviorSanitizer (clang): builds tests/fuzz/'s targets in build/fuzz, then runs each
# for FUZZ_SECONDS (as many at once as there are cores) from the committed seeds
# (tests/fuzz/corpus/<target>/) and what earlier runs here found (build/fuzz/corpus/<target>/).
#
#   scripts/fuzz.sh                              every target, 60 s each
#   FUZZ_SECONDS=600 scripts/fuzz.sh jpeg idx    some targets, longer
#   scripts/fuzz.sh --seeds                      rewrite tests/fuzz/corpus/ (make_fuzz_seeds)
#
# Targets: safetensors checkpoint idx cifar10 jpeg wordpiece bert_cache text_corpus. A reader
# that crashes, trips a sanitizer, fails with anything but ember::Error, runs past 25 s on one
# input or takes over 2 GB fails the run: the script goes on with the other targets and exits 1,
# naming the input it saved under build/fuzz/crashes/<target>/. Once the reader is fixed, commit
# that input as tests/fuzz/regressions/<target>/<name>: ctest's fuzz_replay_<target> runs it in
# every test build from then on.
#
# Environment: FUZZ_SECONDS (default 60), EMBER_FUZZ_BUILD_DIR (default build/fuzz).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

build="${EMBER_FUZZ_BUILD_DIR:-$EMBER_ROOT/build/fuzz}"
seconds="${FUZZ_SECONDS:-60}"
all=(safetensors checkpoint idx cifar10 jpeg wordpiece bert_cache text_corpus)

seeds=0
targets=()
for arg in "$@"; do
  case "$arg" in
    --seeds) seeds=1 ;;
    -h | --help) sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *)
      if [[ " ${all[*]} " != *" $arg "* ]]; then
        echo "fuzz.sh: no target '$arg' (targets: ${all[*]})" >&2
        exit 2
      fi
      targets+=("$arg")
      ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz.sh: FUZZ_SECONDS must be a positive whole number of seconds, got '$seconds'" >&2
  exit 2
fi

ember_apt_install cmake make clang libclang-rt-14-dev libomp-14-dev nlohmann-json3-dev zlib1g-dev \
  libturbojpeg0-dev dict-gcide
# The readers multiply no matrices: no oneDNN, no BLAS (oneMKL's GNU-threaded layer would meet
# clang's libomp).
read -r -a generator <<<"$(ember_ninja_args "$build")"
EMBER_CUDA=OFF ember_configure "$build" "${generator[@]}" -DCMAKE_C_COMPILER=clang \
  -DCMAKE_CXX_COMPILER=clang++ -DEMBER_BUILD_FUZZERS=ON -DEMBER_BUILD_TESTS=OFF \
  -DEMBER_BUILD_BENCHMARKS=OFF -DEMBER_BUILD_EXAMPLES=OFF -DEMBER_MPI=OFF -DEMBER_DNNL=OFF \
  -DEMBER_BLAS=OFF -DEMBER_BUILD_KERNELS=OFF

if [ "$seeds" = 1 ]; then
  cmake --build "$build" -j"$(ember_jobs)" --target make_fuzz_seeds
  rm -rf "$EMBER_ROOT/tests/fuzz/corpus"
  "$build/tests/fuzz/make_fuzz_seeds" "$EMBER_ROOT/tests/fuzz/corpus"
  exit 0
fi

# All of them as the default target (this build has nothing else), so they compile in parallel:
# several --target names are made one after another.
build_targets=()
if [ ${#targets[@]} -lt ${#all[@]} ]; then
  for t in "${targets[@]}"; do build_targets+=(--target "fuzz_$t"); done
fi
ember_log "building the fuzz targets: ${targets[*]}"
cmake --build "$build" -j"$(ember_jobs)" "${build_targets[@]}"

# fuzz_one TARGET: one libFuzzer run; its log in build/fuzz/fuzz_TARGET.log, its status returned.
fuzz_one() {
  local t="$1" found="$build/corpus/$1" crashes="$build/crashes/$1"
  mkdir -p "$found" "$crashes"
  # New inputs go to the first folder; the committed seeds and regressions are read only.
  local inputs=("$found" "$EMBER_ROOT/tests/fuzz/corpus/$t")
  [ -d "$EMBER_ROOT/tests/fuzz/regressions/$t" ] && inputs+=("$EMBER_ROOT/tests/fuzz/regressions/$t")
  "$build/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 \
    -artifact_prefix="$crashes/" -print_final_stats=1 "${inputs[@]}" >"$build/fuzz_$t.log" 2>&1
}

# One fuzzer per core at a time (each is one process on one core).
failed=()
declare -A running=()  # pid -> target
finish_one() {
  local pid status=0
  wait -n -p pid "${!running[@]}" || status=$?
  local t="${running[$pid]}"
  unset "running[$pid]"
  if [ "$status" -ne 0 ]; then
    tail -n 60 "$build/fuzz_$t.log"
    failed+=("$t")
  else
    ember_log "fuzz $t: $(grep -E "stat::number_of_executed_units|stat::peak_rss_mb" \
      "$build/fuzz_$t.log" | tr -s ' \n' ' ')"
  fi
}
for t in "${targets[@]}"; do
  while [ "${#running[@]}" -ge "$(ember_jobs)" ]; do finish_one; done
  ember_log "fuzzing $t for ${seconds}s"
  fuzz_one "$t" &
  running[$!]="$t"
done
while [ "${#running[@]}" -gt 0 ]; do finish_one; done

if [ ${#failed[@]} -gt 0 ]; then
  ember_log "fuzz: FAILED: ${failed[*]} (inputs in $build/crashes/<target>/, logs $build/fuzz_<target>.log)"
  exit 1
fi
ember_log "fuzz: ${#targets[@]} targets, ${seconds}s each, nothing found"
