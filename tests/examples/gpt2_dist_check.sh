#!/bin/sh
# ctest's example_gpt2_train_dist: gpt2_train ($1) on 2 ranks under the MPI launcher ($2, with
# its process-count flag $3), in a scratch directory under $4, on the GPL's text:
#  - DistributedDataParallel and ZeRO-1 (--zero: each rank keeps AdamW's state for its share of
#    the parameters, the owners broadcast the new weights) end with the same checkpoint, byte for
#    byte (without clipping, whose global norm ZeRO sums over the ranks in another order);
#  - a ZeRO-1 run stopped after step 3 and resumed with --resume auto ends with the same
#    checkpoint as the uninterrupted run (the gathered optimizer state saved and re-sharded).
# Prints "dist check passed".
set -eu
trainer=$1 mpiexec=$2 np_flag=$3 work=$4
rm -rf "$work"
mkdir -p "$work"
# The token files first, by one process; the runs read them.
"$trainer" --text /usr/share/common-licenses/GPL-3 --data "$work/data" --steps 1 --batch-size 1 \
  --seq-len 8 --eval-batches 1 --sample-tokens 0 --out "$work/tokenize" >"$work/log.txt" 2>&1
args="--data $work/data --config tiny --seq-len 32 --batch-size 8 --accumulation 2 --steps 6 --eval-every 3 --eval-batches 2 --sample-tokens 0 --device cpu --precision float"
run2() { OMP_NUM_THREADS=1 "$mpiexec" "$np_flag" 2 "$trainer" $args "$@" >>"$work/log.txt" 2>&1; }
run2 --out "$work/ddp" --max-grad-norm 0
run2 --out "$work/zero" --max-grad-norm 0 --zero
cmp "$work/ddp/ckpt-last.safetensors" "$work/zero/ckpt-last.safetensors" ||
  { echo "ZeRO-1's checkpoint differs from DDP's"; exit 1; }
echo "2 ranks: ZeRO-1 and DDP end with the same checkpoint"
run2 --out "$work/whole" --zero
run2 --out "$work/split" --zero --stop-after 3
run2 --out "$work/split" --zero --resume auto
grep -q "resumed at step 3" "$work/log.txt"
cmp "$work/whole/ckpt-last.safetensors" "$work/split/ckpt-last.safetensors" ||
  { echo "the resumed ZeRO-1 run's checkpoint differs from the uninterrupted run's"; exit 1; }
echo "2 ranks, ZeRO-1 resumed after step 3: the same checkpoint as without the interruption"
echo "dist check passed"
