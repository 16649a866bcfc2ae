#!/usr/bin/env bash
# axe-core, Deque's accessibility rules engine (MPL-2.0), at the version scripts/a11y/package-lock.json
# pins, into DIR (default ${CARGO_TARGET_DIR:-target}/tmp/axe, beside the tests' venvs), once:
# `npm ci` there, or without npm the registry's tarball checked against the lockfile's sha512.
# Prints the path of axe.min.js. scripts/a11y.py runs it in Chromium on the HTML reports.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-${CARGO_TARGET_DIR:-target}/tmp/axe}"
js="$dir/node_modules/axe-core/axe.min.js"
if [ -f "$js" ] && cmp -s scripts/a11y/package-lock.json "$dir/package-lock.json"; then
    realpath "$js"
    exit 0
fi
rm -rf "$dir"
mkdir -p "$dir"
cp scripts/a11y/package.json scripts/a11y/package-lock.json "$dir/"
if command -v npm >/dev/null 2>&1; then
    (cd "$dir" && npm ci --no-audit --no-fund --silent) >&2
else
    python3 - "$dir" <<'PY'
import base64, hashlib, io, json, sys, tarfile, urllib.request
d = sys.argv[1]
entry = json.load(open(d + "/package-lock.json"))["packages"]["node_modules/axe-core"]
version, integrity = entry["version"], entry["integrity"]
url = entry.get("resolved") or f"https://registry.npmjs.org/axe-core/-/axe-core-{version}.tgz"
data = urllib.request.urlopen(url, timeout=60).read()
algo, want = integrity.split("-", 1)
got = base64.b64encode(hashlib.new(algo, data).digest()).decode()
if got != want:
    sys.exit(f"fetch-axe: {url}: {algo} {got}, the lockfile says {want}")
with tarfile.open(fileobj=io.BytesIO(data)) as t:
    for m in t.getmembers():
        if m.isfile() and m.name.startswith("package/") and ".." not in m.name:
            m.name = "node_modules/axe-core/" + m.name[len("package/"):]
            t.extract(m, d)
PY
fi
realpath "$js"
