"""A system under test for MLPerf LoadGen's differential fixtures (scripts/differential/loadgen.sh):
every scenario and mode, over the bundled engine's OpenAI-compatible chat endpoint, with chosen
reply shapes. LoadGen writes mlperf_log_summary.txt, mlperf_log_detail.txt and (accuracy mode)
mlperf_log_accuracy.json into OUTDIR.

    python loadgen_sut.py URL OUTDIR CASE_JSON

CASE_JSON: {"scenario": "Server", "mode": "performance"|"accuracy", "samples": 8,
"max_tokens": 8, "settings": {TestSettings attribute: value}, "shapes": {"3": "refused", ...}}.
A shape applies to the sample of that index (modulo `samples`):
- "refused": a prompt longer than the engine's window, which the engine answers with HTTP 400;
  the SUT completes the sample with no text and the 0 tokens it got;
- "single": max_tokens 1, a reply of one token;
- "no-first-token": the SUT never calls FirstTokenComplete for it;
- "slow-first": the SUT waits 1 s before it sends the request.
A setting this LoadGen version's TestSettings lacks is left out and named on stderr.
"""

import array
import json
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import mlperf_loadgen as lg

URL, OUTDIR, CASE = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
N = int(CASE.get("samples", 8))
SHAPES = {int(k): v for k, v in CASE.get("shapes", {}).items()}
SCENARIO = CASE["scenario"]
TOKENS = bool(CASE.get("settings", {}).get("use_token_latencies", False))
POOL = ThreadPoolExecutor(max_workers=4)
KEEP = []  # response buffers must live until LoadGen has copied them
LOCK = threading.Lock()
LONG = "Tell me about the sea. " * 200  # past the engine's 512-token window


def prompt(index):
    return LONG if SHAPES.get(index) == "refused" else f"What is {index} plus {index + 3}?"


def respond(sample_id, text, tokens, first):
    buf = array.array("B", text.encode("utf-8"))
    with LOCK:
        KEEP.append(buf)
    ptr, n = buf.buffer_info()
    if TOKENS:
        resp = lg.QuerySampleResponse(sample_id, ptr, n * buf.itemsize, tokens)
    else:
        resp = lg.QuerySampleResponse(sample_id, ptr, n * buf.itemsize)
    (lg.FirstTokenComplete if first else lg.QuerySamplesComplete)([resp])


def stream(index, on_first):
    """The engine's reply to one sample's prompt: (text, completion tokens)."""
    shape = SHAPES.get(index)
    body = json.dumps({
        "model": "smollm2", "stream": True, "temperature": 0,
        "max_tokens": 1 if shape == "single" else int(CASE.get("max_tokens", 8)),
        "stream_options": {"include_usage": True},
        "messages": [{"role": "user", "content": prompt(index)}],
    }).encode()
    req = urllib.request.Request(URL + "/v1/chat/completions", body, {"content-type": "application/json"})
    text, tokens = "", 0
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            for raw in r:
                line = raw.decode().strip()
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                chunk = json.loads(line[6:])
                for c in chunk.get("choices") or []:
                    piece = (c.get("delta") or {}).get("content") or ""
                    if piece and not text:
                        on_first(piece)
                    text += piece
                usage = chunk.get("usage")
                if usage:
                    tokens = usage.get("completion_tokens", tokens)
    except urllib.error.HTTPError as e:
        print(f"sample {index}: HTTP {e.code}", file=sys.stderr)
    return text, tokens


def run_one(sample):
    index = sample.index % N
    shape = SHAPES.get(index)
    if shape == "slow-first":
        time.sleep(1.0)
    wants_first = TOKENS and SCENARIO != "Offline" and shape != "no-first-token"
    sent = []

    def on_first(piece):
        if wants_first and not sent:
            sent.append(1)
            respond(sample.id, piece, 1, True)

    text, tokens = stream(index, on_first)
    respond(sample.id, text, tokens, False)


def issue(samples):
    for s in samples:
        POOL.submit(run_one, s)


SCENARIOS = {"Offline": lg.TestScenario.Offline, "Server": lg.TestScenario.Server,
             "SingleStream": lg.TestScenario.SingleStream, "MultiStream": lg.TestScenario.MultiStream}
settings = lg.TestSettings()
settings.scenario = SCENARIOS[SCENARIO]
settings.mode = lg.TestMode.AccuracyOnly if CASE.get("mode") == "accuracy" else lg.TestMode.PerformanceOnly
for key, value in CASE.get("settings", {}).items():
    if hasattr(settings, key):
        setattr(settings, key, value)
    else:
        print(f"setting {key}: not in this LoadGen's TestSettings, left out", file=sys.stderr)
log = lg.LogSettings()
log.log_output.outdir = OUTDIR
log.log_output.copy_summary_to_stdout = False
sut = lg.ConstructSUT(issue, lambda: None)
qsl = lg.ConstructQSL(N, N, lambda s: None, lambda s: None)
lg.StartTestWithLogSettings(sut, qsl, settings, log)
lg.DestroyQSL(qsl)
lg.DestroySUT(sut)
POOL.shutdown()
