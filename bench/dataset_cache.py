"""The dataset cache (issue 35): a second ``--dataset`` run on the same file against a ``--samples`` run.

    python bench/dataset_cache.py [--runs 5] [--records 2000]

Writes a chat dataset like a hobbyist's (``--records`` ``messages`` records, one to three turns, an optional system
prompt, log-normal lengths with a long tail, some code; about 7 MB for 2,000) and a byte-level BPE tokenizer trained
on it, with a ChatML template in its ``tokenizer_config.json`` (as Qwen's), into a temporary folder. Then, round
after round (so that a load change on the machine touches all alike), each a whole new process timed from launch to
exit:

- ``samples``: ``gpuplan estimate ... --samples N --mean-tokens M`` (the shorthand, no file read);
- ``first``: ``gpuplan estimate ... --dataset F --tokenizer T`` with an empty cache folder (tokenizes the file);
- ``second``: the same command again, the cache kept (reads the counts).

It prints the medians and ``second / samples`` (the goal: at most 1.5x), and checks that the three runs print the
same plan where they should: ``first`` and ``second`` the same JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = str(Path(__file__).resolve().parent.parent / "src")
VOCAB = ("the", "model", "a", "of", "and", "to", "in", "is", "for", "data", "train", "loss", "batch", "token",
         "memory", "card", "learning", "rate", "server", "request", "cache", "layer", "attention", "weight",
         "gradient", "epoch", "order", "refund", "account", "reset", "email", "ticket", "price", "recipe", "oven",
         "sauce", "pasta", "python", "function", "list", "error", "import", "class", "return", "loop", "string",
         "file", "please", "thanks", "help", "answer", "explain", "example", "because", "however", "often",
         "important", "different", "possible", "simple", "common", "several")
SNIPPETS = ("def double(x):\n    return 2 * x\n", "for i in range(3):\n    print(i)\n",
            "SELECT name FROM users WHERE id = 7;\n")
CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
COMMON = ["estimate", "--model", "qwen3-8b", "--task", "train", "--method", "qlora", "--framework", "unsloth",
          "--gpu", "rtx-4070-ti-super", "--json"]


def _text(rng: random.Random, mean_words: int) -> str:
    words = [rng.choice(VOCAB) for _ in range(max(3, min(3000, int(rng.lognormvariate(0, 0.85) * mean_words))))]
    text = " ".join(words).capitalize() + "."
    return text + (f"\n\n```python\n{rng.choice(SNIPPETS)}```\n" if rng.random() < 0.15 else "")


def write_dataset(path: Path, records: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as f:
        for _ in range(records):
            messages = [{"role": "system", "content": "You are a helpful assistant."}] if rng.random() < 0.4 else []
            for _ in range(rng.choice((1, 1, 1, 2, 2, 3))):
                messages += [{"role": "user", "content": _text(rng, 45)},
                             {"role": "assistant", "content": _text(rng, 220)}]
            f.write(json.dumps({"messages": messages}) + "\n")


def write_tokenizer(folder: Path, dataset: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    texts = (m["content"] for line in dataset.open(encoding="utf-8") for m in json.loads(line)["messages"])
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=8000, special_tokens=["<|endoftext|>",
                            "<|im_start|>", "<|im_end|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({"chat_template": CHATML, "eos_token": "<|im_end|>"}))


def timed(args: list[str], cache: Path) -> tuple[float, str]:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "GPUPLAN_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1"}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "gpuplan", *args], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode:
        sys.exit(f"gpuplan {' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    return seconds, proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="rounds (medians reported)")
    parser.add_argument("--records", type=int, default=2000, help="records in the dataset")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        data, tok = root / "chat.jsonl", root / "tok"
        write_dataset(data, args.records)
        write_tokenizer(tok, data)
        mean = 650  # about what the file holds per record; the shorthand's cost does not depend on it
        times: dict[str, list[float]] = {"samples": [], "first": [], "second": []}
        for i in range(args.runs):
            cache = root / f"cache-{i}"
            times["samples"].append(timed([*COMMON, "--samples", str(args.records), "--mean-tokens", str(mean)],
                                          cache)[0])
            first, one = timed([*COMMON, "--dataset", str(data), "--tokenizer", str(tok)], cache)
            second, two = timed([*COMMON, "--dataset", str(data), "--tokenizer", str(tok)], cache)
            if json.loads(one) != json.loads(two):
                sys.exit("the second run printed another plan than the first")
            times["first"].append(first)
            times["second"].append(second)
        size = data.stat().st_size / 1e6
        print(f"dataset: {args.records:,} chat records, {size:.1f} MB; tokenizer: byte-level BPE, 8,000 tokens, "
              "ChatML template")
        median = {k: statistics.median(v) for k, v in times.items()}
        for name, t in times.items():
            print(f"{name:8} median {median[name]:6.2f} s  (min {min(t):.2f}, max {max(t):.2f}, {len(t)} runs)")
        print(f"second / samples: {median['second'] / median['samples']:.2f}x (goal <= 1.5x); "
              f"first / samples: {median['first'] / median['samples']:.2f}x")


if __name__ == "__main__":
    main()
