#!/usr/bin/env bash
# Makes fixtures/differential/loadgen/<version>/<case>/: MLPerf LoadGen itself (mlcommons-loadgen
# from PyPI, at each version [loadgen] of fixtures/differential/pins.toml pins) over the bundled
# engine, through scripts/differential/loadgen_sut.py, for each case of the matrix below (the
# scenarios, modes, settings and reply shapes people's runs have); it keeps what LoadGen wrote.
#
#   bash scripts/differential/loadgen.sh [CASE...]      (all cases when none is named)
#   LOADGEN_VERSIONS="6.0.17" bash scripts/differential/loadgen.sh server   (some versions only)
#
# The engine runs with a 512-token window, so a "refused" sample's long prompt gets HTTP 400.
# Runs are short (seconds): the figures' definitions, not the rules' 600 s, are what is tested.
# Each case folder also gets case.json (the case as run) and, when LoadGen or the SUT wrote to
# stderr, nothing else: LoadGen's own files are kept byte for byte.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
CACHE=${RIGAUDIT_CACHE:-$HOME/.cache/rigaudit}
TOOLS=$CACHE/import-tools
OUT=fixtures/differential/loadgen
VERSIONS=${LOADGEN_VERSIONS:-}
[ -n "$VERSIONS" ] || VERSIONS=$(python3 -c 'import tomllib; print(" ".join(tomllib.load(open("fixtures/differential/pins.toml","rb"))["loadgen"]["versions"]))')

# The matrix: case name -> the SUT's case (scenario, mode, samples, settings, shapes).
declare -A CASES=(
    [offline]='{"scenario":"Offline","samples":8,"settings":{"use_token_latencies":true,"offline_expected_qps":2,"min_duration_ms":2000,"min_query_count":6,"sample_concatenate_permutation":true}}'
    [offline-accuracy]='{"scenario":"Offline","mode":"accuracy","samples":6,"settings":{"use_token_latencies":true}}'
    [offline-accuracy-shapes]='{"scenario":"Offline","mode":"accuracy","samples":6,"settings":{"use_token_latencies":true},"shapes":{"1":"refused","3":"single"}}'
    [offline-shapes]='{"scenario":"Offline","samples":8,"settings":{"use_token_latencies":true,"offline_expected_qps":2,"min_duration_ms":1000,"min_query_count":8},"shapes":{"2":"refused","5":"single"}}'
    [offline-inferred]='{"scenario":"Offline","samples":6,"settings":{"infer_token_latencies":true,"token_latency_scaling_factor":69,"offline_expected_qps":2,"min_duration_ms":1000,"min_query_count":6}}'
    [server]='{"scenario":"Server","samples":8,"settings":{"use_token_latencies":true,"server_target_qps":1,"ttft_latency":2000000000,"tpot_latency":200000000,"server_target_latency_ns":4000000000,"server_target_latency_percentile":0.5,"min_duration_ms":6000,"min_query_count":8}}'
    [server-overload]='{"scenario":"Server","samples":8,"settings":{"use_token_latencies":true,"server_target_qps":10,"ttft_latency":100000000,"tpot_latency":20000000,"server_target_latency_percentile":0.9,"min_duration_ms":1000,"min_query_count":12,"max_query_count":12}}'
    [server-latency]='{"scenario":"Server","samples":8,"settings":{"server_target_qps":2,"server_target_latency_ns":400000000,"server_target_latency_percentile":0.5,"min_duration_ms":4000,"min_query_count":10}}'
    [server-shapes]='{"scenario":"Server","samples":8,"settings":{"use_token_latencies":true,"server_target_qps":1,"ttft_latency":2000000000,"tpot_latency":200000000,"server_target_latency_percentile":0.5,"min_duration_ms":6000,"min_query_count":8},"shapes":{"1":"slow-first","2":"refused","4":"single","6":"no-first-token"}}'
    [singlestream]='{"scenario":"SingleStream","samples":8,"settings":{"use_token_latencies":true,"single_stream_expected_latency_ns":300000000,"single_stream_target_latency_percentile":0.5,"min_duration_ms":2000,"min_query_count":12}}'
    [multistream]='{"scenario":"MultiStream","samples":8,"settings":{"multi_stream_samples_per_query":2,"multi_stream_expected_latency_ns":600000000,"multi_stream_target_latency_percentile":0.5,"min_duration_ms":2000,"min_query_count":12}}'
)
WANTED=("$@")
[ ${#WANTED[@]} -gt 0 ] || WANTED=($(printf '%s\n' "${!CASES[@]}" | sort))

nice -n 10 cargo build --release --quiet -p rigaudit-engine
MODEL="$(bash scripts/fetch-model.sh)"
TMP="$(mktemp -d)"
ENGINE=
stop_engine() {
    if [ -n "$ENGINE" ]; then
        kill "$ENGINE" 2>/dev/null || true
        wait "$ENGINE" 2>/dev/null || true
        ENGINE=
    fi
}
trap 'stop_engine; rm -rf "$TMP"' EXIT
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
URL=http://127.0.0.1:$PORT
nice -n 10 "$ROOT/target/release/rigaudit-engine" serve "$MODEL" --name smollm2 --parallel 4 --context 512 \
    --host 127.0.0.1 --port "$PORT" --threads 2 >"$TMP/engine.log" 2>&1 &
ENGINE=$!
for _ in $(seq 1 300); do
    curl -sf "$URL/v1/models" >/dev/null && break
    kill -0 "$ENGINE" 2>/dev/null || { cat "$TMP/engine.log" >&2; exit 1; }
    sleep 0.2
done

for v in $VERSIONS; do
    if [ ! -x "$TOOLS/lg-$v/bin/python" ]; then
        python3 -m venv "$TOOLS/lg-$v"
        "$TOOLS/lg-$v/bin/pip" install --quiet --disable-pip-version-check "mlcommons-loadgen==$v"
    fi
    for c in "${WANTED[@]}"; do
        spec=${CASES[$c]:?unknown case $c}
        run=$TMP/run && rm -rf "$run" && mkdir -p "$run"
        echo "loadgen $v $c" >&2
        nice -n 10 timeout 300 "$TOOLS/lg-$v/bin/python" scripts/differential/loadgen_sut.py "$URL" "$run" "$spec" \
            >"$TMP/sut.log" 2>&1 || { tail -20 "$TMP/sut.log" >&2; exit 1; }
        dest=$OUT/$v/$c && rm -rf "$dest" && mkdir -p "$dest"
        cp "$run"/mlperf_log_summary.txt "$run"/mlperf_log_detail.txt "$dest/"
        [ ! -s "$run/mlperf_log_accuracy.json" ] || cp "$run/mlperf_log_accuracy.json" "$dest/"
        python3 -c 'import json,sys; print(json.dumps(json.loads(sys.argv[1]), indent=1, sort_keys=True))' "$spec" >"$dest/case.json"
    done
done
