"""A reply-shape proxy in front of the bundled engine, for the differential runs of client tools.

    python shapes_proxy.py ENGINE_URL PORT [--usage-chunk]

Every request is passed to the engine unchanged, except those whose prompt (or last chat message)
holds a marker `[[shape:NAME]]`: their reply is made here, in the engine's own stream layout (one
`data:` chunk per text piece, a finish chunk with `usage`, then `[DONE]`), in the shape NAME:

- `empty`: HTTP 200, one chunk whose text is "" and a finish chunk whose usage counts one
  completion token (a reply whose only token decodes to no text, such as a special token);
- `stop`: HTTP 200, no text chunk at all, the finish chunk with zero completion tokens (an
  immediate stop);
- `single`: HTTP 200, one chunk of text, usage one completion token;
- `slow`: the engine's reply, its first chunk held back 1.5 s;
- `nodone`: the engine's reply without the final `data: [DONE]`;
- `midstream`: two text chunks, then `data: {"error": ...}` and the end of the stream;
- `abort`: two text chunks, then the connection is cut;
- `http400` / `http500`: the status alone, with an OpenAI error body.

With `--usage-chunk` every stream (the engine's too) ends as vLLM's own server ends it: the finish
chunk without usage, then, when the request asked for it (`stream_options.include_usage`), a chunk
with `"choices": []` and the usage (what a client reading usage only from chunks without choices
expects).

Nothing here measures: it only shapes replies so that a client's own code meets each shape.
"""

import asyncio
import json
import re
import sys
import time

from aiohttp import ClientSession, ClientTimeout, web

MARK = re.compile(r"\[\[shape:([a-z0-9]+)\]\]")


def prompt_text(body: dict) -> str:
    if "messages" in body:
        msgs = body.get("messages") or [{}]
        content = msgs[-1].get("content", "")
        if isinstance(content, list):
            return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
        return str(content)
    p = body.get("prompt", "")
    return p if isinstance(p, str) else json.dumps(p)


def chunk(chat: bool, text: str | None, finish=None, usage=None, choices=True) -> bytes:
    if chat:
        choice = {"index": 0, "delta": {} if text is None else {"content": text},
                  "logprobs": None, "finish_reason": finish}
        obj = "chat.completion.chunk"
    else:
        choice = {"index": 0, "text": text or "", "logprobs": None, "finish_reason": finish}
        obj = "text_completion"
    v = {"id": "shape", "object": obj, "created": int(time.time()), "model": "smollm2",
         "choices": [choice] if choices else []}
    if usage is not None:
        v["usage"] = usage
    return f"data: {json.dumps(v)}\n\n".encode()


def usage_of(prompt_tokens: int, completion: int) -> dict:
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion,
            "total_tokens": prompt_tokens + completion}


def wants_usage(body: dict) -> bool:
    return bool((body.get("stream_options") or {}).get("include_usage"))


async def ending(resp, chat: bool, usage: dict, usage_chunk: bool, want: bool) -> None:
    if usage_chunk:
        await resp.write(chunk(chat, None if chat else "", "length"))
        if want:
            await resp.write(chunk(chat, None, usage=usage, choices=False))
    else:
        await resp.write(chunk(chat, None if chat else "", "length", usage))
    await resp.write(b"data: [DONE]\n\n")


async def made(request, body: dict, shape: str, usage_chunk: bool):
    chat = "messages" in body
    if shape in ("http400", "http500"):
        code = int(shape[4:])
        return web.json_response({"error": {"message": f"shaped {code}", "code": code}},
                                 status=code)
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    if chat:
        await resp.write(chunk(chat, "", None).replace(b'"delta": {"content": ""}',
                                                       b'"delta": {"role": "assistant", "content": ""}'))
    pieces = {"empty": [""], "stop": [], "single": [" Yes"],
              "midstream": [" The", " sea"], "abort": [" The", " sea"]}[shape]
    for p in pieces:
        await asyncio.sleep(0.05)
        await resp.write(chunk(chat, p))
    if shape == "midstream":
        await resp.write(b'data: {"error": {"message": "shaped mid-stream error", "code": 500}}\n\n')
        await resp.write_eof()
        return resp
    if shape == "abort":
        request.transport.close()
        return resp
    n = {"empty": 1, "stop": 0, "single": 1}[shape]
    await ending(resp, chat, usage_of(8, n), usage_chunk, wants_usage(body))
    await resp.write_eof()
    return resp


def rechunk(line: bytes, want: bool) -> list[bytes]:
    """The engine's finish chunk (choices and usage together) as vLLM's server sends it."""
    body = line[len(b"data: "):].strip()
    try:
        v = json.loads(body)
    except ValueError:
        return [line]
    if "usage" not in v or not v.get("choices"):
        return [line]
    usage = v.pop("usage")
    v.pop("timings", None)
    tail = dict(v, choices=[], usage=usage)
    out = [f"data: {json.dumps(v)}\n\n".encode()]
    return out + [f"data: {json.dumps(tail)}\n\n".encode()] if want else out


async def passed(request, body: dict, engine: str, shape: str | None, usage_chunk: bool):
    async with ClientSession(timeout=ClientTimeout(total=600)) as s:
        async with s.post(engine + request.path, json=body) as up:
            if not body.get("stream"):
                return web.Response(body=await up.read(), status=up.status,
                                    content_type=up.content_type)
            resp = web.StreamResponse(status=up.status,
                                      headers={"Content-Type": up.headers.get("Content-Type", "text/event-stream")})
            await resp.prepare(request)
            first = True
            async for line in up.content:
                if first and shape == "slow" and line.strip():
                    await asyncio.sleep(1.5)
                    first = False
                if shape == "nodone" and line.startswith(b"data: [DONE]"):
                    continue
                out = rechunk(line, wants_usage(body)) if usage_chunk and line.startswith(b"data: {") else [line]
                for piece in out:
                    await resp.write(piece)
            await resp.write_eof()
            return resp


def app(engine: str, usage_chunk: bool) -> web.Application:
    async def generate(request):
        body = await request.json()
        m = MARK.search(prompt_text(body))
        shape = m.group(1) if m else None
        if shape and shape not in ("slow", "nodone"):
            return await made(request, body, shape, usage_chunk)
        return await passed(request, body, engine, shape, usage_chunk)

    async def forward(request):
        async with ClientSession() as s:
            async with s.request(request.method, engine + request.path_qs,
                                 data=await request.read(),
                                 headers={"Content-Type": request.content_type}) as up:
                return web.Response(body=await up.read(), status=up.status,
                                    content_type=up.content_type)

    a = web.Application()
    for p in ("/v1/completions", "/v1/chat/completions"):
        a.router.add_post(p, generate)
    a.router.add_route("*", "/{tail:.*}", forward)
    return a


if __name__ == "__main__":
    web.run_app(app(sys.argv[1], "--usage-chunk" in sys.argv), host="127.0.0.1",
                port=int(sys.argv[2]), print=None)
