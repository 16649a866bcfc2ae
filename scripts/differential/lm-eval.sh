#!/usr/bin/env bash
# Differential fixtures of lm-evaluation-harness (issue 35): runs lm_eval itself, at the versions
# fixtures/differential/pins.toml pins under [lm-eval], against the bundled engine
# (SmolLM2-135M-Instruct, CPU) on the project's local tasks (fixtures/differential/lm-eval/tasks/),
# and keeps what each version writes in fixtures/differential/lm-eval/<version>/<case>/.
#
#   bash scripts/differential/lm-eval.sh [VERSION ...]     (default: every pinned version)
#
# The cases (each one lm_eval run; small: 6 to 12 documents a task, answers of 1 to 4 tokens):
#   gen       generate_until, two filters on exact_match (strict-match, flexible-extract),
#             regexes_to_ignore, case and punctuation ignored; the same with a 1-token answer limit
#             (single-token replies, some empty); --limit 8 (a count); through the chat endpoint
#             before 0.4.4
#   choice    multiple_choice (acc, acc_norm) and loglikelihood (acc, perplexity) in a group
#             (rd_suite, acc weighted by size); --limit 0.5 (a fraction); from 0.4.4 (before, the
#             API model cannot score loglikelihood requests); through the completions
#             endpoint with the engine's own tokenizer (echo + logprobs)
#   chat      rd_gen through the chat endpoint, 1 few-shot example; --limit 6, or from 0.4.9
#             --samples of 6 documents by index; --apply_chat_template from 0.4.3
#
# Tools: one Python environment with lm_eval's dependencies pinned below (torch's CPU-and-CUDA
# wheel from PyPI: lm_eval imports torch before 0.4.10), and each lm_eval version installed without
# dependencies into its own folder on PYTHONPATH, all under ${RIGAUDIT_CACHE:-$HOME/.cache/rigaudit}/
# diff-tools. Nothing is fetched from a model hub: the tokenizer is the engine's /tokenizer.json, the
# data a local JSON file, and lm_eval 0.4.0-0.4.2's exact_match (HF evaluate's, loaded by name) a
# local copy of its compute rule (exact_match/exact_match.py in the run's folder).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
CACHE=${RIGAUDIT_CACHE:-$HOME/.cache/rigaudit}
TOOLS=$CACHE/diff-tools
OUT_BASE=fixtures/differential/lm-eval
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 HF_EVALUATE_OFFLINE=1 NO_COLOR=1
export OPENAI_API_KEY=EMPTY TOKENIZERS_PARALLELISM=false

# The versions (oldest published to newest): the [lm-eval] versions of pins.toml.
mapfile -t PINNED < <(sed -n '/^\[lm-eval\]/,/^\[/p' fixtures/differential/pins.toml |
    sed -n 's/^versions *= *\[\(.*\)\]/\1/p' | tr -d '" ' | tr ',' '\n')
VERSIONS=("$@")
[ ${#VERSIONS[@]} -gt 0 ] || VERSIONS=("${PINNED[@]}")

BASE_DEPS="torch==2.3.1 numpy==1.26.4 transformers==4.46.3 tokenizers==0.20.3 datasets==2.20.0
accelerate==0.33.0 peft==0.12.0 evaluate==0.4.2 sacrebleu==2.4.3 rouge-score==0.1.2 scikit-learn==1.5.1
sqlitedict==2.1.0 jsonlines==4.0.0 numexpr==2.10.1 pybind11==2.13.5 pytablewriter==1.2.0
tqdm-multiprocess==0.0.11 zstandard==0.23.0 dill==0.3.8 word2number==1.1 more-itertools==10.4.0
openai==1.40.0 httpx==0.27.2 tiktoken==0.7.0 tenacity==8.5.0 aiohttp==3.10.3 requests==2.32.3 jinja2==3.1.4
typing-extensions==4.15.0 tqdm==4.66.5 pandas==2.2.2 pyarrow==17.0.0"
PY=$TOOLS/lm-eval-base/bin/python
if [ ! -x "$PY" ]; then
    python3 -m venv "$TOOLS/lm-eval-base"
    # shellcheck disable=SC2086 # a list of packages
    "$TOOLS/lm-eval-base/bin/pip" install --quiet --disable-pip-version-check $BASE_DEPS
fi
for v in "${VERSIONS[@]}"; do
    [ -d "$TOOLS/lm-eval-$v/lm_eval" ] ||
        "$TOOLS/lm-eval-base/bin/pip" install --quiet --disable-pip-version-check --no-deps \
            --target "$TOOLS/lm-eval-$v" "lm_eval==$v"
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

PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
URL=http://127.0.0.1:$PORT
"$ENGINE_BIN" serve "$MODEL" --name smollm2 --parallel 2 --context 1024 \
    --host 127.0.0.1 --port "$PORT" --threads 2 >"$TMP/engine.log" 2>&1 &
ENGINE=$!
for _ in $(seq 1 300); do
    curl -sf "$URL/v1/models" >/dev/null && break
    kill -0 "$ENGINE" 2>/dev/null || { cat "$TMP/engine.log" >&2; exit 1; }
    sleep 0.2
done

# The engine's tokenizer as the model-hub cache entry `local/smollm2` (read offline by name).
export HF_HOME=$TMP/hf
REV=0000000000000000000000000000000000000000
TOK_DIR=$HF_HOME/hub/models--local--smollm2/snapshots/$REV
mkdir -p "$TOK_DIR" "$HF_HOME/hub/models--local--smollm2/refs"
printf '%s' "$REV" >"$HF_HOME/hub/models--local--smollm2/refs/main"
curl -sf "$URL/tokenizer.json" -o "$TOK_DIR/tokenizer.json"
printf '{"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 1024, "bos_token": "<|im_start|>", "eos_token": "<|im_end|>", "unk_token": "<|endoftext|>", "pad_token": "<|im_end|>", "chat_template": "{%% for message in messages %%}<|im_start|>{{ message.role }}\\n{{ message.content }}<|im_end|>\\n{%% endfor %%}{%% if add_generation_prompt %%}<|im_start|>assistant\\n{%% endif %%}"}\n' >"$TOK_DIR/tokenizer_config.json"

# The run's folder: the repository's fixtures (the tasks name their data by a relative path) and
# HF evaluate's exact_match, which lm_eval 0.4.0-0.4.2 load by name: its compute rule, as the
# metric's script (huggingface/evaluate metrics/exact_match/exact_match.py) has it (evaluate reads
# its imports one per line).
CWD=$TMP/cwd
mkdir -p "$CWD/exact_match"
ln -s "$ROOT/fixtures" "$CWD/fixtures"
cat >"$CWD/exact_match/exact_match.py" <<'PY'
import re
import string

import datasets
import evaluate
import numpy as np


class ExactMatch(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description="exact match", citation="", inputs_description="",
            features=datasets.Features({"predictions": datasets.Value("string", id="sequence"),
                                        "references": datasets.Value("string", id="sequence")}))

    def _compute(self, predictions, references, regexes_to_ignore=None, ignore_case=False,
                 ignore_punctuation=False, ignore_numbers=False):
        if regexes_to_ignore is not None:
            for s in regexes_to_ignore:
                predictions = np.array([re.sub(s, "", x) for x in predictions])
                references = np.array([re.sub(s, "", x) for x in references])
        else:
            predictions = np.asarray(predictions)
            references = np.asarray(references)
        if ignore_case:
            predictions = np.char.lower(predictions)
            references = np.char.lower(references)
        if ignore_punctuation:
            repl_table = string.punctuation.maketrans("", "", string.punctuation)
            predictions = np.char.translate(predictions, table=repl_table)
            references = np.char.translate(references, table=repl_table)
        if ignore_numbers:
            repl_table = string.digits.maketrans("", "", string.digits)
            predictions = np.char.translate(predictions, table=repl_table)
            references = np.char.translate(references, table=repl_table)
        return {"exact_match": np.mean(predictions == references)}
PY

# Whether version $1 is at least $2.
at_least() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1)" = "$2" ]; }

# lm_eval_run VERSION CASE MODEL MODEL_ARGS ARGS...: one run, its files kept in the case's folder.
lm_eval_run() {
    local v=$1 case=$2 model=$3 margs=$4
    shift 4
    local out=$TMP/out-$v-$case
    rm -rf "$out"
    (cd "$CWD" && PYTHONPATH=$TOOLS/lm-eval-$v OPENAI_BASE_URL=$URL/v1 timeout 900 "$PY" -m lm_eval \
        --model "$model" --model_args "$margs" --include_path "$ROOT/$OUT_BASE/tasks" \
        --log_samples --output_path "$out" --seed 1234 "$@") >"$TMP/$v-$case.log" 2>&1 ||
        { tail -40 "$TMP/$v-$case.log" >&2; exit 1; }
    local dest=$OUT_BASE/$v/$case
    rm -rf "$dest" && mkdir -p "$dest"
    find "$out" -type f \( -name '*.json' -o -name '*.jsonl' \) -exec cp {} "$dest/" \;
    echo "$v $case: $(ls "$dest" | wc -l) files"
}

for v in "${VERSIONS[@]}"; do
    if at_least "$v" 0.4.4; then
        COMP="model=smollm2,base_url=$URL/v1/completions,tokenizer_backend=huggingface,tokenizer=local/smollm2,num_concurrent=1,max_retries=1"
        CHAT="model=smollm2,base_url=$URL/v1/chat/completions,tokenized_requests=False,num_concurrent=1,max_retries=1"
    else
        # 0.4.1-0.4.3: the openai client, its address from OPENAI_BASE_URL.
        COMP="model=smollm2,tokenizer_backend=huggingface,tokenizer=local/smollm2"
        CHAT="model=smollm2"
    fi
    TEMPLATE=()
    at_least "$v" 0.4.3 && TEMPLATE=(--apply_chat_template)
    # Before 0.4.4 local-completions hands generation's `until` to the openai client, which refuses
    # it (v0.4.2 lm_eval/models/openai_completions.py:272-283): generation goes through chat there.
    GEN=(local-completions "$COMP")
    at_least "$v" 0.4.4 || GEN=(local-chat-completions "$CHAT")
    lm_eval_run "$v" gen "${GEN[@]}" --tasks rd_gen,rd_gen_one --limit 8
    # Before 0.4.4 the API model cannot score a loglikelihood request (TemplateLM._encode_pair
    # reads the HF model's AUTO_MODEL_CLASS: v0.4.2 lm_eval/api/model.py:300): no choice case.
    at_least "$v" 0.4.4 &&
        lm_eval_run "$v" choice local-completions "$COMP" --tasks rd_suite --limit 0.5
    # Documents by index where the CLI has --samples (0.4.9 on), else the first 6.
    PICK=(--limit 6)
    at_least "$v" 0.4.9 && PICK=(--samples '{"rd_gen": [0, 2, 4, 6, 8, 10]}')
    lm_eval_run "$v" chat local-chat-completions "$CHAT" --tasks rd_gen --num_fewshot 1 \
        "${PICK[@]}" "${TEMPLATE[@]}"
done
