#!/usr/bin/env python3
"""How still this machine holds: the spread `rigaudit ab` has to see through, measured directly.

Starts the bundled engine twice (`rigaudit __engine serve`, one thread each, the model that
scripts/fetch-model.sh fetched), both idle but for the request in flight, and measures:

1. one engine, REQUESTS greedy decodes of 96 tokens one after another: the engine's own decode
   time of each (its `timings.predicted_ms`), its process's CPU time over the same request
   (utime + stime from /proc), and the machine's steal time (/proc/stat) over the whole phase.
   CPU time equal to wall time with no steal means the VM's CPU was not taken away: where the
   same request still takes three times as long, the core ran slower (memory bandwidth and caches
   shared with the host's other guests).
2. the same with the engine pinned to each CPU in turn (taskset): whether the spread is one CPU's.
3. A against B (the same engine and flags) in ABBA quartets of one decode request a side: the sd
   of a quartet's change, the unit `ab`'s judgement works on at its finest grain, and the
   quartets a 5 % change would need for 90 % power at that spread.

    python3 benches/ab/vm-spread.py [--bin target/release/rigaudit] [--requests 24] [--quartets 12]

Not a test: it needs the machine to itself for about three minutes. docs/statistics.md records
what it gave.
"""

import argparse
import json
import math
import os
import random
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CACHE = os.environ.get("RIGAUDIT_CACHE", os.path.expanduser("~/.cache/rigaudit"))
MODEL = os.path.join(CACHE, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
PROMPT = "Write a long story about a lighthouse keeper."


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(binary, port):
    argv = [binary, "__engine", "serve", MODEL, "--name", "smollm2", "--parallel", "1",
            "--context", "1024", "--host", "127.0.0.1", "--port", str(port), "--threads", "1"]
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    for _ in range(600):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=1)
            return p
        except OSError:
            time.sleep(0.1)
    p.kill()
    sys.exit(f"the engine on port {port} did not get ready")


def decode(port):
    body = json.dumps({"model": "smollm2", "messages": [{"role": "user", "content": PROMPT}],
                       "max_tokens": 96, "temperature": 0}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", body,
                                 {"Content-Type": "application/json"})
    t = json.load(urllib.request.urlopen(req, timeout=120))["timings"]
    return t["predicted_ms"] / t["predicted_n"]


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def steal_ticks():
    return int(open("/proc/stat").readline().split()[8])


def spread(label, ms):
    lo, med, hi = min(ms), statistics.median(ms), max(ms)
    sd = statistics.stdev([math.log(x) for x in ms]) if len(ms) > 1 else 0.0
    print(f"  {label}: ms a token min {lo:.2f} median {med:.2f} max {hi:.2f} "
          f"(max/min {hi / lo:.2f}x, sd of log {100 * sd:.1f} %)")


def one_engine(port, pid, n):
    ms, cpu, wall = [], 0.0, 0.0
    s0 = steal_ticks()
    for _ in range(n):
        c0, t0 = cpu_seconds(pid), time.time()
        ms.append(decode(port))
        cpu += cpu_seconds(pid) - c0
        wall += time.time() - t0
    print(f"1. one engine, {n} decodes of 96 tokens")
    spread("all", ms)
    print(f"  CPU time / wall time over the requests: {cpu / wall:.3f}; "
          f"steal over the phase: {steal_ticks() - s0} ticks")


def pinned(port, pid, n):
    cpus = sorted(os.sched_getaffinity(0))
    print(f"2. pinned (taskset), {n} decodes a CPU")
    for cpu in cpus:
        subprocess.run(["taskset", "-a", "-p", "-c", str(cpu), str(pid)],
                       stdout=subprocess.DEVNULL, check=True)
        spread(f"CPU {cpu}", [decode(port) for _ in range(n)])
    subprocess.run(["taskset", "-a", "-p", "-c", ",".join(map(str, cpus)), str(pid)],
                   stdout=subprocess.DEVNULL, check=True)


def quartets(ports, n, seed=1):
    rng = random.Random(seed)
    changes, start = [], time.time()
    for _ in range(n):
        order = "ABBA" if rng.random() < 0.5 else "BAAB"
        logs = {"A": [], "B": []}
        for side in order:
            # ms a token: B slower is a positive change of time, a negative one of rate.
            logs[side].append(math.log(decode(ports[side])))
        changes.append(statistics.mean(logs["A"]) - statistics.mean(logs["B"]))
    sd = statistics.stdev(changes)
    need = math.ceil(((1.645 + 1.282) * sd / math.log(1.05)) ** 2)
    print(f"3. A/A in ABBA quartets of one decode a side: {n} quartets, "
          f"{(time.time() - start) / n:.1f} s each")
    print(f"  rate change per quartet: mean {100 * statistics.mean(changes):+.1f} %, "
          f"sd {100 * sd:.1f} %; quartets for 90 % power on a 5 % change: {need}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "rigaudit"))
    ap.add_argument("--requests", type=int, default=24)
    ap.add_argument("--quartets", type=int, default=12)
    a = ap.parse_args()
    if not os.path.exists(MODEL):
        sys.exit(f"{MODEL}: missing; run bash scripts/fetch-model.sh")
    ports = {"A": free_port(), "B": free_port()}
    engines = {k: start(a.bin, p) for k, p in ports.items()}
    try:
        decode(ports["A"]), decode(ports["B"])  # warm both
        print(time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), f"{os.cpu_count()} CPUs")
        one_engine(ports["A"], engines["A"].pid, a.requests)
        pinned(ports["A"], engines["A"].pid, a.requests // 2)
        quartets(ports, a.quartets)
    finally:
        for p in engines.values():
            p.kill()
            p.wait()


if __name__ == "__main__":
    main()
