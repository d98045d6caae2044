#!/usr/bin/env bash
# The whole check, exactly as CI runs it: install, lint, type-check, then every test.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
.venv/bin/pytest -n 2 "$@"
