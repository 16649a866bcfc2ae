#!/usr/bin/env bash
# The GitHub Action's step (action.yml): verifies each path given, one per line, with
# `rigaudit verify --format github` (annotations on standard output, the Markdown report added
# to $GITHUB_STEP_SUMMARY), writes a SARIF log per path when asked, sets the outputs verdict,
# qualified-verdict, errors and warnings in $GITHUB_OUTPUT, and exits as rigaudit does. Each
# path's verdict is read from its JSON report, not from the exit code: pass, fail (by --fail-on),
# incomplete (the report says not everything could be checked), or error when there is no report
# (rigaudit could not run on the path: a typo, a path that cannot be read). The step's verdict is
# the worst over the paths (error, then incomplete, then fail, then pass) and its exit code that
# verdict's: 0 pass, 1 fail, 2 error, 3 incomplete.
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

# What a JSON report says: "VERDICT ERRORS WARNINGS" on the first line, the verdict with what it
# settled (`PASS, summary only: ...`, as the text report's first line) on the second, its
# control characters as spaces.
summary() {
    python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
c, v, q = r["counts"], r["verdict"], r.get("verdict_qualifier")
print(v, c["error"], c["warning"])
line = v.upper() + ("" if q is None else (": " if v == "incomplete" else ", ") + q)
print(line.replace("\n", " ").replace("\r", " "))' "$1"
}

# One line of the multi-line output qualified-verdict, "PATH: VERDICT, QUALIFIER": controls, the
# bidirectional marks and the Unicode line separators shown as \xHH or \u{HHHH} (so the line stays
# one line and draws nothing), and a `\` before a line that would start with `::` (so a workflow
# that echoes the output runs no command a path wrote).
output_line() {
    python3 -c 'import sys
def shown(ch):
    o = ord(ch)
    if o < 32 or o == 127:
        return "\\x%02X" % o
    if 0xDC80 <= o <= 0xDCFF:
        return "\\x%02X" % (o - 0xDC00)
    if 127 < o < 160 or o in (0x200E, 0x200F, 0x2028, 0x2029) or 0x202A <= o <= 0x202E or 0x2066 <= o <= 0x2069:
        return "\\u{%x}" % o
    return ch
line = "".join(shown(ch) for ch in sys.argv[1] + ": " + sys.argv[2])
if line.lstrip().startswith("::"):
    line = "\\" + line.lstrip()
print(line)' "$1" "$2"
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
    # Verdicts by rank: the worst over the paths is the step's.
    local verdicts=(pass fail incomplete error) codes=(0 1 3 2)
    local worst=0 errors=0 warnings=0 n=0 path code rank qualified="" v e w q
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
            { read -r v e w && IFS= read -r q; } < <(summary "$work/$n.json")
            errors=$((errors + e))
            warnings=$((warnings + w))
        else
            echo "::error title=rigaudit::$(gh_escape "$path"): could not be verified (exit $code); see the log above"
            v=error
            q="ERROR: rigaudit could not run on this path (exit $code)"
        fi
        for rank in 0 1 2 3; do
            [[ "${verdicts[$rank]}" != "$v" ]] || break
        done
        ((rank <= worst)) || worst=$rank
        qualified+="$(output_line "$path" "$q")"$'\n'
    done <<<"${INPUT_PATHS:-}"
    ((n > 0)) || fail "paths: no path given (one per line)"
    local delimiter
    delimiter="rigaudit-$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
    {
        echo "verdict=${verdicts[$worst]}"
        echo "errors=$errors"
        echo "warnings=$warnings"
        echo "qualified-verdict<<$delimiter"
        printf '%s' "$qualified"
        echo "$delimiter"
    } >>"$GITHUB_OUTPUT"
    rm -rf "$work"
    exit "${codes[$worst]}"
}

main
