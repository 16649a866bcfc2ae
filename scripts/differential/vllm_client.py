"""Runs one vLLM version's own serving-benchmark client, unchanged, from its source release.

    python vllm_client.py SRC script ARGS...   # SRC/benchmarks/benchmark_serving.py (vLLM <= 0.10.1)
    python vllm_client.py SRC serve ARGS...    # `vllm bench serve` (SRC/vllm/benchmarks/serve.py)

SRC is the unpacked source release (sdist) of that version: its `benchmarks/` and
`vllm/benchmarks/` folders. The vllm package itself does not install on a CPU-only machine, so:

- `script`: `benchmark_serving.py` runs as its own `__main__` with ARGS (the vLLM modules it
  imports, inside `try` or, from 0.9, through `benchmark_dataset.py`, stood in for as below);
- `serve`: `vllm.benchmarks.serve`'s own `add_cli_args` parses ARGS and its own `main` runs (as
  `vllm bench serve ARGS` does), with the vLLM modules outside `vllm/benchmarks/` stood in for:
  `get_tokenizer` is Hugging Face's `AutoTokenizer.from_pretrained` (what vLLM's wraps),
  `FlexibleArgumentParser` is argparse's parser, the logger is `logging`'s, and any other name
  (LoRA, multimodal and config types the sharegpt dataset never uses) is an inert placeholder.

Everything that times requests, parses the streams, computes the figures and writes the file is
the release's own code.
"""

import argparse
import logging
import os
import runpy
import sys
import types
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec


class Placeholder(type):
    """An inert stand-in: subclassable, callable, every attribute another placeholder."""

    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return Placeholder(name, (), {})

    def __call__(cls, *a, **k):
        return Placeholder("instance", (), {})


def get_tokenizer(name, *args, trust_remote_code=False, **kwargs):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(name, trust_remote_code=trust_remote_code)


def join_host_port(host, port):
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


KNOWN = {
    "get_tokenizer": get_tokenizer,
    "FlexibleArgumentParser": argparse.ArgumentParser,
    "init_logger": logging.getLogger,
    "freeze_gc_heap": lambda: None,
    "join_host_port": join_host_port,
}


class StubLoader(Loader):
    def create_module(self, spec):
        m = types.ModuleType(spec.name)
        m.__path__ = list(spec.submodule_search_locations or [])

        def attr(name):
            if name.startswith("__"):
                raise AttributeError(name)
            return KNOWN.get(name, Placeholder(name, (), {}))

        m.__getattr__ = attr
        return m

    def exec_module(self, module):
        pass


class VllmStubs(MetaPathFinder):
    """`vllm` and every `vllm.*` module outside `vllm.benchmarks` as placeholders."""

    def __init__(self, src: str):
        self.src = src

    def find_spec(self, name, path=None, target=None):
        if name == "vllm":
            spec = ModuleSpec(name, StubLoader(), is_package=True)
            spec.submodule_search_locations = [os.path.join(self.src, "vllm")]
            return spec
        if name.startswith("vllm.") and not name.startswith("vllm.benchmarks"):
            return ModuleSpec(name, StubLoader(), is_package=True)
        return None


def run_serve(src: str, argv: list) -> None:
    sys.path.insert(0, src)
    sys.meta_path.insert(0, VllmStubs(src))
    from vllm.benchmarks import serve  # the release's own module

    parser = argparse.ArgumentParser(prog="vllm bench serve")
    serve.add_cli_args(parser)
    args = parser.parse_args(argv)
    serve.main(args)


def run_script(src: str, argv: list) -> None:
    bench = os.path.join(src, "benchmarks")
    sys.path.insert(0, bench)
    sys.meta_path.insert(0, VllmStubs(src))  # 0.9-0.10's benchmark_dataset imports vllm.lora
    sys.argv = [os.path.join(bench, "benchmark_serving.py")] + argv
    runpy.run_path(sys.argv[0], run_name="__main__")


if __name__ == "__main__":
    src, mode, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
    {"serve": run_serve, "script": run_script}[mode](src, rest)
