#!/usr/bin/env bash
# Stages what bench/gpu/check.sh needs but the GPU machine lacks, into .device-deps/ (ignored by
# git through .git/info/exclude), so a device run can carry it: `carry: [".device-deps"]`.
# Run it here, where the Debian packages are installed (apt-get install catch2). Nothing on the
# device machine can be downloaded, and it has no Catch2: without this the CUDA tests are skipped.
#
# Staged: Catch2 2.x (header-only, plus its CMake package files; well under 1 MiB), and for the
# ResNet trainer (bench/gpu/resnet.sh): CLI11 and nlohmann/json (header-only), zlib and
# libjpeg-turbo's TurboJPEG (headers and shared libraries; about 1 MiB).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dest="$root/.device-deps"

if [[ ! -f /usr/include/catch2/catch.hpp || ! -d /usr/lib/cmake/Catch2 ]]; then
  echo "stage_deps.sh: Catch2 2.x is not installed here (apt-get install catch2)" >&2
  exit 1
fi
rm -rf "$dest/catch2"
mkdir -p "$dest/catch2/include" "$dest/catch2/lib/cmake"
cp -r /usr/include/catch2 "$dest/catch2/include/"
cp -r /usr/lib/cmake/Catch2 "$dest/catch2/lib/cmake/"
# The imported target Catch2::Catch2WithMain names this archive; ember's tests use their own main.
[[ -f /usr/lib/libCatch2WithMain.a ]] && cp /usr/lib/libCatch2WithMain.a "$dest/catch2/lib/"

# The trainer's libraries: headers under trainer/include, shared objects under trainer/lib.
rm -rf "$dest/trainer"
mkdir -p "$dest/trainer/include" "$dest/trainer/lib"
for h in /usr/include/CLI /usr/include/nlohmann /usr/include/turbojpeg.h /usr/include/zlib.h \
  /usr/include/zconf.h; do
  if [[ ! -e "$h" ]]; then
    echo "stage_deps.sh: $h is missing (apt-get install libcli11-dev nlohmann-json3-dev zlib1g-dev libturbojpeg0-dev)" >&2
    exit 1
  fi
  cp -r "$h" "$dest/trainer/include/"
done
for lib in libturbojpeg libz; do
  cp -P /usr/lib/x86_64-linux-gnu/$lib.so* "$dest/trainer/lib/"
done

exclude="$root/.git/info/exclude"
if [[ -d "$root/.git" ]] && ! grep -qx '/.device-deps/' "$exclude" 2>/dev/null; then
  echo '/.device-deps/' >>"$exclude"
fi
du -sh "$dest"
echo "staged into $dest; carry it: run(command='bash bench/gpu/check.sh', carry=['.device-deps'])"
