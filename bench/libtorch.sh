# Sourced by the bench scripts that run a libtorch peer (bench/user_gpt.sh, bench/resnet_cpu.sh,
# bench/bert_cpu.sh).
#
# build_libtorch_project SOURCE: configures the CMake project SOURCE against the torch wheel's
# CMake package, builds it (Release) and prints the build folder. The build is kept between runs
# in build/libtorch/<SOURCE's path, / as _>, so a rerun rebuilds only what changed (seconds)
# instead of the whole peer (half a minute a run here); the logs stay in that folder as
# ember-configure.txt and ember-build.txt.
build_libtorch_project() {
  local source=$1 root build prefix
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  build="$root/build/libtorch/${source//\//_}"
  echo "==> building $source in $build" >&2
  prefix=$(python3 -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')
  mkdir -p "$build"
  cmake -S "$source" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
    >"$build/ember-configure.txt" 2>&1
  cmake --build "$build" -j"$(nproc)" >"$build/ember-build.txt"
  echo "$build"
}
