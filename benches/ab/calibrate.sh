#!/usr/bin/env bash
# The calibration of `rigaudit ab` on this machine (issue 36; docs/statistics.md records what it
# gave): N A/A comparisons (the bundled engine against itself) and N A/B comparisons (side B's
# decode slowed with the engine's --decode-delay-us), alternately, each at most BUDGET, with the
# short contract of benches/ab/ (decode and prefill). Not a test: it needs the machine quiet for
# about N x 2 x BUDGET. Prints the table of docs/statistics.md; every report is kept under OUT.
#
#     bash benches/ab/calibrate.sh [N=10] [BUDGET=3m] [DELAY_US=500] [OUT=target/ab-calibration]
#
# DELAY_US: at about 9.5 ms a token (the engine's decode on one thread here) 500 us is a 5 %
# slowdown; the A/B rows report the change measured. FIRST (default 1) the first run's number and
# KINDS (default "aa ab") which comparisons, to resume a calibration that was stopped.
# RIGAUDIT (default target/debug/rigaudit, whose engine is built optimised) is the binary run;
# THREADS (default 1) the engine's --threads on both sides (on a 2-core machine one core is left
# to the measuring client and the load guard). CONTRACT (default benches/ab/short-contract.json)
# the speed contract both sides measure; benches/ab/lean-contract.json is its shorter blocks (2
# runs of 64 tokens and of a 256-token prefill).
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-10}
BUDGET=${2:-3m}
DELAY_US=${3:-500}
OUT=${4:-target/ab-calibration}
BIN=${RIGAUDIT:-target/debug/rigaudit}
THREADS=${THREADS:-1}
mkdir -p "$OUT"
common=(fixtures/runs/smollm2-cpu --contract "${CONTRACT:-benches/ab/short-contract.json}" --no-quality
    --budget "$BUDGET" --format json --quiet
    "--arg-a=--threads=$THREADS" "--arg-b=--threads=$THREADS")
for i in $(seq "${FIRST:-1}" "$N"); do
    for kind in ${KINDS:-aa ab}; do
        extra=()
        [ "$kind" = ab ] && extra=("--arg-b=--decode-delay-us=$DELAY_US")
        rc=0
        "$BIN" ab "${common[@]}" "${extra[@]}" --seed "$i" --out "$OUT/$kind-$i" \
            >"$OUT/$kind-$i.json" 2>"$OUT/$kind-$i.err" || rc=$?
        echo "$kind $i: exit $rc"
    done
done
python3 benches/ab/summarise.py "$OUT"
