#!/usr/bin/env bash
# Makes fixtures/differential/guidellm/<version>/<case>/: GuideLLM itself, installed from PyPI at
# each pinned version (fixtures/differential/pins.toml, [guidellm]), run against the bundled engine
# (SmolLM2-135M-Instruct, CPU, loopback) over a matrix of the options that change which requests
# enter its printed figures, and of the reply shapes the engine gives naturally. What each run
# writes is kept as it is (benchmarks.json), with the command line beside it (command.txt).
#
#   bash scripts/differential/guidellm.sh [VERSION...] [-- CASE...]
#
# The matrix (each case names its options; see docs/formats/guidellm.md for what they change):
#   concurrent-warmup-cooldown  2 streams, 10 requests, warm-up and cool-down of 2 requests (0.2-0.3:
#                               --warmup-percent/--cooldown-percent 0.2 of --max-requests)
#   synchronous-max-seconds     one at a time for 8 s: the request still running when time is up is
#                               cancelled (incomplete)
#   constant-refused            1.5 requests/s, 8 requests, a 256-token window and prompts of 20 to
#                               500 tokens: the longer ones are refused with HTTP 400 (errored)
#   poisson-sampled             2 requests/s (Poisson), 8 requests, 2 kept per status
#                               (--output-sampling, --sample-requests, sample_size)
#   throughput-one-token        all at once, 6 requests of one output token each
#   sweep                       synchronous, throughput and one constant rate between, 4 requests each
#   concurrent-warmup-seconds   2 streams for 10 s, warm-up and cool-down of 20 % of the time
#   refused-max-errors          2 streams, prompts past a 256-token window, stopped after 2 errors
#   synchronous-reply-shapes    one at a time, 12 requests, the engine's --reply-shapes giving a
#                               refusal, an empty reply, one token, an immediate stop, a slow first
#                               token, an error mid-stream, an HTTP 500 and a hang (docs/reply-shapes.md)
#
# Each version is installed into its own virtual environment under
# ${RIGAUDIT_CACHE:-$HOME/.cache/rigaudit}/differential-tools/guidellm-<version>. The tokenizer comes
# from the engine (`/tokenizer.json`), nothing from a model hub (HF_HUB_OFFLINE=1). The runs are
# timed by the wall clock, so a rerun writes other numbers; the tests check what each file says of
# itself, never a value fixed here.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
CACHE=${RIGAUDIT_CACHE:-$HOME/.cache/rigaudit}
TOOLS=$CACHE/differential-tools
# Where the files go (benches/differential/guidellm.sh writes a wider matrix elsewhere).
OUT=${GUIDELLM_DIFFERENTIAL_OUT:-$ROOT/fixtures/differential/guidellm}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 NO_COLOR=1

# The versions of pins.toml's [guidellm] section (versions = [...]).
pinned() {
    sed -n '/^\[guidellm\]/,/^\[/p' fixtures/differential/pins.toml |
        sed -n 's/^versions *= *\[\(.*\)\]/\1/p' | tr -d '" ' | tr ',' ' '
}
CASES_ALL=(concurrent-warmup-cooldown synchronous-max-seconds constant-refused poisson-sampled
    throughput-one-token sweep concurrent-warmup-seconds refused-max-errors synchronous-reply-shapes)
VERSIONS=()
CASES=()
while [ $# -gt 0 ]; do
    case $1 in
    --) shift; CASES=("$@"); break ;;
    *) VERSIONS+=("$1"); shift ;;
    esac
done
[ ${#VERSIONS[@]} -gt 0 ] || read -r -a VERSIONS <<<"$(pinned)"
[ ${#CASES[@]} -gt 0 ] || CASES=("${CASES_ALL[@]}")

nice -n 10 cargo build --release --quiet -p rigaudit-engine
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

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# shapes_of VERSION CASE: the engine's reply shapes for a case (docs/reply-shapes.md), none for
# most. GuideLLM 0.2.1 run one request at a time cannot finish a benchmark given an HTTP error
# status (400, 500, 504): its worker process dies re-raising httpx's HTTPStatusError across
# processes (TypeError: HTTPStatusError.__init__() missing 'request' and 'response'), and no file
# is written; there the refusal, the HTTP 500 and the hang are left out (its refusals are seen in
# constant-refused and refused-max-errors, run with several requests at once).
shapes_of() {
    local replies="empty@3,one@4,stop@5,slow-first=800@6,midstream-error=3@7"
    case $2 in
    synchronous-reply-shapes)
        case $1 in
        0.2.* | 0.3.*) echo "$replies" ;;
        *) echo "refuse@2,$replies,http500@8,hang=3000@9" ;;
        esac
        ;;
    esac
}

# start_engine WINDOW [SHAPES]: the engine with that context window on a free port; sets URL.
start_engine() {
    local port shapes=()
    port="$(free_port)"
    URL=http://127.0.0.1:$port
    [ -z "${2:-}" ] || shapes=(--reply-shapes "$2")
    nice -n 10 "$ENGINE_BIN" serve "$MODEL" --name smollm2 --parallel 4 --context "$1" \
        --host 127.0.0.1 --port "$port" --threads 2 "${shapes[@]}" >"$TMP/engine.log" 2>&1 &
    ENGINE=$!
    for _ in $(seq 1 300); do
        curl -sf "$URL/v1/models" >/dev/null && return 0
        kill -0 "$ENGINE" 2>/dev/null || { cat "$TMP/engine.log" >&2; exit 1; }
        sleep 0.2
    done
    echo "the engine did not get ready" >&2
    exit 1
}

# The engine's tokenizer.json as a local model-hub cache entry; sets TOK_DIR.
tokenizer_dir() {
    export HF_HOME=$TMP/hf
    local rev=0000000000000000000000000000000000000000
    local repo=$HF_HOME/hub/models--local--smollm2
    TOK_DIR=$repo/snapshots/$rev
    mkdir -p "$TOK_DIR" "$repo/refs"
    printf '%s' "$rev" >"$repo/refs/main"
    curl -sf "$URL/tokenizer.json" -o "$TOK_DIR/tokenizer.json"
    printf '{"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 8192, "bos_token": "<|im_start|>", "eos_token": "<|im_end|>", "unk_token": "<|endoftext|>", "pad_token": "<|im_end|>"}\n' >"$TOK_DIR/tokenizer_config.json"
}

# The libraries an older version needs held back (pins.toml's `with`): GuideLLM 0.2-0.6 pin no
# upper bound, and transformers 5 and datasets 4 removed what they import.
held_back() {
    case $1 in
    0.2.* | 0.3.*) echo "transformers<5 datasets<4" ;;
    0.4.* | 0.5.* | 0.6.*) echo "transformers<5" ;;
    esac
}

install() { # install VERSION
    local venv=$TOOLS/guidellm-$1
    if [ ! -x "$venv/bin/guidellm" ]; then
        python3 -m venv "$venv"
        # shellcheck disable=SC2046 # the held-back libraries are several words
        nice -n 10 "$venv/bin/pip" install --quiet --disable-pip-version-check "guidellm==$1" $(held_back "$1")
    fi
}

# The case's neutral settings: WINDOW PROFILE RATE MAX_REQUESTS MAX_SECONDS WARMUP COOLDOWN
# PROMPT OUTPUT_TOKENS SAMPLE MAX_ERRORS ("-" for none); PROMPT is the synthetic prompts' mean
# tokens, or MEAN:STDEV (from 20 to 500).
settings() {
    case $1 in
    concurrent-warmup-cooldown) echo "1024 concurrent 2 10 - 2 2 40 6 - -" ;;
    synchronous-max-seconds) echo "1024 synchronous - - 8 - - 40 16 - -" ;;
    constant-refused) echo "256 constant 1.5 8 - - - 200:120 8 - -" ;;
    poisson-sampled) echo "1024 poisson 2 8 - - - 40 6 2 -" ;;
    throughput-one-token) echo "1024 throughput - 6 - - - 40 1 - -" ;;
    sweep) echo "1024 sweep 3 4 - - - 30 4 - -" ;;
    concurrent-warmup-seconds) echo "1024 concurrent 2 - 10 0.2 0.2 40 8 - -" ;;
    refused-max-errors) echo "256 concurrent 2 10 - - - 300:60 8 - 2" ;;
    synchronous-reply-shapes) echo "1024 synchronous - 12 - - - 40 8 - -" ;;
    *) echo "unknown case $1" >&2; exit 2 ;;
    esac
}

# data_spec PROMPT OUTPUT: GuideLLM's synthetic data settings (the same keys from 0.2 to 0.8).
data_spec() {
    local s="prompt_tokens=${1%%:*},output_tokens=$2"
    case $1 in
    *:*) s="$s,prompt_tokens_stdev=${1##*:},prompt_tokens_min=20,prompt_tokens_max=500" ;;
    esac
    echo "$s"
}

# args_0_2 / args_0_4 / args_0_8: the command line of each CLI for the case's settings; the
# warm-up and cool-down as the version takes them (0.2-0.3: a fraction of --max-requests or
# --max-seconds only; 0.4 on: a count or seconds, or a fraction below 1).
args_0_2() { # WINDOW PROFILE RATE MAXREQ MAXSEC WARM COOL STDEV OUT SAMPLE MAXERR
    local a=(benchmark --target "$URL" --model smollm2 --processor "$TOK_DIR"
        --data "$(data_spec "$8" "$9")" --rate-type "$2" --random-seed 7
        --output-path "$TMP/run/benchmarks.json" --disable-progress)
    # 0.2's concurrent profile calls float.is_integer on the rate: an integer is written as 2.0.
    case $3 in
    -) ;;
    *.*) a+=(--rate "$3") ;;
    *) a+=(--rate "$3.0") ;;
    esac
    [ "$4" = - ] || a+=(--max-requests "$4")
    [ "$5" = - ] || a+=(--max-seconds "$5")
    [ "$6" = - ] || a+=(--warmup-percent "$(fraction "$6" "$4")")
    [ "$7" = - ] || a+=(--cooldown-percent "$(fraction "$7" "$4")")
    [ "${10}" = - ] || a+=(--output-sampling "${10}")
    printf '%s\n' "${a[@]}"
}

args_0_4() {
    local a=(benchmark run --target "$URL" --model smollm2 --processor "$TOK_DIR"
        --data "$(data_spec "$8" "$9")" --profile "$2" --random-seed 7
        --output-path "$TMP/run/benchmarks.json" --disable-console-interactive)
    [ "$3" = - ] || a+=(--rate "$3")
    [ "$4" = - ] || a+=(--max-requests "$4")
    [ "$5" = - ] || a+=(--max-seconds "$5")
    [ "$6" = - ] || a+=(--warmup "$6")
    [ "$7" = - ] || a+=(--cooldown "$7")
    [ "${10}" = - ] || a+=(--sample-requests "${10}")
    [ "${11}" = - ] || a+=(--max-errors "${11}")
    printf '%s\n' "${a[@]}"
}

args_0_8() {
    local profile="kind=$2"
    case $2 in
    concurrent) profile="$profile,streams=$3" ;;
    constant | poisson) profile="$profile,rate=$3" ;;
    sweep) profile="$profile,sweep_size=$3" ;;
    throughput) profile="$profile,max_concurrency=$4" ;; # 0.8 requires a cap: all requests at once
    esac
    [ "$6" = - ] || profile="$profile,warmup=$6"
    [ "$7" = - ] || profile="$profile,cooldown=$7"
    local a=(run --backend "kind=openai_http,target=$URL,model=smollm2,request_format=/v1/chat/completions"
        --profile "$profile" --data "kind=synthetic_text,$(data_spec "$8" "$9")"
        --tokenizer "kind=huggingface_auto,model=$TOK_DIR" --seed kind=static,value=7
        --output "kind=json,path=$TMP/run/benchmarks.json" --disable-console-interactive)
    [ "$4" = - ] || a+=(--constraint "kind=max_requests,count=$4")
    [ "$5" = - ] || a+=(--constraint "kind=max_duration,seconds=$5")
    [ "${10}" = - ] || a+=(--metrics "kind=generative,sample_size=${10}")
    [ "${11}" = - ] || a+=(--constraint "kind=max_errors,count=${11}")
    printf '%s\n' "${a[@]}"
}

# fraction N TOTAL: 0.2-0.3 take warm-up and cool-down as a fraction: N requests of TOTAL, or N
# itself where it is already one (of --max-seconds).
fraction() {
    case $1 in
    0.*) echo "$1" ;;
    *) python3 -c "print($1 / $2)" ;;
    esac
}

run_case() { # run_case VERSION CASE
    local s dest cli
    read -r -a s <<<"$(settings "$2")"
    dest=$OUT/$1/$2
    start_engine "${s[0]}" "$(shapes_of "$1" "$2")"
    tokenizer_dir
    rm -rf "$TMP/run" && mkdir -p "$TMP/run"
    case $1 in
    0.2.* | 0.3.*) cli=args_0_2 ;;
    0.4.* | 0.5.* | 0.6.*) cli=args_0_4 ;;
    *) cli=args_0_8 ;;
    esac
    mapfile -t args < <("$cli" "${s[@]}")
    echo "guidellm $1, $2" >&2
    (cd "$TMP/run" && timeout 900 nice -n 10 "$TOOLS/guidellm-$1/bin/guidellm" "${args[@]}" \
        >"$TMP/run.log" 2>&1) || { tail -40 "$TMP/run.log" >&2; exit 1; }
    stop_engine
    rm -rf "$dest" && mkdir -p "$dest"
    cp "$TMP/run/benchmarks.json" "$dest/"
    # The command line, with this machine's paths and port made neutral.
    printf 'guidellm==%s\nguidellm %s\n' "$1" "${args[*]}" |
        sed -e "s#$URL#http://127.0.0.1:PORT#g" -e "s#$TOK_DIR#TOKENIZER_DIR#g" \
            -e "s#$TMP/run/#./#g" >"$dest/command.txt"
    [ -z "$(shapes_of "$1" "$2")" ] || echo "engine --reply-shapes $(shapes_of "$1" "$2")" >>"$dest/command.txt"
}

main() {
    for v in "${VERSIONS[@]}"; do
        install "$v"
        for c in "${CASES[@]}"; do
            run_case "$v" "$c"
        done
    done
}

# One line, so that bash has read all it runs before it starts (an edit of this file while it
# runs changes nothing).
main; exit
