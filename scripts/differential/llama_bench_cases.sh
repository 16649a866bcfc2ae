# The llama-bench part of scripts/differential/llama.sh (sourced): each pinned build over the cases
# its options allow (pins.toml [llama-bench] cases; an option its --help does not list is skipped):
#   json, jsonl, csv, md, sql  pp32 and tg8, 3 repetitions, in each output format (-o)
#   one-rep      -r 1: one repetition (the standard deviations are 0)
#   lists        -p 16,32 -n 4 -b 16,512: a test per value and batch size
#   pg           -pg 32,8: prompt and generation in one test (pp32+tg8)
#   depth        -d 0,32: tests after 32 tokens already in the context (n_depth)
#   no-warmup    --no-warmup: no untimed run first
#   failed       -ctv f16,q4_0 -fa 0: the second cache type's context cannot be made; llama-bench
#                stops and leaves its JSON array unclosed (exit 1)

bench_pinned() {
    sed -n '/^\[llama-bench\]/,/^\[/p' fixtures/differential/pins.toml |
        sed -n "s/^$1 *= *\[\(.*\)\]/\1/p" | tr -d '" ' | tr ',' ' '
}

# bench_case BIN MODEL CASE: the case's arguments, or nothing when this build lacks the option.
bench_args() {
    local help=$1 base=(-p 32 -n 8 -r 3 -t 1)
    case $2 in
    json | csv | md | sql) echo "${base[*]} -o $2" ;;
    jsonl) grep -q jsonl <<<"$help" && echo "${base[*]} -o jsonl" ;;
    one-rep) echo "-p 32 -n 8 -r 1 -t 1 -o json" ;;
    lists) echo "-p 16,32 -n 4 -b 16,512 -r 2 -t 1 -o json" ;;
    pg) grep -q -- '-pg' <<<"$help" && echo "-p 0 -n 0 -pg 32,8 -r 2 -t 1 -o json" ;;
    depth) grep -q -- '--n-depth' <<<"$help" && echo "-p 16 -n 4 -d 0,32 -r 2 -t 1 -o json" ;;
    no-warmup) grep -q -- '--no-warmup' <<<"$help" && echo "-p 32 -n 8 -r 2 -t 1 --no-warmup -o json" ;;
    failed) grep -q -- '-ctv' <<<"$help" && echo "-p 32 -n 8 -r 2 -t 1 -fa 0 -ctv f16,q4_0 -o json" ;;
    esac
    return 0
}

bench_one() { # VERSION
    local t bin model help args ext out=$OUT_BENCH/$1
    t=$(tree "$1")
    build "$t" llama-bench
    bin=$(bin_of "$t" llama-bench)
    model=$MODEL
    if [[ $1 == llama-cpp-python-0.2.* ]]; then
        [ -f "$TOOLS/tiny.gguf" ] || "$PY" scripts/differential/tiny_llama_gguf.py "$t" "$TOOLS/tiny.gguf"
        model=$TOOLS/tiny.gguf
    fi
    help=$("$bin" --help 2>&1 || true)
    rm -rf "$out"
    for c in $(bench_pinned cases); do
        args=$(bench_args "$help" "$c")
        [ -n "$args" ] || continue
        ext=json
        case $c in jsonl | csv | md | sql) ext=$c ;; esac
        mkdir -p "$out/$c"
        # shellcheck disable=SC2086
        nice -n 10 "$bin" -m "$model" $args >"$out/$c/llama-bench.$ext" 2>"$TOOLS/bench.log" ||
            [ "$c" = failed ] || { tail -20 "$TOOLS/bench.log" >&2; exit 1; }
        printf '%s (llama.cpp tree of the sdist, built here): llama-bench -m %s %s\n' "$1" \
            "$(basename "$model")" "$args" >"$out/$c/command.txt"
    done
}

bench_all() { for v in ${LLAMA_BENCH_VERSIONS:-$(bench_pinned versions)}; do bench_one "$v"; done; }
