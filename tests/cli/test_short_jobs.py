"""A job of minutes said in minutes (the session-31 walk: an 800-record full fine-tune of Qwen2.5-1.5B on an RTX 4090
printed "0.0 h, $0.01 in all" in `estimate` and "0.0 h" in the launch files' header; plan.json held 0.05 h)."""

import re

from conftest import cli_in_process
from gpuplan.result import hours_words

JOB = ("--model", "qwen2.5-0.5b", "--task", "train", "--method", "lora", "--gpu", "h100-sxm", "--train-tokens", "1e7")


def test_hours_words():
    assert [hours_words(h) for h in (125.04, 0.1, 0.05, 0.0125, 0.001)] == \
        ["125.0 h", "0.1 h", "3 min", "1 min", "under a minute"]


def test_estimate_and_launch_say_a_short_job_in_minutes():
    r = cli_in_process("estimate", *JOB, "--json")
    hours = __import__("json").loads(r.stdout)["cost"]["hours"]
    assert 0.02 < hours < 0.08  # 1e7 tokens at ~66k tokens/s: about 2.5 min
    said = f"{hours * 60:.0f} min"
    r = cli_in_process("estimate", *JOB)
    text = " ".join(r.stdout.split())
    assert re.search(rf"training tokens; {said}, \$0\.\d\d in all ", text), text
    r = cli_in_process("launch", *JOB, "-o", "-")
    header = next(line for line in r.stdout.splitlines() if line.startswith("# predicted:"))
    assert f"optimizer step, {said}, $" in header and "0.0 h" not in header
