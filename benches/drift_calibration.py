#!/usr/bin/env python3
"""Bench: the operating figures of `rigaudit diff`'s decision rule, measured through the binary.

Takes the recorded bundle fixtures/runs/smollm2-cpu and writes pairs of bundles A and B of known
drift: the speed result's per-request timings are rewritten so that every step's per-run figure is
lognormal around the recorded figure (median = the recorded value, CV as asked, n runs a side),
then `rigaudit diff A B --format json` judges each pair. Per cell (CV, runs a side, true drift,
session spread) it tabulates the speed rows' shares of changed / unchanged / inconclusive and the
share of diffs that FAIL (exit code 1), each with its 95 % margin, as Markdown.

    python3 benches/drift_calibration.py [--pairs N] [--zero-pairs N] [--focus-pairs N]
        [--cv 3,8,15] [--runs 3,4,8] [--drift 0,5,10,20,40,50] [--spread 0,6]
        [--drift-parts decode,prefill,conc,ctx,l1] [--jobs 2] [--seed 25]
        [--verify-every K] [--bin target/debug/rigaudit] [--out benches/drift-calibration.md]
    python3 benches/drift_calibration.py --write-pair DIR --cv 8 --runs 4 --drift 20

How a bundle is rewritten (the figures as audit/src/figures.rs recomputes them):
- a bundle's true speed is the recorded figure times its session factor (lognormal, median 1,
  CV `--spread` percent, one draw per bundle shared by all its steps: the
  session-to-session spread) and, for B on the parts `--drift-parts` names, times (1 + drift):
  a rate is multiplied by it, a time (TTFT) divided, so a drift is one log ratio on every row;
- each counted run's figure is that truth times its own lognormal factor (median 1, CV `--cv`):
  decode runs (each prompt: end - first token), prefill runs (first token - sent, so prefill rate
  and TTFT are one draw), context runs (prefill and decode intervals drawn apart), concurrency
  rounds (the median recorded round's offsets scaled as one, so its total and per-request rates
  are one draw), and the one long-answer run; the warm-up keeps its recorded times;
- the contract asks n runs of decode, prefill and context and n concurrency rounds; requests are
  laid out in the recorded order, one after another; the server's own timings scale with the
  client's; draft counts get one zero row per decode run; `values` are recomputed from the new
  records; the speed session lasts 240 s and the quality tests move 180 s later in every bundle
  (a rewritten run may last longer than the recorded one, and sessions must not overlap); the
  manifest's digests are rewritten. The quality files are unchanged but for those two times.

Every random draw comes from `random.Random` seeded by a string of (seed, cell, pair): the same
arguments write the same bundles. Python 3 standard library only; at most `--jobs` rigaudit
processes at once. `--verify-every K` also runs `rigaudit verify` on both bundles of every K-th
pair and counts the exits and the checks that failed.

Margins: a report-level rate has Wilson's 95 % score interval (pairs are independent); a row share
has 1.96 standard errors of the per-pair shares (the rows of one report share its session factor,
so they are not independent draws).
"""

import argparse
import concurrent.futures
import copy
import datetime
import hashlib
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE = os.path.join(ROOT, "fixtures", "runs", "smollm2-cpu")
PARTS = ("decode", "prefill", "conc", "ctx", "l1")
GAP_S = 0.005  # between two requests of one step
STEP_GAP_S = 0.3  # between two steps
SPEED_SPAN_S = 240  # the speed session's length in every rewritten bundle
QUALITY_SHIFT_S = 180  # the quality tests move this much later, after the longer speed session
VERDICTS = ("changed", "unchanged", "inconclusive")


# ---------------------------------------------------------------- the recorded bundle


def load_fixture():
    """The fixture's manifest, contract and speed result, parsed, and every file's bytes."""
    files = {}
    for d, _, names in os.walk(FIXTURE):
        for n in names:
            p = os.path.join(d, n)
            with open(p, "rb") as fh:
                files[os.path.relpath(p, FIXTURE)] = fh.read()
    manifest = json.loads(files["bundle.json"])
    contract = json.loads(files[os.path.join("speed", "speed-contract.json")])
    result = json.loads(files[os.path.join("speed", "speed-result.json")])
    return {"files": files, "manifest": manifest, "contract": contract, "result": result}


def counted(result, step):
    return [q for q in result["requests"] if q["step"] == step and not q["warmup"]]


def median_round(result, level):
    """The recorded concurrency round of `level` whose total rate is the median: its requests."""
    rounds = {}
    for q in counted(result, "conc"):
        if q["level"] == level:
            rounds.setdefault(q["round"], []).append(q)
    totals = sorted((round_total(qs), r) for r, qs in rounds.items())
    return rounds[totals[len(totals) // 2][1]]


def round_total(reqs):
    start = min(q["sent_s"] for q in reqs)
    end = max(q["end_s"] for q in reqs)
    return sum(q["completion_tokens"] for q in reqs) / (end - start)


# ---------------------------------------------------------------- one rewritten bundle


def lognormal(rng, cv_pct):
    """A factor of median 1 and coefficient of variation `cv_pct` percent."""
    if cv_pct <= 0:
        return 1.0
    sigma = math.sqrt(math.log(1.0 + (cv_pct / 100.0) ** 2))
    return math.exp(rng.gauss(0.0, sigma))


class Timeline:
    """Lays requests out one after another from the recorded first send."""

    def __init__(self, start):
        self.t = start

    def place(self, tmpl, ttft, decode, gap=GAP_S):
        """A copy of `tmpl` sent now, its first token after `ttft` s, its end `decode` s later."""
        q = copy.deepcopy(tmpl)
        q["sent_s"] = self.t
        q["first_token_s"] = self.t + ttft
        q["end_s"] = self.t + ttft + decode
        scale_server_timings(q, tmpl)
        self.t = q["end_s"] + gap
        return q

    def step_gap(self):
        self.t += STEP_GAP_S


def intervals(q):
    return q["first_token_s"] - q["sent_s"], q["end_s"] - q["first_token_s"]


def scale_server_timings(q, tmpl):
    """The server's prompt and predicted times scaled as the client's TTFT and decode time."""
    st = q.get("server_timings")
    if not st:
        return
    (t0, d0), (t1, d1) = intervals(tmpl), intervals(q)
    if st.get("prompt_ms") is not None and t0 > 0:
        st["prompt_ms"] = tmpl["server_timings"]["prompt_ms"] * t1 / t0
    if st.get("predicted_ms") is not None and d0 > 0 and d1 > 0:
        st["predicted_ms"] = tmpl["server_timings"]["predicted_ms"] * d1 / d0


def rewrite_requests(fx, truth, cv, n, rng):
    """The speed result's requests for n runs a side around `truth[part]` (a speed factor)."""
    rec, values = fx["result"], fx["result"]["values"]
    out, tl = [], Timeline(min(q["sent_s"] for q in rec["requests"]))
    for q in rec["requests"]:
        if q["warmup"]:
            out.append(tl.place(q, *intervals(q)))
    for pid in fx["contract"]["prompt_ids"]:
        tmpl = [q for q in counted(rec, "decode") if q["prompt_id"] == pid][0]
        for run in range(1, n + 1):
            rate = values[f"decode.{pid}"] * truth["decode"] * lognormal(rng, cv)
            q = tl.place(tmpl, intervals(tmpl)[0] / truth["decode"], (tmpl["completion_tokens"] - 1) / rate)
            q["run"] = run
            out.append(q)
    tl.step_gap()
    for depth in fx["contract"]["prefill"]["depths"]:
        tmpl = [q for q in counted(rec, "prefill") if q["depth"] == depth][0]
        for run in range(1, n + 1):
            rate = values[f"prefill.{depth}"] * truth["prefill"] * lognormal(rng, cv)
            q = tl.place(tmpl, tmpl["prompt_tokens"] / rate, intervals(tmpl)[1])
            q["run"] = run
            out.append(q)
        tl.step_gap()
    for level in fx["contract"]["conc"]["levels"]:
        out.extend(conc_rounds(fx, level, truth["conc"], cv, n, rng, tl))
        tl.step_gap()
    for depth in fx["contract"]["ctx"]["depths"]:
        tmpls = [q for q in counted(rec, "ctx") if q["depth"] == depth]
        if not tmpls:
            continue  # not sent: the step cannot fit the window
        tmpl = tmpls[0]
        for run in range(1, n + 1):
            pre = values[f"ctx_prefill.{depth}"] * truth["ctx"] * lognormal(rng, cv)
            dec = values[f"ctx_decode.{depth}"] * truth["ctx"] * lognormal(rng, cv)
            q = tl.place(tmpl, tmpl["prompt_tokens"] / pre, (tmpl["completion_tokens"] - 1) / dec)
            q["run"] = run
            out.append(q)
        tl.step_gap()
    for tmpl in counted(rec, "l1"):
        rate = values["l1_decode"] * truth["l1"] * lognormal(rng, cv)
        out.append(tl.place(tmpl, intervals(tmpl)[0] / truth["l1"], (tmpl["completion_tokens"] - 1) / rate))
    return out


def conc_rounds(fx, level, truth, cv, n, rng, tl):
    """n rounds of `level` requests: the median recorded round, its offsets scaled as one."""
    tmpl = median_round(fx["result"], level)
    start = min(q["sent_s"] for q in tmpl)
    target = fx["result"]["values"][f"conc_total.{level}"]
    out = []
    for rnd in range(1, n + 1):
        k = round_total(tmpl) / (target * truth * lognormal(rng, cv))  # time scale of the round
        t0 = tl.t
        for old in tmpl:
            q = copy.deepcopy(old)
            for f in ("sent_s", "first_token_s", "end_s"):
                q[f] = t0 + (old[f] - start) * k
            scale_server_timings(q, old)
            q["round"] = rnd
            out.append(q)
        tl.t = max(q["end_s"] for q in out[-len(tmpl):]) + GAP_S
    return out


# ---------------------------------------------------------------- figures, as figures.rs


def median(xs):
    return statistics.median(xs) if xs else None


def cv_pct(xs):
    if len(xs) < 2:
        return None
    m = statistics.fmean(xs)
    return 100.0 * statistics.stdev(xs) / m if m else None


def decode_rate(q):
    n, t = q["completion_tokens"], q["end_s"] - q["first_token_s"]
    return (n - 1) / t if n > 1 and t > 0 else None


def recompute(contract, result):
    """Every figure of the speed result's `values`, from its records."""
    v, reqs = {}, result["requests"]
    per_prompt, cvs = {}, []
    for pid in contract["prompt_ids"]:
        rates = [decode_rate(q) for q in counted(result, "decode") if q["prompt_id"] == pid]
        per_prompt[pid] = rates
        v[f"decode.{pid}"] = median(rates)
        v[f"cv.{pid}"] = cv_pct(rates)
        cvs.append(v[f"cv.{pid}"])
    v["decode"] = statistics.fmean(v[f"decode.{p}"] for p in contract["prompt_ids"])
    v["cv"] = max(cvs)
    words = chars = 0
    secs = 0.0
    for q in counted(result, "decode"):
        words, chars, secs = words + q["words"], chars + q["chars"], secs + q["end_s"] - q["first_token_s"]
    v["words_per_s"], v["chars_per_s"] = words / secs, chars / secs
    v["secs_500_words"] = 500.0 / v["words_per_s"]
    for depth in contract["prefill"]["depths"]:
        qs = [q for q in counted(result, "prefill") if q["depth"] == depth]
        v[f"prefill.{depth}"] = median([q["prompt_tokens"] / (q["first_token_s"] - q["sent_s"]) for q in qs])
        v[f"ttft.{depth}"] = median([q["first_token_s"] - q["sent_s"] for q in qs])
    for level in contract["conc"]["levels"]:
        totals, per = [], []
        for rnd in range(1, contract["conc"]["rounds"] + 1):
            qs = [q for q in counted(result, "conc") if q["level"] == level and q["round"] == rnd]
            totals.append(round_total(qs))
            per.append(median([q["completion_tokens"] / (q["end_s"] - q["sent_s"]) for q in qs]))
        v[f"conc_total.{level}"], v[f"conc_per_request.{level}"] = median(totals), median(per)
    for depth in contract["ctx"]["depths"]:
        qs = [q for q in counted(result, "ctx") if q["depth"] == depth]
        v[f"ctx_decode.{depth}"] = median([decode_rate(q) for q in qs])
        v[f"ctx_prefill.{depth}"] = median([q["prompt_tokens"] / (q["first_token_s"] - q["sent_s"]) for q in qs])
    v["l1_decode"] = decode_rate(counted(result, "l1")[-1])
    v["slots"] = result["values"]["slots"]
    return dict(sorted(v.items()))


# ---------------------------------------------------------------- writing a bundle


def iso(t):
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(s):
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ")


def dumps(obj):
    return (json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode()


def write_bundle(fx, folder, truth, cv, n, rng):
    """Writes the fixture into `folder` with its speed runs rewritten (see the module docs)."""
    contract = copy.deepcopy(fx["contract"])
    contract["runs"] = n
    contract["prefill"]["runs"] = n
    contract["conc"]["rounds"] = n
    contract["ctx"]["runs"] = n
    result = copy.deepcopy(fx["result"])
    result["requests"] = rewrite_requests(fx, truth, cv, n, rng)
    result["drafts"] = [
        {"step": "decode", "prompt_id": pid, "run": r, "drafts": 0, "drafted": 0, "accepted": 0}
        for pid in contract["prompt_ids"]
        for r in range(1, n + 1)
    ]
    result["values"] = recompute(contract, result)
    manifest = copy.deepcopy(fx["manifest"])
    new = dict(fx["files"])
    shift_quality(fx, manifest, result, new)
    new[os.path.join("speed", "speed-contract.json")] = dumps(contract)
    new[os.path.join("speed", "speed-result.json")] = dumps(result)
    for f in manifest["files"]:
        f["sha256"] = hashlib.sha256(new[os.path.normpath(f["path"])]).hexdigest()
    new["bundle.json"] = dumps(manifest)
    for rel, data in new.items():
        p = os.path.join(folder, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as fh:
            fh.write(data)


def shift_quality(fx, manifest, result, new):
    """Moves the quality tests `QUALITY_SHIFT_S` later and ends the speed session just before, the
    same for every bundle (so A and B differ in no time): a run of 8 slow runs a side still fits."""
    last = max(q["end_s"] for q in result["requests"])
    if last > SPEED_SPAN_S:
        raise SystemExit(f"a rewritten speed run lasts {last:.0f} s, beyond the {SPEED_SPAN_S} s it is given")
    ended = iso(parse_iso(result["started"]) + datetime.timedelta(seconds=SPEED_SPAN_S))
    result["ended"] = ended
    later = datetime.timedelta(seconds=QUALITY_SHIFT_S)
    for s in manifest["sessions"]:
        if s["name"] == "speed":
            s["ended"] = ended
        elif s["name"].startswith("quality"):
            s["started"], s["ended"] = iso(parse_iso(s["started"]) + later), iso(parse_iso(s["ended"]) + later)
    for f in manifest["files"]:
        if f["kind"] == "quality-summary":
            path = os.path.normpath(f["path"])
            summary = json.loads(fx["files"][path])
            for k in ("started", "ended"):
                summary[k] = iso(parse_iso(summary[k]) + later)
            new[path] = dumps(summary)


def truths(cell, rng, drift_parts):
    """The speed factors of A and B by part: session factors, and the drift on B's parts."""
    cv, n, drift, spread = cell
    sa, sb = lognormal(rng, spread), lognormal(rng, spread)
    a = {p: sa for p in PARTS}
    b = {p: sb * ((1 + drift / 100.0) if p in drift_parts else 1.0) for p in PARTS}
    return a, b


# ---------------------------------------------------------------- one pair through the binary


def pair_rng(seed, cell, i):
    return random.Random("drift-calibration:{}:{}:{}".format(seed, ":".join(map(str, cell)), i))


def run_pair(fx, args, cell, i, verify):
    """Writes pair `i` of `cell`, diffs it and returns what the diff said of each row."""
    rng = pair_rng(args.seed, cell, i)
    truth_a, truth_b = truths(cell, rng, args.drift_parts)
    with tempfile.TemporaryDirectory(prefix="drift-cal-") as tmp:
        a, b = os.path.join(tmp, "A"), os.path.join(tmp, "B")
        write_bundle(fx, a, truth_a, cell[0], cell[1], rng)
        write_bundle(fx, b, truth_b, cell[0], cell[1], rng)
        out = {"cell": cell, "verify": [verify_bundle(args.bin, p) for p in (a, b)] if verify else []}
        p = subprocess.run([args.bin, "diff", a, b, "--format", "json"], capture_output=True, timeout=120)
    out["exit"] = p.returncode
    try:
        report = json.loads(p.stdout)
    except ValueError:
        raise SystemExit(f"rigaudit diff gave no JSON report (exit {p.returncode}): {p.stderr.decode()[:400]}")
    out["rows"] = {c["key"]: c["verdict"] for c in report.get("comparisons", []) if is_judged_speed_row(c)}
    out["fail_checks"] = sorted({f["check"] for f in report.get("findings", []) if f.get("severity") == "error"})
    return out


def is_judged_speed_row(c):
    """A speed row the rule judges on its runs: not quality, not the one-run long answer."""
    return c.get("test") == "log-ratio" or (
        not c["key"].startswith("quality.") and c["key"] != "l1_decode" and c["verdict"] != "not-comparable"
    )


def verify_bundle(binary, folder):
    """`rigaudit verify` of one bundle: its exit code and the checks of its errors and warnings."""
    p = subprocess.run([binary, "verify", folder, "--format", "json"], capture_output=True, timeout=120)
    try:
        found = json.loads(p.stdout).get("findings", [])
    except ValueError:
        found = [{"check": "no JSON report", "severity": "error"}]
    return p.returncode, sorted({f["check"] for f in found if f.get("severity") in ("error", "warning")})


# ---------------------------------------------------------------- the plan and the tables


def cells(args):
    for spread in args.spread:
        for cv in args.cv:
            for n in args.runs:
                for drift in args.drift:
                    yield (cv, n, drift, spread)


def pairs_of(cell, args):
    cv, n, drift, spread = cell
    if drift == 0 and cv == 8 and n == 4:
        return max(args.focus_pairs, args.zero_pairs, args.pairs)
    return args.zero_pairs if drift == 0 else args.pairs


def wilson(k, n, z=1.96):
    """Wilson's score interval of k successes in n, in percent."""
    if n == 0:
        return (float("nan"), float("nan"))
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (100 * max(0.0, centre - half), 100 * min(1.0, centre + half))


def share(per_pair):
    """Mean of per-pair shares in percent and 1.96 standard errors of it."""
    m = statistics.fmean(per_pair)
    se = statistics.stdev(per_pair) / math.sqrt(len(per_pair)) if len(per_pair) > 1 else float("nan")
    return 100 * m, 196 * se


def part_of(key):
    """The part of the speed contract a row's figure comes from."""
    for prefix, part in (("decode", "decode"), ("prefill.", "prefill"), ("ttft.", "prefill"),
                         ("conc_", "conc"), ("ctx_", "ctx"), ("l1_", "l1")):
        if key.startswith(prefix):
            return part
    return None


def split_rows(r, drift_parts):
    """A pair's verdicts of the rows its drift applies to, and of the others."""
    drifted = [v for k, v in r["rows"].items() if part_of(k) in drift_parts]
    return drifted, [v for k, v in r["rows"].items() if part_of(k) not in drift_parts]


def summarize(results, drift_parts):
    """Per cell: pairs, the drifted rows' shares of each verdict, the other rows' share of changed
    (when the drift applies to some parts only) and the share of failed diffs."""
    by_cell = {}
    for r in results:
        by_cell.setdefault(tuple(r["cell"]), []).append(r)
    table = {}
    for cell, rs in sorted(by_cell.items()):
        row = {"pairs": len(rs)}
        split = [split_rows(r, drift_parts) for r in rs]
        for v in VERDICTS:
            row[v] = share([d.count(v) / max(1, len(d)) for d, _ in split])
        row["others_changed"] = share([o.count("changed") / len(o) for _, o in split]) if split[0][1] else None
        fails = sum(r["exit"] == 1 for r in rs)
        row["fails"] = fails
        row["fail_pct"] = 100 * fails / len(rs)
        row["fail_ci"] = wilson(fails, len(rs))
        row["other_exit"] = sum(r["exit"] not in (0, 1) for r in rs)
        table[cell] = row
    return table


def fmt_share(s):
    return f"{s[0]:.1f} ± {s[1]:.1f}"


def fmt_fail(row):
    lo, hi = row["fail_ci"]
    return f"{row['fail_pct']:.1f} ({lo:.1f}-{hi:.1f})"


def any_unchanged_pct(results, cell, drift_parts):
    """The share of the cell's diffs that call any row the drift applies to unchanged."""
    rs = [r for r in results if tuple(r["cell"]) == cell]
    k = sum("unchanged" in split_rows(r, drift_parts)[0] for r in rs)
    return 100 * k / len(rs), wilson(k, len(rs))


def cell_table(table, results, spread, drift_parts):
    subset = any(r["others_changed"] for r in table.values())
    lines = [
        f"### Session spread {spread} % (each bundle its own lognormal factor)",
        "",
        "| CV % | runs a side | true drift % | pairs | rows changed % | rows unchanged % "
        "| rows inconclusive % | diffs that FAIL % (95 % CI) | diffs with a row unchanged % |"
        + (" other rows changed % |" if subset else ""),
        "|---|---|---|---|---|---|---|---|---|" + ("---|" if subset else ""),
    ]
    for cell, row in table.items():
        if cell[3] != spread:
            continue
        cv, n, drift, _ = cell
        au = any_unchanged_pct(results, cell, drift_parts)[0]
        lines.append(
            f"| {cv} | {n} | {drift} | {row['pairs']} | {fmt_share(row['changed'])} | "
            f"{fmt_share(row['unchanged'])} | {fmt_share(row['inconclusive'])} | {fmt_fail(row)} | {au:.1f} |"
            + (f" {fmt_share(row['others_changed'])} |" if subset else "")
        )
    return lines


def verify_lines(results, every):
    checked = [v for r in results for v in r["verify"]]
    if not checked:
        return ["No bundle was verified in this run (`--verify-every`)."]
    ok = sum(code == 0 for code, _ in checked)
    seen = sorted({c for _, cs in checked for c in cs})
    return [
        f"`rigaudit verify` of {len(checked)} rewritten bundles (both sides of every "
        f"{every}-th pair): {ok} exit 0; errors or warnings seen: {', '.join(seen) or 'none'}."
    ]


def targets_lines(table, results, args):
    """The issue's targets and the done-when, read off the table."""
    out = []
    for spread in args.spread:
        cell = (8, 4, 0, spread)
        if cell in table:
            row = table[cell]
            lo, hi = wilson(row["pairs"] - row["fails"], row["pairs"])
            out.append(
                f"- Done-when, CV 8 %, 4 runs a side, no drift, session spread {spread} %: "
                f"{row['pairs'] - row['fails']} of {row['pairs']} diffs pass = "
                f"{100 - row['fail_pct']:.1f} % (95 % CI {lo:.1f}-{hi:.1f} %; target >= 95 %)."
            )
    zero = [(c, r) for c, r in table.items() if c[2] == 0]
    if zero:
        c, r = max(zero, key=lambda x: x[1]["fail_pct"])
        out.append(
            f"- False \"changed\" at zero drift (report level, target <= 5 %): worst cell CV {c[0]} %, "
            f"{c[1]} runs, spread {c[3]} %: {fmt_fail(r)} % of diffs fail; largest row share of "
            f"changed {max(r['changed'][0] for _, r in zero):.2f} %."
        )
    failed = [r for r in results if r["cell"][2] == 0 and r["exit"] == 1]
    checks = sorted({c for r in failed for c in r["fail_checks"]})
    if zero:
        out.append(
            f"- All zero-drift cells: {len(failed)} of {sum(r['cell'][2] == 0 for r in results)} diffs fail"
            + (f", by {', '.join(checks)}." if checks else ".")
        )
    wide = [(c, r) for c, r in table.items() if c[2] >= 50]
    if wide:
        c, r = max(wide, key=lambda x: x[1]["unchanged"][0])
        au = max(any_unchanged_pct(results, c, args.drift_parts)[0] for c, _ in wide)
        out.append(
            f"- False \"unchanged\" at a {c[2]} % drift (target <= 5 %): largest row share "
            f"{fmt_share(r['unchanged'])} % (CV {c[0]} %, {c[1]} runs, spread {c[3]} %); "
            f"largest share of diffs with any row unchanged {au:.1f} %."
        )
    return out


def drift_words(drift_parts):
    if set(PARTS) <= set(drift_parts):
        return "every part"
    return (f"the parts {', '.join(drift_parts)} only (the row shares are theirs; \"other rows changed\": "
            "the rows of the other parts called changed)")


def write_markdown(path, table, results, args, wall_s):
    sources = ["src", "audit", "engine", "Cargo.toml", "Cargo.lock"]
    head = subprocess.run(["git", "-C", ROOT, "log", "-1", "--format=%H", "--", *sources],
                          capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--", *sources],
                           capture_output=True, text=True).stdout.strip()
    lines = [
        "# Drift calibration of `rigaudit diff`, through the binary",
        "",
        f"Made by `{' '.join(['python3', 'benches/drift_calibration.py'] + sys.argv[1:])}` on "
        f"{datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}, "
        f"binary `{os.path.relpath(args.bin, ROOT)}` built from the sources of commit `{head[:12]}` (the last to change them)"
        f"{' (with uncommitted changes)' if dirty else ''}; {len(results)} pairs in {wall_s / 60:.1f} min "
        f"with {args.jobs} processes. How the bundles are written: the docstring of "
        "[drift_calibration.py](drift_calibration.py).",
        "",
        "Rows: the 17 speed rows the rule judges on their runs (decode, decode per prompt, prefill and "
        "TTFT at 128 and 512, concurrency total and per request at 1/2/4, context decode and prefill "
        "at 256 and 512); the one-run long answer (always inconclusive, too few runs) and the quality "
        "rows (the same answers on both sides) are left out of the shares but count in the exit code. "
        f"Drift on {drift_words(args.drift_parts)}, B faster (a rate times 1 + drift, a TTFT divided). Row shares: mean of "
        "per-pair shares ± 1.96 SE; FAIL: exit code 1, with Wilson's 95 % interval.",
        "",
        "## Against the issue's targets",
        "",
    ]
    lines += targets_lines(table, results, args)
    lines += ["", *verify_lines(results, args.verify_every)]
    odd = sum(r["exit"] not in (0, 1) for r in results)
    lines += [f"{odd} diffs exited with neither 0 nor 1 (no verdict)." if odd else "Every diff exited 0 or 1."]
    lines += ["", "## Per cell", ""]
    for spread in args.spread:
        lines += cell_table(table, results, spread, args.drift_parts) + [""]
    with tempfile.NamedTemporaryFile("w", dir=os.path.dirname(path), delete=False, suffix=".tmp") as fh:
        fh.write("\n".join(lines).rstrip("\n") + "\n")
    os.replace(fh.name, path)


# ---------------------------------------------------------------- main


def numbers(text, kind=float):
    try:
        return [kind(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers separated by commas, got '{text}'")


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cv", type=lambda t: numbers(t, int), default=[3, 8, 15], help="CV of runs, percent")
    ap.add_argument("--runs", type=lambda t: numbers(t, int), default=[3, 4, 8], help="runs a side")
    ap.add_argument("--drift", type=lambda t: numbers(t, int), default=[0, 5, 10, 20, 40, 50], help="percent")
    ap.add_argument("--spread", type=lambda t: numbers(t, int), default=[0, 6], help="session spread, percent")
    ap.add_argument("--drift-parts", default=",".join(PARTS), help="parts B's drift applies to")
    ap.add_argument("--pairs", type=int, default=40, help="pairs a cell with drift")
    ap.add_argument("--zero-pairs", type=int, default=100, help="pairs a zero-drift cell")
    ap.add_argument("--focus-pairs", type=int, default=400, help="pairs at CV 8, 4 runs, no drift")
    ap.add_argument("--jobs", type=int, default=2, help="rigaudit processes at once (at most 2)")
    ap.add_argument("--seed", default="25")
    ap.add_argument("--verify-every", type=int, default=0, help="verify both bundles of every K-th pair")
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "debug", "rigaudit"))
    ap.add_argument("--out", default=os.path.join(ROOT, "benches", "drift-calibration.md"))
    ap.add_argument("--write-pair", metavar="DIR", help="write one pair (DIR/A, DIR/B) of the first cell and stop")
    args = ap.parse_args()
    args.drift_parts = [p for p in args.drift_parts.split(",") if p]
    bad = [p for p in args.drift_parts if p not in PARTS]
    if bad:
        ap.error(f"--drift-parts: unknown part {', '.join(bad)}; expected some of {', '.join(PARTS)}")
    if not 1 <= args.jobs <= 2:
        ap.error("--jobs: expected 1 or 2 (the machine is shared)")
    if not args.write_pair and not os.access(args.bin, os.X_OK):
        ap.error(f"--bin: {args.bin} is no executable; build it: CARGO_BUILD_JOBS=1 cargo build --bin rigaudit")
    return args


def main():
    args = parse_args()
    fx = load_fixture()
    if args.write_pair:
        cell = next(cells(args))
        rng = pair_rng(args.seed, cell, 0)
        ta, tb = truths(cell, rng, args.drift_parts)
        for side, truth in (("A", ta), ("B", tb)):
            write_bundle(fx, os.path.join(args.write_pair, side), truth, cell[0], cell[1], rng)
        print(f"wrote {args.write_pair}/A and B: CV {cell[0]} %, {cell[1]} runs, drift {cell[2]} %, spread {cell[3]} %")
        return
    tasks = [(cell, i) for cell in cells(args) for i in range(pairs_of(cell, args))]
    print(f"{len(tasks)} pairs in {len(set(c for c, _ in tasks))} cells, {args.jobs} at once", file=sys.stderr)
    t0, results = time.monotonic(), []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        jobs = [
            pool.submit(run_pair, fx, args, cell, i, args.verify_every and k % args.verify_every == 0)
            for k, (cell, i) in enumerate(tasks)
        ]
        for k, job in enumerate(concurrent.futures.as_completed(jobs), 1):
            results.append(job.result())
            if k % 200 == 0:
                el = time.monotonic() - t0
                print(f"{k}/{len(tasks)} pairs, {el:.0f} s, about {el / k * (len(tasks) - k):.0f} s left",
                      file=sys.stderr)
    wall = time.monotonic() - t0
    write_markdown(args.out, summarize(results, args.drift_parts), results, args, wall)
    print(f"wrote {args.out} ({len(results)} pairs, {wall:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
