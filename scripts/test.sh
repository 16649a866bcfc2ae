#!/usr/bin/env bash
# The project's test command: fetches the test data the tests need (cached outside the repo, under
# ${RIGAUDIT_CACHE:-$HOME/.cache/rigaudit}), then runs every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
START=$SECONDS
trap 'echo "== test command took $((SECONDS - START)) s (the budget: 20 minutes on 2 cores)"' EXIT
bash scripts/fetch-nccl.sh >/dev/null
bash scripts/fetch-model.sh >/dev/null
# llama.cpp's server, the second real engine tests/it/llamacpp.rs replays against.
python3 -c "import xllamacpp" 2>/dev/null ||
    python3 -m pip install --quiet --disable-pip-version-check "xllamacpp==2026.10.11549"
# Python's xmlschema validates the JUnit reports against tests/schemas/junit.xsd (tests/it/reports.rs).
python3 -c "import xmlschema" 2>/dev/null ||
    python3 -m pip install --quiet --disable-pip-version-check "xmlschema==4.1.0"
# Pinned tools from PyPI, each in a venv under the target folder's tmp/ (the tests'
# CARGO_TARGET_TMPDIR) with a marker of what it holds, which the tests reuse (tests/it/common/venv.rs
# makes the same when missing): maturin builds the wheel tests/it/wheel.rs installs (with the release
# profile; RIGAUDIT_WHEEL_PROFILE=dev reuses the tests' debug build in a cold target folder); in-toto
# verifies the signed attestation (tests/it/attest.rs).
venv_with() {
    local dir="${CARGO_TARGET_DIR:-target}/tmp/$1" want
    shift
    want=$(printf '%s\n' "$@")
    want=${want%$'\n'}
    [ "$(cat "$dir/rigaudit-requirements.txt" 2>/dev/null)" = "$want" ] && return 0
    rm -rf "$dir"
    python3 -m venv "$dir"
    "$dir/bin/python" -m pip install --quiet --disable-pip-version-check "$@"
    printf '%s' "$want" >"$dir/rigaudit-requirements.txt"
}
venv_with maturin-venv "maturin==1.16.0"
# The test command builds the wheel from the debug build the tests made (seconds, no second
# target/ of a release build: on a fresh 2-core machine that is a whole release build, longer than
# the suite and twice its disk); `RIGAUDIT_WHEEL_PROFILE=release cargo test --test it wheel::` builds what
# `pip install` users get and checks its size bound.
export RIGAUDIT_WHEEL_PROFILE="${RIGAUDIT_WHEEL_PROFILE:-dev}"
venv_with intoto-venv "in-toto==3.1.0"
# NVRTC from PyPI (no GPU needed): engine/tests/it/gpu.rs compiles every CUDA kernel to PTX with it,
# so a kernel that does not compile never reaches a GPU; the engine loads it from RIGAUDIT_NVRTC.
venv_with nvrtc-venv "nvidia-cuda-nvrtc==13.0.88"
RIGAUDIT_NVRTC=$(echo "${CARGO_TARGET_DIR:-target}"/tmp/nvrtc-venv/lib/python3*/site-packages/nvidia/cu13/lib/libnvrtc.so.13)
export RIGAUDIT_NVRTC="$(realpath "$RIGAUDIT_NVRTC")"
# tests/it/import.rs needs none of the tools whose files it reads: their fixtures are committed
# (fixtures/imports/, made by scripts/make-import-fixtures.sh, which installs each tool itself).
# Debian's Chromium renders the HTML report in tests/it/reports.rs (a screenshot whose plots are checked).
if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
        echo "scripts/test.sh: the HTML report test needs Chromium: apt-get install chromium" >&2
        exit 1
    fi
fi
# axe-core (pinned by scripts/a11y/package-lock.json; one npm package, 3 MB) under the target
# folder's tmp/: tests/it/reports.rs runs it in Chromium on the HTML reports (WCAG A/AA rules).
bash scripts/fetch-axe.sh "${CARGO_TARGET_DIR:-target}/tmp/axe" >/dev/null
# OpenSSH's server and client: tests/it/ssh.rs starts an sshd of its own on a loopback port (its own
# keys and config; no system service is started) and replays ranks on it as on another box.
if ! [ -x /usr/sbin/sshd ] || ! command -v ssh >/dev/null 2>&1 || ! command -v ssh-keygen >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server openssh-client >/dev/null
    else
        echo "scripts/test.sh: tests/it/ssh.rs needs OpenSSH: apt-get install openssh-server openssh-client" >&2
        exit 1
    fi
fi
# fish and tcsh: the login-shell probe's unit test (src/ssh/login_shell.rs) shows that a box
# whose login shell is one of them is refused; with them installed the test requires them.
if ! command -v fish >/dev/null 2>&1 || ! command -v tcsh >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fish tcsh >/dev/null
    else
        echo "scripts/test.sh: the login-shell probe's test needs fish and tcsh: apt-get install fish tcsh" >&2
        exit 1
    fi
fi
export RIGAUDIT_REQUIRE_SHELLS=1
# With sshd installed, a test that cannot start it fails instead of skipping.
export RIGAUDIT_REQUIRE_SSHD=1
# A real two-node Slurm on this machine (scripts/slurm-cluster.sh): tests/it/slurm.rs starts its own
# cluster in a folder of its own; this start makes sure the packages are there and the cluster
# can start, and it is stopped again when this script ends.
bash scripts/slurm-cluster.sh start >/dev/null
trap 'bash scripts/slurm-cluster.sh stop; echo "== test command took $((SECONDS - START)) s (the budget: 20 minutes on 2 cores)"' EXIT
export RIGAUDIT_REQUIRE_SLURM=1
# The suite in one call, then its quiet tests: a test whose verdict depends on how fast the machine
# is sits in a `quiet` module (tests/it/) and runs after the rest, alone and one at a time. Any
# argument goes to one plain `cargo test --workspace` instead. The rest runs four tests at a time:
# many wait on a server, a cluster or a lock most of their time.
if [ $# -gt 0 ]; then
    cargo test --workspace "$@"
    exit
fi
cargo test --workspace -- --skip ::quiet:: --test-threads=4
cargo test -p rigaudit --test it -- ::quiet:: --test-threads=1
