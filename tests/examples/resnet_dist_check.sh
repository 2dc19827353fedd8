#!/bin/sh
# ctest's example_resnet50_dist: the ResNet trainer ($1) data-parallel under the MPI launcher ($2,
# with its process-count flag $3), in a scratch directory under $4:
#  1. Fashion-MNIST, one epoch, width 8, global batch 128: 2 ranks reach a top-1 accuracy within
#     one point of one process's (batch norm sees 64 images per rank instead of 128);
#  2. synthetic images, 3 epochs on 2 ranks, against the same run stopped after epoch 1 and
#     resumed with --resume auto: the final checkpoints are identical, byte for byte.
# Prints "dist check passed" at the end; any failure stops it with a message.
set -eu
trainer=$1 mpiexec=$2 np_flag=$3 work=$4
rm -rf "$work"
mkdir -p "$work"
top1() { sed -n 's/^best top-1 accuracy: \([0-9.]*\)%$/\1/p' "$1"; }

common="--data fashion-mnist --epochs 1 --width 8 --batch-size 128 --device cpu --precision float"
OMP_NUM_THREADS=2 "$trainer" $common --out "$work/one" >"$work/one.txt" 2>&1
OMP_NUM_THREADS=1 "$mpiexec" "$np_flag" 2 "$trainer" $common --out "$work/two" >"$work/two.txt" 2>&1
one=$(top1 "$work/one.txt") two=$(top1 "$work/two.txt")
grep -q "data-parallel: 2 ranks, 64 images per rank per step" "$work/two.txt"
echo "fashion-mnist, one epoch: one process $one%, two ranks $two%"
awk -v a="$one" -v b="$two" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 80 && d <= 1.0) }' ||
  { echo "two ranks are not within a point of one process"; exit 1; }

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
