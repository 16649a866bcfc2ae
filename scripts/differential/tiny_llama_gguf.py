"""Writes a tiny llama model (random weights, a byte-level SentencePiece vocabulary) as GGUF, with
the `gguf` package of the llama.cpp tree given, so that the oldest llama.cpp builds (whose loaders
cannot read SmolLM2's GPT-2 style vocabulary) run llama-bench and the server on it. The figures they
print are timings; what the model says does not matter. Deterministic (seed 7).

    python3 tiny_llama_gguf.py LLAMA_CPP_TREE OUT.gguf
"""

import sys

import numpy as np


def main() -> None:
    tree, out = sys.argv[1], sys.argv[2]
    sys.path.insert(0, f"{tree}/gguf-py")
    import gguf

    n_embd, n_head, n_layer, n_ff, n_ctx = 128, 4, 2, 256, 2048
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + ["\u2581"]
    types = [2, 3, 3] + [6] * 256 + [1]
    w = gguf.GGUFWriter(out, "llama")
    w.add_name("tiny-llama-random")
    w.add_context_length(n_ctx)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head)
    w.add_rope_dimension_count(n_embd // n_head)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * len(tokens))
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    rng = np.random.default_rng(7)

    def t(name, *shape):
        w.add_tensor(name, (rng.standard_normal(shape) * 0.02).astype(np.float32))

    t("token_embd.weight", len(tokens), n_embd)
    w.add_tensor("output_norm.weight", np.ones(n_embd, dtype=np.float32))
    t("output.weight", len(tokens), n_embd)
    for i in range(n_layer):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(n_embd, dtype=np.float32))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(n_embd, dtype=np.float32))
        for k in ("q", "k", "v", "output"):
            t(f"blk.{i}.attn_{k}.weight", n_embd, n_embd)
        t(f"blk.{i}.ffn_gate.weight", n_ff, n_embd)
        t(f"blk.{i}.ffn_up.weight", n_ff, n_embd)
        t(f"blk.{i}.ffn_down.weight", n_embd, n_ff)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
