#!/usr/bin/env bash
# The project's test command: fetches the test data the tests need (cached outside the repo, under
# ${RIGAUDIT_CACHE:-$HOME/.cache/rigaudit}), then runs every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/fetch-nccl.sh >/dev/null
bash scripts/fetch-model.sh >/dev/null
cargo test --workspace "$@"
