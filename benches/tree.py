#!/usr/bin/env python3
"""Bench: `rigaudit verify DIR` on two trees, fixtures/published itself (80 runs of seven tools)
and a synthetic tree of about 1,000 runs (fixtures/published copied N times into a temporary
folder), against a plain Python parse of the same files (`json.load` of every .json, `json.loads`
of every .jsonl line, a read of every other result file), in the same run, alternately round by
round; rigaudit also pinned to one core (`taskset -c 0`, when there is taskset) to show what the
second core gives. Prints runs per second, wall and CPU time of each, and the paired ratios.

    python3 benches/tree.py [--copies N] [--rounds R] [--bin PATH] [--keep]

Builds rigaudit in release mode first (unless --bin names a binary). The peer only parses: no
grouping into runs, no checks, no report; rigaudit does its whole verify of every run (walk,
read, detect, group, every check, the table) on all cores.
"""

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PEER = r'''
import json, os, sys
n = 0
for d, dirs, files in os.walk(sys.argv[1]):
    for f in files:
        p = os.path.join(d, f)
        if os.path.islink(p):
            continue
        if f.endswith(".json"):
            with open(p, "rb") as fh:
                try:
                    json.load(fh)
                except ValueError:
                    pass
        elif f.endswith(".jsonl"):
            with open(p, "rb") as fh:
                for line in fh:
                    if line.strip():
                        try:
                            json.loads(line)
                        except ValueError:
                            pass
        elif f.endswith((".txt", ".yaml", ".yml", ".csv", ".sse")):
            with open(p, "rb") as fh:
                fh.read().decode("utf-8", "replace")
        else:
            continue
        n += 1
print(n)
'''


def build():
    subprocess.run(["cargo", "build", "--release", "--bin", "rigaudit"], cwd=ROOT, check=True)
    return os.path.join(ROOT, "target", "release", "rigaudit")


def tree(copies):
    tmp = tempfile.mkdtemp(prefix="rigaudit-tree-bench-")
    src = os.path.join(ROOT, "fixtures", "published")
    for i in range(copies):
        shutil.copytree(src, os.path.join(tmp, f"copy{i:03d}"))
    return tmp


def timed(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, out


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=13)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--bin")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    binary = a.bin or build()
    synthetic = tree(a.copies)
    try:
        for root in [os.path.join(ROOT, "fixtures", "published"), synthetic]:
            bench(binary, root, a.rounds)
    finally:
        if a.keep:
            print("tree kept at", synthetic)
        else:
            shutil.rmtree(synthetic)


def bench(binary, root, rounds):
    ours = [binary, "verify", root, "--format", "json"]
    contenders = {"rigaudit": ours, "python": [sys.executable, "-c", PEER, root]}
    if shutil.which("taskset"):
        contenders["rigaudit-1core"] = ["taskset", "-c", "0"] + ours
    first = subprocess.run(ours, capture_output=True, text=True)
    runs = json.loads(first.stdout)["counts"]["runs"]
    files = int(subprocess.run(contenders["python"], capture_output=True, text=True).stdout)
    times = {name: [] for name in contenders}
    for r in range(rounds):
        order = list(contenders.items())
        for name, cmd in order if r % 2 == 0 else order[::-1]:
            wall, cpu, _ = timed(cmd)
            times[name].append((wall, cpu))
    report(root, runs, files, times, os.cpu_count())


def report(root, runs, files, times, cores):
    load = os.getloadavg()[0]
    print(f"tree {root}: {runs} runs, {files} result files; {cores} cores, load average {load:.1f}")
    for name, xs in times.items():
        wall = median([w for w, _ in xs])
        cpu = median([c for _, c in xs])
        print(f"  {name:15} wall {wall:7.3f} s  cpu {cpu:7.3f} s  {runs / wall:8.0f} runs/s  {1000 * cpu / runs:6.3f} cpu ms/run")
    for other in [n for n in times if n != "rigaudit"]:
        ratios = sorted(p[0] / o[0] for o, p in zip(times["rigaudit"], times[other]))
        print(f"  {other} / rigaudit, wall, paired by round: median {median(ratios):.2f} (min {ratios[0]:.2f}, max {ratios[-1]:.2f})")


if __name__ == "__main__":
    main()
