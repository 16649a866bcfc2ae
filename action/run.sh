#!/usr/bin/env bash
# The GitHub Action's step (action.yml): verifies each path given, one per line, with
# `rigaudit verify --format github` (annotations on standard output, the Markdown report added
# to $GITHUB_STEP_SUMMARY), writes a SARIF log per path when asked, sets the outputs verdict,
# errors and warnings in $GITHUB_OUTPUT, and exits as rigaudit does: 0 pass, 1 fail (by
# --fail-on), 2 when a path could not be verified (the worst over the paths).
#
# Inputs, as variables: INPUT_PATHS, INPUT_BINARY (the rigaudit to run: the `binary` input, or
# what action/install.sh installed or built in the steps before), INPUT_FAIL_ON, INPUT_SARIF (a
# folder).
set -euo pipefail

# Text for a workflow command's message (`::error title=...::MESSAGE`), escaped as the runner
# unescapes it: `%` as %25, CR as %0D, LF as %0A, so that a path cannot end the command's line
# and write a command of its own on the next; the other control characters (C0, DEL, C1), the
# bidirectional marks and overrides and the Unicode line separators are shown as \xHH or \u{HHHH}
# so that nothing can draw on the log.
gh_escape() {
    local LC_ALL=C
    local s="$1" out="" c three i n
    n=${#s}
    for ((i = 0; i < n; i++)); do
        c="${s:i:1}"
        three="${s:i:3}"
        case "$c" in
        %) out+="%25" ;;
        $'\r') out+="%0D" ;;
        $'\n') out+="%0A" ;;
        [[:cntrl:]]) printf -v c '\\x%02X' "'$c" && out+="$c" ;;
        $'\xc2')
            if [[ "${s:i+1:1}" > $'\x7f' && "${s:i+1:1}" < $'\xa0' ]]; then
                printf -v c '\\u{%x}' "'${s:i+1:1}" && out+="$c" && i=$((i + 1))
            else
                out+="$c"
            fi
            ;;
        $'\xe2')
            case "$three" in
            $'\xe2\x80'[$'\x8e'$'\x8f'$'\xa8'-$'\xae'] | $'\xe2\x81'[$'\xa6'-$'\xa9'])
                printf -v c '\\u{%x}' $((0x2000 + ($(printf '%d' "'${three:1:1}") - 0x80) * 64 + $(printf '%d' "'${three:2:1}") - 0x80))
                out+="$c"
                i=$((i + 2))
                ;;
            *) out+="$c" ;;
            esac
            ;;
        *) out+="$c" ;;
        esac
    done
    printf '%s' "$out"
}

# An error annotation of the action itself (its message escaped), and exit 2.
fail() {
    echo "::error title=rigaudit action::$(gh_escape "$1")"
    exit 2
}

# The rigaudit to run: the binary given, or the one action/install.sh installed or built.
install() {
    [[ -n "${INPUT_BINARY:-}" ]] || fail "binary: no rigaudit given (action.yml's install steps give the one they installed or built)"
    [[ -x "$INPUT_BINARY" ]] || fail "binary: $INPUT_BINARY is not an executable file"
    RIGAUDIT="$INPUT_BINARY"
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
        local args=(verify --format github --fail-on "$fail_on"
            --output "json:$work/$n.json")
        [[ -z "${INPUT_SARIF:-}" ]] || args+=(--output "sarif:$INPUT_SARIF/rigaudit-$n.sarif")
        # The path after `--`: a path is never an option, whatever its name.
        args+=(-- "$path")
        code=0
        "$RIGAUDIT" "${args[@]}" || code=$?
        if [[ -f "$work/$n.json" ]]; then
            read -r e w < <(counts "$work/$n.json")
            errors=$((errors + e))
            warnings=$((warnings + w))
        else
            echo "::error title=rigaudit::$(gh_escape "$path"): could not be verified (exit $code); see the log above"
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
