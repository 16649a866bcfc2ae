#!/usr/bin/env bash
# The GPU checks of the bundled engine (issue 29), as one script that fits a lent GPU machine's
# 15 minutes with a rerun. Two steps:
#   bash scripts/device-check.sh prepare   # here: release-builds rigaudit (the engine is
#                                          # `rigaudit __engine`) and the engine's GPU tests,
#                                          # stripped, rigaudit gzipped, and the real model's
#                                          # first 2 layers, into target/device/ (about 50 MB)
#   bash scripts/device-check.sh run       # there (no Rust needed), with target/device carried:
#                                          # the device tool's run(command="bash scripts/device-check.sh run",
#                                          # carry=["target/device"], timeout_s=480)
# `run` runs the GPU tests (GPU vs CPU greedy tokens and log-probabilities on random-weights
# models, the 4-bit products against the CPU reference), `rigaudit-engine gpu-bench` (the Q4_1
# matrix-vector product's bandwidth, decode speed of a random SmolLM2-sized model on GPU and CPU),
# torch's fp16 GEMV on the same weight bytes (the roofline), `serve --device cuda` answering one
# completion with its all-reduces through NCCL (a world of one; the start line names NCCL's version
# and file), and `rigaudit measure --gpu auto` against it while a foreign process (torch) works on
# the same GPU for a while (the guard must name it and throw those tries away; the speed result
# carries NVML's facts); then prints one summary (also in $OUT/summary.txt with every log beside it).
set -uo pipefail
cd "$(dirname "$0")/.."
DIR=target/device

prepare() {
    set -e
    export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-1}"
    cargo build --release -p rigaudit
    local tests
    tests=$(cargo test --release -p rigaudit-engine --test it --no-run --message-format=json |
        python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "it":
        print(m["executable"])')
    mkdir -p "$DIR"
    rm -f "$DIR/rigaudit" "$DIR/rigaudit.gz" "$DIR/rigaudit-engine"
    cp target/release/rigaudit "$DIR/rigaudit"
    cp "$tests" "$DIR/gpu-tests"
    strip "$DIR/rigaudit" "$DIR/gpu-tests"
    # 22 MB stripped, 9 MB gzipped: the carry holds 64 MiB in all.
    gzip -9 "$DIR/rigaudit"
    # The real SmolLM2 (98 MB) is too big to carry (64 MiB a call): its first 2 layers, its
    # embeddings and tokenizer (37 MB) let the GPU test compare GPU and CPU on real weights there.
    local real="${RIGAUDIT_MODEL:-${RIGAUDIT_CACHE:-$HOME/.cache/rigaudit}/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
    rm -f "$DIR/smollm2-2layers.gguf"
    if [ -f "$real" ]; then
        target/release/rigaudit __engine make-model --from "$real" --layers 2 --out "$DIR/smollm2-2layers.gguf"
    else
        echo "no $real (scripts/fetch-model.sh): the real-weights GPU test will be skipped there" >&2
    fi
    du -sh "$DIR"
}

# torch's fp16 GEMV over the same bytes as the engine's Q4_1 bench (the issue's roofline), and a
# device copy; JSON on stdout.
torch_roofline() {
    python3 - "$1" <<'PY'
import json, sys, torch
nbytes = json.load(open(sys.argv[1]))["gemv_q4_1"]["weight_bytes"]
rows = 32768
k = nbytes // 2 // rows
w = torch.randn(rows, k, dtype=torch.float16, device="cuda")
x = torch.randn(k, dtype=torch.float16, device="cuda")
def timed(f, n=50):
    for _ in range(5): f()
    torch.cuda.synchronize()
    times = []
    for _ in range(n):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); f(); b.record(); b.synchronize()
        times.append(a.elapsed_time(b) / 1e3)
    return sorted(times)[n // 2]
t = timed(lambda: torch.mv(w, x))
dst = torch.empty_like(w)
c = timed(lambda: dst.copy_(w))
print(json.dumps({"rows": rows, "k": k, "bytes": rows * k * 2, "fp16_gemv_gb_per_s": rows * k * 2 / t / 1e9,
                  "copy_gb_per_s_read_plus_write": 2 * rows * k * 2 / c / 1e9,
                  "torch": torch.__version__, "gpu": torch.cuda.get_device_name()}))
PY
}

# The address an engine's start line in LOG names once it listens (up to 60 s), while PID lives.
listen_addr() {
    local addr=""
    for _ in $(seq 1 120); do
        addr=$(grep -o 'listen=http://[^ ]*' "$1" | head -1 | cut -d= -f2)
        [ -n "$addr" ] && break
        kill -0 "$2" 2>/dev/null || break
        sleep 0.5
    done
    echo "$addr"
}

# serve --device cuda (all-reduces through NCCL, a world of one, when NCCL loads) on a random SmolLM2-sized model
# answers a greedy completion; prints its start line.
serve_smoke() {
    local out=$1 model
    model=$(mktemp -d)/random.gguf
    "$ENGINE" make-model --preset smollm2-135m --seed 1 --out "$model" >/dev/null || return 1
    "$ENGINE" serve "$model" --name random --device cuda --nccl auto --port 0 --context 2048 \
        >"$out/serve.log" 2>&1 &
    local pid=$! addr
    addr=$(listen_addr "$out/serve.log" "$pid")
    local ok=1
    if [ -n "$addr" ]; then
        python3 - "$addr" >"$out/serve-answer.json" <<'PY' && ok=0
import json, sys, urllib.request
body = json.dumps({"model": "random", "prompt": "The GPU says", "max_tokens": 32, "temperature": 0}).encode()
r = urllib.request.urlopen(urllib.request.Request(sys.argv[1] + "/v1/completions", body, {"Content-Type": "application/json"}), timeout=60)
v = json.load(r)
print(json.dumps(v))
assert v["usage"]["completion_tokens"] >= 1, v
PY
    fi
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    grep -m1 '^rigaudit-engine start' "$out/serve.log"
    return $ok
}

# Only with two GPUs or more: the same model served by two ranks (tensor parallel 2 over NCCL,
# rank 1 on cuda:1, rank 0 on cuda:0) answers the serve smoke's greedy prompt; prints whether the
# text is one GPU's. With one GPU it says so and does nothing (NCCL refuses two ranks on one GPU).
two_ranks() {
    local out=$1 gpus model
    gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
    if [ "${gpus:-0}" -lt 2 ]; then
        echo "skipped: $gpus GPU(s) here; a world of two needs two"
        return 0
    fi
    model=$(mktemp -d)/random.gguf
    "$ENGINE" make-model --preset smollm2-135m --seed 1 --out "$model" >/dev/null || return 1
    export NCCL_COMM_ID=127.0.0.1:29583 RIGAUDIT_ENGINE_WORLD=2
    RIGAUDIT_ENGINE_RANK=1 "$ENGINE" serve "$model" --name random --device cuda:1 --port 0 \
        --context 2048 >"$out/rank1.log" 2>&1 &
    local r1=$!
    RIGAUDIT_ENGINE_RANK=0 "$ENGINE" serve "$model" --name random --device cuda:0 --port 0 \
        --context 2048 >"$out/rank0.log" 2>&1 &
    local r0=$! addr
    addr=$(listen_addr "$out/rank0.log" "$r0")
    local said="FAILED (rank0.log, rank1.log)"
    if [ -n "$addr" ] && python3 - "$addr" "$out/serve-answer.json" >"$out/two-ranks-answer.txt" <<'PY'; then
import json, sys, urllib.request
body = json.dumps({"model": "random", "prompt": "The GPU says", "max_tokens": 32, "temperature": 0}).encode()
r = urllib.request.urlopen(urllib.request.Request(sys.argv[1] + "/v1/completions", body, {"Content-Type": "application/json"}), timeout=60)
two = json.load(r)["choices"][0]["text"]
one = json.load(open(sys.argv[2]))["choices"][0]["text"]
print("the same text as one GPU" if two == one else f"OTHER TEXT than one GPU: {two!r} vs {one!r}")
PY
        said=$(cat "$out/two-ranks-answer.txt")
    fi
    kill "$r0" 2>/dev/null
    wait "$r0" 2>/dev/null
    # Rank 1 stops by itself once rank 0 is silent (10 s); give it that, then make sure.
    for _ in $(seq 1 30); do kill -0 "$r1" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$r1" 2>/dev/null && said="$said; rank 1 still running 15 s after rank 0 (killed)"
    kill "$r1" 2>/dev/null
    echo "$said; rank 1: $(grep -m1 -o 'rank=1 world=2.*' "$out/rank1.log")"
}

# rigaudit measure --gpu auto against serve --device cuda while torch works on the same GPU from
# second 3 to second 15: the guard must name the foreign GPU process and throw those tries away;
# the speed result must carry NVML's facts. Its logs and bundle go to $out/measure*.
measure_gpu() {
    local out=$1 model
    model=$(mktemp -d)/random.gguf
    "$ENGINE" make-model --preset smollm2-135m --seed 2 --out "$model" >/dev/null || return 1
    "$ENGINE" serve "$model" --name random --device cuda --port 0 --context 4096 \
        >"$out/measure-serve.log" 2>&1 &
    local pid=$! addr
    addr=$(listen_addr "$out/measure-serve.log" "$pid")
    [ -n "$addr" ] || { kill "$pid" 2>/dev/null; return 1; }
    cat >"$out/measure-contract.json" <<'JSON'
{"parts": ["decode", "prefill"], "model": "random", "prompt_ids": ["code", "prose"], "runs": 4,
 "warmups": 1, "max_tokens": 128, "prefill": {"depths": [512], "runs": 3, "max_tokens": 1},
 "sampling": {"temperature": 0.0}, "seed": 42, "enable_thinking": false, "cache_prompt": false,
 "server": {"slots": 1, "window": 4096}, "load_guard": null}
JSON
    (sleep 3; timeout 12 python3 -c '
import torch
a = torch.randn(4096, 4096, device="cuda")
while True:
    a = a @ a.T; a = a / a.norm()
' >/dev/null 2>&1) &
    local foreign=$!
    timeout 100 "$RIGAUDIT" measure --base-url "$addr/v1" --contract "$out/measure-contract.json" \
        --out "$out/measure" --gpu auto --timeout 60 >"$out/measure.log" 2>&1
    local rc=$?
    kill "$foreign" "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    return $rc
}

# Each step's time limit is set so that the whole run ends within 470 s (the device call's 480 s),
# with its summary, even when every step hits its limit: 120 + 90 + 45 + 45 + 110 + 60.
run() {
    if ! [ -f "$DIR/rigaudit.gz" ] || ! [ -x "$DIR/gpu-tests" ]; then
        echo "scripts/device-check.sh: $DIR/rigaudit.gz and $DIR/gpu-tests missing: run 'prepare' here and carry $DIR" >&2
        exit 1
    fi
    local out=${OUT:-$DIR/out} bin
    mkdir -p "$out"
    bin=$(mktemp -d)
    gunzip -c "$DIR/rigaudit.gz" >"$bin/rigaudit" && chmod +x "$bin/rigaudit"
    # The engine is rigaudit itself (`rigaudit __engine`), through a two-line wrapper.
    printf '#!/bin/sh\nexec %s __engine "$@"\n' "$bin/rigaudit" >"$bin/rigaudit-engine"
    chmod +x "$bin/rigaudit-engine"
    export RIGAUDIT="$bin/rigaudit" ENGINE="$bin/rigaudit-engine"
    # NCCL: the system's (libnccl.so.2 on the loader's path), else the one torch's wheels carry.
    if ! ldconfig -p 2>/dev/null | grep -q 'libnccl.so.2 ' && [ -z "${RIGAUDIT_NCCL:-}" ]; then
        RIGAUDIT_NCCL=$(python3 -c 'import glob, os, nvidia.nccl as n
print(glob.glob(os.path.join(list(n.__path__)[0], "lib", "libnccl.so.2"))[0])' 2>/dev/null) &&
            export RIGAUDIT_NCCL
    fi
    # A fresh PTX cache: the first GpuForward of the run compiles, later ones read the cache.
    RIGAUDIT_CACHE=$(mktemp -d)
    export RIGAUDIT_CACHE
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader \
        >"$out/gpu.txt" 2>&1
    # Not CI there: without the carried real layers, the real-weights test is skipped (it says so).
    local real=/nonexistent
    [ -f "$DIR/smollm2-2layers.gguf" ] && real=$(realpath "$DIR/smollm2-2layers.gguf")
    env -u CI RIGAUDIT_MODEL="$real" timeout 120 "$DIR/gpu-tests" gpu:: --test-threads 1 --nocapture \
        >"$out/gpu-tests.txt" 2>&1
    local tests_rc=$?
    timeout 90 "$ENGINE" gpu-bench --tokens 256 --cpu-tokens 64 \
        >"$out/bench.json" 2>"$out/bench.err"
    local bench_rc=$?
    local torch_rc=1
    if [ $bench_rc = 0 ]; then
        timeout 45 bash -c "$(declare -f torch_roofline); torch_roofline '$out/bench.json'" \
            >"$out/torch.json" 2>"$out/torch.err" && torch_rc=0
    fi
    local start_line serve_rc
    start_line=$(timeout 45 bash -c "$(declare -f listen_addr serve_smoke); serve_smoke '$out'")
    serve_rc=$?
    timeout 110 bash -c "$(declare -f listen_addr measure_gpu); measure_gpu '$out'"
    local measure_rc=$?
    local two
    two=$(timeout 60 bash -c "$(declare -f listen_addr two_ranks); two_ranks '$out'")
    summary "$out" "$tests_rc" "$bench_rc" "$torch_rc" "$serve_rc" "$start_line" "$measure_rc" "$two" |
        tee "$out/summary.txt"
}

summary() {
    python3 - "$@" <<'PY'
import json, os, re, sys
out, tests_rc, bench_rc, torch_rc, serve_rc, start, measure_rc, two = sys.argv[1:9]
def load(name):
    try: return json.load(open(os.path.join(out, name)))
    except Exception as e: return None
print("== device check (issue 29)")
print("gpu:", open(os.path.join(out, "gpu.txt")).read().strip())
t = open(os.path.join(out, "gpu-tests.txt")).read()
res = re.findall(r"test result: .*", t)
print(f"gpu tests: rc={tests_rc}", res[-1] if res else "(no result line)")
for l in t.splitlines():
    if "SKIPPED" in l or "max |logprob" in l or "relative error" in l or "panicked" in l:
        print("   ", l)
b, tr = load("bench.json"), load("torch.json")
if b:
    g, d = b["gemv_q4_1"], b["decode_smollm2_random"]
    print("facts:", b["facts"])
    print(f"Q4_1 GEMV {g['rows']}x{g['k']} ({g['weight_bytes']/2**20:.0f} MiB): {g['gb_per_s']:.0f} GB/s, "
          f"{g['us']:.1f} us, rel err vs CPU {g['max_rel_err_vs_cpu']:.1e}; engine copy {g['copy_gb_per_s_read_plus_write']:.0f} GB/s (r+w)")
    print(f"  the warp-per-row variant: {g['warp_per_row_gb_per_s']:.0f} GB/s, rel err {g['warp_per_row_max_rel_err_vs_cpu']:.1e}")
    if tr:
        ratio = g["gb_per_s"] / tr["fp16_gemv_gb_per_s"]
        alt = g["warp_per_row_gb_per_s"] / tr["fp16_gemv_gb_per_s"]
        print(f"torch {tr['torch']} fp16 GEMV same bytes: {tr['fp16_gemv_gb_per_s']:.0f} GB/s, copy {tr['copy_gb_per_s_read_plus_write']:.0f} GB/s (r+w)"
              f" -> the engine's Q4_1 kernel at {100*ratio:.0f}% of torch (goal >= 70%: {'MET' if ratio >= 0.7 else 'NOT MET'}); warp per row {100*alt:.0f}%")
    else:
        print(f"torch roofline: failed (rc={torch_rc}), see torch.err")
    print(f"prefill Q4_1 GEMM 4096x4096x64: {b['gemm_q4_1_64_tokens']['us']:.1f} us, rel err {b['gemm_q4_1_64_tokens']['max_rel_err_vs_cpu']:.1e}")
    sp = d["speedup_gpu_graph_over_cpu"]
    print(f"decode random SmolLM2-135M: GPU {d['gpu_graph_tok_s']:.0f} tok/s with graphs, {d['gpu_eager_tok_s']:.0f} without; "
          f"CPU {d['cpu_tok_s']:.1f} tok/s on {d['cpu_threads']} threads -> {sp:.1f}x (goal >= 10x: {'MET' if sp >= 10 else 'NOT MET'})")
    print(f"launch overhead: {d['launch_overhead_us_per_token']:.0f} us per token saved by graphs over {d['launches_per_token']} launches")
    nc = b.get("decode_nccl_world_of_one", {})
    if "nccl_us_per_token" in nc:
        print(f"NCCL {nc['nccl']} ({nc['nccl_lib']}), a world of one: {nc['gpu_graph_tok_s']:.0f} tok/s with graphs, "
              f"{nc['nccl_us_per_token']:.0f} us per token for {nc['all_reduces_per_token']} all-reduces")
    else:
        print("NCCL decode:", json.dumps(nc))
    nv = b.get("nvml", {})
    print("NVML before:", json.dumps(nv.get("before")))
    print("NVML after the graph decode:", json.dumps(nv.get("after_graph_decode")))
    print("energy per decoded token (graph run, mJ):", nv.get("graph_run_mj_per_decoded_token"))
else:
    print(f"gpu-bench: failed (rc={bench_rc}):", open(os.path.join(out, "bench.err")).read()[-2000:])
print(f"serve --device cuda --nccl auto: {'answered' if serve_rc == '0' else 'FAILED (see serve.log)'}; start line: {start}")
print(f"  NCCL in the start line: {'yes' if ' nccl=' in start and ' nccl=none' not in start else 'NO'}")
print(f"tensor parallel 2 (two GPUs): {two}")
print(f"measure --gpu auto beside a foreign torch process: rc={measure_rc}")
log = open(os.path.join(out, "measure.log"), errors="replace").read() if os.path.exists(os.path.join(out, "measure.log")) else ""
named = [l for l in log.splitlines() if "on the GPU" in l]
print(f"  guard lines naming a process on the GPU: {len(named)}", *(["   " + named[0][:300]] if named else []))
sr = None
for root, _, files in os.walk(os.path.join(out, "measure")):
    if "speed-result.json" in files:
        sr = json.load(open(os.path.join(root, "speed-result.json")))
gpu = (sr or {}).get("gpu")
if gpu:
    steps = gpu.get("steps", [])
    jpt = [s["energy_j_per_token"] for s in steps if s.get("kept") and s.get("energy_j_per_token") is not None]
    thrown = [s for s in steps if not s.get("kept")]
    foreign = sorted({p for s in steps for p in s.get("foreign_processes", [])})
    reasons = sorted({r for s in steps for r in s.get("throttle_reasons", [])})
    print(f"  NVML facts: {gpu.get('name')} driver {gpu.get('driver')}, {len(steps)} tries ({len(thrown)} thrown away), "
          f"J/token median of kept tries {sorted(jpt)[len(jpt)//2] if jpt else None}, throttle reasons seen {reasons}")
    print(f"  foreign GPU processes recorded: {foreign[:3]}")
else:
    print("  NVML facts: NONE in the speed result" + ("" if sr else " (no speed result)"))
PY
}

case "${1:-}" in
prepare) prepare ;;
run) run ;;
*)
    echo "usage: bash scripts/device-check.sh prepare|run" >&2
    exit 2
    ;;
esac
