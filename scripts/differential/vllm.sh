#!/usr/bin/env bash
# Differential fixtures of vLLM's serving benchmark (issue 35): each pinned vLLM version's own client
# (`benchmarks/benchmark_serving.py` to 0.10.1, `vllm bench serve` from 0.8) run against the bundled
# engine over a matrix of its options and of reply shapes; what it writes is kept under
# fixtures/differential/vllm/<version>/<case>/ (result.json, and cmd.txt: the command line).
#
#   bash scripts/differential/vllm.sh [VERSION...]      (default: the versions pinned in
#                                                         fixtures/differential/pins.toml [vllm])
#   CASES="clean shapes" bash scripts/differential/vllm.sh 0.34.0   (some cases only)
#   bash scripts/differential/vllm.sh sglang                        (SGLang's bench_serving only)
#
# The vllm package does not install on a CPU-only machine: each version's source release (sdist,
# from PyPI's file host, its sha256 checked) is unpacked and its benchmark code run unchanged by
# scripts/differential/vllm_client.py. Requests go through scripts/differential/shapes_proxy.py,
# which passes them to the engine or, for prompts marked `[[shape:NAME]]`, replies in that shape.
# The tokenizer is the engine's own (`/tokenizer.json`); nothing is fetched from a model hub.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
CACHE=${RIGAUDIT_CACHE:-$HOME/.cache/rigaudit}
TOOLS=$CACHE/import-tools
OUT=${DIFF_OUT:-fixtures/differential/vllm} # benches/differential/vllm.sh writes elsewhere
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 NO_COLOR=1 PYTHONHASHSEED=0

pins() { # pins KEY: a value of the [vllm] section of pins.toml, one item a line
    python3 - "$1" <<'PY'
import sys, tomllib
v = tomllib.load(open("fixtures/differential/pins.toml", "rb"))["vllm"][sys.argv[1]]
print("\n".join(v) if isinstance(v, list) else v)
PY
}
mapfile -t VERSIONS < <(if [ $# -gt 0 ]; then printf '%s\n' "$@"; else pins versions; fi)
if [ "${1:-}" = sglang ]; then VERSIONS=() SGLANG=1; fi
read -r -a CASE_LIST <<<"${CASES:-$(pins cases | tr '\n' ' ')}"

PY=$TOOLS/vllm-diff/bin/python
if [ ! -x "$PY" ]; then
    python3 -m venv "$TOOLS/vllm-diff"
    mapfile -t pkgs < <(pins client_packages)
    "$TOOLS/vllm-diff/bin/pip" install --quiet --disable-pip-version-check "${pkgs[@]}"
fi

nice -n 10 cargo build --release --quiet -p rigaudit-engine
ENGINE_BIN=$ROOT/target/release/rigaudit-engine
MODEL="$(bash scripts/fetch-model.sh)"
TMP="$(mktemp -d)"
ENGINE= PROXY=
stop() {
    for p in $PROXY $ENGINE; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    ENGINE= PROXY=
}
trap 'stop; rm -rf "$TMP"' EXIT

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_up() { # wait_up URL PID LOG
    for _ in $(seq 1 300); do
        curl -sf "$1/v1/models" >/dev/null && return 0
        kill -0 "$2" 2>/dev/null || { cat "$3" >&2; exit 1; }
        sleep 0.2
    done
    echo "$1 did not get ready" >&2
    exit 1
}

# up WINDOW [--usage-chunk]: the engine (that context window, 2 slots) and the proxy before it;
# sets URL (the proxy's).
up() {
    stop
    local eport pport
    eport="$(free_port)"
    nice -n 10 "$ENGINE_BIN" serve "$MODEL" --name smollm2 --parallel 2 --context "$1" \
        --host 127.0.0.1 --port "$eport" --threads 2 >"$TMP/engine.log" 2>&1 &
    ENGINE=$!
    wait_up "http://127.0.0.1:$eport" "$ENGINE" "$TMP/engine.log"
    pport="$(free_port)"
    "$PY" scripts/differential/shapes_proxy.py "http://127.0.0.1:$eport" "$pport" "${@:2}" \
        >"$TMP/proxy.log" 2>&1 &
    PROXY=$!
    URL=http://127.0.0.1:$pport
    wait_up "$URL" "$PROXY" "$TMP/proxy.log"
    tokenizer_dir
}

# The engine's tokenizer.json as the model-hub cache entry `local/smollm2` (offline).
tokenizer_dir() {
    export HF_HOME=$TMP/hf
    local rev=0000000000000000000000000000000000000000 repo=$TMP/hf/hub/models--local--smollm2
    local dir=$repo/snapshots/$rev
    [ -f "$dir/tokenizer.json" ] && return 0
    mkdir -p "$dir" "$repo/refs"
    printf '%s' "$rev" >"$repo/refs/main"
    curl -sf "$URL/tokenizer.json" -o "$dir/tokenizer.json"
    printf '{"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 8192, "bos_token": "<|im_start|>", "eos_token": "<|im_end|>", "unk_token": "<|endoftext|>", "pad_token": "<|im_end|>"}\n' >"$dir/tokenizer_config.json"
    # AutoTokenizer (transformers 5) reads the model type from config.json before the tokenizer.
    printf '{"model_type": "llama"}\n' >"$dir/config.json"
}

# source_of VERSION: the unpacked benchmark code of that release (downloaded once).
source_of() {
    local dir=$TOOLS/vllm-src/$1
    if [ ! -d "$dir/benchmarks" ] && [ ! -d "$dir/vllm/benchmarks" ]; then
        python3 scripts/differential/pypi_sdist.py vllm "$1" "$TMP/sdist.tar.gz"
        mkdir -p "$dir"
        tar xzf "$TMP/sdist.tar.gz" -C "$dir" --strip-components=1 --wildcards \
            '*/benchmarks/*' '*/LICENSE'
        rm -f "$TMP/sdist.tar.gz"
    fi
    echo "$dir"
}

# has VERSION OPTION: whether that version's client takes the option.
has() {
    grep -q -- "\"$2\"" "$SRC/benchmarks/benchmark_serving.py" "$SRC"/vllm/benchmarks/serve.py \
        "$SRC"/vllm/benchmarks/datasets*.py "$SRC"/vllm/benchmarks/datasets/datasets.py 2>/dev/null
}

# mode VERSION: `script` (benchmarks/benchmark_serving.py) to 0.10.1, `serve` after.
mode_of() {
    if [ "$(wc -l <"$SRC/benchmarks/benchmark_serving.py")" -gt 100 ]; then echo script; else echo serve; fi
}

# run CASE BACKEND ITEMS -- EXTRA...: one run of the client, its result kept.
run() {
    local case=$1 backend=$2 items=$3 dest=$OUT/$VERSION/$1
    shift 3
    [ "${1:-}" = "--" ] && shift
    local endpoint=/v1/completions n
    [ "$backend" = openai-chat ] && endpoint=/v1/chat/completions
    # shellcheck disable=SC2086 # ITEMS is a list of words
    python3 scripts/differential/vllm_data.py "$TMP/data.json" 0 $items
    n=$(wc -w <<<"$items")
    local args=(--backend "$backend" --base-url "$URL" --endpoint "$endpoint" --model smollm2
        --tokenizer local/smollm2 --dataset-name sharegpt --dataset-path "$TMP/data.json"
        --num-prompts "$n" --sharegpt-output-len 8 --seed 0
        --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,90,99
        --save-result --result-dir "$TMP/res" --result-filename result.json "$@")
    rm -rf "$TMP/res" && mkdir -p "$TMP/res"
    (cd "$TMP" && nice -n 10 "$PY" "$ROOT/scripts/differential/vllm_client.py" "$SRC" "$MODE" \
        "${args[@]}") >"$TMP/client.log" 2>&1 || { tail -30 "$TMP/client.log" >&2; exit 1; }
    if [[ " $* " == *" --append-result "* ]]; then
        (cd "$TMP" && nice -n 10 "$PY" "$ROOT/scripts/differential/vllm_client.py" "$SRC" "$MODE" \
            "${args[@]}") >"$TMP/client.log" 2>&1 || { tail -30 "$TMP/client.log" >&2; exit 1; }
    fi
    rm -rf "$dest" && mkdir -p "$dest"
    cp "$TMP/res/result.json" "$dest/result.json"
    sed -n '/Serving Benchmark Result/,/^=\{50\}$/p' "$TMP/client.log" >"$dest/printed.txt"
    printf 'vllm %s %s (%s) %s\nitems: %s\n' "$VERSION" "$MODE" "$backend" \
        "$(printf '%q ' "${args[@]}" | sed "s#$TMP#TMP#g; s#$URL#URL#g")" "$items" >"$dest/cmd.txt"
    echo "vllm $VERSION $case: $(wc -c <"$dest/result.json") bytes"
}

# The options a version takes, beyond every version's.
opt() { # opt OPTION [VALUE...]: the option when this version takes it
    if has "$VERSION" "$1"; then printf '%s\n' "$@"; fi
}

one_version() {
    SRC=$(source_of "$VERSION")
    MODE=$(mode_of)
    local detailed cap
    mapfile -t detailed < <(opt --save-detailed)
    mapfile -t cap < <(opt --max-concurrency 2)
    for case in "${CASE_LIST[@]}"; do
        case $case in
        clean)
            up 1024
            run clean vllm "plain plain plain plain plain plain" -- "${detailed[@]}" "${cap[@]}" \
                $(opt --ignore-eos)
            ;;
        shapes)
            up 1024
            run shapes vllm "plain plain eos empty stop single nodone slow midstream abort http500 plain" \
                -- "${detailed[@]}" "${cap[@]}"
            ;;
        refused)
            up 256
            run refused vllm "plain long plain plain long plain" -- "${detailed[@]}" \
                --request-rate 4 $(opt --burstiness 0.5) $(opt --goodput ttft:3000 tpot:400 e2el:6000)
            ;;
        usage-chunk)
            up 1024 --usage-chunk
            run usage-chunk openai "plain plain empty single plain" -- "${detailed[@]}" "${cap[@]}"
            ;;
        chat)
            up 1024 --usage-chunk
            run chat openai-chat "plain plain empty single plain" -- "${detailed[@]}" "${cap[@]}"
            ;;
        aggregates)
            [ ${#detailed[@]} -gt 0 ] && has "$VERSION" --append-result || continue
            up 1024
            run aggregates vllm "plain plain plain http500" -- "${cap[@]}" --append-result
            ;;
        queue)
            # The client-side queue figures (0.30 on): a cap, a finite rate, both metrics asked.
            grep -q client_queue_time "$SRC/vllm/benchmarks/serve.py" 2>/dev/null || continue
            up 1024
            run queue vllm "plain plain plain plain plain" -- "${detailed[@]}" "${cap[@]}" \
                --request-rate 8 --metric-percentiles 50,99.9 --percentile-metrics \
                ttft,tpot,itl,e2el,client_queue_time,e2el_including_client_queue
            ;;
        warmup-rampup)
            has "$VERSION" --num-warmups || continue
            up 1024
            run warmup-rampup vllm "plain plain plain plain plain" -- "${detailed[@]}" "${cap[@]}" \
                --num-warmups 2 --ramp-up-strategy linear --ramp-up-start-rps 1 --ramp-up-end-rps 4
            ;;
        esac
    done
}

# SGLang's bench_serving (the same family of JSON, docs/formats/vllm.md row V17): the module file of
# its wheel, run alone against the same engine (it needs nothing else of sglang); it appends one
# JSON line of aggregates a run (`--output-file`).
sglang_source() {
    local dir=$TOOLS/sglang-src/$1
    if [ ! -f "$dir/bench_serving.py" ]; then
        rm -rf "$TMP/wheel" && mkdir -p "$dir"
        python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
            -d "$TMP/wheel" "sglang==$1" >&2
        unzip -q -o -j "$TMP"/wheel/sglang-*.whl 'sglang/bench_serving.py' -d "$dir" >&2
    fi
    echo "$dir"
}

sglang_run() { # sglang_run VERSION CASE ITEMS -- EXTRA...
    local version=$1 case=$2 items=$3 dest=$OUT/sglang/$1/$2 src n
    shift 3
    [ "${1:-}" = "--" ] && shift
    src=$(sglang_source "$version")
    # shellcheck disable=SC2086 # ITEMS is a list of words
    python3 scripts/differential/vllm_data.py "$TMP/data.json" 1 $items
    n=$(wc -w <<<"$items")
    local args=(--backend vllm --base-url "$URL" --model smollm2 --tokenizer local/smollm2
        --dataset-name sharegpt --dataset-path "$TMP/data.json" --num-prompts "$n"
        --sharegpt-output-len 8 --seed 1 --output-file "$TMP/out.jsonl" "$@")
    rm -f "$TMP/out.jsonl"
    (cd "$TMP" && nice -n 10 "$PY" "$src/bench_serving.py" "${args[@]}") >"$TMP/client.log" 2>&1 ||
        { tail -30 "$TMP/client.log" >&2; exit 1; }
    rm -rf "$dest" && mkdir -p "$dest"
    cp "$TMP/out.jsonl" "$dest/result.jsonl"
    printf 'sglang %s bench_serving %s\nitems: %s\n' "$version" \
        "$(printf '%q ' "${args[@]}" | sed "s#$TMP#TMP#g; s#$URL#URL#g")" "$items" >"$dest/cmd.txt"
    echo "sglang $version $case: $(wc -c <"$dest/result.jsonl") bytes"
}

for VERSION in "${VERSIONS[@]+"${VERSIONS[@]}"}"; do
    one_version
done
if [ $# -eq 0 ] || [ -n "${SGLANG:-}" ]; then
    mapfile -t SGLANG_VERSIONS < <(pins sglang_versions)
    for v in "${SGLANG_VERSIONS[@]}"; do
        up 1024
        sglang_run "$v" clean "plain plain plain plain plain plain"
        up 256
        sglang_run "$v" refused "plain long plain plain eos plain"
    done
fi
stop
