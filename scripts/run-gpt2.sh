#!/usr/bin/env bash
# The third example: installs what it needs, builds the GPT-2 trainer (examples/gpt2) and trains a
# tiny GPT-2 on the King James Bible (Debian's bible-kjv: `bible` prints its 4.4 MB, verse by
# verse; the references are cut, the verses kept a line each), tokenized with GPT-2's own BPE
# (its vocabulary from PyPI's openai-whisper) into llm.c's token files. It prints the validation
# loss against the unigram entropy, the throughput and a sample, and writes metrics, checkpoints
# and curves.png to runs/gpt2.
#
#   scripts/run-gpt2.sh                               # tiny GPT-2, 800 steps on the CPU
#   scripts/run-gpt2.sh --config mini --steps 1000    # arguments go to the trainer (see --help)
#
# Environment: EMBER_BUILD_DIR (default build/main), EMBER_CUDA (AUTO|ON|OFF, default AUTO),
# EMBER_CMAKE_ARGS (more arguments for cmake).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

build="${EMBER_BUILD_DIR:-$EMBER_ROOT/build/main}"

ember_apt_install "${EMBER_MAIN_PACKAGES[@]}" bible-kjv
ember_pip_install --no-deps openai-whisper "${EMBER_MKL_PIP_PACKAGES[@]}"
ember_build_example "$build" gpt2_train "GPT-2 trainer"

text="$EMBER_ROOT/runs/gpt2/kjv.txt"
ember_write_kjv "$text"
ember_log "training"
cd "$EMBER_ROOT"
exec "$build/examples/gpt2_train" --text "$text" "$@"
