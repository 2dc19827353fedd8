#!/usr/bin/env bash
# Does a newer oneDNN make ember's convolutions faster? bench/onednn_versions/conv_versions.cpp
# times oneDNN's convolution kernels alone on ResNet shapes; this builds it twice, against
# Debian's oneDNN 2.6 (libdnnl-dev) and against PyPI's onednn-cpu-gomp + onednn-devel-cpu-gomp
# (oneDNN 3.2 built for GNU OpenMP, ember's thread pool; downloaded here into a temporary
# folder), and runs the two alternately ROUNDS times with the same threads.
#
#   bench/onednn_versions.sh     # writes bench/results/cpu-onednn-versions-<date>.txt
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
rounds=${ROUNDS:-2}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}
work=$(mktemp -d "${TMPDIR:-/tmp}/ember-onednn-versions.XXXXXX")
out=bench/results/cpu-onednn-versions-$(date -u +%Y%m%d-%H%M%S).txt
pip download --quiet --no-deps -d "$work/wheels" onednn-cpu-gomp==2023.2.0 onednn-devel-cpu-gomp==2023.2.0
for w in "$work"/wheels/*.whl; do python3 -m zipfile -e "$w" "$work/v3"; done
inc3=$(dirname "$(dirname "$(find "$work/v3" -path '*include/oneapi/dnnl/dnnl.hpp')")")/..
lib3=$(dirname "$(find "$work/v3" -name 'libdnnl.so.3' | head -1)")
g++ -O2 -std=c++17 bench/onednn_versions/conv_versions.cpp -o "$work/conv26" -ldnnl
g++ -O2 -std=c++17 -I"$inc3" bench/onednn_versions/conv_versions.cpp -o "$work/conv32" \
  -L"$lib3" -l:libdnnl.so.3 -Wl,-rpath,"$lib3"
{
  echo "# $(date -u +%F) $(git rev-parse --short HEAD), OMP_NUM_THREADS=$OMP_NUM_THREADS, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
  for ((i = 0; i < rounds; ++i)); do "$work/conv26"; "$work/conv32"; done
} | tee "$out"
echo "wrote $out"
