#!/usr/bin/env bash
# The pre-commit hook (.pre-commit-hooks.yaml): from the files a commit touches, finds the
# bundles they belong to (the nearest folder above each with bundle.json), verifies each once
# with `rigaudit verify` (RIGAUDIT, else `rigaudit` on PATH; extra arguments from the hook's
# `args` before the files, such as --fail-on warning), and fails when one fails.
set -euo pipefail

rigaudit="${RIGAUDIT:-rigaudit}"
if ! command -v "$rigaudit" >/dev/null; then
    echo "rigaudit-verify: no '$rigaudit' on PATH; install it (pip install rigaudit) or set RIGAUDIT" >&2
    exit 2
fi

options=()
while (($#)) && [[ "$1" == --* ]]; do
    options+=("$1")
    if [[ "$1" != *=* && $# -gt 1 ]]; then
        options+=("$2")
        shift
    fi
    shift
done

# The bundle folder holding a file: the nearest folder at or above it with bundle.json.
bundle_of() {
    local dir
    dir="$(dirname -- "$1")"
    while :; do
        if [[ -f "$dir/bundle.json" ]]; then
            printf '%s\n' "$dir"
            return
        fi
        [[ "$dir" == "." || "$dir" == "/" ]] && return
        dir="$(dirname -- "$dir")"
    done
}

declare -A seen=()
worst=0
for file in "$@"; do
    bundle="$(bundle_of "$file")"
    [[ -n "$bundle" && -z "${seen[$bundle]:-}" ]] || continue
    seen[$bundle]=1
    code=0
    "$rigaudit" verify "$bundle" "${options[@]}" || code=$?
    if ((code > worst)); then
        worst=$code
    fi
done
exit "$worst"
