#!/usr/bin/env bash
# Fetches the real NCCL library for rigaudit's rehash tests, once, into a cache outside the repo,
# and prints the path of libnccl.so.2. Idempotent: a second run prints the cached path at once.
#
# Source: the PyPI wheel nvidia-nccl-cu12 (ships nvidia/nccl/lib/libnccl.so.2; querying its version
# needs no GPU, libcuda or libcudart). Only the library is unpacked; the wheel is deleted after.
#
# Env: RIGAUDIT_CACHE (default $HOME/.cache/rigaudit), NCCL_WHEEL_VERSION (default: pinned below).
set -euo pipefail

cache="${RIGAUDIT_CACHE:-$HOME/.cache/rigaudit}/nccl"
version="${NCCL_WHEEL_VERSION:-2.32.3}"
lib="$cache/$version/libnccl.so.2"

if [ -s "$lib" ]; then
  echo "$lib"
  exit 0
fi

mkdir -p "$cache/$version"
tmp="$(mktemp -d "$cache/dl.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

python3 -m pip download --quiet --no-deps --only-binary=:all: \
  -d "$tmp" "nvidia-nccl-cu12==$version" >&2
wheel="$(ls "$tmp"/nvidia_nccl_cu12-*.whl 2>/dev/null | head -n1)"
if [ -z "$wheel" ]; then
  echo "fetch-nccl: pip downloaded no nvidia-nccl-cu12 wheel into $tmp" >&2
  exit 1
fi
python3 - "$wheel" "$tmp/libnccl.so.2" <<'PY'
import shutil, sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    name = "nvidia/nccl/lib/libnccl.so.2"
    with z.open(name) as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
PY
mv "$tmp/libnccl.so.2" "$lib"
echo "$lib"
