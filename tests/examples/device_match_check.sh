#!/bin/sh
# ctest's example_*_emulated_cuda (builds with EMBER_CUDA_EMULATION=ON): the trainer ($1) runs
# the same steps (the rest of the arguments) once on the CPU in float, then on Device::cuda(0),
# the emulated device, in each precision of $3 (comma-separated PRECISION:TOLERANCE pairs);
# writing under the scratch directory $2. Every step's loss on the device must equal the CPU's
# within the relative tolerance of the device run's precision. Prints "device match check
# passed" at the end; any failure stops it with a message.
set -eu
trainer=$1 work=$2 precisions=$3
shift 3
rm -rf "$work"
mkdir -p "$work"

# The CPU's run first (the reference), then one per precision on the device.
for run in cpu:float:0 $(echo "$precisions" | tr ',' ' ' | sed 's/[^ ]*/cuda:&/g'); do
  side=${run%%:*} rest=${run#*:}
  precision=${rest%%:*} tolerance=${rest#*:}
  name=$side-$precision
  status=0
  "$trainer" "$@" --log-every 1 --device "$side" --precision "$precision" --out "$work/$name" \
    >"$work/$name.txt" 2>&1 || status=$?
  if [ "$status" -ne 0 ]; then
    cat "$work/$name.txt"
    echo "the run on $side in $precision failed (status $status)"
    exit 1
  fi
  # "step" and "loss" of every step's line of metrics.jsonl (not the evaluations' "train_loss").
  sed -n 's/^{"step":\([0-9]*\),.*"loss":\([-0-9.eE+]*\),.*/\1 \2/p' \
    "$work/$name/metrics.jsonl" >"$work/$name.losses"
  if [ ! -s "$work/$name.losses" ]; then
    echo "no step losses in $work/$name/metrics.jsonl"
    exit 1
  fi
  [ "$side" = cpu ] && continue
  echo "$precision on the device, tolerance $tolerance:"
  paste -d ' ' "$work/cpu-float.losses" "$work/$name.losses" | awk -v tol="$tolerance" '
    NF != 4 || $1 != $3 { print "the runs logged different steps: " $0; bad = 1; exit }
    {
      d = $2 - $4; if (d < 0) d = -d
      m = $2 < 0 ? -$2 : $2
      printf "step %d: cpu %.7g, cuda %.7g, relative difference %.2e\n", $1, $2, $4, d / m
      if (!(d <= tol * m)) { print "  beyond the tolerance " tol; bad = 1 }
    }
    END { exit bad }'
done
echo "device match check passed"
