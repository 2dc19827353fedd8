# Sourced by the bench scripts that run a libtorch peer (bench/user_gpt.sh, bench/resnet_cpu.sh,
# bench/bert_cpu.sh).
#
# build_libtorch_project SOURCE BUILD: configures the CMake project SOURCE against the torch
# wheel's CMake package and builds it in BUILD (Release); the logs stay in BUILD's parent as
# libtorch-configure.txt and libtorch-build.txt.
build_libtorch_project() {
  local source=$1 build=$2 prefix
  echo "==> building $source in $build"
  prefix=$(python3 -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')
  cmake -S "$source" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
    >"$(dirname "$build")/libtorch-configure.txt" 2>&1
  cmake --build "$build" -j"$(nproc)" >"$(dirname "$build")/libtorch-build.txt"
}
