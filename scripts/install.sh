#!/usr/bin/env bash
# Installs agi-jupyter and its test tools into ./.venv (idempotent; ~15 s cold with uv).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v uv >/dev/null 2>&1; then
  python3 -m pip install --quiet --disable-pip-version-check uv
fi
if [ ! -x .venv/bin/python ]; then
  uv venv --quiet --python python3 .venv
fi
uv pip install --quiet --python .venv/bin/python -e '.[test]'
