#!/bin/sh
# ctest's example_resnet50_dist: the ResNet trainer ($1) data-parallel under the MPI launcher ($2,
# with its process-count flag $3), in a scratch directory under $4:
#  1. Fashion-MNIST, one epoch, width 8, global batch 128: 2 ranks reach a top-1 accuracy within
#     one point of one process's (batch norm sees 64 images per rank instead of 128);
#  2. the same with --sync-bn: batch norm on the global batch's statistics, so the 2-rank run is
#     one process's up to rounding: the losses of steps 1 and 2 (before and after the first
#     update) within 2e-5 relative of one process's, where without it they differ by ~1e-3;
#  3. synthetic images, 3 epochs on 2 ranks, against the same run stopped after epoch 1 and
#     resumed with --resume auto: the final checkpoints are identical, byte for byte.
# Prints "dist check passed" at the end; any failure stops it with a message.
set -eu
trainer=$1 mpiexec=$2 np_flag=$3 work=$4
rm -rf "$work"
mkdir -p "$work"
top1() { sed -n 's/^best top-1 accuracy: \([0-9.]*\)%$/\1/p' "$1"; }
# The training loss metrics.jsonl logged at step $2 of run $1.
loss_at() { sed -n "s/^{\"step\":$2,\"epoch\":1,\"loss\":\([-0-9.e]*\),.*/\1/p" "$work/$1/metrics.jsonl"; }
# Whether |a - b| <= tol |b|.
close() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t * b) }'; }

common="--data fashion-mnist --epochs 1 --width 8 --batch-size 128 --device cpu --precision float --log-every 1"
OMP_NUM_THREADS=2 "$trainer" $common --out "$work/one" >"$work/one.txt" 2>&1
for run in two sync; do
  flags=$([ $run = sync ] && echo --sync-bn || true)
  OMP_NUM_THREADS=1 "$mpiexec" "$np_flag" 2 "$trainer" $common $flags --out "$work/$run" \
    >"$work/$run.txt" 2>&1
  grep -q "data-parallel: 2 ranks, 64 images per rank per step" "$work/$run.txt"
done
grep -q "sync-bn: 20 batch-norm layers" "$work/sync.txt"
one=$(top1 "$work/one.txt") two=$(top1 "$work/two.txt") sync=$(top1 "$work/sync.txt")
echo "fashion-mnist, one epoch: one process $one%, two ranks $two%, two ranks with --sync-bn $sync%"
for acc in "$two" "$sync"; do
  awk -v a="$one" -v b="$acc" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 80 && d <= 1.0) }' ||
    { echo "two ranks ($acc%) are not within a point of one process"; exit 1; }
done
for step in 1 2; do
  echo "step $step's loss: one process $(loss_at one $step), two ranks $(loss_at two $step)," \
    "with --sync-bn $(loss_at sync $step)"
  close "$(loss_at sync $step)" "$(loss_at one $step)" 2e-5 ||
    { echo "with --sync-bn, step $step's loss is not one process's"; exit 1; }
  ! close "$(loss_at two $step)" "$(loss_at one $step)" 2e-5 ||
    { echo "without --sync-bn, step $step's loss is one process's: the check cannot tell"; exit 1; }
done

synthetic="--data synthetic --image-size 32 --batch-size 8 --steps-per-epoch 3 --epochs 3 --arch resnet18 --width 8 --device cpu --precision float"
run2() { OMP_NUM_THREADS=1 "$mpiexec" "$np_flag" 2 "$trainer" $synthetic "$@" >>"$work/resume.txt" 2>&1; }
run2 --out "$work/whole"
run2 --out "$work/split" --stop-after 1
run2 --out "$work/split" --resume auto
grep -q "resumed from .* at epoch 1" "$work/resume.txt"
cmp "$work/whole/ckpt-last.safetensors" "$work/split/ckpt-last.safetensors" ||
  { echo "the resumed run's checkpoint differs from the uninterrupted run's"; exit 1; }
echo "2 ranks, resumed after epoch 1: the same checkpoint as without the interruption"
echo "dist check passed"
