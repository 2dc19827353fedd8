#!/usr/bin/env bash
# ResNet training steps on the CPU, side by side (issue 49's sizes): ember's bench_resnet_cpu
# against PyTorch eager and torch.compile (bench/resnet_cpu_peer.py, NCHW and channels-last) and
# libtorch's C++ frontend (bench/libtorch_peer, built here against the torch wheel's CMake
# package), float and bf16 (ember's model in bf16; PyTorch and libtorch under autocast), the same
# thread count for all. ember runs before and after the peers (this VM drifts within minutes); the
# joined file (bench/resnet_compare.py) gives each case's ratio over every peer and over the
# strongest one, and ember's and the strongest peer's FLOP rate as a share of the arithmetic
# limit measured in the same run (bench_peak_cpu: FMAs, or bf16 dot products without AMX).
#
#   bench/resnet_cpu.sh           # writes bench/results/cpu-resnet-<date>-<commit>.json
#   FILTER=resnet50_128px SECONDS_PER_CASE=2 NO_COMPILE=1 bench/resnet_cpu.sh
#
# Environment: BUILD_DIR (default build/test: bench_resnet_cpu is built there if missing),
# FILTER (a regex over ember's case names; default issue 49's three models), SECONDS_PER_CASE (3),
# NO_COMPILE, NO_LIBTORCH, OMP_NUM_THREADS (default: all cores).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
source bench/libtorch.sh
build=${BUILD_DIR:-$root/build/test}
filter=${FILTER:-resnet18_48px|resnet50_128px|resnet50_224px}
seconds=${SECONDS_PER_CASE:-3}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}
for target in bench_resnet_cpu bench_peak_cpu; do
  [[ -x "$build/bench/$target" ]] || cmake --build "$build" --target "$target" -j"$(nproc)"
done
commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- include examples bench || echo -dirty)
out=bench/results/cpu-resnet-$(date -u +%Y%m%d-%H%M%S)-$commit.json
work=$(mktemp -d "${TMPDIR:-/tmp}/ember-resnet-cpu.XXXXXX")

peer_flags=(--seconds "$seconds")
[[ "${NO_COMPILE:-0}" == 1 ]] || peer_flags+=(--compile)
if [[ "${NO_LIBTORCH:-0}" != 1 ]]; then
  libtorch_build=$(build_libtorch_project bench/libtorch_peer)
  peer_flags+=(--libtorch "$libtorch_build/libtorch_peer")
fi

run_ember() {
  echo "==> ember ($1)"
  "$build/bench/bench_resnet_cpu" --benchmark_filter="$filter" --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=true --benchmark_out="$work/ember-$1.json" \
    --benchmark_out_format=json
}
echo "==> the arithmetic limit (bench_peak_cpu)"
"$build/bench/bench_peak_cpu" --benchmark_repetitions=3 --benchmark_out="$work/peak.json" \
  --benchmark_out_format=json
run_ember before
# The peer's filter is a substring: one run per model size, float then bf16.
for size in ${filter//|/ }; do
  echo "==> PyTorch and libtorch: $size"
  TORCHINDUCTOR_CACHE_DIR="$work/inductor" python3 bench/resnet_cpu_peer.py "${peer_flags[@]}" \
    --filter "$size" --json "$work/torch-$size.json"
  TORCHINDUCTOR_CACHE_DIR="$work/inductor" python3 bench/resnet_cpu_peer.py "${peer_flags[@]}" \
    --filter "$size" --bf16 --json "$work/torch-$size-bf16.json"
done
run_ember after

torch_flags=()
for f in "$work"/torch-*.json; do torch_flags+=(--torch "$f"); done
python3 bench/resnet_compare.py --ember "$work/ember-before.json" --ember "$work/ember-after.json" \
  "${torch_flags[@]}" --commit "$commit" --peak "$work/peak.json" --out "$out" \
  --note "cases matching '$filter', ember before and after the peers, $seconds s a peer case"
echo "==> wrote $out"
