"""A small MLPerf LoadGen system under test that sends each query to an OpenAI-compatible chat
endpoint (the bundled engine) and reports its first token and its end to LoadGen, with the
server's usage as the token count. Used by scripts/make-import-fixtures.sh to make the LoadGen
fixtures; LoadGen writes mlperf_log_summary.txt and mlperf_log_detail.txt into OUTDIR.

    python loadgen_sut.py URL QUESTIONS.jsonl OUTDIR QPS
"""

import array
import json
import sys
import threading
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import mlperf_loadgen as lg

URL, QUESTIONS, OUTDIR, QPS = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
PROMPTS = [json.loads(line)["prompt"] for line in open(QUESTIONS, encoding="utf-8")]
POOL = ThreadPoolExecutor(max_workers=4)
KEEP = []  # response buffers must live until LoadGen has copied them
LOCK = threading.Lock()


def respond(sample_id, text, tokens, first):
    buf = array.array("B", text.encode("utf-8") or b" ")
    with LOCK:
        KEEP.append(buf)
    ptr, n = buf.buffer_info()
    resp = lg.QuerySampleResponse(sample_id, ptr, n * buf.itemsize, tokens)
    (lg.FirstTokenComplete if first else lg.QuerySamplesComplete)([resp])


def run_one(sample):
    body = json.dumps({
        "model": "smollm2", "stream": True, "max_tokens": 16, "temperature": 0,
        "stream_options": {"include_usage": True},
        "messages": [{"role": "user", "content": PROMPTS[sample.index % len(PROMPTS)]}],
    }).encode()
    req = urllib.request.Request(URL + "/v1/chat/completions", body, {"content-type": "application/json"})
    text, tokens, first = "", 0, False
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            for raw in r:
                line = raw.decode().strip()
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                chunk = json.loads(line[6:])
                for c in chunk.get("choices") or []:
                    piece = (c.get("delta") or {}).get("content") or ""
                    if piece and not first:
                        first = True
                        respond(sample.id, piece, 1, True)
                    text += piece
                usage = chunk.get("usage")
                if usage:
                    tokens = usage.get("completion_tokens", tokens)
    except Exception as e:  # the sample still completes, empty, so LoadGen can finish
        print(f"sample {sample.index}: {e}", file=sys.stderr)
    respond(sample.id, text, max(tokens, 1), False)


def issue(samples):
    for s in samples:
        POOL.submit(run_one, s)


settings = lg.TestSettings()
settings.scenario = lg.TestScenario.Server
settings.mode = lg.TestMode.PerformanceOnly
settings.server_target_qps = QPS
settings.server_target_latency_ns = 4_000_000_000
settings.use_token_latencies = True
settings.ttft_latency = 2_000_000_000
settings.tpot_latency = 200_000_000
settings.min_duration_ms = 10_000
settings.min_query_count = 12
settings.max_query_count = 24
log = lg.LogSettings()
log.log_output.outdir = OUTDIR
log.log_output.copy_summary_to_stdout = False
sut = lg.ConstructSUT(issue, lambda: None)
qsl = lg.ConstructQSL(len(PROMPTS), len(PROMPTS), lambda s: None, lambda s: None)
lg.StartTestWithLogSettings(sut, qsl, settings, log)
lg.DestroyQSL(qsl)
lg.DestroySUT(sut)
POOL.shutdown()
