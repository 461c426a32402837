"""Chat datasets of a chosen size for the web page's limits and load tests (and ``bench/web.py``): records of two
turns drawn from the vocabulary of the word-level tokenizer in ``tests/data/web`` (its README says where it comes
from), so every word is one token and nothing needs the network."""

from __future__ import annotations

import json
import random
from pathlib import Path

TOKENIZER = Path(__file__).resolve().parents[1] / "data" / "web" / "tokenizer.json"


def words() -> list[str]:
    vocab = json.loads(TOKENIZER.read_text(encoding="utf-8"))["model"]["vocab"]
    return [w for w in vocab if w.isalpha()]


def chat_jsonl(nbytes: int, seed: int = 0) -> bytes:
    """JSON Lines of ``{"messages": [user, assistant]}`` records, at least ``nbytes`` long."""
    rng, vocab, lines, size = random.Random(seed), words(), [], 0
    while size < nbytes:
        turns = [{"role": "user", "content": " ".join(rng.choices(vocab, k=rng.randint(5, 60)))},
                 {"role": "assistant", "content": " ".join(rng.choices(vocab, k=rng.randint(20, 200)))}]
        lines.append(json.dumps({"messages": turns}) + "\n")
        size += len(lines[-1])
    return "".join(lines).encode()
