#!/bin/sh
# ctest's example_resnet50_kill and example_bert_pretrain_kill: the trainer ($1, writing under
# the scratch directory $2, with the rest of the arguments) is killed with SIGKILL again and
# again, mid-step and mid-checkpoint-write, each time resumed with --resume auto, until a run
# ends; its last checkpoint must then equal an uninterrupted run's byte for byte. The kills are
# EMBER_FAULT_KILL=<site>:<n> (include/ember/core/fault_injection.hpp): the process kills itself
# the n-th time it passes that point, so no timing is involved. The points are drawn at random:
# seven kills, each mid-step (n from 1 to 2: the trainers' tests save every two steps or
# more) or mid-write (n from 1 to 3: a checkpoint is three writes or more), so each killed run
# dies before its first checkpoint is whole; drawn from KILL_SEED (default: the clock), which
# the check prints so that a failure can be run again. A checkpoint left half written
# would fail the next run's resume (it reads and checks the whole file), and what the killed
# saves left (their temporary files) must be gone after the last run. Prints "kill check
# passed" at the end; any failure stops it with a message.
set -eu
trainer=$1 work=$2
shift 2
rm -rf "$work"
mkdir -p "$work"

"$trainer" "$@" --out "$work/whole" >"$work/whole.txt" 2>&1

seed=${KILL_SEED:-$(date +%s)}
echo "kill points drawn from KILL_SEED=$seed"
state=$((seed % 2147483648))
draw() {  # the next number of a linear congruential sequence, in [0, $1)
  state=$(((state * 1103515245 + 12345) % 2147483648))
  drawn=$((state / 65536 % $1))
}
faults=""
for _ in 1 2 3 4 5 6 7; do
  draw 2
  if [ "$drawn" -eq 0 ]; then
    draw 2
    faults="$faults train-step:$((drawn + 1))"
  else
    draw 3
    faults="$faults file-write:$((drawn + 1))"
  fi
done

kills=0
for fault in $faults; do
  status=0
  EMBER_FAULT_KILL=$fault "$trainer" "$@" --out "$work/killed" --resume auto \
    >>"$work/killed.txt" 2>&1 || status=$?
  case $status in
    137) kills=$((kills + 1)); echo "killed at $fault" ;;
    0) echo "finished before $fault"; break ;;
    *) echo "the run with EMBER_FAULT_KILL=$fault failed (status $status):"
       tail -n 20 "$work/killed.txt"; exit 1 ;;
  esac
done
[ "$kills" -ge 3 ] || { echo "only $kills kills happened: the fault points were not reached"; exit 1; }
"$trainer" "$@" --out "$work/killed" --resume auto >>"$work/killed.txt" 2>&1 ||
  { echo "the last resumed run failed:"; tail -n 20 "$work/killed.txt"; exit 1; }
if ls "$work/killed" | grep -q '\.tmp\.'; then
  echo "temporary files of killed saves are left: $(ls "$work/killed")"; exit 1
fi
cmp "$work/whole/ckpt-last.safetensors" "$work/killed/ckpt-last.safetensors" ||
  { echo "after $kills kills the final checkpoint differs from the uninterrupted run's"; exit 1; }
echo "$kills kills (mid-step and mid-checkpoint-write), each resumed: the final checkpoint equals the uninterrupted run's"
echo "kill check passed"
