#!/usr/bin/env bash
# Fidelity of rigaudit-engine to llama.cpp (PyPI xllamacpp) on the same GGUF:
# perplexity of a fixed text, top-1 agreement, KL of the next-token
# distributions, and greedy chat replies compared at their first difference.
# Speed does not matter here, so the dev-profile binary (engine built at
# opt-level 3) is used. usage: engine/benches/fidelity.sh [THREADS] [MAX_TOKENS]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
model="${RIGAUDIT_MODEL:-$("$root/scripts/fetch-model.sh")}"
python3 -c 'import xllamacpp' 2>/dev/null || python3 -m pip install --quiet xllamacpp
cargo build -p rigaudit-engine --manifest-path "$root/Cargo.toml" >&2
bin="${CARGO_TARGET_DIR:-$root/target}/debug/rigaudit-engine"
python3 "$root/engine/benches/fidelity.py" "$bin" "$model" "${1:-2}" ${2:-} 2>/dev/null
