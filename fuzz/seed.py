"""Writes the seed corpora of the fuzz targets from the project's fixtures (run from fuzz/):
python3 seed.py. Seeds are small real inputs; what the fuzzer finds beyond them is kept in
corpus/<target>/ after `cargo fuzz cmin`."""
import io, json, os, struct, tarfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
FX = os.path.join(ROOT, "fixtures")
BUNDLES = [os.path.join(FX, "runs", "smollm2-cpu")] + [
    os.path.join(FX, "pages", p) for p in sorted(os.listdir(os.path.join(FX, "pages")))
]
KINDS = {"card": 1, "speed-contract": 2, "speed-result": 3, "fit-result": 4,
         "quality-contract": 5, "quality-summary": 6}


def put(target, name, data):
    d = os.path.join("corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


for b in BUNDLES:
    tag = os.path.basename(b)
    manifest = json.load(open(os.path.join(b, "bundle.json")))
    put("records", f"{tag}-manifest", b"\x00" + json.dumps(manifest).encode())
    for f in manifest["files"]:
        p = os.path.join(b, f["path"])
        if f["kind"] in KINDS and os.path.isfile(p):
            put("records", f"{tag}-{f['path'].replace('/', '_')}",
                bytes([KINDS[f["kind"]]]) + open(p, "rb").read())
        if f["kind"] == "speed-result" and os.path.isfile(p):
            lines = json.load(open(p)).get("server", {}).get("start_lines", [])
            put("startline", tag, "\n".join(lines).encode())
        if f["kind"] == "quality-answers" and os.path.isfile(p):
            head = b"".join(open(p, "rb").readlines()[:6])
            put("answers", f"{tag}-{f['test']}", head)
    # A packed bundle of the manifest and card only (the other files listed are missing).
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for name in ["bundle.json", "card.json"]:
            t.add(os.path.join(b, name), arcname=f"{tag}/{name}")
    put("packed_bundle", tag, buf.getvalue())


def gguf(kv):
    """A GGUF v3 header with string metadata and no tensors."""
    out = b"GGUF" + struct.pack("<IQQ", 3, 0, len(kv))
    for k, v in kv:
        kb, vb = k.encode(), v.encode()
        out += struct.pack("<Q", len(kb)) + kb + struct.pack("<I", 8) + struct.pack("<Q", len(vb)) + vb
    return out


put("gguf", "header-only", gguf([("general.architecture", "llama"), ("general.name", "seed")]))


# A streamed reply as the bundled engine sends it, and one with an error event.
events = [
    {"choices": [{"index": 0, "delta": {"role": "assistant"}}]},
    {"choices": [{"index": 0, "delta": {"content": "Hello"}}]},
    {"choices": [{"index": 0, "delta": {"content": " world"}, "finish_reason": "length"}]},
    {"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 2,
                              "prompt_tokens_details": {"cached_tokens": 0}},
     "timings": {"predicted_n": 2, "predicted_ms": 20.0, "prompt_n": 12, "prompt_ms": 5.0}},
]
put("sse", "reply", "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode() + b"data: [DONE]\n\n")
put("sse", "error", b'data: {"error": {"message": "maximum context length is 1024 tokens"}}\n\n')

# Packages: a wheel-like zip, a tar and a tar.gz, each holding bin/engine.
import zipfile
z = io.BytesIO()
with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as f:
    f.writestr("pkg-1.0.dist-info/METADATA", "Name: pkg\n")
    f.writestr("bin/engine", b"\x7fELF" + b"\0" * 60)
put("package", "zip", b"\x00" + z.getvalue())
for k, mode in [(1, "w"), (2, "w:gz")]:
    t = io.BytesIO()
    with tarfile.open(fileobj=t, mode=mode, format=tarfile.USTAR_FORMAT) as f:
        data = b"\x7fELF" + b"\0" * 60
        info = tarfile.TarInfo("bin/engine")
        info.size = len(data)
        f.addfile(info, io.BytesIO(data))
    put("package", f"tar{k}", bytes([k]) + t.getvalue())
