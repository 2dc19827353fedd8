#!/usr/bin/env bash
# Builds ember's CPU tests under a sanitizer and runs them with ctest:
#
#   scripts/sanitize.sh                    AddressSanitizer + UndefinedBehaviorSanitizer, every
#                                          CPU test folder (build/asan)
#   scripts/sanitize.sh thread             ThreadSanitizer (build/tsan) on data (the image
#                                          loader's worker threads), io (files written while
#                                          forked writers are killed), memory (the allocators'
#                                          caches) and threads (ember used from two host threads
#                                          at once)
#   SANITIZE_FOLDERS="data io" scripts/sanitize.sh        some folders only
#
# g++'s sanitizers; CUDA, MPI and the examples' programs are left out (their tests need the
# toolkit, mpirun or the built trainers). Any report fails the test that made it: UBSan does
# not recover, ASan's leak check is on. Under ThreadSanitizer OpenMP runs one thread
# (OMP_NUM_THREADS=1): libgomp is not built with TSan, so its barriers look like races.
#
# Environment: SANITIZE_FOLDERS (test folders, default as above), EMBER_SANITIZE_BUILD_DIR,
# EMBER_SANITIZE_OPT (the tests' -O level: -O0 for address, -O1 for thread), CTEST_ARGS (more
# arguments for ctest).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

kind="${1:-address}"
case "$kind" in
  address)
    flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
    default_folders="autograd core data exec expr io memory nn ops optim tensor threads"
    export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1}"
    export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
    opt=-O0
    ;;
  thread)
    flags="-fsanitize=thread -fno-omit-frame-pointer"
    default_folders="data io memory threads"
    export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}"
    export OMP_NUM_THREADS=1
    opt=-O1
    ;;
  -h | --help) sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "sanitize.sh: the sanitizer is 'address' (with undefined) or 'thread', got '$kind'" >&2; exit 2 ;;
esac
read -r -a folders <<<"${SANITIZE_FOLDERS:-$default_folders}"
build="${EMBER_SANITIZE_BUILD_DIR:-$EMBER_ROOT/build/$([ "$kind" = thread ] && echo tsan || echo asan)}"

ember_apt_install "${EMBER_TEST_PACKAGES[@]}"
# The tests' optimisation (EMBER_TEST_CXX_OPT; this build compiles ember's operators into each
# test, where a plain build links ember::kernels' -O3 copies): ASan + UBSan at -O0, whose
# instrumentation at -O1 doubled the compile (data io memory threads, CI's folders: built in 181 s
# at -O1, 87 s at -O0; the tests then run in 16 s instead of 9), TSan at -O1 (83 s against 109 to
# build, but its tests ran twice as long at -O0: 33 s against 15). EMBER_SANITIZE_OPT overrides
# it. The sanitizers' flags go to every translation unit and link (the tests' precompiled header
# included). The BLAS is Debian's OpenBLAS here even where oneMKL is installed: the sanitizers
# check ember's code, and MKL's uninstrumented threads add nothing to that.
read -r -a generator <<<"$(ember_ninja_args "$build")"
EMBER_CUDA=OFF ember_configure "$build" "${generator[@]}" -DEMBER_BUILD_TESTS=ON \
  -DEMBER_BUILD_BENCHMARKS=OFF -DEMBER_BUILD_EXAMPLES=OFF -DEMBER_MPI=OFF -DEMBER_BLAS=OPENBLAS \
  -DEMBER_BUILD_KERNELS=OFF -DEMBER_TEST_CXX_OPT="${EMBER_SANITIZE_OPT:-$opt}" -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="$flags"

targets=()
regex=""
for f in "${folders[@]}"; do
  if [ ! -d "$EMBER_ROOT/tests/$f" ]; then
    echo "sanitize.sh: no test folder tests/$f" >&2
    exit 2
  fi
  targets+=("test_$f")
  regex+="${regex:+|}test_${f}(_|$)"
done
ember_log "building ${targets[*]} with $flags"
start=$SECONDS
# All folders in one call: Ninja compiles them side by side (Make, in a build directory it made
# earlier, one after another).
cmake --build "$build" -j"$(ember_jobs)" --target "${targets[@]}"
ember_log "built in $((SECONDS - start))s; running ctest"

read -r -a ctest_args <<<"${CTEST_ARGS:-}"  # none when unset
start=$SECONDS
status=0
ctest --test-dir "$build" --output-on-failure -L cpu -R "^(${regex})" "${ctest_args[@]}" || status=$?
ember_log "sanitize ($kind): tests ran in $((SECONDS - start))s, ctest exit status $status"
exit "$status"
