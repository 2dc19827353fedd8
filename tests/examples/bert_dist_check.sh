#!/bin/sh
# ctest's example_bert_pretrain_dist: bert_pretrain ($1) on 2 ranks under the MPI launcher ($2,
# with its process-count flag $3), in a scratch directory under $4: a short run with gradient
# accumulation trains and evaluates, and the same run stopped after step 3 and resumed with
# --resume auto ends with the same checkpoint, byte for byte. Prints "dist check passed".
set -eu
trainer=$1 mpiexec=$2 np_flag=$3 work=$4
rm -rf "$work"
mkdir -p "$work"
args="--corpus synthetic --config tiny --seq-len 32 --max-predictions 5 --batch-size 8 --accumulation 2 --steps 6 --eval-every 3 --eval-sequences 16 --device cpu --precision float"
run2() { OMP_NUM_THREADS=1 "$mpiexec" "$np_flag" 2 "$trainer" $args "$@" >>"$work/log.txt" 2>&1; }
run2 --out "$work/whole"
grep -q "^per rank: [0-9.]* sequences/s (2 ranks)" "$work/log.txt"
run2 --out "$work/split" --stop-after 3
run2 --out "$work/split" --resume auto
grep -q "resumed from .* at step 3" "$work/log.txt"
cmp "$work/whole/ckpt-last.safetensors" "$work/split/ckpt-last.safetensors" ||
  { echo "the resumed run's checkpoint differs from the uninterrupted run's"; exit 1; }
echo "2 ranks, resumed after step 3: the same checkpoint as without the interruption"
echo "dist check passed"
