#!/usr/bin/env python3
"""Bench: `rigaudit verify` on a bundle with 1,000,000 answer records (about 170 MB of JSON Lines),
against, in the same run and alternately round by round: a bare read and parse of the same file on
one core (`benches/parse-baseline`: each line parsed and thrown away with serde_json's `IgnoredAny`,
and with simd-json), the floor a verifier is held to; and Python's jsonschema and fastjsonschema
validating it with the same schema (`--no-python` leaves them out). Reports wall time, CPU time and
peak memory of each (the median of the rounds), and the ratios.

    python3 benches/answers.py [--records N] [--runs R] [--bin PATH] [--no-python] [--keep]

Builds rigaudit in release mode first. Installs jsonschema and fastjsonschema into a virtual
environment under ${RIGAUDIT_CACHE:-~/.cache/rigaudit}/bench-venv (once). The peers validate only
(no tally, no digest); rigaudit does its whole verify: digest, schema, tally and every check.
fastjsonschema supports drafts 4 to 7: the schema's "$schema" line is dropped for it (the schema uses
nothing draft 7 lacks).
"""

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.environ.get("RIGAUDIT_CACHE", os.path.expanduser("~/.cache/rigaudit"))

PEER = r'''
import json, sys
kind, schema_path, data = sys.argv[1:4]
schema = json.load(open(schema_path))
if kind == "jsonschema":
    import jsonschema
    v = jsonschema.Draft202012Validator(schema)
    ok = v.is_valid
else:
    import fastjsonschema
    schema.pop("$schema", None)
    f = fastjsonschema.compile(schema)
    def ok(x):
        try:
            f(x)
            return True
        except fastjsonschema.JsonSchemaException:
            return False
bad = n = 0
with open(data, "rb") as fh:
    for line in fh:
        if line.strip():
            n += 1
            if not ok(json.loads(line)):
                bad += 1
print(n, bad)
'''


def venv_python():
    venv = os.path.join(CACHE, "bench-venv")
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        subprocess.check_call([sys.executable, "-m", "venv", venv])
        subprocess.check_call([py, "-m", "pip", "install", "-q", "jsonschema", "fastjsonschema"])
    return py


def make_bundle(dest, n):
    src = os.path.join(ROOT, "fixtures", "pages", "mia-recipe-1104-2x")
    shutil.copytree(src, dest)
    rng = random.Random(1)
    path = os.path.join(dest, "quality", "gpqa-diamond", "answers.jsonl")
    right = 0
    with open(path, "w") as f:
        for i in range(n):
            g = "ABCD"[rng.randrange(4)]
            ok = rng.random() < 0.5
            right += ok
            x = g if ok else "ABCD"[("ABCD".index(g) + 1) % 4]
            f.write(json.dumps({"id": f"gpqa-{i:07d}", "prompt_tokens": rng.randint(100, 900), "max_tokens": 1024,
                                "status": 200, "error": None, "finish_reason": "stop",
                                "completion_tokens": rng.randint(5, 500), "extracted": x, "gold": g, "correct": ok,
                                "seconds": round(rng.uniform(0.5, 30), 1)}) + "\n")
    import hashlib
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    m = json.load(open(os.path.join(dest, "bundle.json")))
    summ = os.path.join(dest, "quality", "gpqa-diamond", "summary.json")
    s = json.load(open(summ))
    s.update(total=n, right=right, pct=round(100 * right / n, 2), margin=None, cutoffs=0)
    json.dump(s, open(summ, "w"))
    for e in m["files"]:
        if e["path"] == "quality/gpqa-diamond/answers.jsonl":
            e["sha256"] = h.hexdigest()
        if e["path"] == "quality/gpqa-diamond/summary.json":
            e["sha256"] = hashlib.sha256(open(summ, "rb").read()).hexdigest()
    json.dump(m, open(os.path.join(dest, "bundle.json"), "w"), indent=2)
    return path


def build_baseline():
    """The parsing peer, a crate of its own (benches/parse-baseline), built in release mode."""
    d = os.path.join(ROOT, "benches", "parse-baseline")
    target = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "parse-baseline")
    subprocess.check_call(["cargo", "build", "--release", "-q", "--target-dir", target], cwd=d)
    return os.path.join(target, "release", "parse-baseline")


def measure(cmd):
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    out = p.stdout.read().decode()
    return {"wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "peak_mib": ru.ru_maxrss / 1024,
            "exit": os.waitstatus_to_exitcode(status), "out": out}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--bin", help="a rigaudit binary to measure (default: build the release one)")
    ap.add_argument("--no-python", action="store_true", help="leave out the Python validators")
    a = ap.parse_args()
    exe = a.bin
    if not exe:
        subprocess.check_call(["cargo", "build", "--release", "-q"], cwd=ROOT)
        exe = os.path.join(ROOT, "target", "release", "rigaudit")
    base = build_baseline()
    one_core = ["taskset", "-c", "0"] if shutil.which("taskset") else []
    py = None if a.no_python else venv_python()
    tmp = tempfile.mkdtemp(prefix="rigaudit-bench-")
    try:
        bundle = os.path.join(tmp, "bundle")
        data = make_bundle(bundle, a.records)
        size = os.path.getsize(data) / 1e6
        schema = os.path.join(ROOT, "schemas", "quality-answers.schema.json")
        peer = os.path.join(tmp, "peer.py")
        open(peer, "w").write(PEER)
        print(f"{a.records} answer records, {size:.0f} MB, {os.cpu_count()} cores")
        rows = {}
        cmds = [
            ("rigaudit verify", [exe, "verify", bundle, "--format", "json"]),
            ("parse IgnoredAny", one_core + [base, "ignored", data]),
            ("parse simd-json", one_core + [base, "simd", data]),
        ]
        if py:
            cmds += [("fastjsonschema", [py, peer, "fastjsonschema", schema, data]),
                     ("jsonschema", [py, peer, "jsonschema", schema, data])]
        results = {name: [] for name, _ in cmds}
        for r in range(a.runs):
            for name, cmd in cmds:
                if name in ("fastjsonschema", "jsonschema") and r > 0:
                    continue
                results[name].append(measure(cmd))
        for name, _ in cmds:
            runs = sorted(results[name], key=lambda x: x["wall_s"])
            best = runs[len(runs) // 2]
            if name == "rigaudit verify":
                rep = json.loads(best["out"])
                assert rep["verdict"] in ("pass", "fail"), rep["verdict"]
                assert not any(f["check"].startswith("schema.") and f["severity"] == "error" for f in rep["findings"]), rep["findings"][:3]
            else:
                n, bad = map(int, best["out"].split())
                assert n == a.records and bad == 0, best["out"]
            rows[name] = best
            print(f"  {name:<16} wall {best['wall_s']:7.3f} s  cpu {best['cpu_s']:7.3f} s  peak {best['peak_mib']:7.1f} MiB  (median of {len(runs)})")
        me = rows["rigaudit verify"]
        floor = min(rows["parse IgnoredAny"]["wall_s"], rows["parse simd-json"]["wall_s"])
        print(f"  rigaudit's whole verify takes {me['wall_s'] / floor:.2f}x the faster bare one-core parse (target <= 1.00)")
        for name in ("fastjsonschema", "jsonschema"):
            if name in rows:
                r = rows[name]
                print(f"  rigaudit is {r['wall_s'] / me['wall_s']:.1f}x faster than {name} (wall), uses {me['peak_mib'] / r['peak_mib']:.2f}x its peak memory")
        print(f"  targets: no slower than the bare parse -> {'met' if me['wall_s'] <= floor else 'NOT met'}; peak <= 64 MiB -> {'met' if me['peak_mib'] <= 64 else 'NOT met'}")
    finally:
        if a.keep:
            print("kept", tmp)
        else:
            shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
