#!/usr/bin/env bash
# The pre-commit hooks (.pre-commit-hooks.yaml): from the files a commit touches, finds the
# bundles they belong to (the nearest folder above each with bundle.json), verifies each once
# with `rigaudit verify` (RIGAUDIT, else `rigaudit` on PATH), and fails when one fails. The hook
# rigaudit-verify runs it as `rigaudit __pre-commit` (src/pre_commit.rs embeds it), RIGAUDIT then
# naming that rigaudit; rigaudit-verify-installed runs this file.
#
# Paths are never options. pre-commit runs `entry ARGS... FILES...`: the hook's `args` (by
# default `["--"]`), then the file names, which anyone who commits a file chooses (a file named
# `--fail-on=never` or `--output=/tmp/x.json`). So:
# - with a `--` among the arguments, everything before the first one is the hook's options (the
#   user's `args`, which should end with `--`) and everything after it is a file;
# - without one (an older config whose `args` lack it), or when an argument before it is an
#   existing file named like an option (then that `--` is a committed file's name), only the options of ALLOWED below are
#   taken from the front, and only while the argument is not an existing file; the first other
#   argument and all after it are files;
# - each bundle goes to rigaudit after `--`, never before an option.
set -euo pipefail

rigaudit="${RIGAUDIT:-rigaudit}"
if ! command -v "$rigaudit" >/dev/null; then
    echo "rigaudit-verify: no '$rigaudit' on PATH; install it (cargo install --locked --path . in a clone of rigaudit), set RIGAUDIT, or use the hook rigaudit-verify, which pre-commit builds" >&2
    exit 2
fi

options=()
files=()

# Whether a path names something on disk (a broken link too).
exists() {
    [[ -e "$1" || -L "$1" ]]
}

# Whether one of the options taken so far is an existing file named like an option.
options_are_files() {
    local o
    for o in ${options[@]+"${options[@]}"}; do
        if [[ "$o" == -* ]] && exists "$o"; then
            return 0
        fi
    done
    return 1
}

# Splits the arguments into options and files (see above).
split_arguments() {
    local i
    for ((i = 1; i <= $#; i++)); do
        if [[ "${!i}" == "--" ]]; then
            options=("${@:1:i-1}")
            files=("${@:i+1}")
            # A `--` after a committed file named like an option is a file named `--` too.
            options_are_files || return 0
            options=()
            break
        fi
    done
    while (($#)) && ! exists "$1"; do
        case "$1" in
        --verbose | --quiet)
            options+=("$1")
            shift
            ;;
        --fail-on=error | --fail-on=warning | --fail-on=info | --fail-on=never | --policy=?*)
            options+=("$1")
            shift
            ;;
        --fail-on | --policy)
            (($# > 1)) || break
            [[ "$1" != --fail-on || "$2" =~ ^(error|warning|info|never)$ ]] || break
            options+=("$1" "$2")
            shift 2
            ;;
        *) break ;;
        esac
    done
    files=("$@")
}

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

split_arguments "$@"
declare -A seen=()
worst=0
for file in ${files[@]+"${files[@]}"}; do
    bundle="$(bundle_of "$file")"
    [[ -n "$bundle" && -z "${seen[$bundle]:-}" ]] || continue
    seen[$bundle]=1
    code=0
    "$rigaudit" verify ${options[@]+"${options[@]}"} -- "$bundle" || code=$?
    if ((code > worst)); then
        worst=$code
    fi
done
exit "$worst"
