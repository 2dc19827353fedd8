#!/usr/bin/env bash
# Builds and runs every test: installs what it needs, configures with EMBER_CUDA=AUTO (CUDA
# sources are compiled for sm_90 when the toolkit is at /usr/local/cuda; CUDA tests skip when
# no GPU is present), builds everything, runs ctest and prints its summary line. Then the CUDA
# tests again on the emulated CUDA device (docs/emulated-cuda.md), so that without a GPU they run
# rather than skip: a second build directory with EMBER_CUDA_EMULATION=ON, where target
# ember_cuda_tests builds the CUDA tests and the trainers, then `ctest -L cuda`.
#
# Environment: EMBER_BUILD_DIR (default build/test), EMBER_CUDA (AUTO|ON|OFF, default AUTO),
# EMBER_CMAKE_ARGS (more arguments for cmake), CTEST_ARGS (more arguments for ctest, e.g. "-L cpu"),
# EMBER_WERROR (ON|OFF, default ON: a warning in ember's own code fails the build, as in CI),
# EMBER_EMULATED_CUDA (1 by default; 0 leaves out the emulated run), EMBER_EMULATED_BUILD_DIR
# (default build/emulated-cuda).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

build="${EMBER_BUILD_DIR:-$EMBER_ROOT/build/test}"

ember_apt_install "${EMBER_TEST_PACKAGES[@]}"
ember_pip_install --no-deps "${EMBER_TEST_PIP_PACKAGES[@]}" "${EMBER_MKL_PIP_PACKAGES[@]}"
ember_configure "$build" -DEMBER_BUILD_TESTS=ON -DEMBER_BUILD_BENCHMARKS=ON -DEMBER_BUILD_EXAMPLES=ON \
  -DEMBER_WERROR="${EMBER_WERROR:-ON}"

ember_log "building everything with $(ember_jobs) jobs"
start=$SECONDS
cmake --build "$build" -j"$(ember_jobs)"
build_seconds=$((SECONDS - start))

ember_log "running ctest"
read -r -a ctest_args <<<"${CTEST_ARGS:-}"  # none when unset
log="$build/ctest-output.log"
start=$SECONDS
set +e
ctest --test-dir "$build" --output-on-failure "${ctest_args[@]}" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
test_seconds=$((SECONDS - start))

summary="$(grep -E '^[0-9]+% tests passed' "$log" | tail -n 1 || true)"
ember_log "build ${build_seconds}s, tests ${test_seconds}s"
ember_log "ctest: ${summary:-no summary line (ctest exit status $status)}"

if [ "${EMBER_EMULATED_CUDA:-1}" != 0 ]; then
  emu="${EMBER_EMULATED_BUILD_DIR:-$EMBER_ROOT/build/emulated-cuda}"
  ember_log "the CUDA tests on the emulated device ($emu)"
  EMBER_CUDA=OFF ember_configure "$emu" -DEMBER_CUDA_EMULATION=ON -DEMBER_BUILD_TESTS=ON \
    -DEMBER_BUILD_BENCHMARKS=OFF -DEMBER_BUILD_EXAMPLES=ON -DEMBER_WERROR="${EMBER_WERROR:-ON}"
  start=$SECONDS
  cmake --build "$emu" -j"$(ember_jobs)" --target ember_cuda_tests
  emu_build_seconds=$((SECONDS - start))
  emu_log="$emu/ctest-output.log"
  start=$SECONDS
  set +e
  ctest --test-dir "$emu" --output-on-failure -L cuda 2>&1 | tee "$emu_log"
  emu_status=${PIPESTATUS[0]}
  set -e
  emu_summary="$(grep -E '^[0-9]+% tests passed' "$emu_log" | tail -n 1 || true)"
  ember_log "emulated CUDA: build ${emu_build_seconds}s, tests $((SECONDS - start))s"
  ember_log "ctest -L cuda (emulated): ${emu_summary:-no summary line (exit status $emu_status)}"
  if [ "$status" = 0 ]; then status=$emu_status; fi
fi
exit "$status"
