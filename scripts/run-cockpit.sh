#!/usr/bin/env bash
# Open the cockpit window; on a machine without a screen, inside a virtual X server.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ]; then
  exec .venv/bin/gym-gui
fi
echo "no screen (DISPLAY unset): opening the cockpit inside Xvfb"
exec xvfb-run -a -s "-screen 0 1600x1000x24" .venv/bin/gym-gui
