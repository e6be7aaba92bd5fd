#!/usr/bin/env bash
# Installs everything robustlab needs (README set-up command 1):
#   - Debian's wordnet-base (WordNet 3.0, for the word-level text perturbations) when apt-get is usable;
#     without it those perturbations are listed as unavailable with the reason, nothing else changes
#   - the Python packages in requirements.txt (robustlab itself in editable mode)
#   - imagecorruptions' frost textures (the package is installed without its dependencies: only its
#     texture files are used, never its code)
# Set ROBUSTLAB_BROWSER=1 to also install Debian's chromium for the end-to-end browser tests.
set -euo pipefail
cd "$(dirname "$0")"
SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
pkgs=()
[ -d /usr/share/wordnet ] || pkgs+=(wordnet-base)
if [ "${ROBUSTLAB_BROWSER:-0}" = "1" ] && ! command -v chromium >/dev/null 2>&1; then pkgs+=(chromium); fi
if [ ${#pkgs[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1 && { [ "$(id -u)" = "0" ] || [ -n "$SUDO" ]; }; then
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${pkgs[@]}" >/dev/null
  else
    echo "setup.sh: could not install ${pkgs[*]} (no apt-get/root); the features that need them say so" >&2
  fi
fi
python -m pip install -q -r requirements.txt
python -m pip install -q --no-deps imagecorruptions==1.1.2
echo "robustlab is installed: run 'streamlit run app.py'"
