#!/usr/bin/env bash
# The one script for a lent GPU (an H200: sm_90). Run from the repository root on the device
# machine, as one prepared command; it stays under 8 minutes and never touches the GPU's settings.
#
#   bash bench/gpu/check.sh
#
# It
#   1. prints the machine (nvidia-smi, nvcc, torch, cmake);
#   2. builds the GPU benchmarks (bench_elementwise_gpu, bench_autograd_gpu, bench_ops_gpu) with
#      nvcc directly (no Google Benchmark needed), in the background, all at once (bench_ops_gpu
#      links cuBLASLt, and cuDNN when cudnn.h is found: without it its conv2d records are left
#      out);
#   3. configures CMake with CUDA for sm_90 and builds the CUDA-labelled tests, if Catch2 is
#      found (on the system, or staged by bench/gpu/stage_deps.sh into .device-deps/ and carried);
#   4. runs bench/gpu/bench_elementwise_gpu (ember) and bench/gpu/torch_peer.py (PyTorch eager and
#      torch.compile) on the same expressions and sizes; then the autodiff pair,
#      bench/gpu/bench_autograd_gpu and torch_peer.py --suite autograd (PyTorch autograd, eager and
#      torch.compile, on the same 8-op chain; eager only when less than 100 s of budget is left);
#      then the operators, bench/gpu/bench_ops_gpu (GEMM and linear + bias + GELU, conv2d forward
#      and backward, softmax, layer norm; bf16) and torch_peer.py --suite ops (eager only when
#      less than 150 s of budget is left), with what budget remains;
#   5. runs `ctest -L cuda`; then, with more than 200 s of budget left, bench/gpu/resnet.sh
#      (ResNet-50 training images/s: ember's trainer against torchvision eager and compiled), then
#      with what is left bench/gpu/bert.sh (BERT-base/large pretraining sequences/s against
#      Hugging Face's BertForPreTraining eager and compiled);
#   6. writes the results table, gpu-<date>-<commit>-<gpu>.md and .json, and the full log .log,
#      under $OUT when set (the device tool brings those back), else under bench/results/.
#
# Every stage has its own time limit and a failing stage does not stop the others; the exit
# status is non-zero when a stage failed. Environment: CHECK_BUDGET_S (default 450 s), NO_TESTS=1,
# NO_RESNET=1, NO_BERT=1, NO_TORCH=1, NO_COMPILE=1 (eager PyTorch only), NO_ELEMENTWISE=1 (skip the elementwise
# benchmarks), NO_AUTOGRAD=1 (skip the autodiff benchmarks), NO_OPS=1 (skip the operator
# benchmarks), QUICK=1 (small sizes), JOBS, EMBER_COMMIT (the commit to name the results after,
# when the copy on the device has no .git). Everything at once rarely fits the default budget:
# the operators come last and get what is left; for their numbers alone,
#   NO_ELEMENTWISE=1 NO_AUTOGRAD=1 NO_TESTS=1 bash bench/gpu/check.sh
#
# From a session with a lent H200 (see /work/.library/device/README.md), after
# `bash bench/gpu/stage_deps.sh` here (Catch2 for the tests):
#   run(command="EMBER_COMMIT=<short sha> bash bench/gpu/check.sh", carry=[".device-deps"],
#       timeout_s=560)
set -uo pipefail

t_start=$SECONDS
budget=${CHECK_BUDGET_S:-450}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root" || exit 1
out=${OUT:-$root/bench/results}
mkdir -p "$out"
work=$(mktemp -d "${TMPDIR:-/tmp}/ember-check.XXXXXX")
jobs=${JOBS:-$(nproc)}
status=0
stage_notes=()

left() { echo $((budget - (SECONDS - t_start))); }
note() { stage_notes+=("$1"); echo "== $1"; }
# Runs a command with at most $1 seconds, but never past the script's own budget.
limited() {
  local want=$1
  shift
  local remaining
  remaining=$(left)
  ((remaining < want)) && want=$remaining
  if ((want < 5)); then
    echo "== skipped (time budget spent): $*"
    return 124
  fi
  timeout --kill-after=10 "$want" "$@"
}

# ---- 1. the machine -------------------------------------------------------------------------
gpu_query=name,driver_version,memory.total,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.limit,temperature.gpu,pstate
gpu_line=$(nvidia-smi --query-gpu=$gpu_query --format=csv,noheader 2>/dev/null | head -n 1)
gpu_name=$(printf '%s' "${gpu_line%%,*}" | tr -c 'A-Za-z0-9._-' '-' | tr -s '-' | sed 's/^-//; s/-$//')
[[ -n "$gpu_name" ]] || gpu_name=nogpu
# The device machine gets a copy of the working tree, maybe without .git: EMBER_COMMIT names it.
commit=${EMBER_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo nogit)}
if [[ -z "${EMBER_COMMIT:-}" && "$commit" != nogit &&
  -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]]; then
  commit="$commit-dirty"
fi
commit=$(printf '%s' "$commit" | tr -c 'A-Za-z0-9._-' '-')
stamp=$(date -u +%Y%m%d-%H%M%S)
base="$out/gpu-$stamp-$commit-$gpu_name"
log="$base.log"
main() {
  echo "== ember GPU check: $stamp, commit $commit, budget ${budget}s, $jobs jobs"
  echo "== nvidia-smi: ${gpu_line:-unavailable}"
  nvidia-smi 2>/dev/null | head -n 15
  nvcc_bin=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  nvcc_version=$("$nvcc_bin" --version 2>/dev/null | grep -o 'release [0-9.]*' | head -n 1)
  echo "== nvcc: $nvcc_bin (${nvcc_version:-missing})"
  torch_version=$(python3 -c 'import torch; print(torch.__version__)' 2>/dev/null || echo missing)
  echo "== python3: $(python3 --version 2>&1), torch $torch_version"
  echo "== cmake: $(cmake --version 2>/dev/null | head -n 1)"

  # ---- 2. the GPU benchmarks, compiled directly with nvcc (background, all at once) -----------
  nvcc_flags=(-std=c++20 -O3 "-gencode=arch=compute_90,code=sm_90" --expt-relaxed-constexpr
    -Xcompiler=-fopenmp -Iinclude)
  bench_bin="$work/bench_elementwise_gpu"
  nvcc_pid=""
  if [[ "${NO_ELEMENTWISE:-0}" != 1 ]]; then
    (
      "$nvcc_bin" "${nvcc_flags[@]}" bench/gpu/bench_elementwise_gpu.cu -o "$bench_bin" -lgomp \
        >"$work/nvcc.log" 2>&1
      echo $? >"$work/nvcc.rc"
    ) &
    nvcc_pid=$!
  fi
  autograd_bin="$work/bench_autograd_gpu"
  autograd_pid=""
  if [[ "${NO_AUTOGRAD:-0}" != 1 ]]; then
    (
      "$nvcc_bin" "${nvcc_flags[@]}" bench/gpu/bench_autograd_gpu.cu -o "$autograd_bin" -lgomp \
        >"$work/nvcc-autograd.log" 2>&1
      echo $? >"$work/nvcc-autograd.rc"
    ) &
    autograd_pid=$!
  fi
  # The operators call cuBLASLt and cuDNN: their libraries next to nvcc (lib64, or lib on some
  # installs), found at run time through an rpath; CUB/Thrust under include/cccl since CUDA 13.
  ops_bin="$work/bench_ops_gpu"
  ops_pid=""
  if [[ "${NO_OPS:-0}" != 1 ]]; then
    cuda_root=$(cd "$(dirname "$nvcc_bin")/.." && pwd)
    ops_flags=(-DEMBER_WITH_CUDA=1)
    [[ -d "$cuda_root/include/cccl" ]] && ops_flags+=("-I$cuda_root/include/cccl")
    ops_libs=()
    for d in "$cuda_root/lib64" "$cuda_root/lib"; do
      [[ -d "$d" ]] && ops_libs+=("-L$d" "-Xlinker=-rpath=$d")
    done
    ops_libs+=(-lcublasLt)
    if [[ -f "$cuda_root/include/cudnn.h" || -f /usr/include/cudnn.h ||
      -f /usr/include/x86_64-linux-gnu/cudnn.h ]]; then
      ops_flags+=(-DEMBER_WITH_CUDNN=1)
      ops_libs+=(-lcudnn)
    else
      note "operators: cudnn.h not found; bench_ops_gpu built without conv2d"
    fi
    (
      "$nvcc_bin" "${nvcc_flags[@]}" "${ops_flags[@]}" bench/gpu/bench_ops_gpu.cu -o "$ops_bin" \
        "${ops_libs[@]}" -lgomp >"$work/nvcc-ops.log" 2>&1
      echo $? >"$work/nvcc-ops.rc"
    ) &
    ops_pid=$!
  fi

  # ---- 3. CMake with CUDA; the CUDA tests build in the background too -------------------------
  build="$work/build"
  test_build_pid=""
  if [[ "${NO_TESTS:-0}" != 1 ]]; then
    cmake_args=(-S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=ON
      -DCMAKE_CUDA_ARCHITECTURES=90-real "-DCMAKE_CUDA_COMPILER=$nvcc_bin"
      -DEMBER_BUILD_TESTS=ON -DEMBER_BUILD_BENCHMARKS=OFF -DEMBER_BUILD_EXAMPLES=OFF)
    command -v ninja >/dev/null && cmake_args+=(-G Ninja)
    # Catch2 2.x: the system's, or one staged into .device-deps/ by bench/gpu/stage_deps.sh.
    if [[ -d "$root/.device-deps/catch2/lib/cmake/Catch2" ]]; then
      cmake_args+=("-DCatch2_DIR=$root/.device-deps/catch2/lib/cmake/Catch2")
    fi
    if limited 90 cmake "${cmake_args[@]}" >"$work/configure.log" 2>&1; then
      # One target builds every executable the CUDA-labelled tests run (tests/CMakeLists.txt:
      # test names are not target names, test_ops_conv_cuda runs test_ops_cuda).
      mapfile -t cuda_tests < <(ctest --test-dir "$build" -N -L cuda 2>/dev/null |
        sed -n 's/^ *Test *#[0-9]*: *\([A-Za-z0-9_]*\).*/\1/p')
      if ((${#cuda_tests[@]} == 0)); then
        note "tests: configure found no CUDA-labelled tests"
      else
        echo "== building the executables of ${#cuda_tests[@]} CUDA test(s) in the background"
        (
          limited 300 cmake --build "$build" -j "$jobs" --target ember_cuda_tests >"$work/build.log" 2>&1
          echo $? >"$work/build.rc"
        ) &
        test_build_pid=$!
      fi
    else
      if grep -q -i catch2 "$work/configure.log"; then
        note "tests: skipped, Catch2 2.x not found (stage it with bench/gpu/stage_deps.sh and carry .device-deps)"
      else
        note "tests: CMake configure failed (log below)"
        status=1
      fi
      tail -n 25 "$work/configure.log"
    fi
  else
    note "tests: skipped (NO_TESTS=1)"
  fi

  # Both builds share the cores; the benchmarks start once the benchmark binary exists and, when
  # it ends in time, the test build (so that timings run on a quiet machine).
  if [[ -n "$nvcc_pid" ]]; then
    limited 240 bash -c "while kill -0 $nvcc_pid 2>/dev/null; do sleep 1; done"
    wait "$nvcc_pid" 2>/dev/null
    echo "== benchmark binary built after $((SECONDS - t_start)) s"
  fi
  if [[ -n "$autograd_pid" ]]; then
    limited 120 bash -c "while kill -0 $autograd_pid 2>/dev/null; do sleep 1; done"
    wait "$autograd_pid" 2>/dev/null
    echo "== autodiff benchmark binary built after $((SECONDS - t_start)) s"
  fi
  if [[ -n "$test_build_pid" ]]; then
    limited 120 bash -c "while kill -0 $test_build_pid 2>/dev/null; do sleep 1; done"
    if kill -0 "$test_build_pid" 2>/dev/null; then
      echo "== the test build is still running; benchmarking alongside it"
    else
      echo "== tests built after $((SECONDS - t_start)) s"
    fi
  fi

  # ---- 4. benchmarks: ember, then PyTorch ------------------------------------------------------
  ember_json="$work/ember.json"
  quick_flag=()
  [[ "${QUICK:-0}" == 1 ]] && quick_flag=(--quick)
  if [[ "${NO_ELEMENTWISE:-0}" == 1 ]]; then
    note "elementwise benchmarks: skipped (NO_ELEMENTWISE=1)"
  elif [[ "$(cat "$work/nvcc.rc" 2>/dev/null)" == 0 && -x "$bench_bin" ]]; then
    echo "== ember benchmark"
    limited 150 "$bench_bin" --json "$ember_json" "${quick_flag[@]}"
    rc=$?
    ((rc == 0)) || { note "ember benchmark: exit status $rc"; status=1; }
  else
    note "ember benchmark: nvcc failed (log below)"
    tail -n 40 "$work/nvcc.log"
    status=1
  fi

  torch_json="$work/torch.json"
  if [[ "${NO_ELEMENTWISE:-0}" == 1 ]]; then
    :
  elif [[ "${NO_TORCH:-0}" != 1 && "$torch_version" != missing ]]; then
    echo "== PyTorch peer"
    torch_flags=("${quick_flag[@]}")
    [[ "${NO_COMPILE:-0}" == 1 ]] && torch_flags+=(--no-compile)
    # Inductor's caches go to scratch space: nothing of it should come back or linger.
    TORCHINDUCTOR_CACHE_DIR="$work/inductor" TRITON_CACHE_DIR="$work/triton" PYTHONUNBUFFERED=1 \
      limited 240 python3 bench/gpu/torch_peer.py --json "$torch_json" "${torch_flags[@]}"
    rc=$?
    ((rc == 0)) || { note "torch peer: exit status $rc"; status=1; }
  else
    note "torch peer: skipped (NO_TORCH=1 or no torch)"
  fi

  # ---- 4b. the autodiff benchmarks: ember, then PyTorch autograd -------------------------------
  autograd_json="$work/ember-autograd.json"
  torch_autograd_json="$work/torch-autograd.json"
  if [[ "${NO_AUTOGRAD:-0}" != 1 ]]; then
    if [[ "$(cat "$work/nvcc-autograd.rc" 2>/dev/null)" == 0 && -x "$autograd_bin" ]]; then
      echo "== ember autodiff benchmark"
      limited 90 "$autograd_bin" --json "$autograd_json" "${quick_flag[@]}"
      rc=$?
      ((rc == 0)) || { note "ember autodiff benchmark: exit status $rc"; status=1; }
    else
      note "ember autodiff benchmark: nvcc failed or unfinished (log below)"
      tail -n 40 "$work/nvcc-autograd.log"
      status=1
    fi
    if [[ "${NO_TORCH:-0}" != 1 && "$torch_version" != missing ]]; then
      echo "== PyTorch autograd peer"
      torch_flags=("${quick_flag[@]}")
      # torch.compile builds a forward and a backward graph per dtype: eager only when time is short.
      if [[ "${NO_COMPILE:-0}" == 1 ]] || (($(left) < 100)); then
        torch_flags+=(--no-compile)
        [[ "${NO_COMPILE:-0}" == 1 ]] || note "torch autograd peer: eager only ($(left) s of budget left)"
      fi
      TORCHINDUCTOR_CACHE_DIR="$work/inductor" TRITON_CACHE_DIR="$work/triton" PYTHONUNBUFFERED=1 \
        limited 150 python3 bench/gpu/torch_peer.py --suite autograd --json "$torch_autograd_json" \
        "${torch_flags[@]}"
      rc=$?
      ((rc == 0)) || { note "torch autograd peer: exit status $rc"; status=1; }
    fi
  else
    note "autodiff benchmarks: skipped (NO_AUTOGRAD=1)"
  fi

  # ---- 4c. the operators: ember, then PyTorch ---------------------------------------------------
  ops_json="$work/ember-ops.json"
  torch_ops_json="$work/torch-ops.json"
  if [[ -n "$ops_pid" ]]; then
    limited 120 bash -c "while kill -0 $ops_pid 2>/dev/null; do sleep 1; done"
    wait "$ops_pid" 2>/dev/null
    if [[ "$(cat "$work/nvcc-ops.rc" 2>/dev/null)" == 0 && -x "$ops_bin" ]]; then
      echo "== ember operator benchmark ($((SECONDS - t_start)) s so far)"
      limited 120 "$ops_bin" --json "$ops_json" "${quick_flag[@]}"
      rc=$?
      ((rc == 0)) || { note "ember operator benchmark: exit status $rc"; status=1; }
    else
      note "ember operator benchmark: nvcc failed or unfinished (log below)"
      tail -n 40 "$work/nvcc-ops.log"
      status=1
    fi
    if [[ "${NO_TORCH:-0}" != 1 && "$torch_version" != missing ]]; then
      echo "== PyTorch operator peer"
      torch_flags=("${quick_flag[@]}")
      # torch.compile builds one graph per shape (8 of them): eager only when time is short.
      if [[ "${NO_COMPILE:-0}" == 1 ]] || (($(left) < 150)); then
        torch_flags+=(--no-compile)
        [[ "${NO_COMPILE:-0}" == 1 ]] || note "torch operator peer: eager only ($(left) s of budget left)"
      fi
      TORCHINDUCTOR_CACHE_DIR="$work/inductor" TRITON_CACHE_DIR="$work/triton" PYTHONUNBUFFERED=1 \
        limited 180 python3 bench/gpu/torch_peer.py --suite ops --json "$torch_ops_json" "${torch_flags[@]}"
      rc=$?
      ((rc == 0)) || { note "torch operator peer: exit status $rc"; status=1; }
    fi
  elif [[ "${NO_OPS:-0}" == 1 ]]; then
    note "operator benchmarks: skipped (NO_OPS=1)"
  fi

  gpu_after=$(nvidia-smi --query-gpu=$gpu_query --format=csv,noheader 2>/dev/null | head -n 1)
  echo "== nvidia-smi after the benchmarks: ${gpu_after:-unavailable}"

  # ---- 5. the CUDA tests ------------------------------------------------------------------------
  tests_summary="not run"
  if [[ -n "$test_build_pid" ]]; then
    limited 200 bash -c "while kill -0 $test_build_pid 2>/dev/null; do sleep 1; done"
    wait "$test_build_pid" 2>/dev/null
    if [[ "$(cat "$work/build.rc" 2>/dev/null)" == 0 ]]; then
      echo "== ctest -L cuda"
      limited 120 ctest --test-dir "$build" -L cuda --output-on-failure --timeout 100 >"$work/ctest.log" 2>&1
      rc=$?
      cat "$work/ctest.log"
      tests_summary=$(grep -E 'tests passed|tests failed' "$work/ctest.log" | tail -n 1)
      [[ -n "$tests_summary" ]] || tests_summary="ctest exit status $rc"
      if ((rc != 0)); then
        status=1
        note "tests: $tests_summary"
      fi
    else
      note "tests: build failed or ran out of time (status $(cat "$work/build.rc" 2>/dev/null || echo none); log below)"
      grep -E -B2 -A8 'error|Error' "$work/build.log" | head -n 60
      tail -n 15 "$work/build.log"
      status=1
      tests_summary="build failed"
    fi
  elif ((${#stage_notes[@]})); then
    tests_summary=$(printf '%s\n' "${stage_notes[@]}" | grep '^tests:' | head -n 1)
  fi

  # ---- 5b. ResNet-50 training: ember's trainer against PyTorch's (bench/gpu/resnet.sh) ---------
  if [[ "${NO_RESNET:-0}" == 1 ]]; then
    note "resnet: skipped (NO_RESNET=1)"
  elif (($(left) > 200)); then
    RESNET_BUDGET_S=$(($(left) - 10)) OUT="$out" bash bench/gpu/resnet.sh
    rc=$?
    ((rc == 0)) || { note "resnet: exit status $rc"; status=1; }
  else
    note "resnet: skipped ($(left) s of budget left); run bench/gpu/resnet.sh on its own"
  fi

  # ---- 5c. BERT pretraining: ember's trainer against Hugging Face's (bench/gpu/bert.sh) --------
  if [[ "${NO_BERT:-0}" == 1 ]]; then
    note "bert: skipped (NO_BERT=1)"
  elif (($(left) > 200)); then
    BERT_BUDGET_S=$(($(left) - 10)) OUT="$out" bash bench/gpu/bert.sh
    rc=$?
    ((rc == 0)) || { note "bert: exit status $rc"; status=1; }
  else
    note "bert: skipped ($(left) s of budget left); run bench/gpu/bert.sh on its own"
  fi

  # ---- 6. the results table ---------------------------------------------------------------------
  echo "== results ($((SECONDS - t_start)) s so far)"
  meta=(--meta "date=$stamp" --meta "commit=$commit" --meta "gpu (nvidia-smi: $gpu_query)=${gpu_line:-unavailable}"
    --meta "gpu right after the benchmarks=${gpu_after:-unavailable}"
    --meta "nvcc=${nvcc_version:-missing}" --meta "torch=$torch_version" --meta "CUDA tests=${tests_summary:-not run}")
  i=0
  for n in "${stage_notes[@]}"; do i=$((i + 1)); meta+=(--meta "note $i=$n"); done
  ember_args=()
  [[ -s "$ember_json" ]] && ember_args+=(--ember "$ember_json")
  [[ -s "$autograd_json" ]] && ember_args+=(--ember "$autograd_json")
  [[ -s "$ops_json" ]] && ember_args+=(--ember "$ops_json")
  if ((${#ember_args[@]})); then
    python3 bench/gpu/summarize.py "${ember_args[@]}" --torch "$torch_json" \
      --torch "$torch_autograd_json" --torch "$torch_ops_json" --out "$base" "${meta[@]}" || status=1
  else
    note "no ember results: nothing to tabulate"
    status=1
  fi
  echo "== done in $((SECONDS - t_start)) s; status $status; results: $base.{md,json,log}"
  rm -rf "$work"
  return $status
}

# The log is written by tee in the same pipeline, so it is complete when the script exits.
main 2>&1 | tee -a "$log"
exit "${PIPESTATUS[0]}"
