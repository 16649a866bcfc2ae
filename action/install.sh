#!/usr/bin/env bash
# The GitHub Action's install steps (action.yml): which rigaudit the verify step (action/run.sh)
# runs, written to $GITHUB_OUTPUT.
#
#   install.sh          the first step: `binary=PATH` when `binary` is given, or when `version` is
#                       given and pip installs rigaudit==VERSION from the package index into a
#                       virtual environment under $RUNNER_TEMP; else `build=true` with the folder
#                       to build in and the keys actions/cache keeps it under (`target`,
#                       `cache-key`, `cache-restore`): the default (`version` empty), and the
#                       fallback when the index lacks the version or cannot be reached (nothing is
#                       published yet), with a notice saying so.
#   install.sh build    the step after actions/cache: builds rigaudit from the Action's own
#                       checkout ($GITHUB_ACTION_PATH) with `cargo build --release --locked` into
#                       that folder (a cached build of the same source is used as it is), and
#                       writes `binary=PATH`.
#
# The build folder (~/.cache/rigaudit-action/target, with ~/.cargo/registry) is cached by
# Cargo.lock's sha256, and the exact key adds the sha256 of the sources: a job whose Action is
# at the same commit finds the binary ready; one at another commit with the same lock file
# rebuilds only rigaudit's own crates. Inputs, as variables: INPUT_BINARY, INPUT_VERSION.
set -euo pipefail

# An error annotation of the action itself, and exit 2. The texts here come from the inputs and
# from pip; `%`, CR and LF are escaped as the runner unescapes them, so none ends the command.
fail() {
    local m="${1//%/%25}"
    m="${m//$'\r'/%0D}"
    echo "::error title=rigaudit action::${m//$'\n'/%0A}"
    exit 2
}

notice() {
    local m="${1//%/%25}"
    m="${m//$'\r'/%0D}"
    echo "::notice title=rigaudit action::${m//$'\n'/%0A}"
}

# The Action's checkout, the folder it is built in, and the file holding the hash of the source
# a finished build was made from.
source_dir() {
    : "${GITHUB_ACTION_PATH:?the Actions runner sets GITHUB_ACTION_PATH}"
    printf '%s' "$GITHUB_ACTION_PATH"
}
TARGET="${HOME:?}/.cache/rigaudit-action/target"

# The sha256 of the Action's source: every file cargo builds rigaudit from (the crates' sources,
# the JSON schemas and the hook's script the binary embeds), by path.
source_hash() {
    (cd "$(source_dir)" && find Cargo.toml Cargo.lock src audit engine schemas action/pre-commit.sh -type f -print0 |
        LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-64)
}

# Writes the plan of a build: where, and under which keys actions/cache keeps it.
plan_build() {
    local lock os
    lock="$(sha256sum "$(source_dir)/Cargo.lock" | cut -c1-64)"
    os="${RUNNER_OS:-Linux}-${RUNNER_ARCH:-X64}"
    {
        echo "build=true"
        echo "target=$TARGET"
        echo "cache-key=rigaudit-build-$os-lock-$lock-src-$(source_hash)"
        echo "cache-restore=rigaudit-build-$os-lock-$lock-"
    } >>"$GITHUB_OUTPUT"
}

# The first step: the binary given, the version from the index, or the plan of a build.
resolve() {
    if [[ -n "${INPUT_BINARY:-}" ]]; then
        [[ -x "$INPUT_BINARY" && ! -d "$INPUT_BINARY" ]] ||
            fail "binary: $INPUT_BINARY is not an executable file"
        echo "binary=$INPUT_BINARY" >>"$GITHUB_OUTPUT"
        return
    fi
    local version="${INPUT_VERSION:-}"
    if [[ -z "$version" ]]; then
        echo "rigaudit: building it from the Action's checkout ($(source_dir))"
        plan_build
        return
    fi
    [[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+([a-z0-9.+-]*)$ ]] ||
        fail "version: '$version' is not a pinned version such as 0.1.0 (or leave it empty to build from the Action's checkout, or give binary)"
    local venv="${RUNNER_TEMP:-/tmp}/rigaudit-venv" said
    if said="$(python3 -m venv "$venv" 2>&1 &&
        "$venv/bin/python" -m pip install --quiet "rigaudit==$version" 2>&1)"; then
        echo "binary=$venv/bin/rigaudit" >>"$GITHUB_OUTPUT"
        return
    fi
    notice "rigaudit==$version could not be installed from the package index (${said##*$'\n'}); building it from the Action's checkout instead"
    plan_build
}

# The step after actions/cache: the build, unless the cached one is of this very source.
build() {
    local src hash bin stamp
    src="$(source_dir)"
    hash="$(source_hash)"
    bin="$TARGET/rigaudit-action/rigaudit"
    stamp="$TARGET/rigaudit-action/source.sha256"
    if [[ -x "$bin" && "$(cat "$stamp" 2>/dev/null)" == "$hash" ]]; then
        echo "rigaudit: the cached build of this source ($hash)"
    else
        command -v cargo >/dev/null 2>&1 ||
            fail "no cargo on PATH: building rigaudit needs Rust 1.89 or newer (GitHub's Ubuntu runners have it; elsewhere add a Rust toolchain step first), or give binary"
        (cd "$src" && CARGO_TARGET_DIR="$TARGET" cargo build --release --locked --bin rigaudit) ||
            fail "cargo build --release --locked of $src failed (see the log above)"
        mkdir -p "$(dirname "$bin")"
        cp "$TARGET/release/rigaudit" "$bin.tmp"
        mv "$bin.tmp" "$bin"
        echo "$hash" >"$stamp"
    fi
    echo "binary=$bin" >>"$GITHUB_OUTPUT"
}

: "${GITHUB_OUTPUT:?the Actions runner sets GITHUB_OUTPUT}"
case "${1:-}" in
"") resolve ;;
build) build ;;
*) fail "install.sh: unknown step '$1'" ;;
esac
