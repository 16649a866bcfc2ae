"""Benchmark client: decode, prefill at 512 and 2048 tokens, and total decode
throughput at 1, 2, 4 and 8 concurrent requests, against one or more
OpenAI-compatible servers (rigaudit-engine and llama.cpp's server).

usage: python3 engine_vs_llamacpp.py ENGINE_BIN MODEL [THREADS]
Starts rigaudit-engine, benches it, stops it; then the same for llama.cpp's
server (PyPI xllamacpp, launched by llamacpp_server.py beside this file), on
the same GGUF with the same threads, slots and window; prints both and the
ratios. Only talks to 127.0.0.1.
"""
import os
import subprocess
import json
import random
import statistics
import sys
import threading
import time
import urllib.request

REPS = 3
VOCAB_LO, VOCAB_HI = 1000, 40000  # plain word pieces, no special tokens


def post(url, body, stream=False):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    return urllib.request.urlopen(req, timeout=600)


def stream_completion(base, prompt, max_tokens):
    """Returns (t_first_token, t_end, completion_tokens) from a streamed request."""
    body = {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True,
            "stream": True, "cache_prompt": False, "stream_options": {"include_usage": True}}
    t0 = time.perf_counter()
    first = None
    ntok = 0
    with post(base + "/v1/completions", body) as r:
        for line in r:
            line = line.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            ev = json.loads(line[6:])
            ch = ev.get("choices") or []
            if ch and ch[0].get("text"):
                if first is None:
                    first = time.perf_counter()
            if ev.get("usage"):
                ntok = ev["usage"]["completion_tokens"]
    return (first or time.perf_counter()) - t0, time.perf_counter() - t0, ntok


def rand_prompt(n, rng):
    return [rng.randrange(VOCAB_LO, VOCAB_HI) for _ in range(n)]


def decode_rate(base, rng):
    rates = []
    for _ in range(REPS):
        tf, te, n = stream_completion(base, rand_prompt(16, rng), 128)
        rates.append((n - 1) / (te - tf))
    return statistics.median(rates)


def prefill_rate(base, n, rng):
    rates = []
    for _ in range(REPS):
        body = {"prompt": rand_prompt(n, rng), "max_tokens": 1, "temperature": 0, "cache_prompt": False}
        t0 = time.perf_counter()
        with post(base + "/v1/completions", body) as r:
            json.load(r)
        rates.append(n / (time.perf_counter() - t0))
    return statistics.median(rates)


def total_rate(base, conc, rng):
    rates = []
    for _ in range(REPS):
        prompts = [rand_prompt(16, rng) for _ in range(conc)]
        out = [0] * conc
        def one(i):
            out[i] = stream_completion(base, prompts[i], 96)[2]
        ths = [threading.Thread(target=one, args=(i,)) for i in range(conc)]
        t0 = time.perf_counter()
        for t in ths:
            t.start()
        for t in ths:
            t.join()
        rates.append(sum(out) / (time.perf_counter() - t0))
    return statistics.median(rates)


PARALLEL, CONTEXT = 8, 4096


def wait_ready(base, proc, secs=120):
    t = time.time()
    while time.time() - t < secs:
        if proc.poll() is not None:
            raise SystemExit(f"server exited early with {proc.returncode}")
        try:
            with urllib.request.urlopen(base + "/health", timeout=2) as r:
                if r.status == 200:
                    return
        except Exception:
            time.sleep(0.5)
    raise SystemExit("server not ready in time")


def launch(name, engine_bin, model, threads, port):
    here = os.path.dirname(os.path.abspath(__file__))
    if name == "rigaudit-engine":
        cmd = [engine_bin, "serve", model, "--name", "bench", "--parallel", str(PARALLEL),
               "--context", str(CONTEXT), "--threads", str(threads), "--port", str(port)]
    else:
        cmd = [sys.executable, os.path.join(here, "llamacpp_server.py"), model, str(port),
               str(PARALLEL), str(CONTEXT), str(threads)]
    log = open(f"/tmp/bench-{name}.log", "w")
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)


def main():
    engine_bin, model = sys.argv[1], sys.argv[2]
    threads = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    servers = [("rigaudit-engine", 18431), ("llama.cpp", 18432)]
    rng = random.Random(7)
    rows = {}
    for name, port in servers:
        base = f"http://127.0.0.1:{port}"
        proc = launch(name, engine_bin, model, threads, port)
        try:
            wait_ready(base, proc)
            bench_one(name, base, rng, rows)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    report(servers, rows)


def bench_one(name, base, rng, rows):
    if True:
        stream_completion(base, rand_prompt(64, rng), 8)  # warm-up
        r = {}
        r["decode tok/s"] = decode_rate(base, rng)
        r["prefill@512 tok/s"] = prefill_rate(base, 512, rng)
        r["prefill@2048 tok/s"] = prefill_rate(base, 2048, rng)
        for c in (1, 2, 4, 8):
            r[f"total@{c} tok/s"] = total_rate(base, c, rng)
        rows[name] = r
        print(name, json.dumps({k: round(v, 1) for k, v in r.items()}), flush=True)


def report(servers, rows):
    names = [n for n, _ in servers]
    keys = list(rows[names[0]].keys())
    print()
    print("| figure | " + " | ".join(names) + (" | ratio |" if len(names) == 2 else " |"))
    print("|---" * (len(names) + 1 + (len(names) == 2)) + "|")
    for k in keys:
        vals = [rows[n][k] for n in names]
        line = f"| {k} | " + " | ".join(f"{v:.1f}" for v in vals)
        if len(names) == 2:
            line += f" | {vals[0] / vals[1]:.2f}x"
        print(line + " |")


if __name__ == "__main__":
    main()
