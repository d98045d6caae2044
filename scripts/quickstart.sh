#!/usr/bin/env bash
# Installs agi-jupyter into ./.venv, then asks one question and streams the answer.
# With no provider key in the environment it uses the offline fake model (and says so).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install.sh
exec .venv/bin/python -m agi_jupyter.demo "${@:-What can you do?}"
