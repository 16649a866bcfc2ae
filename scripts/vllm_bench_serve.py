"""Runs vLLM's own `vllm bench serve` client code without the vllm package installed.

    python scripts/vllm_bench_serve.py VLLM_SRC BASE_URL OUT.json N_PROMPTS LONG_EVERY

VLLM_SRC is a folder holding the `vllm/benchmarks/` and `vllm/utils/` files of the vllm wheel
(unpacked, nothing else of it: the package does not install on a CPU-only machine). vLLM's
`vllm.benchmarks.serve.benchmark()` and its request functions run unchanged against the
OpenAI-compatible server at BASE_URL (`--backend openai`, `/v1/completions`, streamed); the
modules that need the rest of vllm are replaced by small stand-ins below:

- `vllm.benchmarks.datasets`: the real `SampleRequest` fields; the prompts are made here
  (N_PROMPTS short prose prompts; every LONG_EVERY-th one, if LONG_EVERY > 0, too long for a
  small window), each prompt's length counted by the same tokenizer;
- `vllm.tokenizers`: the tokenizer is the server's own (`/tokenize`, the model file's vocabulary)
  in place of the Hugging Face one `main()` loads; vLLM calls it to count each reply's tokens
  when the stream carries no usage (llama-server's stream here does not: see the README);
- `vllm.logger`, `vllm.utils.argparse_utils`, `vllm.utils.gc_utils`,
  `vllm.utils.network_utils`: logging, argparse, a no-op, a host:port join (only main() uses it);
  and `vllm.utils` itself, whose `__init__` imports torch.

Each request goes on its own connection (`--header Connection=close`): llama-server closes a
kept-alive connection after a few requests, and aiohttp, reusing it, then fails some requests with
"Server disconnected".

The result is written as `main()` of `vllm/benchmarks/serve.py` writes it with `--save-result
--save-detailed` (its setup keys, then the benchmark's result), by the same `json.dump`.
"""

import argparse
import asyncio
import json
import logging
import sys
import types
import urllib.request
from dataclasses import dataclass
from datetime import datetime
from typing import Any


def stub(name: str, **attrs: Any) -> None:
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    sys.modules[name] = m


@dataclass
class SampleRequest:  # the fields of vllm.benchmarks.datasets.datasets.SampleRequest
    prompt: Any
    prompt_len: int
    expected_output_len: int = 0
    multi_modal_data: Any = None
    lora_request: Any = None
    request_id: str | None = None
    timestamp: float | None = None
    chat_messages: Any = None
    request_overrides: dict | None = None


class ServerTokenizer:
    """The model's tokenizer as the server applies it (`/tokenize`, no special tokens)."""

    def __init__(self, base: str) -> None:
        self.base = base

    def __call__(self, text: str, add_special_tokens: bool = False) -> Any:
        return types.SimpleNamespace(input_ids=tokenize(self.base, text))


def install_stubs(src: str) -> None:
    # vllm/utils/__init__.py imports torch: the package is stood in for; network_utils needs
    # vllm.envs (only main(), not benchmark(), uses it).
    stub("vllm.utils", __path__=[src + "/vllm/utils"])
    stub("vllm.utils.network_utils", join_host_port=lambda h, p: f"{h}:{p}")
    stub("vllm.benchmarks.datasets", SampleRequest=SampleRequest,
         add_dataset_parser=lambda p: None, get_samples=lambda a, t: [])
    stub("vllm.tokenizers", TokenizerLike=object, get_tokenizer=None)
    stub("vllm.logger", init_logger=logging.getLogger)
    stub("vllm.utils.argparse_utils", FlexibleArgumentParser=argparse.ArgumentParser)
    stub("vllm.utils.gc_utils", freeze_gc_heap=lambda: None)


def tokenize(base: str, text: str) -> list:
    body = json.dumps({"content": text, "add_special": False}).encode()
    req = urllib.request.Request(base + "/tokenize", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        return json.load(r)["tokens"]


def prompts(base: str, n: int, long_every: int) -> list:
    topics = ["the sea", "a mountain", "a small town", "the rain", "a library", "the moon",
              "a garden", "a train", "winter", "a river", "a market", "the desert"]
    out = []
    for i in range(n):
        p = f"Write two sentences about {topics[i % len(topics)]}."
        if long_every > 0 and (i + 1) % long_every == 0:
            p = p + " " + " ".join(f"word{j}" for j in range(200))
        out.append(SampleRequest(prompt=p, prompt_len=len(tokenize(base, p)),
                                 expected_output_len=24))
    return out


def main() -> None:
    src, base, out, n, long_every = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    sys.path.insert(0, src)
    install_stubs(src)
    from vllm.benchmarks import serve  # noqa: E402  (vLLM's own code)

    model = "smollm2"
    requests = prompts(base, n, long_every)
    result = asyncio.run(serve.benchmark(
        task_type=serve.TaskType.GENERATION, endpoint_type="openai",
        api_url=base + "/v1/completions", base_url=base, model_id=model, model_name=model,
        tokenizer=ServerTokenizer(base), input_requests=requests, logprobs=None,
        request_rate=float("inf"), burstiness=1.0, disable_tqdm=True, num_warmups=0,
        profile=False, selected_percentile_metrics=["ttft", "tpot", "itl", "e2el"],
        selected_percentiles=[50.0, 90.0, 99.0], ignore_eos=True, goodput_config_dict={},
        max_concurrency=2, lora_modules=None, extra_headers={"Connection": "close"},
        extra_body={"temperature": 0.0}, ready_check_timeout_sec=60))
    # As main() of vllm/benchmarks/serve.py assembles it (setup keys first, then the result).
    result_json: dict[str, Any] = {
        "date": datetime.now().strftime("%Y%m%d-%H%M%S"),
        "endpoint_type": "openai", "backend": "openai", "label": None,
        "model_id": model, "tokenizer_id": model, "num_prompts": n,
        "request_rate": "inf", "burstiness": 1.0, "max_concurrency": 2,
    }
    result_json = {**result_json, **result}
    with open(out, "w", encoding="utf-8") as f:
        json.dump(result_json, f)


if __name__ == "__main__":
    main()
