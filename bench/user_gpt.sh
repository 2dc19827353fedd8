#!/usr/bin/env bash
# A user's own model, side by side with PyTorch: bench/user_gpt/gpt.cpp (a small GPT written from
# the docs, outside ember's trainers) built as the README says (its own CMake project taking ember
# with add_subdirectory, -DCMAKE_BUILD_TYPE=Release and nothing else, from an empty folder) and run
# with no environment variables set, against the same model in PyTorch eager and torch.compile
# (bench/user_gpt/gpt_torch.py) and in libtorch's C++ frontend (bench/user_gpt/libtorch, built
# against the torch wheel's CMake package), with PyTorch's default thread count. The runs
# alternate (ember, eager, compiled, libtorch, ember, ...) ROUNDS times; each figure is the median
# step time of a run, and the file keeps every run, with each side's GFLOP/s of the products and
# their share of the arithmetic limit (bench_peak_cpu, run from BUILD_DIR, default build/test,
# where that build exists).
#
#   bench/user_gpt.sh            # writes bench/results/cpu-user-gpt-<date>-<commit>.json
#   ROUNDS=2 STEPS=20 NO_COMPILE=1 NO_LIBTORCH=1 bench/user_gpt.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
source bench/libtorch.sh
rounds=${ROUNDS:-3}
steps=${STEPS:-30}
work=$(mktemp -d "${TMPDIR:-/tmp}/ember-user-gpt.XXXXXX")
commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- include cmake CMakeLists.txt bench/user_gpt || echo -dirty)
out=bench/results/cpu-user-gpt-$(date -u +%Y%m%d-%H%M%S)-$commit.json

echo "==> building bench/user_gpt in $work/build"
start=$SECONDS
cmake -S bench/user_gpt -B "$work/build" -DCMAKE_BUILD_TYPE=Release >"$work/configure.txt"
cmake --build "$work/build" -j"$(nproc)" >"$work/build.txt"
build_seconds=$((SECONDS - start))
libtorch=""
if [[ "${NO_LIBTORCH:-0}" != 1 ]]; then
  libtorch_build=$(build_libtorch_project bench/user_gpt/libtorch)
  libtorch="$libtorch_build/gpt_libtorch"
fi

# The arithmetic limit (bench_peak_cpu), where a build of ember's benchmarks is at hand.
peak=""
build=${BUILD_DIR:-$root/build/test}
if [[ -x "$build/bench/bench_peak_cpu" ]] ||
  { [[ -f "$build/CMakeCache.txt" ]] && cmake --build "$build" --target bench_peak_cpu >/dev/null; }; then
  "$build/bench/bench_peak_cpu" --benchmark_repetitions=3 --benchmark_out="$work/peak.json" \
    --benchmark_out_format=json >/dev/null 2>&1
  peak="$work/peak.json"
fi

runs=()
for ((i = 0; i < rounds; ++i)); do
  runs+=("{\"side\": \"ember\", \"result\": $(env -u OMP_NUM_THREADS "$work/build/gpt" "$steps" --json)}")
  echo "${runs[-1]}"
  runs+=("{\"side\": \"torch_eager\", \"result\": $(python3 bench/user_gpt/gpt_torch.py --steps "$steps")}")
  echo "${runs[-1]}"
  if [[ "${NO_COMPILE:-0}" != 1 ]]; then
    runs+=("{\"side\": \"torch_compile\", \"result\": $(TORCHINDUCTOR_CACHE_DIR="$work/inductor" \
      python3 bench/user_gpt/gpt_torch.py --steps "$steps" --compile)}")
    echo "${runs[-1]}"
  fi
  if [[ -n "$libtorch" ]]; then
    runs+=("{\"side\": \"libtorch\", \"result\": $("$libtorch" "$steps")}")
    echo "${runs[-1]}"
  fi
done

python3 - "$out" "$commit" "$build_seconds" "$work/configure.txt" "$peak" "${runs[@]}" <<'PY'
import datetime, json, statistics, sys
sys.path.insert(0, "bench")
from resnet_compare import hardware_peaks, machine
out, commit, build_seconds, configure, peak = sys.argv[1:6]
build_seconds, peaks = int(build_seconds), hardware_peaks(peak)
runs = [json.loads(r) for r in sys.argv[6:]]
summary = next((l.strip("- \n") for l in open(configure) if "ember 0." in l), "")
median = {}
for side in ("ember", "torch_eager", "torch_compile", "libtorch"):
    ms = [r["result"]["ms_per_step"] for r in runs if r["side"] == side]
    if ms:
        median[side] = statistics.median(ms)
# The step's matrix-product work, forward and backward (3x the forward): per token and layer
# 24 E^2 for the four linears (QKV, out, up 4E, down) and 4 T E for attention's two products
# (all T keys, causal or not, as the GEMMs run them), then 2 E V for the head.
E, T, L, V, tokens = 128, 64, 4, 256, 16 * 64
gflop = 3 * tokens * (L * (24 * E * E + 4 * T * E) + 2 * E * V) / 1e9
doc = {"date": datetime.date.today().isoformat(), "commit": commit, "machine": machine(),
       "gflop_per_step": round(gflop, 3),
       "achieved_gflops": {k: round(gflop / (v / 1e3), 1) for k, v in median.items()},
       "hardware_peak_gflops": peaks,
       "percent_of_hardware_peak": {k: round(100 * gflop / (v / 1e3) / peaks["float"], 1)
                                    for k, v in median.items()} if "float" in peaks else {},
       "model": "GPT, 4 layers, d_model 128, 4 heads, context 64, batch 16, vocab 256, AdamW",
       "ember_configure": summary, "ember_build_seconds": build_seconds,
       "median_ms_per_step": median,
       "ember_speedup": {k: v / median["ember"] for k, v in median.items() if k != "ember"},
       "runs": runs}
json.dump(doc, open(out, "w"), indent=1)
print(json.dumps({"median_ms_per_step": median, "ember_speedup": doc["ember_speedup"],
                  "achieved_gflops": doc["achieved_gflops"]}))
print(f"wrote {out}")
PY
