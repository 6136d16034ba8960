#!/usr/bin/env bash
# Install the Debian packages gym_gui needs when they are missing (only as root; otherwise say what to run).
set -euo pipefail

packages=()
python_bin=$(command -v python3.11 || command -v python3 || true)
if [ -z "$python_bin" ]; then
  packages+=(python3 python3-venv python3-dev)
elif ! "$python_bin" -c "import venv, ensurepip" >/dev/null 2>&1; then
  packages+=(python3-venv)
fi
command -v gcc >/dev/null 2>&1 || packages+=(build-essential)

# Qt's xcb platform (a real window), a virtual X server (screenshots, machines without a screen)
# and libpulse0, which QtMultimedia links (in-window video playback); Mesa's EGL and drivers render
# MuJoCo headless (MUJOCO_GL=egl) for CleanRL's videos and evaluations. Prosody is the external XMPP
# server the Spade BDI worker's tests start on loopback (its Debian service is not used); PostgreSQL 15
# holds the studies the sweep tests share between two daemons (started in a temporary directory).
for pkg in xvfb xauth libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-image0 libxcb-render-util0 \
           libxcb-randr0 libxcb-shape0 libxcb-xinerama0 libxcb-xkb1 libxkbcommon-x11-0 libegl1 libegl-mesa0 libgl1-mesa-dri libgl1 \
           libfontconfig1 libdbus-1-3 libpulse0 prosody postgresql-15; do
  dpkg -s "$pkg" >/dev/null 2>&1 || packages+=("$pkg")
done

if [ ${#packages[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "gym_gui needs these Debian packages: ${packages[*]}" >&2
  echo "install them with: sudo apt-get install -y ${packages[*]}" >&2
  exit 1
fi
echo "installing Debian packages: ${packages[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${packages[@]}"
