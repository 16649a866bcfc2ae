#!/usr/bin/env bash
# Differential fixtures of AIPerf (issue 35): runs `aiperf profile` itself, at the versions
# fixtures/differential/pins.toml pins under [aiperf], against the bundled engine
# (SmolLM2-135M-Instruct, CPU) and keeps what each version writes in
# fixtures/differential/aiperf/<version>/<case>/.
#
#   bash scripts/differential/aiperf.sh [VERSION ...]     (default: every pinned version)
#   CASES="duration cancel" bash scripts/differential/aiperf.sh 0.13.0    (only those cases)
#
# The cases (each one aiperf run of 5 to 12 requests, replies of at most 16 tokens):
#   count     chat, streamed, --concurrency 2, --request-count 8, --warmup-request-count 2
#   rate      completions, not streamed, --request-rate 4 constant, --request-count 6; reply
#             shapes empty@2, one@3, stop@4, http500@5 (warm-up none)
#   shapes    chat, streamed, --concurrency 2, --request-count 12; reply shapes refuse@3,
#             empty@4, one@5, stop@6, midstream-error=2@7, http500@8, slow-first=600@9, length=1@10
#   timeout   chat, streamed, --concurrency 1, --request-count 5, --request-timeout-seconds 2;
#             reply shape hang=8000@3 (the client gives up: a timeout error)
#   duration  (0.2.0 on) chat, streamed, --concurrency 2, --benchmark-duration 8
#             --benchmark-grace-period 0 (requests still running at the end are left out); no
#             warm-up: 0.2.0 with a warm-up and a duration waits for ever for the records it left out
#   cancel    (0.2.0 on) chat, streamed, --concurrency 2, --request-count 8,
#             --request-cancellation-rate 50 --request-cancellation-delay 0.3
# GenAI-Perf (AIPerf's predecessor; `genai_perf_versions` of the same pins section), each version
# in its own venv with tritonclient 2.50.0's perf_analyzer binary and the CUDA runtime library it
# links (nvidia-cuda-runtime-cu12; no GPU is used), into fixtures/differential/aiperf/
# genai-perf-<version>/<case>/:
#   count     chat, streamed, --concurrency 2, 8 requests (0.0.8: a 4 s measurement interval)
#   rate      completions, not streamed, --request-rate 4
#   shapes    chat, streamed, --concurrency 2: empty@3, one@4, stop@5, slow-first=600@6,
#             length=1@7 (perf_analyzer aborts the run on an HTTP error: no refuse or 500 here)
# Kept: profile_export_genai_perf.json and .csv (the summary) and perf_analyzer's
# profile_export.json (every request's timestamps and response chunks).
#
# Kept: profile_export_aiperf.json and .csv (the summary), profile_export.jsonl (per-request
# records, 0.2.0 on; --export-level raw from 0.3.0) and profile_export_raw.jsonl (0.3.0 on).
#
# Tools: each version in its own virtual environment under ${RIGAUDIT_CACHE:-$HOME/.cache/rigaudit}/
# diff-tools/aiperf-<version>, its dependencies pinned by fixtures/differential/aiperf/<version>/
# requirements.txt (what `pip freeze` gave when the fixtures were made; without it the newest
# dependencies are taken and the file written). Nothing is fetched from a model hub: the tokenizer
# is the engine's /tokenizer.json, read offline as the hub cache entry `local/smollm2`.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
CACHE=${RIGAUDIT_CACHE:-$HOME/.cache/rigaudit}
TOOLS=$CACHE/diff-tools
OUT_BASE=fixtures/differential/aiperf
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 NO_COLOR=1
export TOKENIZERS_PARALLELISM=false

pinned() { # pinned KEY: the list KEY of the [aiperf] section of pins.toml
    sed -n '/^\[aiperf\]/,/^\[/p' fixtures/differential/pins.toml |
        sed -n "s/^$1 *= *\\[\\(.*\\)\\]/\\1/p" | tr -d '" ' | tr ',' '\n'
}
mapfile -t PINNED < <(pinned versions)
mapfile -t GENAI < <(pinned genai_perf_versions)
VERSIONS=("$@")
[ ${#VERSIONS[@]} -gt 0 ] || VERSIONS=("${PINNED[@]}" "${GENAI[@]/#/genai-perf-}")

for v in "${VERSIONS[@]}"; do
    venv=$TOOLS/aiperf-$v
    spec=("aiperf==$v")
    if [[ $v == genai-perf-* ]]; then
        venv=$TOOLS/$v
        spec=("genai-perf==${v#genai-perf-}" "tritonclient[http]==2.50.0" "transformers<4.50"
            nvidia-cuda-runtime-cu12)
    fi
    lock=$OUT_BASE/$v/requirements.txt
    if [ ! -x "$venv/bin/python" ]; then
        python3 -m venv "$venv"
        if [ -f "$lock" ]; then
            "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$lock"
        else
            "$venv/bin/pip" install --quiet --disable-pip-version-check "${spec[@]}"
        fi
    fi
    mkdir -p "$OUT_BASE/$v"
    [ -f "$lock" ] || "$venv/bin/pip" freeze --disable-pip-version-check >"$lock"
done

cargo build --release --quiet -p rigaudit-engine
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

# start_engine [SERVE ARGS...]: a fresh engine (request numbers from 1) on a free port.
start_engine() {
    stop_engine
    PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    URL=http://127.0.0.1:$PORT
    "$ENGINE_BIN" serve "$MODEL" --name smollm2 --parallel 2 --context 1024 \
        --host 127.0.0.1 --port "$PORT" --threads 2 "$@" >"$TMP/engine.log" 2>&1 &
    ENGINE=$!
    for _ in $(seq 1 300); do
        curl -sf "$URL/v1/models" >/dev/null && return 0
        kill -0 "$ENGINE" 2>/dev/null || { cat "$TMP/engine.log" >&2; exit 1; }
        sleep 0.2
    done
    echo "the engine did not get ready" >&2
    exit 1
}

# The engine's tokenizer as the model-hub cache entry `local/smollm2` (a config.json beside it,
# which transformers 5 reads before the tokenizer).
export HF_HOME=$TMP/hf
tokenizer_dir() {
    local rev=0000000000000000000000000000000000000000
    local repo=$HF_HOME/hub/models--local--smollm2
    mkdir -p "$repo/snapshots/$rev" "$repo/refs"
    printf '%s' "$rev" >"$repo/refs/main"
    curl -sf "$URL/tokenizer.json" -o "$repo/snapshots/$rev/tokenizer.json"
    printf '{"model_type": "llama"}\n' >"$repo/snapshots/$rev/config.json"
    printf '{"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 8192, "bos_token": "<|im_start|>", "eos_token": "<|im_end|>", "unk_token": "<|endoftext|>", "pad_token": "<|im_end|>"}\n' >"$repo/snapshots/$rev/tokenizer_config.json"
}

# Whether version $1 is at least $2.
at_least() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1)" = "$2" ]; }

# run_case VERSION CASE SHAPES AIPERF-ARGS...: one run against a fresh engine (given SHAPES,
# a --reply-shapes spec, or "-"), its files kept in the case's folder.
run_case() {
    local v=$1 case=$2 shapes=$3
    shift 3
    [ -z "${CASES:-}" ] || [[ " $CASES " == *" $case "* ]] || return 0
    if [ "$shapes" = - ]; then start_engine; else start_engine --reply-shapes "$shapes"; fi
    tokenizer_dir
    local out=$TMP/out-$v-$case
    rm -rf "$out"
    local level=()
    at_least "$v" 0.3.0 && level=(--export-level raw)
    timeout 600 "$TOOLS/aiperf-$v/bin/aiperf" profile --model smollm2 --url "$URL" \
        --tokenizer local/smollm2 --isl 40 --isl-stddev 0 --random-seed 7 --workers-max 2 \
        --output-artifact-dir "$out" --ui-type none "${level[@]}" "$@" >"$TMP/$v-$case.log" 2>&1 ||
        { tail -40 "$TMP/$v-$case.log" >&2; exit 1; }
    stop_engine
    local dest=$OUT_BASE/$v/$case
    rm -rf "$dest" && mkdir -p "$dest"
    for f in profile_export_aiperf.json profile_export_aiperf.csv profile_export.jsonl \
        profile_export_raw.jsonl; do
        [ -f "$out/$f" ] && cp "$out/$f" "$dest/"
    done
    grep 'reply-shape request' "$TMP/engine.log" | sed 's/^.*reply-shape //' >"$dest/shapes.log" || true
    [ -s "$dest/shapes.log" ] || rm -f "$dest/shapes.log"
    echo "$v $case: $(ls "$dest" | tr '\n' ' ')"
}

# genai_case VERSION CASE SHAPES GENAI-PERF-ARGS...: one GenAI-Perf run against a fresh engine.
genai_case() {
    local v=$1 case=$2 shapes=$3
    shift 3
    [ -z "${CASES:-}" ] || [[ " $CASES " == *" $case "* ]] || return 0
    if [ "$shapes" = - ]; then start_engine; else start_engine --reply-shapes "$shapes"; fi
    tokenizer_dir
    local venv=$TOOLS/$v out=$TMP/out-$v-$case
    rm -rf "$out"
    local cuda
    cuda=$(dirname "$(find "$venv" -name 'libcudart.so.12' | head -1)")
    local count=(--request-count 8)
    [ "$v" = genai-perf-0.0.8 ] && count=(--measurement-interval 4000)
    # Before 0.0.14 the OpenAI endpoints are chosen by --service-kind (the default is triton).
    at_least "${v#genai-perf-}" 0.0.14 || count+=(--service-kind openai)
    (cd "$TMP" && PATH=$venv/bin:$PATH LD_LIBRARY_PATH=$cuda timeout 600 "$venv/bin/genai-perf" \
        profile -m smollm2 --url "127.0.0.1:$PORT" --tokenizer local/smollm2 \
        --synthetic-input-tokens-mean 40 --synthetic-input-tokens-stddev 0 --output-tokens-mean 8 \
        --random-seed 7 --artifact-dir "$out" "${count[@]}" "$@") >"$TMP/$v-$case.log" 2>&1 ||
        { tail -40 "$TMP/$v-$case.log" >&2; exit 1; }
    stop_engine
    local dest=$OUT_BASE/$v/$case
    rm -rf "$dest" && mkdir -p "$dest"
    for f in profile_export_genai_perf.json profile_export_genai_perf.csv profile_export.json; do
        cp "$(find "$out" -name "$f" | head -1)" "$dest/"
    done
    grep 'reply-shape request' "$TMP/engine.log" | sed 's/^.*reply-shape //' >"$dest/shapes.log" || true
    [ -s "$dest/shapes.log" ] || rm -f "$dest/shapes.log"
    echo "$v $case: $(ls "$dest" | tr '\n' ' ')"
}

CHAT=(--endpoint-type chat --streaming)
for v in "${VERSIONS[@]}"; do
    if [[ $v == genai-perf-* ]]; then
        genai_case "$v" count - "${CHAT[@]}" --concurrency 2
        genai_case "$v" rate - --endpoint-type completions --request-rate 4
        genai_case "$v" shapes 'empty@3,one@4,stop@5,slow-first=600@6,length=1@7' "${CHAT[@]}" \
            --concurrency 2
        continue
    fi
    run_case "$v" count - "${CHAT[@]}" --concurrency 2 --request-count 8 \
        --warmup-request-count 2 --osl 8 --osl-stddev 0
    run_case "$v" rate 'empty@2,one@3,stop@4,http500@5' --endpoint-type completions \
        --request-rate 4 --request-rate-mode constant --request-count 6 --osl 8 --osl-stddev 0
    run_case "$v" shapes \
        'refuse@3,empty@4,one@5,stop@6,midstream-error=2@7,http500@8,slow-first=600@9,length=1@10' \
        "${CHAT[@]}" --concurrency 2 --request-count 12 --osl 8 --osl-stddev 0
    run_case "$v" timeout 'hang=8000@3' "${CHAT[@]}" --concurrency 1 --request-count 5 \
        --request-timeout-seconds 2 --osl 8 --osl-stddev 0
    if at_least "$v" 0.2.0; then
        run_case "$v" duration - "${CHAT[@]}" --concurrency 2 --benchmark-duration 8 \
            --benchmark-grace-period 0 --osl 16 --osl-stddev 0
        run_case "$v" cancel - "${CHAT[@]}" --concurrency 2 --request-count 8 \
            --request-cancellation-rate 50 --request-cancellation-delay 0.3 --osl 16 --osl-stddev 0
    fi
done
