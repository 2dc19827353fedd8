#!/usr/bin/env bash
# Builds ember's CPU benchmarks (CMake, Release) and runs them, writing Google Benchmark's JSON
# to bench/results/, then prints the ratio tables (bench/report.py):
#   bench_elementwise_cpu -> cpu-<date>-<shortcommit>.json: fused chain vs copy bandwidth, vs
#                            Eigen, vs op by op; reductions vs Eigen; and PyTorch eager and
#                            torch.compile on the same chains (cpu-torch-elementwise-*.json)
#   bench_autograd_cpu    -> cpu-autograd-<date>-<shortcommit>.json: fused backward of an 8-op
#                            chain vs the same chain op by op, vs a hand-written loop, vs copy,
#                            vs PyTorch (cpu-torch-autograd-*.json)
#   bench_ops_cpu         -> cpu-ops-<date>-<shortcommit>.json: matmul, linear + GELU and conv2d
#                            vs OpenBLAS called directly (GFLOP/s), softmax and layer_norm vs
#                            OpenMP loops (GB/s); run with OMP_WAIT_POLICY=passive (default
#                            here) so idle OpenMP threads do not spin against OpenBLAS's
#
#   bench/run_cpu.sh                  # everything, 5 repetitions
#   REPS=7 MIN_TIME=0.5 bench/run_cpu.sh
#   FILTER='chain_relu|copy' BENCHES=elementwise bench/run_cpu.sh
#   BENCHES=autograd FILTER='f32' bench/run_cpu.sh
#   BENCHES=ops REPS=3 MIN_TIME=0.2 FILTER='op_gemm' bench/run_cpu.sh
#
# Environment:
#   BENCHES       which executables, of elementwise, autograd and ops (default: all three)
#   BUILD_DIR     build directory (default build-bench)
#   BUILD_JOBS    parallel compile jobs (default: all cores)
#   EMBER_COMMIT  the commit to name the results after (default: git's HEAD, -dirty when the
#                 tracked files differ)
#   ARCH_FLAGS    extra compiler flags (default -march=native: both ember and Eigen get the
#                 machine's vector width; set ARCH_FLAGS= for a portable baseline build)
#   REPS          repetitions of each benchmark (default 5), interleaved at random; report.py
#                 takes the median of those no other process disturbed
#   MIN_TIME      seconds each repetition runs at least (default 0.3)
#   FILTER        --benchmark_filter regex, for every executable (default: all)
#   QUIET_WAIT    seconds to wait for other processes to leave the CPUs before starting
#                 (default 300; 0: do not). The benchmark also waits before each measurement:
#                 EMBER_BENCH_QUIET_WAIT (20 s each) and EMBER_BENCH_QUIET_TOTAL (900 s in all)
#   OMP_NUM_THREADS  threads for OpenMP and for Eigen's pool (default: all cores); OpenBLAS
#                 (Debian's pthread build) takes it too unless OPENBLAS_NUM_THREADS is set
#   OMP_WAIT_POLICY  for bench_ops_cpu only (default passive); the others keep OpenMP's default
#   NO_TORCH      1: leave out bench/torch_cpu_peer.py (PyTorch eager and torch.compile on the
#                 elementwise and autograd chains, run after ember's, results beside them);
#                 NO_COMPILE=1: eager only
#   MODE          wall (default): wall-clock time on all cores. cpu: one thread, timed by the
#                 process's CPU time, for a machine shared with other work (numbers per core,
#                 not inflated by other processes; no waiting for quiet)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$root/build-bench}
arch_flags=${ARCH_FLAGS--march=native}
reps=${REPS:-5}
min_time=${MIN_TIME:-0.3}
filter=${FILTER:-.}
quiet_wait=${QUIET_WAIT:-300}
jobs=$(nproc)
build_jobs=${BUILD_JOBS:-$jobs}
read -r -a benches <<<"${BENCHES:-elementwise autograd ops}"
targets=()
for b in "${benches[@]}"; do
  case "$b" in
    elementwise | autograd | ops) targets+=("bench_${b}_cpu") ;;
    *) echo "run_cpu.sh: BENCHES takes elementwise, autograd and ops, not '$b'" >&2; exit 2 ;;
  esac
done
((${#targets[@]})) || { echo "run_cpu.sh: BENCHES is empty" >&2; exit 2; }
mode=${MODE:-wall}
case "$mode" in
  wall) export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$jobs} ;;
  cpu)
    export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} EMBER_BENCH_CPU_TIME=1
    export EMBER_BENCH_QUIET_TOTAL=${EMBER_BENCH_QUIET_TOTAL:-0}
    quiet_wait=0
    ;;
  *) echo "run_cpu.sh: MODE must be wall or cpu" >&2; exit 2 ;;
esac

say() { printf '== %s\n' "$*" >&2; }

# ---- build ----------------------------------------------------------------------------------
say "configuring $build (Release, CPU only, flags: ${arch_flags:-none})"
mkdir -p "$build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=OFF \
  -DEMBER_BUILD_TESTS=OFF -DEMBER_BUILD_EXAMPLES=OFF -DEMBER_BUILD_BENCHMARKS=ON \
  -DEMBER_INSTALL=OFF "-DCMAKE_CXX_FLAGS=$arch_flags" >"$build/ember-configure.log" 2>&1 ||
  { cat "$build/ember-configure.log" >&2; exit 1; }
say "building ${targets[*]} ($build_jobs jobs)"
if ! cmake --build "$build" --target "${targets[@]}" -j "$build_jobs" >"$build/ember-build.log" 2>&1; then
  tail -n 60 "$build/ember-build.log" >&2
  say "build failed; if the target is unknown, Google Benchmark (libbenchmark-dev) or Eigen3 (libeigen3-dev) may be missing"
  exit 1
fi
bins=()
for target in "${targets[@]}"; do
  bin=$(find "$build" -type f -name "$target" -perm -u+x | head -n 1)
  [[ -x "$bin" ]] || { say "$target was not built"; exit 1; }
  bins+=("$bin")
done

# ---- wait for quiet CPUs --------------------------------------------------------------------
# OpenMP's barriers spin: with another process on one of the cores a parallel region waits a
# whole scheduler tick (4 ms) for its other thread, and the numbers are meaningless.
busy_percent() {  # CPU use of the whole machine over one second, in percent
  local a b
  read -r -a a < <(grep '^cpu ' /proc/stat)
  sleep 1
  read -r -a b < <(grep '^cpu ' /proc/stat)
  local idle=$(((b[4] + b[5]) - (a[4] + a[5]))) total=0 i
  for i in 1 2 3 4 5 6 7 8; do total=$((total + b[i] - a[i])); done
  ((total > 0)) || { echo 0; return; }
  echo $((100 * (total - idle) / total))
}
busy=$(busy_percent)
waited=0
while ((busy > 15 && waited < quiet_wait)); do
  ((waited == 0)) && say "other processes use ${busy}% of the CPUs; waiting up to ${quiet_wait}s for quiet"
  sleep 5
  waited=$((waited + 6))
  busy=$(busy_percent)
done
[[ "$mode" == wall ]] && ((busy > 15)) && say "WARNING: CPUs still ${busy}% busy with other work; wall-clock numbers will be noisy (MODE=cpu is not)"

# ---- run ------------------------------------------------------------------------------------
if [[ -n "${EMBER_COMMIT:-}" ]]; then
  commit=$EMBER_COMMIT
else
  commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo nocommit)
  if [[ -n "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ]]; then
    commit="$commit-dirty"
  fi
fi
commit=$(printf '%s' "$commit" | tr -c 'A-Za-z0-9._-' '-')
mkdir -p "$root/bench/results"
suffix=""
[[ "$mode" == cpu ]] && suffix="-${OMP_NUM_THREADS}thread-cputime"
stamp=$(date -u +%Y%m%d-%H%M%S)
# Google Benchmark takes the context as one flag of key=value pairs joined by commas.
ctx_value() { printf '%s' "$*" | tr '=, ' ':;_'; }
for i in "${!targets[@]}"; do
  bin=${bins[$i]}
  case "${targets[$i]}" in
    bench_elementwise_cpu) json="$root/bench/results/cpu-$stamp-$commit$suffix.json" ;;
    *) json="$root/bench/results/cpu-${benches[$i]}-$stamp-$commit$suffix.json" ;;
  esac
  # The operator benchmarks alternate OpenMP passes with OpenBLAS's own threads: OpenMP's idle
  # threads sleep there instead of spinning (bench_ops_cpu records the policy in its context).
  run_env=()
  [[ "${targets[$i]}" == bench_ops_cpu ]] && run_env=("OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}")
  say "running $bin (threads $OMP_NUM_THREADS, $reps repetitions, min time ${min_time}s${run_env[*]:+, ${run_env[*]}}) -> $json"
  context="busy_percent_before=$busy,commit=$(ctx_value "$commit"),arch_flags=$(ctx_value "${arch_flags:-none}")"
  context+=",load_average=$(ctx_value "$(cut -d' ' -f1-3 /proc/loadavg)")"
  env "${run_env[@]}" "$bin" --benchmark_filter="$filter" --benchmark_repetitions="$reps" \
    --benchmark_min_time="$min_time" --benchmark_out="$json" --benchmark_out_format=json \
    --benchmark_context="$context" --benchmark_enable_random_interleaving=true \
    --benchmark_report_aggregates_only=false --benchmark_display_aggregates_only=true

  if ! grep -q '"run_name"' "$json"; then
    say "no benchmark of ${targets[$i]} matched FILTER='$filter'; removing $json"
    rm -f "$json"
    continue
  fi
  # PyTorch on the same expressions, eager and under torch.compile, right after ember's run with
  # the same threads (bench/torch_cpu_peer.py; NO_TORCH=1 leaves it out, as does a machine
  # without torch).
  reports=("$json")
  case "${targets[$i]}" in
    bench_elementwise_cpu | bench_autograd_cpu)
      suite=${benches[$i]}
      if [[ "${NO_TORCH:-0}" != 1 ]] && python3 -c 'import torch' 2>/dev/null; then
        peer_json="$root/bench/results/cpu-torch-$suite-$stamp-$commit$suffix.json"
        say "running bench/torch_cpu_peer.py --suite $suite -> $peer_json"
        peer_flags=(--suite "$suite" --json "$peer_json" --reps "$reps" --min-time "$min_time")
        [[ "${NO_COMPILE:-0}" == 1 ]] && peer_flags+=(--no-compile)
        python3 "$root/bench/torch_cpu_peer.py" "${peer_flags[@]}"
        reports+=("$peer_json")
      else
        say "PyTorch not installed (or NO_TORCH=1): no torch peer for ${targets[$i]}"
      fi
      ;;
  esac
  say "ratios (${targets[$i]})"
  python3 "$root/bench/report.py" "${reports[@]}"
  # DRAM-bound runs on a shared (virtual) machine are often bimodal: the best repetition of each
  # benchmark is the fairer comparison there.
  python3 "$root/bench/report.py" --stat min --summary-only "${reports[@]}"
done
