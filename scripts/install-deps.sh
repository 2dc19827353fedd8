#!/usr/bin/env bash
# Installs the Debian packages ember's jobs need: `scripts/install-deps.sh main` (build the
# quickstart) or `scripts/install-deps.sh test` (everything, the default). Skips apt-get when all
# are present.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

case "${1:-test}" in
  main) ember_apt_install "${EMBER_MAIN_PACKAGES[@]}" ;;
  test) ember_apt_install "${EMBER_TEST_PACKAGES[@]}" ;;
  *) echo "usage: $0 [main|test]" >&2; exit 2 ;;
esac
