"""Fidelity of rigaudit-engine to llama.cpp on the same GGUF.

usage: python3 fidelity.py ENGINE_BIN MODEL [THREADS] [MAX_TOKENS]

1. Scores a fixed text (engine/tests/fixtures/declaration-of-independence.txt,
   the US Declaration of Independence, 1776, public domain), token ids from
   rigaudit-engine's /tokenize fed to both engines, so both score the same
   ids (first MAX_TOKENS, default all):
   - rigaudit-engine: one /v1/completions request, `echo: true`,
     `max_tokens: 0`, `logprobs: 20` (every position's log-probability and top 20);
   - llama.cpp (PyPI `xllamacpp`, in process): one request per position,
     prompt = the ids before it, `n_predict: 1`, `n_probs: 20`, and a
     `logit_bias` of +100 on the text's next token so that it is the token
     sampled; llama.cpp reports the sampled token's log-probability and the top
     20 from the raw logits (before the sampler chain, so the bias is not in
     them), which gives the exact log-probability of the text's token.
   Reports both perplexities, top-1 agreement of the next-token prediction at
   every position, and the mean KL divergence KL(llama.cpp || rigaudit-engine)
   of the next-token distributions coarsened to {tokens in both top-20 lists,
   everything else} -- only top-20 lists are available from llama.cpp's server,
   and a coarsened KL is a lower bound of the full-vocabulary KL.
2. Greedy chat replies (64 tokens, temperature 0) to 12 fixed prompts from
   both engines, compared token by token; at the first difference, each
   engine's log-probabilities of both candidates (from its top-20), so a
   divergence shows as a near-tie or not.
Prints a JSON summary and Markdown tables. Only talks to 127.0.0.1.
"""
import json
import math
import os
import subprocess
import sys
import time
import urllib.request

import xllamacpp as xl

HERE = os.path.dirname(os.path.abspath(__file__))
TEXT = os.path.join(HERE, "..", "tests", "fixtures", "declaration-of-independence.txt")
TOP = 20
PROMPTS = [
    "What is the capital of France?",
    "Give me three tips for sleeping better.",
    "Write a haiku about autumn leaves.",
    "How do I boil an egg?",
    "Explain what a rainbow is to a child.",
    "What are the health benefits of walking every day?",
    "Suggest a name for a small bakery.",
    "How many days are there in a leap year?",
    "Write a short thank-you note to a neighbour who watered my plants.",
    "What is the difference between weather and climate?",
    "List four fruits that are rich in vitamin C.",
    "How can I save money on groceries?",
]


def post(base, path, body):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=1200) as r:
        return json.loads(r.read())


def start_engine(binary, model, threads, ctx):
    p = subprocess.Popen([binary, "serve", model, "--name", "m", "--port", "0", "--threads", str(threads),
                          "--context", str(ctx), "--parallel", "1", "--exit-with-stdin"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    for line in p.stdout:
        if line.startswith("rigaudit-engine start"):
            addr = next(f for f in line.split() if f.startswith("listen="))[len("listen=http://"):]
            return p, addr
    raise SystemExit("rigaudit-engine did not start")


def start_llama(model, threads, ctx):
    p = xl.CommonParams()
    p.model.path = model
    p.n_parallel = 1
    p.n_ctx = ctx
    p.cpuparams.n_threads = threads
    p.cpuparams_batch.n_threads = threads
    p.hostnames = ["127.0.0.1"]
    p.port = 0
    p.warmup = True
    return xl.Server(p)


def ours_text(base, ids):
    v = post(base, "/v1/completions", {"prompt": ids, "max_tokens": 0, "echo": True, "logprobs": TOP,
                                       "temperature": 0})
    lp = v["choices"][0]["logprobs"]
    return lp["token_logprobs"][1:], lp["top_logprobs"][1:]  # position p predicts ids[p]


def llama_text(srv, ids):
    lps, tops = [], []
    for p in range(1, len(ids)):
        r = srv.handle_completions({"prompt": ids[:p], "n_predict": 1, "n_probs": TOP, "temperature": 0,
                                    "logit_bias": [[ids[p], 100.0]], "cache_prompt": True})
        c = r["choices"][0]["logprobs"]["content"][0]
        if c["id"] != ids[p]:
            raise SystemExit(f"llama.cpp sampled {c['id']} at {p}, not the forced {ids[p]}")
        lps.append(c["logprob"])
        tops.append({t["token"]: t["logprob"] for t in c["top_logprobs"]})
    return lps, tops


def coarse_kl(p_top, q_top):
    """KL(p || q) of the two distributions coarsened to {common tokens, rest}."""
    common = set(p_top) & set(q_top)
    kl, pr, qr = 0.0, 1.0, 1.0
    for t in common:
        p, q = math.exp(p_top[t]), math.exp(q_top[t])
        kl += p * (p_top[t] - q_top[t])
        pr -= p
        qr -= q
    pr, qr = max(pr, 1e-12), max(qr, 1e-12)
    return kl + pr * math.log(pr / qr)


def text_figures(ours, llama):
    (olp, otop), (llp, ltop) = ours, llama
    n = len(olp)
    top1 = sum(max(o, key=o.get) == max(l, key=l.get) for o, l in zip(otop, ltop))
    kls = [coarse_kl(l, o) for o, l in zip(otop, ltop)]
    dl = [abs(a - b) for a, b in zip(olp, llp)]
    return {"positions": n, "ppl_rigaudit": math.exp(-sum(olp) / n), "ppl_llamacpp": math.exp(-sum(llp) / n),
            "top1_agreement": top1 / n, "mean_kl_top20_coarse": sum(kls) / n, "max_kl_top20_coarse": max(kls),
            "mean_abs_logprob_diff": sum(dl) / n, "max_abs_logprob_diff": max(dl)}


def chat_body(prompt):
    return {"messages": [{"role": "user", "content": prompt}], "max_tokens": 64, "temperature": 0,
            "logprobs": True, "top_logprobs": TOP}


def first_diff(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x["token"] != y["token"]:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def lp_of(entry, token):
    for t in entry["top_logprobs"]:
        if t["token"] == token:
            return t["logprob"]
    return None


def greedy_compare(base, srv):
    rows = []
    for p in PROMPTS:
        o = post(base, "/v1/chat/completions", chat_body(p))["choices"][0]["logprobs"]["content"]
        l = srv.handle_chat_completions(chat_body(p))["choices"][0]["logprobs"]["content"]
        i = first_diff(o, l)
        row = {"prompt": p, "tokens": [len(o), len(l)], "first_diff": i}
        if i is not None and i < min(len(o), len(l)):
            to, tl = o[i]["token"], l[i]["token"]
            row.update({"ours_pick": to, "llama_pick": tl,
                        "ours_lp": [o[i]["logprob"], lp_of(o[i], tl)],
                        "llama_lp": [lp_of(l[i], to), l[i]["logprob"]]})
        rows.append(row)
    return rows


def fmt(x):
    return "n/a" if x is None else f"{x:.3f}"


def main():
    binary, model = sys.argv[1], sys.argv[2]
    threads = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    limit = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    ctx = 4096
    proc, addr = start_engine(binary, model, threads, ctx)
    base = "http://" + addr
    try:
        ids = post(base, "/tokenize", {"content": open(TEXT).read()})["tokens"]
        if limit:
            ids = ids[:limit]
        t0 = time.time()
        ours = ours_text(base, ids)
        t_ours = time.time() - t0
        srv = start_llama(model, threads, ctx)
        t0 = time.time()
        llama = llama_text(srv, ids)
        t_llama = time.time() - t0
        figures = text_figures(ours, llama)
        figures.update({"tokens": len(ids), "seconds_rigaudit": round(t_ours, 1), "seconds_llamacpp": round(t_llama, 1)})
        t0 = time.time()
        rows = greedy_compare(base, srv)
        figures["seconds_greedy_both"] = round(time.time() - t0, 1)
    finally:
        proc.kill()
    print(json.dumps({"text": figures, "greedy": rows}, indent=1))
    print("\n| figure | value |\n|---|---|")
    for k, v in figures.items():
        print(f"| {k} | {v:.5g} |" if isinstance(v, float) else f"| {k} | {v} |")
    print("\n| prompt | tokens (ours, llama.cpp) | first difference | ours: its pick / llama.cpp's pick | llama.cpp: ours' pick / its pick |")
    print("|---|---|---|---|---|")
    for r in rows:
        if r.get("ours_pick") is None:
            print(f"| {r['prompt']} | {r['tokens']} | {r['first_diff'] if r['first_diff'] is not None else 'none'} | | |")
            continue
        print(f"| {r['prompt']} | {r['tokens']} | {r['first_diff']}: {r['ours_pick']!r} vs {r['llama_pick']!r} | "
              f"{fmt(r['ours_lp'][0])} / {fmt(r['ours_lp'][1])} | {fmt(r['llama_lp'][0])} / {fmt(r['llama_lp'][1])} |")


if __name__ == "__main__":
    main()
