#!/usr/bin/env bash
# Stages what bench/gpu/check.sh needs but the GPU machine lacks, into .device-deps/ (ignored by
# git through .git/info/exclude), so a device run can carry it: `carry: [".device-deps"]`.
# Run it here, where the Debian packages are installed (apt-get install catch2). Nothing on the
# device machine can be downloaded, and it has no Catch2: without this the CUDA tests are skipped.
#
# Staged: Catch2 2.x (header-only, plus its CMake package files; well under 1 MiB).
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

exclude="$root/.git/info/exclude"
if [[ -d "$root/.git" ]] && ! grep -qx '/.device-deps/' "$exclude" 2>/dev/null; then
  echo '/.device-deps/' >>"$exclude"
fi
du -sh "$dest"
echo "staged into $dest; carry it: run(command='bash bench/gpu/check.sh', carry=['.device-deps'])"
