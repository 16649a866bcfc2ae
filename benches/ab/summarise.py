#!/usr/bin/env python3
"""Summarises the reports benches/ab/calibrate.sh wrote: per kind (A/A, A/B), the share of
comparisons with a changed row, the verdicts of decode and prefill rows, rate rows unchanged within
±5 %, the quartets run and the pair spread measured (the sd of the quartets' changes)."""
import json
import math
import pathlib
import statistics
import sys

RATE = ("decode.", "prefill.")


def rows(report):
    return {r["key"]: r for r in report.get("comparisons", [])}


def summarise(kind, reports):
    n = len(reports)
    if n == 0:
        return None
    any_changed = sum(any(r["verdict"] == "changed" for r in rows(x).values()) for x in reports)
    decode_worse = sum(
        rows(x).get("decode.prose", {}).get("verdict") == "changed"
        and rows(x)["decode.prose"].get("better") is False
        for x in reports
    )
    prefill_changed = sum(
        any(r["verdict"] == "changed" for k, r in rows(x).items() if k.startswith("prefill."))
        for x in reports
    )
    rate = [r for x in reports for k, r in rows(x).items() if k.startswith(RATE)]
    within5 = sum(r["verdict"] == "unchanged" and (r.get("band") or 99) <= 5.0 for r in rate)
    unchanged = sum(r["verdict"] == "unchanged" for r in rate)
    spreads = {}
    for x in reports:
        for k, r in rows(x).items():
            u = r.get("unit_changes") or []
            if len(u) >= 2:
                spreads.setdefault(k, []).append(statistics.stdev(u))
    quartets = [len(rows(x).get("decode.prose", {}).get("unit_changes") or []) for x in reports]
    changes = [rows(x).get("decode.prose", {}).get("change_pct") for x in reports]
    changes = [c for c in changes if c is not None]
    pct = lambda k: f"{100 * k / n:.0f} % ({k}/{n})"
    line = (
        f"| {kind} | {n} | {pct(any_changed)} | {pct(decode_worse)} | {pct(prefill_changed)} | "
        f"{100 * within5 / max(1, len(rate)):.0f} % ({within5}/{len(rate)}) | "
        f"{100 * unchanged / max(1, len(rate)):.0f} % | {statistics.median(quartets) if quartets else 0} | "
        f"{statistics.mean(changes):+.1f} % | "
        + ", ".join(f"{k} {statistics.median(v):.1f} %" for k, v in sorted(spreads.items()) if "." in k)
        + " |"
    )
    return line


def main():
    out = pathlib.Path(sys.argv[1])
    # --rejudged: the reports audit/examples/ab_rejudge.rs wrote from the same blocks.
    suffix = ".rejudged.json" if "--rejudged" in sys.argv[2:] else ".json"
    print("| comparison | runs | a row changed | decode changed worse | prefill changed | rate rows unchanged within ±5 % | rate rows unchanged (any band) | quartets (median) | decode change (mean) | quartet spread (median sd) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for kind, name in (("aa", "A/A"), ("ab", "A/B")):
        reports = []
        for p in sorted(out.glob(f"{kind}-*.json")):
            if p.name.endswith(".rejudged.json") != (suffix == ".rejudged.json"):
                continue
            try:
                reports.append(json.loads(p.read_text()))
            except (ValueError, OSError):
                print(f"{p}: no report", file=sys.stderr)
        line = summarise(name, reports)
        if line:
            print(line)


if __name__ == "__main__":
    main()
