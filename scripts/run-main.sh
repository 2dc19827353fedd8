#!/usr/bin/env bash
# The main job: installs what it needs, builds the ResNet trainer (examples/resnet50) and trains
# on the real Fashion-MNIST (Debian's dataset-fashion-mnist): on the GPU when there is one (bf16,
# channels-last ResNet-18), else on the CPU (a ResNet-18 of width 16, two epochs, about two
# minutes on two cores). It prints the accuracy per epoch, the training throughput and the time
# to 90% test accuracy, and writes metrics, MLPerf-style logs, checkpoints and curves.png to
# runs/resnet.
#
#   scripts/run-main.sh                              # the defaults above
#   scripts/run-main.sh --epochs 5 --width 32        # arguments go to the trainer (see --help)
#   scripts/run-main.sh --data synthetic --batch-size 256   # raw throughput at 224x224
#
# Environment: EMBER_BUILD_DIR (default build/main), EMBER_CUDA (AUTO|ON|OFF, default AUTO),
# EMBER_CMAKE_ARGS (more arguments for cmake).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

build="${EMBER_BUILD_DIR:-$EMBER_ROOT/build/main}"

ember_apt_install "${EMBER_MAIN_PACKAGES[@]}"
ember_build_example "$build" resnet50_train "ResNet trainer"
ember_log "training"
cd "$EMBER_ROOT"
exec "$build/examples/resnet50_train" --data fashion-mnist --target-accuracy 0.9 "$@"
