#!/usr/bin/env bash
# The CPU's float matrix product on each library, side by side in one process
# (bench/bench_gemm_cpu.cpp): ember's choice, oneDNN, oneMKL and OpenBLAS over the trainers' and
# attention's shape classes, repetitions interleaved at random. Writes
# bench/results/cpu-gemm-<date>-<commit>.json (Google Benchmark's JSON) and prints, per case,
# each library's median GFLOP/s and ember's share of the best.
#
#   bench/gemm_cpu.sh                    # build/test's bench_gemm_cpu, 5 repetitions
#   REPETITIONS=3 FILTER=BERT bench/gemm_cpu.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
build=${EMBER_BUILD_DIR:-build/test}
repetitions=${REPETITIONS:-5}
commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- include cmake CMakeLists.txt bench || echo -dirty)
out=bench/results/cpu-gemm-$(date -u +%Y%m%d-%H%M%S)-$commit.json

cmake --build "$build" --target bench_gemm_cpu -j"$(nproc)" >/dev/null
"$build/bench/bench_gemm_cpu" --benchmark_filter="${FILTER:-.}" \
  --benchmark_enable_random_interleaving=true --benchmark_repetitions="$repetitions" \
  --benchmark_min_time=0.2 --benchmark_out="$out" --benchmark_out_format=json >/dev/null

python3 - "$out" <<'PY'
import collections, json, statistics, subprocess, sys
doc = json.load(open(sys.argv[1]))
model = subprocess.run(["sh", "-c", "lscpu | sed -n 's/^Model name: *//p'"], capture_output=True,
                       text=True).stdout.strip()
ctx = doc["context"]
print(f"# {model}, {ctx.get('omp_threads')} threads, {ctx.get('mkl', ctx.get('blas'))}")
rates = collections.defaultdict(lambda: collections.defaultdict(list))
order = {}  # a case's place in bench_gemm_cpu.cpp (the repetitions ran shuffled)
for b in doc["benchmarks"]:
    if b.get("run_type") != "iteration" or b.get("error_occurred"):
        continue
    _, library, case = b["run_name"].split("/")[:3]
    rates[case][library].append(b["flops"] / 1e9)
    order[case] = min(order.get(case, b["family_index"]), b["family_index"])
libraries = ["ember", "onednn", "mkl", "openblas"]
print("| case | " + " | ".join(libraries) + " | ember / best |")
print("|---|" + "---|" * (len(libraries) + 1))
for case, by_library in sorted(rates.items(), key=lambda item: order[item[0]]):
    median = {k: statistics.median(v) for k, v in by_library.items()}
    best = max(v for k, v in median.items() if k != "ember")
    cells = [f"{median[k]:.0f}" if k in median else "" for k in libraries]
    print(f"| {case} | " + " | ".join(cells) + f" | {median['ember'] / best:.2f} |")
print(f"\n({sys.argv[1]})")
PY
