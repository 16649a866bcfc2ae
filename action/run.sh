#!/usr/bin/env bash
# The GitHub Action's step (action.yml): verifies each path given, one per line, with
# `rigaudit verify --format github` (annotations on standard output, the Markdown report added
# to $GITHUB_STEP_SUMMARY), writes a SARIF log per path when asked, sets the outputs verdict,
# errors and warnings in $GITHUB_OUTPUT, and exits as rigaudit does: 0 pass, 1 fail (by
# --fail-on), 2 when a path could not be verified (the worst over the paths).
#
# Inputs, as variables: INPUT_PATHS, INPUT_VERSION (installed from PyPI into a virtual
# environment under $RUNNER_TEMP), INPUT_BINARY (used instead when given), INPUT_FAIL_ON,
# INPUT_SARIF (a folder).
set -euo pipefail

fail() {
    echo "::error title=rigaudit action::$1"
    exit 2
}

# The rigaudit to run: the binary given, or the pinned version from PyPI.
install() {
    if [[ -n "${INPUT_BINARY:-}" ]]; then
        [[ -x "$INPUT_BINARY" ]] || fail "binary: $INPUT_BINARY is not an executable file"
        RIGAUDIT="$INPUT_BINARY"
        return
    fi
    local version="${INPUT_VERSION:-}"
    [[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+([a-z0-9.+-]*)$ ]] \
        || fail "version: '$version' is not a pinned version such as 0.1.0 (or give binary)"
    local venv="${RUNNER_TEMP:-/tmp}/rigaudit-venv"
    python3 -m venv "$venv" || fail "cannot make a Python virtual environment in $venv"
    "$venv/bin/python" -m pip install --quiet "rigaudit==$version" \
        || fail "pip could not install rigaudit==$version"
    RIGAUDIT="$venv/bin/rigaudit"
}

# The severity counts of a JSON report: "ERRORS WARNINGS".
counts() {
    python3 -c 'import json, sys
c = json.load(open(sys.argv[1]))["counts"]
print(c["error"], c["warning"])' "$1"
}

main() {
    : "${GITHUB_OUTPUT:?the Actions runner sets GITHUB_OUTPUT}"
    local fail_on="${INPUT_FAIL_ON:-error}"
    case "$fail_on" in error | warning | info | never) ;; *)
        fail "fail-on: '$fail_on' is none of error, warning, info, never" ;;
    esac
    install
    local work
    work="$(mktemp -d "${RUNNER_TEMP:-/tmp}/rigaudit.XXXXXX")"
    [[ -z "${INPUT_SARIF:-}" ]] || mkdir -p "$INPUT_SARIF"
    local worst=0 errors=0 warnings=0 n=0 path code
    while IFS= read -r path || [[ -n "$path" ]]; do
        path="${path#"${path%%[![:space:]]*}"}"
        path="${path%"${path##*[![:space:]]}"}"
        [[ -n "$path" ]] || continue
        n=$((n + 1))
        local args=(verify "$path" --format github --fail-on "$fail_on"
            --output "json:$work/$n.json")
        [[ -z "${INPUT_SARIF:-}" ]] || args+=(--output "sarif:$INPUT_SARIF/rigaudit-$n.sarif")
        code=0
        "$RIGAUDIT" "${args[@]}" || code=$?
        if [[ -f "$work/$n.json" ]]; then
            read -r e w < <(counts "$work/$n.json")
            errors=$((errors + e))
            warnings=$((warnings + w))
        else
            echo "::error title=rigaudit::$path: could not be verified (exit $code); see the log above"
            code=2
        fi
        if ((code > 1)); then
            worst=2
        elif ((code == 1 && worst == 0)); then
            worst=1
        fi
    done <<<"${INPUT_PATHS:-}"
    ((n > 0)) || fail "paths: no path given (one per line)"
    local verdict=(pass fail incomplete)
    {
        echo "verdict=${verdict[$worst]}"
        echo "errors=$errors"
        echo "warnings=$warnings"
    } >>"$GITHUB_OUTPUT"
    rm -rf "$work"
    exit "$worst"
}

main
