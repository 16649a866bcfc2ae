"""Sends the differential request matrix to llama.cpp's server and saves what it answers, as a user
saves it: whole bodies one a line (`responses.jsonl`, an error body as its line) and streams one a
file (`NN-name.sse`). Used by scripts/differential/llama.sh.

    python3 llama_server_cases.py http URL OUT_DIR CASE...        # a server on loopback (curl's bytes)
    python3 llama_server_cases.py inproc MODEL OUT_DIR CASE...    # xllamacpp's in-process server

`inproc` is for xllamacpp versions whose Server has no HTTP listener (before 2026): its
handle_completions / handle_chat_completions run the server's own handlers (the OpenAI-compatible
/v1/completions and /v1/chat/completions), and their bodies are saved as the HTTP layer sends them
(`json.dumps` of what the handler returns; a stream as `data: <chunk>` events, a blank line after
each, closed by `data: [DONE]`). Options after CASE: --ctx N (each slot's window), --slots N,
--draft MODEL (speculative decoding with a draft model).

Cases: completion, chat, stream, stream-chat, nocache, speculative.
"""

import json
import os
import sys
import tempfile
import time
import urllib.error
import urllib.request

LONG = " ".join(f"tok{i}" for i in range(400))
A = "The capital of France is"
EMPTY = "Write one sentence about the sea."

# (name, endpoint, body): the same prompt twice (the second from the slot's cache), a one-token
# reply, a reply the model ends at once, a prompt past the window (refused), one more.
COMPLETION = [
    ("first", "/completion", {"prompt": A, "n_predict": 16, "temperature": 0, "seed": 7}),
    ("cached", "/completion", {"prompt": A, "n_predict": 16, "temperature": 0, "seed": 7}),
    ("one-token", "/completion", {"prompt": "Once upon a time", "n_predict": 1, "temperature": 0}),
    ("empty", "/completion", {"prompt": EMPTY, "n_predict": 24, "temperature": 0, "seed": 7}),
    ("refused", "/completion", {"prompt": LONG, "n_predict": 16, "temperature": 0}),
    ("last", "/completion", {"prompt": "Name a colour.", "n_predict": 8, "temperature": 0}),
]
CHAT = [
    ("first", "/v1/chat/completions", {"messages": [{"role": "user", "content": "What is 2 + 3?"}], "max_tokens": 16, "temperature": 0}),
    ("cached", "/v1/chat/completions", {"messages": [{"role": "user", "content": "What is 2 + 3?"}], "max_tokens": 16, "temperature": 0}),
    ("one-token", "/v1/chat/completions", {"messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 1, "temperature": 0}),
    ("refused", "/v1/chat/completions", {"messages": [{"role": "user", "content": LONG}], "max_tokens": 16, "temperature": 0}),
]
NOCACHE = [(n, e, dict(b, cache_prompt=False)) for n, e, b in COMPLETION[:3]]
SPECULATIVE = [
    ("first", "/completion", {"prompt": "Count: one, two, three,", "n_predict": 24, "temperature": 0}),
    ("second", "/completion", {"prompt": "The capital of France is", "n_predict": 24, "temperature": 0}),
]


class Http:
    def __init__(self, url):
        self.url = url

    def send(self, endpoint, body):
        req = urllib.request.Request(self.url + endpoint, json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=300) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()


class InProc:
    def __init__(self, model, ctx, slots, draft):
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        os.chdir(tempfile.gettempdir())  # xllamacpp 0.1 writes a llama.<id>.log where it runs
        import xllamacpp as xl
        from llama_server import draft as set_draft, set_path
        p = xl.CommonParams()
        set_path(p, "model", model)
        p.n_parallel, p.n_ctx = slots, ctx * slots
        p.cpuparams.n_threads = p.cpuparams_batch.n_threads = 1
        if draft:
            set_draft(p, draft)
        self.srv = xl.Server(p)

    def send(self, endpoint, body):
        out, err = [], []
        handler = self.srv.handle_chat_completions if "chat" in endpoint else self.srv.handle_completions
        try:
            handler(json.dumps(body), lambda v: err.append(compact(v)), lambda v: out.append(compact(v)))
        except TypeError:  # xllamacpp 0.2: handle_*(request, callback) returns the body or error
            got = handler(body, (lambda v: out.append(compact(v))) if body.get("stream") else None)
            if got is not None and not body.get("stream"):
                out.append(compact(got))
            if out and is_error(out[-1]):
                err.append(out.pop())
        if err:  # the HTTP layer sends an error as {"error": {...}}
            e = json.loads(err[0])
            return 400, json.dumps(e if "error" in e else {"error": e}, separators=(",", ":")).encode()
        if body.get("stream"):  # a handler's list of chunks is sent one event each
            chunks = [x for c in out for x in (json.loads(c) if c.startswith("[") else [json.loads(c)])]
            events = "".join(f"data: {compact(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
            return 200, events.encode()
        return 200, out[-1].encode()


def compact(v):
    """A handler's result as the HTTP layer writes it (nlohmann's dump: no spaces)."""
    if isinstance(v, (bytes, bytearray)):
        v = v.decode()
    if isinstance(v, str):
        v = json.loads(v)
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def is_error(text):
    v = json.loads(text)
    return isinstance(v, dict) and ("error" in v or ("code" in v and "message" in v)) and "timings" not in v


def run(server, case, out):
    os.makedirs(out, exist_ok=True)
    stream = case.startswith("stream")
    reqs = {"completion": COMPLETION, "stream": COMPLETION, "chat": CHAT, "stream-chat": CHAT,
            "nocache": NOCACHE, "speculative": SPECULATIVE}[case]
    lines = []
    for i, (name, endpoint, body) in enumerate(reqs, 1):
        if isinstance(server, InProc) and endpoint == "/completion":
            body = dict(body, max_tokens=body.get("n_predict"))
        status, data = server.send(endpoint, dict(body, stream=True) if stream else body)
        if stream:
            with open(os.path.join(out, f"{i}-{name}.sse"), "wb") as f:
                f.write(data)
        else:
            lines.append(json.dumps(json.loads(data), separators=(",", ":")))
    if lines:
        with open(os.path.join(out, "responses.jsonl"), "w") as f:
            f.write("\n".join(lines) + "\n")


def main():
    mode, target, out = sys.argv[1:4]
    out = os.path.abspath(out)
    rest = sys.argv[4:]
    opt = lambda k, d: rest[rest.index(k) + 1] if k in rest else d
    cases = [c for c in rest if not c.startswith("--") and c not in (opt("--ctx", ""), opt("--slots", ""), opt("--draft", ""))]
    if mode == "http":
        server = Http(target)
    else:
        server = InProc(target, int(opt("--ctx", 256)), int(opt("--slots", 1)), opt("--draft", None))
    for case in cases:
        run(server, case, os.path.join(out, case))
        time.sleep(0.2)


if __name__ == "__main__":
    main()
