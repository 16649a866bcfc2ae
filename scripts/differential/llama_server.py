"""Starts llama.cpp's server from the PyPI package xllamacpp (whichever version is on the path) on
loopback, for scripts/differential/llama.sh. Each xllamacpp version wraps one llama.cpp build and
names its CommonParams fields as that build does; this sets the same settings on each.

    python3 llama_server.py MODEL PORT CONTEXT SLOTS [--draft MODEL] [--alias NAME]

CONTEXT is each slot's window (llama.cpp splits n_ctx over the slots). Prints `listening ADDR` and
the build xllamacpp reports, and serves until killed.
"""

import sys
import time

import xllamacpp as xl


def set_path(obj, name, path):
    """A model path: a string field in older xllamacpp, a CommonParamsModel's .path in newer."""
    cur = getattr(obj, name)
    if isinstance(cur, (str, bytes)):
        setattr(obj, name, path)
    else:
        cur.path = path
        setattr(obj, name, cur)


def draft(p, path):
    sp = p.speculative
    if hasattr(sp, "draft"):  # 2026.10: speculative.draft.mparams, and the type to use
        d = sp.draft
        set_path(d, "mparams", path)
        d.n_max, d.n_min = 4, 0
        kind = type(sp.types[0])
        sp.types = [kind.COMMON_SPECULATIVE_TYPE_DRAFT_SIMPLE]
        p.speculative = sp
        return
    if hasattr(sp, "mparams_dft"):
        set_path(sp, "mparams_dft", path)
    else:
        set_path(sp, "model", path)
    sp.n_max, sp.n_min = 4, 0
    p.speculative = sp


def main() -> None:
    args = sys.argv[1:]
    model, port, ctx, slots = args[0], int(args[1]), int(args[2]), int(args[3])
    p = xl.CommonParams()
    set_path(p, "model", model)
    if "--alias" in args:
        p.model_alias = args[args.index("--alias") + 1]
    p.n_parallel = slots
    p.n_ctx = ctx * slots
    p.cpuparams.n_threads = 1
    p.cpuparams_batch.n_threads = 1
    if hasattr(p, "hostnames"):
        p.hostnames = ["127.0.0.1"]
    else:
        p.hostname = "127.0.0.1"
    p.port = port
    p.cont_batching = True
    if "--draft" in args:
        draft(p, args[args.index("--draft") + 1])
    srv = xl.Server(p)
    print("listening", getattr(srv, "listening_address", port), flush=True)
    print("build", getattr(xl, "BUILD_INFO", None), flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
