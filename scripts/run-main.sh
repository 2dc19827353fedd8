#!/usr/bin/env bash
# The main job: installs what it needs, builds examples/quickstart and runs it. The quickstart
# evaluates fused expressions on the GPU when one is present (CUDA build), else on the CPU, and
# prints the results, the kernels launched and the bandwidth reached.
#
#   scripts/run-main.sh                      # 64 Mi elements per tensor
#   scripts/run-main.sh --elements 1000000   # arguments go to the quickstart (see --help)
#
# Environment: EMBER_BUILD_DIR (default build/main), EMBER_CUDA (AUTO|ON|OFF, default AUTO),
# EMBER_CMAKE_ARGS (more arguments for cmake).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

build="${EMBER_BUILD_DIR:-$EMBER_ROOT/build/main}"

ember_apt_install "${EMBER_MAIN_PACKAGES[@]}"
ember_configure "$build" -DEMBER_BUILD_TESTS=OFF -DEMBER_BUILD_BENCHMARKS=OFF \
  -DEMBER_BUILD_EXAMPLES=ON
ember_log "building quickstart"
cmake --build "$build" --target quickstart -j"$(ember_jobs)"
ember_log "running quickstart"
exec "$build/examples/quickstart" "$@"
