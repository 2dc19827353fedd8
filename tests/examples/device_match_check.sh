#!/bin/sh
# ctest's example_*_emulated_cuda (builds with EMBER_CUDA_EMULATION=ON): the trainer ($1) runs
# the same steps (the rest of the arguments) on the CPU in float and on Device::cuda(0), the
# emulated device, in the precision $3; writing under the scratch directory $2. Every step's
# loss on the device must equal the CPU's within the relative tolerance $4 (from the device
# run's precision). Prints "device match check passed" at the end; any failure stops it with a
# message.
set -eu
trainer=$1 work=$2 precision=$3 tolerance=$4
shift 4
rm -rf "$work"
mkdir -p "$work"

for side in cpu cuda; do
  if [ "$side" = cpu ]; then p=float; else p=$precision; fi
  status=0
  "$trainer" "$@" --log-every 1 --device "$side" --precision "$p" --out "$work/$side" \
    >"$work/$side.txt" 2>&1 || status=$?
  if [ "$status" -ne 0 ]; then
    cat "$work/$side.txt"
    echo "the run on $side failed (status $status)"
    exit 1
  fi
done

# "step" and "loss" of every step's line of metrics.jsonl (not the evaluations' "train_loss").
losses() {
  sed -n 's/^{"step":\([0-9]*\),.*"loss":\([-0-9.eE+]*\),.*/\1 \2/p' "$work/$1/metrics.jsonl"
}
losses cpu >"$work/cpu.losses"
losses cuda >"$work/cuda.losses"
if [ ! -s "$work/cpu.losses" ]; then
  echo "no step losses in $work/cpu/metrics.jsonl"
  exit 1
fi
paste -d ' ' "$work/cpu.losses" "$work/cuda.losses" | awk -v tol="$tolerance" '
  NF != 4 || $1 != $3 { print "the runs logged different steps: " $0; bad = 1; exit }
  {
    d = $2 - $4; if (d < 0) d = -d
    m = $2 < 0 ? -$2 : $2
    printf "step %d: cpu %.7g, cuda %.7g, relative difference %.2e\n", $1, $2, $4, d / m
    if (!(d <= tol * m)) { print "  beyond the tolerance " tol; bad = 1 }
  }
  END { exit bad }'
echo "device match check passed"
