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
apt-get install -y -qq "${packages[@]}"
