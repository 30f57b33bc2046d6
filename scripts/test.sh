#!/usr/bin/env bash
# Installs what is missing, builds (Release, incremental) and runs every CTest suite, the exhaustive
# format sweeps included, with Qt's offscreen platform. Extra arguments go to ctest (e.g. -L unit).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
mpx_install_packages
mpx_build
export QT_QPA_PLATFORM=offscreen
cd "$MPX_BUILD_DIR"
ctest --output-on-failure --no-tests=error --timeout 1800 -j "$(nproc)" "$@" || mpx_die "tests failed (see ctest's output above)"
