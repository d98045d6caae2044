#!/usr/bin/env bash
# The whole check, exactly as CI runs it: install, lint, type-check, then every test.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
# The side panel (labextension/): TypeScript strict type check, then its vitest unit tests.
[ -d labextension/node_modules ] || (cd labextension && npm install --no-audit --no-fund --loglevel=error)
(cd labextension && npm test --silent)
.venv/bin/pytest -n 2 "$@"
