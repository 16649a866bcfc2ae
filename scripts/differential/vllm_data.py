"""Writes a ShareGPT-layout dataset for vLLM's own client (`--dataset-name sharegpt`).

    python vllm_data.py OUT.json SEED ITEM...

Each ITEM is `plain` (a prompt the model continues with text), `eos` (one the bundled model at
temperature 0 answers with an end-of-sequence token first: an immediate stop, no text, no token),
`long` (a prompt too long for a 256-token window: refused with HTTP 400) or a reply shape of
shapes_proxy.py (`empty`, `stop`, `single`, `slow`, `nodone`, `midstream`,
`abort`, `http400`, `http500`), whose prompt carries the proxy's marker. vLLM's client shuffles the
dataset with `random.seed(SEED)` before it takes `--num-prompts` of them and sends the first one
alone as its readiness test; the items are placed so that, after that shuffle, a `plain` one comes
first and the order of the rest is the order given (every item is sent: `--num-prompts` is their
count).
"""

import json
import random
import sys

TOPICS = ["the sea", "a mountain", "a small town", "the rain", "a library", "the moon",
          "a garden", "a train", "winter", "a river", "a market", "the desert"]


def prompt(item: str, i: int) -> str:
    p = f"Here are two sentences about {TOPICS[i % len(TOPICS)]}:"
    if item == "eos":
        return "Write two sentences about the sea."
    if item == "long":
        return p + " " + " ".join(f"word{j}" for j in range(150))
    if item != "plain":
        return f"[[shape:{item}]] {p}"
    return p


def main() -> None:
    out, seed, items = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    if "plain" not in items:
        sys.exit("at least one plain item is needed (the client's readiness test)")
    first = items.index("plain")
    wanted = [items[first]] + items[:first] + items[first + 1:]
    perm = list(range(len(items)))
    random.seed(seed)
    random.shuffle(perm)  # the shuffled list's k-th item is the original's perm[k]
    placed = [None] * len(items)
    for k, item in enumerate(wanted):
        placed[perm[k]] = (item, k)
    rows = [{"id": str(k), "conversations": [
        {"from": "human", "value": prompt(item, k)},
        {"from": "gpt", "value": "The sea is wide and calm today. Waves roll over the sand."},
    ]} for item, k in placed]
    with open(out, "w", encoding="utf-8") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
