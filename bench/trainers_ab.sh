#!/usr/bin/env bash
# The three trainers' CPU speed in two builds, side by side: a change's before and after. Each
# round runs ResNet-18 (width 64, 48 px synthetic images, batch 32), BERT-mini (synthetic
# sequences of 128, batch 16) and GPT-2 mini (a text's tokens, batch 8 x 128) from build A and
# then from build B, float, on the CPU, and reads each run's "training throughput" (after the
# warm-up, evaluations and checkpoints left out). The ratio A/B is taken round by round, so a
# drift in the machine's speed during the call moves both sides; the median over the rounds is
# the figure to quote.
#
#   bench/trainers_ab.sh BUILD_A BUILD_B [LABEL_A LABEL_B]
#       writes bench/results/cpu-trainers-ab-<date>-<commit>.json
#
# Environment: ROUNDS (5), STEPS (16: the warm-up is the first 1-10 of them), TRAINERS (a subset of
# "resnet50_train bert_pretrain gpt2_train", the default), OMP_NUM_THREADS (default: all cores,
# for both).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
[ $# -ge 2 ] || { echo "usage: bench/trainers_ab.sh BUILD_A BUILD_B [LABEL_A LABEL_B]" >&2; exit 2; }
build_a=$1 build_b=$2 label_a=${3:-A} label_b=${4:-B}
rounds=${ROUNDS:-5} steps=${STEPS:-16}
trainers=${TRAINERS:-resnet50_train bert_pretrain gpt2_train}
for b in "$build_a" "$build_b"; do
  for t in $trainers; do
    [ -x "$b/examples/$t" ] || { echo "no $b/examples/$t: build it first" >&2; exit 2; }
  done
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# GPT-2's tokens: the GPL's text (a Debian base file), tokenized once by build A's trainer.
"$build_a/examples/gpt2_train" --text /usr/share/common-licenses/GPL-3 --val-fraction 0.3 \
  --config tiny --steps 1 --sample-tokens 0 --device cpu --out "$work/tokens" >/dev/null 2>&1

# run BUILD TRAINER OUT: the trainer's training throughput (its unit dropped).
run() {
  local build=$1 trainer=$2 out=$3 args=()
  case $trainer in
  resnet50_train) args=(--data synthetic --arch resnet18 --width 64 --image-size 48
                        --batch-size 32 --steps-per-epoch "$steps" --epochs 1) ;;
  bert_pretrain) args=(--corpus synthetic --config mini --seq-len 128 --batch-size 16
                       --steps "$steps" --eval-every "$steps" --eval-sequences 16) ;;
  gpt2_train) args=(--data "$work/tokens/data" --config mini --seq-len 128 --batch-size 8
                    --steps "$steps" --eval-every "$steps" --eval-batches 1 --sample-tokens 0) ;;
  esac
  "$build/examples/$trainer" "${args[@]}" --device cpu --precision float --out "$out" \
    >"$out.txt" 2>&1 || { echo "$trainer failed: see $out.txt" >&2; cat "$out.txt" >&2; exit 1; }
  sed -n 's/^training throughput: \([0-9.]*\) .*/\1/p' "$out.txt"
}

cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
echo "CPU: $cpu, $(nproc) cores; A = $label_a ($build_a), B = $label_b ($build_b)"
rows=()
for trainer in $trainers; do
  a_list=() b_list=() ratios=()
  for r in $(seq "$rounds"); do
    a=$(run "$build_a" "$trainer" "$work/a-$trainer-$r")
    b=$(run "$build_b" "$trainer" "$work/b-$trainer-$r")
    a_list+=("$a") b_list+=("$b") ratios+=("$(python3 -c "print($a / $b)")")
    echo "$trainer round $r: A $a, B $b, A/B $(python3 -c "print(f'{$a / $b:.3f}')")"
  done
  rows+=("$(python3 - "$trainer" "${a_list[*]}" "${b_list[*]}" "${ratios[*]}" <<'EOF'
import json, statistics, sys
name, a, b, r = sys.argv[1], *[list(map(float, s.split())) for s in sys.argv[2:]]
print(json.dumps({"trainer": name, "a_items_per_s": a, "b_items_per_s": b, "ratios_a_over_b": r,
                  "median_ratio": statistics.median(r)}))
EOF
)")
done

out="bench/results/cpu-trainers-ab-$(date -u +%Y%m%d-%H%M%S)-$(git rev-parse --short HEAD).json"
python3 - "$out" "$cpu" "$label_a" "$label_b" "$rounds" "$steps" "${rows[@]}" <<'EOF'
import json, os, sys
out, cpu, la, lb, rounds, steps, *rows = sys.argv[1:]
rows = [json.loads(r) for r in rows]
json.dump({"cpu": cpu, "cores": os.cpu_count(), "threads": os.environ.get("OMP_NUM_THREADS", "all"),
           "a": la, "b": lb, "rounds": int(rounds), "steps": int(steps), "precision": "float",
           "results": rows}, open(out, "w"), indent=1)
for r in rows:
    print(f"{r['trainer']:16s} median A/B {r['median_ratio']:.3f}")
print("wrote", out)
EOF
