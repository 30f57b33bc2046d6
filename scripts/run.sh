#!/usr/bin/env bash
# Installs what is missing, builds (Release, incremental) and starts the desktop app; arguments go
# to the app (e.g. --config underflow --start). Without a display, it runs under xvfb-run.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
mpx_install_packages
mpx_build
app="$MPX_BUILD_DIR/bin/mpx"
if [ ! -x "$app" ]; then
  echo "mpx: the desktop app was not built (Qt missing?); showing the CLI instead" >&2
  exec "$MPX_BUILD_DIR/bin/mpx-cli" --help
fi
if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ] && [ -z "${QT_QPA_PLATFORM:-}" ]; then
  echo "mpx: no display found; starting under xvfb-run (nothing will be visible)" >&2
  exec xvfb-run -a "$app" "$@"
fi
exec "$app" "$@"
