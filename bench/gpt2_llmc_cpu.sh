#!/usr/bin/env bash
# GPT-2 training steps on the CPU, side by side: ember's gpt2_train against llm.c's
# train_gpt2.c (github.com/karpathy/llm.c, a checkout given as LLMC_DIR: built here, beside
# ember, never committed) and PyTorch (transformers' GPT2LMHeadModel, eager and torch.compile:
# bench/gpt2_torch_peer.py), random weights, the same token file, the same thread count, no
# dropout. The cases (CASES, each config:B:T): GPT-2 124M at B = 4 with T = 64 (llm.c's fixed
# batch) and T = 256, and the small `mini` config (4 layers of 256) at B = 16, T = 64; each in
# float (all four programs) and bf16 (ember's bf16 against PyTorch's bf16 autocast; llm.c's
# CPU program is float only).
#
#   LLMC_DIR=/path/to/llm.c bench/gpt2_llmc_cpu.sh   # writes bench/results/cpu-gpt2-llmc-<date>-<commit>.json
#
# llm.c's program trains on ./gpt2_124M.bin and dev/data/tinyshakespeare/*.bin: its weights are
# written here in its checkpoint format (random, N(0, 0.02) as its train_gpt2.py initialises,
# with the case's sizes), and its token files are ember's (the same format), so both read the
# same tokens. Its copy is compiled with its Makefile's flags (-Ofast -march=native -fopenmp) and
# these edits: the case's B and T, STEPS steps instead of 40, its validation and sampling left
# out; the step it times is its own, and the figure is the mean of its steps after the first.
# ember's is its "training throughput" (tokens/s after warm-up) with AdamW at lr 1e-4, no
# evaluation within the run; PyTorch's the mean of its steps after two.
#
# Environment: LLMC_DIR (required), BUILD_DIR (default build/cpu, a CPU-only build made there if
# missing), DATA (a folder with train.bin and val.bin; default: tokenize the King James Bible),
# STEPS (6), CASES (default "124M:4:64 124M:4:256 mini:16:64"), PRECISIONS ("float bf16"),
# OMP_NUM_THREADS (default: all cores, for every program).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
[[ -n "${LLMC_DIR:-}" && -f "$LLMC_DIR/train_gpt2.c" ]] ||
  { echo "LLMC_DIR must name a checkout of karpathy/llm.c" >&2; exit 2; }
build=${BUILD_DIR:-$root/build/cpu}
steps=${STEPS:-6}
cases=${CASES:-124M:4:64 124M:4:256 mini:16:64}
precisions=${PRECISIONS:-float bf16}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}
# The CPU program as scripts/run-gpt2.sh builds it without a GPU: g++ with -march=native.
if [[ ! -x "$build/examples/gpt2_train" ]]; then
  cmake -S "$root" -B "$build" -DEMBER_CUDA=OFF -DEMBER_BUILD_TESTS=OFF -DEMBER_BUILD_BENCHMARKS=OFF \
    -DEMBER_BUILD_EXAMPLES=ON -DEMBER_BUILD_KERNELS=OFF -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" --target gpt2_train -j"$(nproc)"
fi
commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- include examples bench || echo -dirty)
out=bench/results/cpu-gpt2-llmc-$(date -u +%Y%m%d-%H%M%S)-$commit.json
work=$(mktemp -d "${TMPDIR:-/tmp}/ember-gpt2-llmc.XXXXXX")

# The data: a folder of token files (ember's, which llm.c reads too): by default the King James
# Bible as scripts/run-gpt2.sh writes it (its validation split holds a batch of 16 x 256).
data=${DATA:-}
if [[ -z "$data" ]]; then
  source "$root/scripts/common.sh"
  ember_write_kjv "$root/runs/gpt2/kjv.txt"
  "$build/examples/gpt2_train" --text "$root/runs/gpt2/kjv.txt" --steps 1 --batch-size 1 \
    --seq-len 8 --eval-batches 1 --sample-tokens 0 --out "$work/tokenize" >/dev/null
  data=$work/tokenize/data
fi

# llm.c's sizes of a config: layers, heads, channels, context.
llmc_sizes() {
  case $1 in
    124M) echo 12 12 768 1024 ;;
    mini) echo 4 4 256 256 ;;
    *) echo "no llm.c sizes for config $1" >&2; exit 2 ;;
  esac
}

# One case with llm.c: its source edited for the batch, built, its weights written; prints its
# tokens/s.
llmc_case() {
  local config=$1 B=$2 T=$3 dir=$work/llmc-$1-$2-$3
  mkdir -p "$dir/dev/data/tinyshakespeare"
  cp -r "$LLMC_DIR/train_gpt2.c" "$LLMC_DIR/llmc" "$dir/"
  sed -i "s/for (int step = 0; step <= 40; step++) {/for (int step = 0; step <= BENCH_STEPS; step++) {/;
          s/if (step > 0 \&\& step % 20 == 0) {/if (0) {/; s/if (step % 10 == 0) {/if (0) {/;
          s/int B = 4;/int B = $B;/; s/int T = 64;/int T = $T;/" "$dir/train_gpt2.c"
  [[ $(grep -c "BENCH_STEPS\|int B = $B;\|int T = $T;" "$dir/train_gpt2.c") == 3 ]] ||
    { echo "llm.c's main changed: edit this script" >&2; exit 1; }
  gcc -Ofast -march=native -fopenmp -DOMP -DBENCH_STEPS="$steps" -Wno-unused-result \
    "$dir/train_gpt2.c" -lm -o "$dir/train_gpt2"
  cp "$data/train.bin" "$dir/dev/data/tinyshakespeare/tiny_shakespeare_train.bin"
  cp "$data/val.bin" "$dir/dev/data/tinyshakespeare/tiny_shakespeare_val.bin"
  python3 - "$dir/gpt2_124M.bin" $(llmc_sizes "$config") <<'PY'
import sys
import numpy as np
L, H, C, maxT = map(int, sys.argv[2:])
V, Vp = 50257, 50304
header = np.zeros(256, dtype=np.int32)
header[:8] = [20240326, 3, maxT, V, L, H, C, Vp]  # magic, version 3 (float32), the sizes
shapes = [(Vp, C), (maxT, C), (L, C), (L, C), (L, 3 * C, C), (L, 3 * C), (L, C, C), (L, C),
          (L, C), (L, C), (L, 4 * C, C), (L, 4 * C), (L, C, 4 * C), (L, C), (C,), (C,)]
ones, zeros = {2, 8, 14}, {3, 5, 7, 9, 11, 13, 15}  # LayerNorm weights; biases
rng = np.random.default_rng(0)
with open(sys.argv[1], "wb") as f:
    f.write(header.tobytes())
    for i, s in enumerate(shapes):
        a = np.ones(s) if i in ones else np.zeros(s) if i in zeros else rng.standard_normal(s) * 0.02
        f.write(a.astype(np.float32).tobytes())
PY
  (cd "$dir" && ./train_gpt2) >"$dir.txt" 2>&1
  sed -n 's/^step [0-9]*: train loss [0-9.]* (took \([0-9.]*\) ms)$/\1/p' "$dir.txt" | tail -n +2 |
    awk -v n="$((B * T))" '{s += $1; k++} END {printf "%.1f", k ? n * 1000 * k / s : 0}'
}

ember_case() {
  local config=$1 B=$2 T=$3 precision=$4 out=$work/ember-$1-$2-$3-$4
  "$build/examples/gpt2_train" --data "$data" --config "$config" --batch-size "$B" --seq-len "$T" \
    --steps "$((steps + 2))" --warmup 0 --lr 1e-4 --dropout 0 --eval-every 1000 --eval-batches 1 \
    --sample-tokens 0 --device cpu --precision "$precision" --out "$out" >"$out.txt" 2>&1
  sed -n 's/^training throughput: \([0-9.]*\) tokens\/s.*/\1/p' "$out.txt"
}

torch_case() {
  local config=$1 B=$2 T=$3 precision=$4 mode=$5
  local flags=(--data "$data/train.bin" --config "$config" -B "$B" -T "$T" --steps "$steps" --warmup 2)
  [[ $mode == compile ]] && flags+=(--compile)
  [[ $precision == bf16 ]] && flags+=(--bf16)
  TORCHINDUCTOR_CACHE_DIR="$work/inductor" python3 bench/gpt2_torch_peer.py "${flags[@]}" \
    2>/dev/null | tail -1 | python3 -c 'import json, sys; print(json.load(sys.stdin)["tokens_per_s"])' ||
    echo null
}

rows=$work/rows.jsonl
for case in $cases; do
  IFS=: read -r config B T <<<"$case"
  for precision in $precisions; do
    llmc=null
    [[ $precision == float ]] && llmc=$(llmc_case "$config" "$B" "$T")
    ember=$(ember_case "$config" "$B" "$T" "$precision")
    eager=$(torch_case "$config" "$B" "$T" "$precision" eager)
    compiled=$(torch_case "$config" "$B" "$T" "$precision" compile)
    echo "{\"config\": \"$config\", \"B\": $B, \"T\": $T, \"precision\": \"$precision\"," \
      "\"tokens_per_s\": {\"ember\": ${ember:-null}, \"llm.c\": $llmc, \"pytorch_eager\": $eager," \
      "\"torch_compile\": $compiled}}" | tee -a "$rows"
  done
done

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
python3 - "$out" "$cpu" "$OMP_NUM_THREADS" "$commit" "$steps" "$rows" <<'PY'
import json, sys
out, cpu, threads, commit, steps, rows = sys.argv[1:]
cases = [json.loads(line) for line in open(rows)]
for c in cases:
    t = c["tokens_per_s"]
    c["ember_over"] = {k: t["ember"] / v for k, v in t.items() if k != "ember" and v and t["ember"]}
result = {"benchmark": "gpt2 training step, tokens/s", "cpu": cpu, "threads": int(threads),
          "commit": commit, "steps": int(steps), "cases": cases}
json.dump(result, open(out, "w"), indent=1)
print(json.dumps(result, indent=1))
PY
echo "wrote $out (work files in $work)"
