#!/usr/bin/env bash
# Installs agi-jupyter into ./.venv, then asks one question with the `agi` command line and
# streams the answer. With no provider key in the environment it uses the offline fake model
# (and says so on stderr).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install.sh
exec .venv/bin/agi "${@:-What can you do?}"
