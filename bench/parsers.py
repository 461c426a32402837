"""Hostile files through the CLI: seconds and peak memory of each, in a process of its own.

    python bench/parsers.py [--runs 3]

The inputs of fuzz-report-3, made here: the 374-byte YAML alias bomb (it took 45 s and 5.5 GB before the bounded
reader), nesting 3,000 levels deep as a model, a scenario and a trace, a 30 MB scenario YAML (a long comment: 22 s
with the pure-Python parser), a chat template that loops 10^10 times or multiplies a string 10^8 times, and a CSV
field of 140,000 characters. Each line: the median wall-clock seconds over the runs, the peak resident memory of
the process (``ru_maxrss`` of the child: interpreter and imports included, about 90 MB for any command), the exit
code and the first characters of stderr. The first line is a scenario with a typo: the cost of starting gpuplan and
refusing a file, which the others add to. The goal (issue 29): the bomb refused in under 1 s and 100 MB beyond
that; every input one line on stderr and exit 2 (or 0 where it is read).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = str(Path(__file__).resolve().parent.parent / "src")
BOMB = ("model: gpt2\ntask: train\nmethod: lora\nseq_len: 512\nlora_targets: [&a0 [x,x,x,x,x,x,x,x,x,x], "
        + ", ".join(f"&a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 7)) + "]\n")
DEEP = "[" * 3000 + "]" * 3000


def files(folder: Path) -> dict[str, list[str]]:
    """name -> gpuplan arguments, with the files they read written into ``folder``."""
    (folder / "bomb.yaml").write_text(BOMB)
    (folder / "typo.yaml").write_text("model: gpt2\ntask: tran\n")
    (folder / "deep.json").write_text(DEEP)
    (folder / "big.yaml").write_text("model: gpt2\ntask: infer\n#" + "x" * 30_000_000 + "\n")
    (folder / "long.csv").write_text("text\n" + "hello " * 25_000 + "\n")
    (folder / "chat.jsonl").write_text(json.dumps({"messages": [{"role": "user", "content": "hello"},
                                                               {"role": "assistant", "content": "hello"}]}) + "\n")
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"[UNK]": 0, "hello": 1}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    templates = {"loop": "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}",
                 "grow": '{{ "hello " * 100000000 }}'}
    for name, template in templates.items():
        (folder / name).mkdir()
        tok.save(str(folder / name / "tokenizer.json"))
        (folder / name / "tokenizer_config.json").write_text(json.dumps({"chat_template": template}))
    tok.save(str(folder / "tokenizer.json"))
    train = ["--model", "llama-3.2-1b", "--task", "train", "--method", "lora", "--gpu", "rtx-4090"]
    return {
        "baseline: a scenario with a typo": ["estimate", "typo.yaml"],
        "alias bomb (374 bytes)": ["estimate", "bomb.yaml"],
        "deep.json as a model": ["model", "deep.json"],
        "deep.json as a scenario": ["estimate", "deep.json"],
        "deep.json as a trace": ["capacity", "--model", "llama-3.2-1b", "--gpus", "l40s", "--rate", "1", "--trace",
                                 "deep.json"],
        "30 MB scenario YAML": ["estimate", "big.yaml", "--gpu", "rtx-4090"],
        "chat template looping 10^10": ["estimate", *train, "--dataset", "chat.jsonl", "--tokenizer", "loop"],
        "chat template 'hello ' x 10^8": ["estimate", *train, "--dataset", "chat.jsonl", "--tokenizer", "grow"],
        "CSV field of 150,000 characters": ["estimate", *train, "--dataset", "long.csv", "--tokenizer",
                                            "tokenizer.json"],
    }


def measure(argv: list[str], folder: Path) -> tuple[float, float, int, str]:
    """(seconds, peak MiB, exit code, stderr's first line) of one gpuplan process (its own rusage, os.wait4)."""
    env = {**os.environ, "PYTHONPATH": SRC, "HF_HUB_OFFLINE": "1", "COLUMNS": "120"}
    with tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "gpuplan", *argv], cwd=folder, env=env,
                                stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        said = (err.read().strip().splitlines() or [""])[0][:90]
    return seconds, usage.ru_maxrss / 1024, proc.returncode, said


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, argv in files(folder).items():
            results = [measure(argv, folder) for _ in range(runs)]
            seconds = statistics.median(r[0] for r in results)
            peak, rc, said = max(r[1] for r in results), results[-1][2], results[-1][3]
            print(f"{name:34s} {seconds:6.2f} s {peak:7.0f} MiB  exit {rc}  {said}")


if __name__ == "__main__":
    main()
