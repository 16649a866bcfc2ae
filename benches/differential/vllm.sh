#!/usr/bin/env bash
# The bigger differential matrix of vLLM's serving benchmark: every case of
# scripts/differential/vllm.sh over more releases than the pinned ones (one of each line of its
# code history in docs/formats/vllm.md), written to a scratch folder, not to the fixtures.
#
#   bash benches/differential/vllm.sh [OUT]     (default: a temporary folder; prints where)
#
# Each release runs from its sdist as the pinned ones do; the pinned fixtures are left untouched.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-$(mktemp -d)}
VERSIONS=(0.6.2 0.6.3.post1 0.6.4 0.6.6 0.7.0 0.7.3 0.8.3 0.8.5 0.9.2 0.10.1 0.11.0 0.11.1 0.13.0
    0.16.0 0.17.0 0.20.0 0.25.1 0.29.0 0.30.0 0.31.0 0.33.0 0.34.0)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# The driver writes under fixtures/differential/vllm: run it in a copy of the tree's scripts.
mkdir -p "$scratch/fixtures/differential" "$scratch/scripts"
cp -r scripts/differential scripts/fetch-model.sh "$scratch/scripts/"
cp fixtures/differential/pins.toml "$scratch/fixtures/differential/"
ln -s "$PWD/target" "$scratch/target"
ln -s "$PWD/Cargo.toml" "$scratch/Cargo.toml"
(cd "$scratch" && bash scripts/differential/vllm.sh "${VERSIONS[@]}")
mkdir -p "$OUT" && cp -r "$scratch/fixtures/differential/vllm/." "$OUT/"
for f in "$OUT"/*/*/result.json; do
    target/release/rigaudit verify --from vllm "$f" --format text >"${f%.json}.verify.txt" || true
done
echo "results and rigaudit's verdicts in $OUT"
