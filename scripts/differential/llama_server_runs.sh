# The llama-server part of scripts/differential/llama.sh (sourced): each pinned server version over
# its cases. Versions: pins.toml [llama-server] versions, "src-llama-cpp-python-0.2.11" (the server
# of that sdist's llama.cpp tree) or "xllamacpp-X" (that PyPI version).

server_pinned() {
    sed -n '/^\[llama-server\]/,/^\[/p' fixtures/differential/pins.toml |
        sed -n 's/^versions *= *\[\(.*\)\]/\1/p' | tr -d '" ' | tr ',' ' '
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# wait_up URL PID: until the server answers, or fails.
wait_up() {
    for _ in $(seq 1 600); do
        curl -sf "$1/health" >/dev/null 2>&1 && return 0
        curl -s "$1/completion" -d '{"prompt":"a","n_predict":1}' 2>/dev/null | grep -q timings && return 0
        kill -0 "$2" 2>/dev/null || return 1
        sleep 0.2
    done
    return 1
}

# stop PID: the server ended (xllamacpp's server ignores SIGTERM while it serves: SIGKILL after 5 s).
stop() {
    kill "$1" 2>/dev/null || true
    for _ in $(seq 1 25); do kill -0 "$1" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}

# record DIR LINE: the command line beside each case's files.
record() { for d in "$1"/*/; do printf '%s\n' "$2" >"$d/command.txt"; done; }

server_src() { # VERSION: the 2023 server over HTTP, on the tiny model
    local t port pid out=$OUT_SERVER/$1
    t=$(tree "${1#src-}")
    build "$t" llama-bench server
    [ -f "$TOOLS/tiny.gguf" ] || "$PY" scripts/differential/tiny_llama_gguf.py "$t" "$TOOLS/tiny.gguf"
    port=$(free_port)
    "$t/server" -m "$TOOLS/tiny.gguf" --host 127.0.0.1 --port "$port" -t 1 -c 256 >"$TOOLS/server.log" 2>&1 &
    pid=$!
    wait_up "http://127.0.0.1:$port" "$pid" || { tail -20 "$TOOLS/server.log" >&2; exit 1; }
    rm -rf "$out" && mkdir -p "$out"
    python3 scripts/differential/llama_server_cases.py http "http://127.0.0.1:$port" "$out" completion stream
    stop "$pid"
    record "$out" "${1#src-} llama.cpp tree: server -m tiny.gguf -t 1 -c 256 (one slot); requests: llama_server_cases.py"
}

server_xl() { # VERSION: xllamacpp, over HTTP where it listens, else in process
    local v=${1#xllamacpp-} lib=$TOOLS/xllamacpp-${1#xllamacpp-} out=$OUT_SERVER/$1 port pid
    [ -d "$lib/xllamacpp" ] || python3 -m pip install --quiet --disable-pip-version-check --no-deps \
        --only-binary=:all: --target "$lib" "xllamacpp==$v"
    rm -rf "$out" && mkdir -p "$out"
    local cases=(completion chat stream stream-chat nocache)
    if PYTHONPATH=$lib python3 -c 'import sys, xllamacpp as x; sys.exit(0 if hasattr(x.Server, "listening_address") else 1)'; then
        port=$(free_port)
        PYTHONPATH=$lib python3 scripts/differential/llama_server.py "$MODEL" "$port" 256 1 >"$TOOLS/server.log" 2>&1 &
        pid=$!
        wait_up "http://127.0.0.1:$port" "$pid" || { tail -20 "$TOOLS/server.log" >&2; exit 1; }
        python3 scripts/differential/llama_server_cases.py http "http://127.0.0.1:$port" "$out" "${cases[@]}"
        stop "$pid"
        port=$(free_port)
        PYTHONPATH=$lib python3 scripts/differential/llama_server.py "$MODEL" "$port" 256 1 --draft "$MODEL" >"$TOOLS/server.log" 2>&1 &
        pid=$!
        wait_up "http://127.0.0.1:$port" "$pid" || { tail -20 "$TOOLS/server.log" >&2; exit 1; }
        python3 scripts/differential/llama_server_cases.py http "http://127.0.0.1:$port" "$out" speculative
        stop "$pid"
        record "$out" "xllamacpp==$v over HTTP: SmolLM2-135M-Instruct Q4_1, one slot of 256 tokens, 1 thread (speculative: the same model as draft, n_max 4); requests: llama_server_cases.py"
    else
        PYTHONPATH=$lib python3 scripts/differential/llama_server_cases.py inproc "$MODEL" "$out" "${cases[@]}" 2>"$TOOLS/server.log"
        PYTHONPATH=$lib python3 scripts/differential/llama_server_cases.py inproc "$MODEL" "$out" speculative --draft "$MODEL" 2>"$TOOLS/server.log"
        record "$out" "xllamacpp==$v in process (no HTTP listener): SmolLM2-135M-Instruct Q4_1, one slot of 256 tokens, 1 thread (speculative: the same model as draft, n_max 4); requests: llama_server_cases.py"
    fi
}

server_all() {
    for v in ${LLAMA_SERVER_VERSIONS:-$(server_pinned)}; do
        case $v in
        src-*) server_src "$v" ;;
        xllamacpp-*) server_xl "$v" ;;
        esac
    done
}
