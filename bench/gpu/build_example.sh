# shellcheck shell=bash
# Sourced by bench/gpu/resnet.sh and bench/gpu/bert.sh: builds one example trainer with nvcc for
# Hopper, against the trainer libraries bench/gpu/stage_deps.sh staged in .device-deps/trainer
# (when the device machine lacks them).
#
#   build_example SOURCE OUTPUT TIMEOUT_S LOG [LIB...]   # e.g. examples/bert/pretrain.cu
#
# Run from the repository root. Prints nvcc's last lines and returns 1 when the build fails or
# runs past TIMEOUT_S.
build_example() {
  local source=$1 output=$2 limit=$3 log=$4
  shift 4
  local root deps nvcc_bin cuda_root d
  root=$(pwd)
  deps="$root/.device-deps/trainer"
  nvcc_bin=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  cuda_root=$(cd "$(dirname "$nvcc_bin")/.." && pwd)
  local flags=(-std=c++20 -O3 "-gencode=arch=compute_90,code=sm_90" --expt-relaxed-constexpr
    -Xcompiler=-fopenmp -Iinclude -Iexamples -DEMBER_WITH_CUDA=1 -DEMBER_WITH_CUDNN=1
    "-DEMBER_SOURCE_DIR=\"$root\"")
  [[ -d "$cuda_root/include/cccl" ]] && flags+=("-I$cuda_root/include/cccl")
  [[ -d "$deps" ]] && flags+=("-I$deps/include")
  local libs=()
  for d in "$cuda_root/lib64" "$cuda_root/lib" "$deps/lib"; do
    [[ -d "$d" ]] && libs+=("-L$d" "-Xlinker=-rpath=$d")
  done
  libs+=(-lcublasLt -lcudnn "$@" -lgomp)
  echo "== building $(basename "$output") with nvcc"
  if ! timeout "$limit" "$nvcc_bin" "${flags[@]}" "$source" -o "$output" "${libs[@]}" \
    >"$log" 2>&1; then
    echo "== nvcc failed or ran out of time (log below)"
    tail -n 40 "$log"
    return 1
  fi
}
