# Sourced by the bench scripts that run a libtorch peer (bench/user_gpt.sh, bench/resnet_cpu.sh,
# bench/bert_cpu.sh).
#
# libtorch_build_dir SOURCE: where the build of the CMake project SOURCE is kept between runs,
# build/libtorch/<SOURCE's path, / as _>: a rerun rebuilds only what changed (seconds) instead of
# the whole peer (half a minute a run here).
libtorch_build_dir() {
  local root
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  echo "$root/build/libtorch/${1//\//_}"
}

# build_libtorch_project SOURCE BUILD: configures SOURCE against the torch wheel's CMake package
# and builds it in BUILD (Release); the logs stay in BUILD as ember-configure.txt and
# ember-build.txt.
build_libtorch_project() {
  local source=$1 build=$2 prefix
  echo "==> building $source in $build"
  prefix=$(python3 -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')
  mkdir -p "$build"
  cmake -S "$source" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
    >"$build/ember-configure.txt" 2>&1
  cmake --build "$build" -j"$(nproc)" >"$build/ember-build.txt"
}
