#!/usr/bin/env bash
# GPT-2 training steps on the CPU, side by side: ember's gpt2_train against llm.c's
# train_gpt2.c (github.com/karpathy/llm.c, a checkout given as LLMC_DIR: built here, beside
# ember, never committed) and PyTorch (transformers' GPT2LMHeadModel, eager and torch.compile:
# bench/gpt2_torch_peer.py), GPT-2 124M with random weights, the same token file, B = 4, T = 64
# (llm.c's fixed batch), float, the same thread count.
#
#   LLMC_DIR=/path/to/llm.c bench/gpt2_llmc_cpu.sh   # writes bench/results/cpu-gpt2-llmc-<date>-<commit>.json
#
# llm.c's program trains on ./gpt2_124M.bin and dev/data/tinyshakespeare/*.bin: its weights are
# written here in its checkpoint format (random, N(0, 0.02) as its train_gpt2.py initialises),
# and its token files are ember's (the same format), so both read the same tokens. Its copy is
# compiled with its Makefile's flags (-Ofast -march=native -fopenmp) and two edits: STEPS steps
# instead of 40, and its sampling (every 20 steps) left out; the step it times is its own, and
# the figure is the mean of its steps after the first. ember's is its "training throughput"
# (tokens/s after warm-up) with AdamW at lr 1e-4, no evaluation within the run.
#
# Environment: LLMC_DIR (required), BUILD_DIR (default build/cpu, a CPU-only build made there if
# missing), DATA (a folder with train.bin and val.bin; default: tokenize the GPL's text),
# STEPS (8), OMP_NUM_THREADS (default: all cores, for both).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
[[ -n "${LLMC_DIR:-}" && -f "$LLMC_DIR/train_gpt2.c" ]] ||
  { echo "LLMC_DIR must name a checkout of karpathy/llm.c" >&2; exit 2; }
build=${BUILD_DIR:-$root/build/cpu}
steps=${STEPS:-8}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}
# The CPU program as scripts/run-gpt2.sh builds it without a GPU: g++ with -march=native. (An nvcc
# build's host code gets no -march: 157 tokens/s there against 214, docs/gpt2.md.)
if [[ ! -x "$build/examples/gpt2_train" ]]; then
  cmake -S "$root" -B "$build" -DEMBER_CUDA=OFF -DEMBER_BUILD_TESTS=OFF -DEMBER_BUILD_BENCHMARKS=OFF \
    -DEMBER_BUILD_EXAMPLES=ON -DEMBER_BUILD_KERNELS=OFF -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" --target gpt2_train -j"$(nproc)"
fi
commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- include examples bench || echo -dirty)
out=bench/results/cpu-gpt2-llmc-$(date -u +%Y%m%d-%H%M%S)-$commit.json
work=$(mktemp -d "${TMPDIR:-/tmp}/ember-gpt2-llmc.XXXXXX")

# The data: a folder of token files (ember's, which llm.c reads too).
data=${DATA:-}
if [[ -z "$data" ]]; then
  "$build/examples/gpt2_train" --text /usr/share/common-licenses/GPL-3 --steps 1 --batch-size 1 \
    --seq-len 8 --eval-batches 1 --sample-tokens 0 --out "$work/tokenize" >/dev/null
  data=$work/tokenize/data
fi

# llm.c, built beside ember.
mkdir -p "$work/llmc/dev/data/tinyshakespeare"
cp -r "$LLMC_DIR/train_gpt2.c" "$LLMC_DIR/llmc" "$work/llmc/"
sed -i 's/for (int step = 0; step <= 40; step++) {/for (int step = 0; step <= BENCH_STEPS; step++) {/;
        s/if (step > 0 \&\& step % 20 == 0) {/if (0) {/' "$work/llmc/train_gpt2.c"
grep -q BENCH_STEPS "$work/llmc/train_gpt2.c" || { echo "llm.c's loop changed: edit this script" >&2; exit 1; }
gcc -Ofast -march=native -fopenmp -DOMP -DBENCH_STEPS="$steps" -Wno-unused-result \
  "$work/llmc/train_gpt2.c" -lm -o "$work/llmc/train_gpt2"
cp "$data/train.bin" "$work/llmc/dev/data/tinyshakespeare/tiny_shakespeare_train.bin"
cp "$data/val.bin" "$work/llmc/dev/data/tinyshakespeare/tiny_shakespeare_val.bin"
python3 - "$work/llmc/gpt2_124M.bin" <<'PY'
import sys
import numpy as np
V, Vp, maxT, L, H, C = 50257, 50304, 1024, 12, 12, 768
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
(cd "$work/llmc" && ./train_gpt2) >"$work/llmc.txt" 2>&1
ms=$(sed -n 's/^step [0-9]*: train loss [0-9.]* (took \([0-9.]*\) ms)$/\1/p' "$work/llmc.txt" | tail -n +2)
llmc_tps=$(echo "$ms" | awk '{s += $1; n++} END {printf "%.1f", n ? 256 * 1000 * n / s : 0}')

"$build/examples/gpt2_train" --data "$data" --config 124M --batch-size 4 --seq-len 64 \
  --steps "$((steps + 2))" --warmup 0 --lr 1e-4 --eval-every 1000 --eval-batches 1 \
  --sample-tokens 0 --device cpu --precision float --out "$work/ember" >"$work/ember.txt" 2>&1
ember_tps=$(sed -n 's/^training throughput: \([0-9.]*\) tokens\/s.*/\1/p' "$work/ember.txt")

# PyTorch: transformers' GPT2LMHeadModel on the same tokens, eager and under torch.compile.
for mode in eager compile; do
  flags=(--data "$data/train.bin" --config 124M -B 4 -T 64 --steps "$steps" --warmup 2)
  [[ $mode == compile ]] && flags+=(--compile)
  TORCHINDUCTOR_CACHE_DIR="$work/inductor" python3 bench/gpt2_torch_peer.py "${flags[@]}" \
    2>/dev/null | tail -1 >"$work/torch-$mode.json"
done

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
python3 - "$out" "$cpu" "$OMP_NUM_THREADS" "$commit" "$steps" "$llmc_tps" "$ember_tps" \
  "$work/torch-eager.json" "$work/torch-compile.json" <<'PY'
import json, sys
out, cpu, threads, commit, steps, llmc, ember, eager, compiled = sys.argv[1:]
def tps(path):
    try:
        return json.load(open(path))["tokens_per_s"]
    except (OSError, ValueError, KeyError):
        return None
row = {"benchmark": "gpt2 124M training step, B=4 T=64, float", "cpu": cpu,
       "threads": int(threads), "commit": commit, "steps": int(steps),
       "tokens_per_s": {"ember": float(ember), "llm.c": float(llmc),
                        "pytorch_eager": tps(eager), "torch_compile": tps(compiled)}}
row["ember_over"] = {k: float(ember) / v for k, v in row["tokens_per_s"].items()
                     if k != "ember" and v}
json.dump(row, open(out, "w"), indent=1)
print(json.dumps(row, indent=1))
PY
echo "wrote $out (work files in $work)"
