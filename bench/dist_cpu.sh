#!/usr/bin/env bash
# Data parallelism on CPU ranks (bench/bench_dist_cpu.cpp), one OpenMP thread per rank, median
# of REPS repetitions: all-reduce bus bandwidth (ember's dist::all_reduce against MPI_Allreduce
# called directly, 1 KiB to 256 MiB of floats) on RANKS processes, and a ResNet-18/16 DDP step on
# RANKS processes and on one (weak scaling: the same batch per rank). Writes
# bench/results/cpu-dist-<date>-<commit>.json (RANKS ranks) and cpu-dist-1rank-*.json (Google
# Benchmark's JSON, rank 0's view).
#
#   bench/dist_cpu.sh                 # 2 ranks
#   RANKS=4 REPS=5 bench/dist_cpu.sh
#
# Environment: BUILD_DIR (default build/test; bench_dist_cpu is built there if missing), RANKS
# (2), REPS (3).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
build=${BUILD_DIR:-$root/build/test}
ranks=${RANKS:-2}
reps=${REPS:-3}
[[ -x "$build/bench/bench_dist_cpu" ]] || cmake --build "$build" --target bench_dist_cpu -j"$(nproc)"
commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- include bench || echo -dirty)
out=bench/results/cpu-dist-$(date -u +%Y%m%d-%H%M%S)-$commit.json
# OpenMPI: allow root (containers) and more ranks than cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
OMP_NUM_THREADS=1 mpirun -np "$ranks" "$build/bench/bench_dist_cpu" \
  --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true \
  --benchmark_out="$out" --benchmark_out_format=json
OMP_NUM_THREADS=1 mpirun -np 1 "$build/bench/bench_dist_cpu" --benchmark_filter=ddp_step \
  --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true \
  --benchmark_out="${out/cpu-dist-/cpu-dist-1rank-}" --benchmark_out_format=json
echo "wrote $out and ${out/cpu-dist-/cpu-dist-1rank-}"
