#!/usr/bin/env bash
# scaled_dot_product_attention on the CPU, side by side with PyTorch's (its flash backend): the
# forward and forward + backward at B = 4, H = 8, d = 64, T = 512 ... 4096, causal and not, float
# and bf16. bench/attention/attention.cpp is built as a user's program (add_subdirectory, Release,
# from an empty folder) and run with no environment set; bench/attention/attention_torch.py with
# PyTorch's default thread count (this machine's cores, as ember's OpenMP). The two alternate
# ROUNDS times; each figure is a run's median, the file keeps the median over runs and every run.
# Once, before the rounds, ember's score-matrix kernel (the CPU's path before the flash kernel) up
# to SCORES_MAX_LENGTH keys, for the before and after.
#
#   bench/attention_cpu.sh            # writes bench/results/cpu-attention-<date>-<commit>.json
#   ROUNDS=1 MAX_LENGTH=1024 MIN_SECONDS=0.3 bench/attention_cpu.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
rounds=${ROUNDS:-3}
max_length=${MAX_LENGTH:-4096}
min_seconds=${MIN_SECONDS:-1}
scores_max_length=${SCORES_MAX_LENGTH:-1024}
work=$(mktemp -d "${TMPDIR:-/tmp}/ember-attention.XXXXXX")
commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- include cmake CMakeLists.txt bench/attention || echo -dirty)
out=bench/results/cpu-attention-$(date -u +%Y%m%d-%H%M%S)-$commit.json

echo "==> building bench/attention in $work/build"
cmake -S bench/attention -B "$work/build" -DCMAKE_BUILD_TYPE=Release >"$work/configure.txt"
cmake --build "$work/build" -j"$(nproc)" >"$work/build.txt"
ember=("$work/build/attention" --max-length "$max_length" --min-seconds "$min_seconds")

runs=()
if ((scores_max_length > 0)); then
  runs+=("{\"side\": \"ember_scores\", \"result\": $(env -u OMP_NUM_THREADS "$work/build/attention" \
    --kernel scores --max-length "$scores_max_length" --min-seconds 0)}")
  echo "${runs[-1]}"
fi
for ((i = 0; i < rounds; ++i)); do
  runs+=("{\"side\": \"ember\", \"result\": $(env -u OMP_NUM_THREADS "${ember[@]}")}")
  echo "${runs[-1]}"
  runs+=("{\"side\": \"torch\", \"result\": $(python3 bench/attention/attention_torch.py \
    --max-length "$max_length" --min-seconds "$min_seconds")}")
  echo "${runs[-1]}"
done

python3 - "$out" "$commit" "${runs[@]}" <<'PY'
import datetime, json, statistics, sys
sys.path.insert(0, "bench")
from resnet_compare import machine
out, commit = sys.argv[1], sys.argv[2]
runs = [json.loads(r) for r in sys.argv[3:]]
median = {}
for side in ("ember", "torch", "ember_scores"):
    results = [r["result"] for r in runs if r["side"] == side]
    if results:
        median[side] = {case: statistics.median(r[case] for r in results) for case in results[0]}
# Matrix-product work of a case: 4 B H T^2 d forward (two products), 2.5x that more backward (five
# products, one the forward's recomputed); half under the causal mask.
def gflop(case):
    dtype, t, causal, passes = case.split("/")
    t, causal = int(t[1:]), causal == "causal1"
    f = 4 * 4 * 8 * t * t * 64 * (0.5 if causal else 1.0)
    return f * (3.5 if passes == "fwd_bwd" else 1.0) / 1e9
table = {}
for case, ms in median["ember"].items():
    row = {"ember_ms": ms, "torch_ms": median["torch"][case],
           "speedup_vs_torch": round(median["torch"][case] / ms, 3),
           "ember_gflops": round(gflop(case) / (ms / 1e3), 1)}
    if case in median.get("ember_scores", {}):
        row["ember_scores_ms"] = median["ember_scores"][case]
        row["speedup_vs_scores"] = round(median["ember_scores"][case] / ms, 2)
    table[case] = row
doc = {"date": datetime.date.today().isoformat(), "commit": commit, "machine": machine(),
       "shapes": "q, k, v [4, 8, T, 64]; backward from a random gradient",
       "peak_gflops_note": "this machine's best float GEMM: MKL about 390 GFLOP/s on 2 threads "
                           "(bench/results/cpu-gemm-*.json)",
       "cases": table, "runs": runs}
json.dump(doc, open(out, "w"), indent=1)
for case, row in table.items():
    print(f"{case:28s} ember {row['ember_ms']:9.2f} ms  torch {row['torch_ms']:9.2f} ms  "
          f"{row['speedup_vs_torch']:5.2f}x  {row['ember_gflops']:6.1f} GFLOP/s"
          + (f"  scores kernel {row['ember_scores_ms']:9.1f} ms" if "ember_scores_ms" in row else ""))
print(f"wrote {out}")
PY
