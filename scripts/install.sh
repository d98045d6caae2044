#!/usr/bin/env bash
# Installs agi-jupyter and its test tools into ./.venv (idempotent; ~15 s cold with uv), plus
# Debian's Chromium for the browser tests (Playwright drives it; it never downloads a browser)
# and Debian's PostgreSQL server for the PostgreSQL store's tests (they start their own server
# with initdb/pg_ctl in a temporary folder; the package's own cluster is not used).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v uv >/dev/null 2>&1; then
  python3 -m pip install --quiet --disable-pip-version-check uv
fi
if [ ! -x .venv/bin/python ]; then
  uv venv --quiet --python python3 .venv
fi
uv pip install --quiet --python .venv/bin/python -e '.[test]'

# The Codex CLI (sdk="codex" sessions and their tests), kept inside the venv: ~7 s, ~400 MB.
CODEX_VERSION=0.169.0
if [ "$(.venv/codex/node_modules/.bin/codex --version 2>/dev/null)" != "codex-cli $CODEX_VERSION" ]; then
  npm install --silent --no-audit --no-fund --loglevel=error --prefix .venv/codex "@openai/codex@$CODEX_VERSION"
fi

# Real ACP agents from npm (tests/sdk/test_acp_npm_agents.py runs each against a local model
# API), kept inside the venv (AGI_ACP_PREFIX: elsewhere): ~70 s cold for the three, ~450 MB;
# only the ones missing at their pinned version are installed.
ACP_PREFIX="${AGI_ACP_PREFIX:-.venv/acp}"
acp_agents=()
for pinned in @zed-industries/claude-code-acp@0.16.2 @zed-industries/codex-acp@0.16.0 @google/gemini-cli@0.61.0; do
  name="${pinned%@*}"
  if [ "$(node -p 'require(require("path").resolve(process.argv[1])).version' "$ACP_PREFIX/node_modules/$name/package.json" 2>/dev/null)" != "${pinned##*@}" ]; then
    acp_agents+=("$pinned")
  fi
done
if [ "${#acp_agents[@]}" -gt 0 ]; then
  npm install --silent --no-audit --no-fund --loglevel=error --prefix "$ACP_PREFIX" "${acp_agents[@]}"
fi

packages=()
[ -x /usr/bin/chromium ] || packages+=(chromium)
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || packages+=(postgresql)
# libcairo: CairoSVG rasterises SVG cell outputs for the model (agi_jupyter/notebook/images.py).
compgen -G "/usr/lib/*/libcairo.so.2" >/dev/null || packages+=(libcairo2)
if [ "${#packages[@]}" -gt 0 ] && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian ${packages[*]} for the browser and PostgreSQL tests..." >&2
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >/dev/null
fi

# Real model servers — llama.cpp's `llama-server` and llama-cpp-python's server, on one build of
# llama.cpp's shared libraries — and a real tiny model (SmolLM2-135M-Instruct) for
# tests/realserver and benchmarks/paced_stream.py: built once into ~/.cache/agi-jupyter/
# (23 min of CPU: ~12 min on 2 idle cores; a no-op when cached). Needs cmake and g++.
bash scripts/llama_server.sh
