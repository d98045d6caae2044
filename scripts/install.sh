#!/usr/bin/env bash
# Installs agi-jupyter and its test tools into ./.venv (idempotent; ~15 s cold with uv), plus
# Debian's Chromium for the browser tests (Playwright drives it; it never downloads a browser).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v uv >/dev/null 2>&1; then
  python3 -m pip install --quiet --disable-pip-version-check uv
fi
if [ ! -x .venv/bin/python ]; then
  uv venv --quiet --python python3 .venv
fi
uv pip install --quiet --python .venv/bin/python -e '.[test]'

if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian chromium for the browser tests..." >&2
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
