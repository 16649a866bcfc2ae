#!/usr/bin/env bash
# Bench rigaudit-engine against llama.cpp's server (PyPI xllamacpp) on the same
# GGUF, same machine, same threads, in one run: decode, prefill at 512 and
# 2048 tokens, total throughput at 1/2/4/8 concurrent requests.
# usage: engine/benches/engine-vs-llamacpp.sh [THREADS]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
threads="${1:-2}"
model="${RIGAUDIT_MODEL:-$("$root/scripts/fetch-model.sh")}"
python3 -c 'import xllamacpp' 2>/dev/null || python3 -m pip install --quiet xllamacpp
cargo build --release -p rigaudit-engine --manifest-path "$root/Cargo.toml" >&2
bin="${CARGO_TARGET_DIR:-$root/target}/release/rigaudit-engine"
python3 "$root/engine/benches/engine_vs_llamacpp.py" "$bin" "$model" "$threads"
