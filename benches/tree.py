#!/usr/bin/env python3
"""Bench: `rigaudit verify DIR` on two trees, fixtures/published itself (80 runs of seven tools)
and a synthetic tree of about 1,000 runs (fixtures/published copied N times into a temporary
folder), against a plain Python parse of the same files (`json.load` of every .json, `json.loads`
of every .jsonl line, a read of every other result file), in the same run, alternately round by
round; rigaudit also pinned to one core (`taskset -c 0`, when there is taskset) to show what the
second core gives. Prints runs per second, wall and CPU time of each, and the paired ratios.

    python3 benches/tree.py [--copies N] [--rounds R] [--bin PATH] [--keep] [--submission N]

`--submission N` benches a third tree instead of the synthetic one: an MLPerf submitter's folder of
N results (fixtures/submissions' Red Hat v4.1 folder, its system copied under N/2 names as hard
links: each result read the checker's way, with its performance run, accuracy.txt, TEST06 verdict,
measurements and system description), rigaudit's peak memory printed beside.

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


def submission_tree(results):
    """Red Hat's v4.1 folder with its one system copied under results // 2 names, as hard links."""
    tmp = tempfile.mkdtemp(prefix="rigaudit-submission-bench-")
    src = os.path.join(ROOT, "fixtures", "submissions", "v4.1", "closed", "RedHat")
    dst = os.path.join(tmp, "closed", "RedHat")
    system = "L40S-RedHat-OpenShift"
    for kind in ("code", "documentation"):
        if os.path.isdir(os.path.join(src, kind)):
            shutil.copytree(os.path.join(src, kind), os.path.join(dst, kind), copy_function=os.link)
    for i in range(results // 2):
        name = f"SYS-{i:05d}"
        for kind in ("results", "compliance", "measurements"):
            shutil.copytree(os.path.join(src, kind, system), os.path.join(dst, kind, name), copy_function=os.link)
        meas = os.path.join(dst, "measurements", name, "llama2-70b-99.9")
        for scenario in os.listdir(meas):
            os.rename(os.path.join(meas, scenario, system + ".json"), os.path.join(meas, scenario, name + ".json"))
        os.makedirs(os.path.join(dst, "systems"), exist_ok=True)
        os.link(os.path.join(src, "systems", system + ".json"), os.path.join(dst, "systems", name + ".json"))
    return tmp


def measure(cmd):
    """Wall and CPU seconds and peak resident MiB of one run of `cmd`."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=13)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--bin")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--submission", type=int, default=0)
    a = ap.parse_args()
    binary = a.bin or build()
    synthetic = submission_tree(a.submission) if a.submission else tree(a.copies)
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
            wall, cpu, peak = measure(cmd)
            times[name].append((wall, cpu, peak))
    report(root, runs, files, times, os.cpu_count())


def report(root, runs, files, times, cores):
    load = os.getloadavg()[0]
    print(f"tree {root}: {runs} runs, {files} result files; {cores} cores, load average {load:.1f}")
    for name, xs in times.items():
        wall = median([x[0] for x in xs])
        cpu = median([x[1] for x in xs])
        peak = max(x[2] for x in xs)
        print(f"  {name:15} wall {wall:7.3f} s  cpu {cpu:7.3f} s  {runs / wall:8.0f} runs/s  {1000 * cpu / runs:6.3f} cpu ms/run  peak {peak:6.1f} MiB")
    for other in [n for n in times if n != "rigaudit"]:
        ratios = sorted(p[0] / o[0] for o, p in zip(times["rigaudit"], times[other]))
        print(f"  {other} / rigaudit, wall, paired by round: median {median(ratios):.2f} (min {ratios[0]:.2f}, max {ratios[-1]:.2f})")


if __name__ == "__main__":
    main()
