#!/usr/bin/env bash
# The main job only: installs agi-jupyter and its runtime dependencies into ./.venv (no test
# tools, no browser, no Codex CLI, and the side panel is not built; `scripts/install.sh` adds all
# of that), then asks one question with the `agi` command line and streams the answer.
# With no provider key in the environment the answer comes from the offline demo model
# (`fake:demo`, plan agent): it calls a tool and says where the run is recorded.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v uv >/dev/null 2>&1; then
  python3 -m pip install --quiet --disable-pip-version-check uv
fi
if [ ! -x .venv/bin/python ]; then
  uv venv --quiet --python python3 .venv
fi
# SKIP_JUPYTER_BUILDER: the command line needs no JupyterLab panel, so node is not needed either.
SKIP_JUPYTER_BUILDER=1 uv pip install --quiet --python .venv/bin/python -e .

keys="${OPENAI_API_KEY:-}${ANTHROPIC_API_KEY:-}${GEMINI_API_KEY:-}${GOOGLE_API_KEY:-}${AGI_MODEL:-}"
credentials="${AGI_CONFIG_DIR:-${XDG_CONFIG_HOME:-$HOME/.config}/agi}/credentials.json"
if [ -z "$keys" ] && [ ! -f "$credentials" ]; then
  export AGI_MODEL=fake:demo AGI_AGENT="${AGI_AGENT:-plan}"
fi
exec .venv/bin/agi "${@:-What can you do?}"
