"""A count written with a unit (the session-31 walk: ``--prompt-tokens 8k``, ``--train-tokens 50M``) was refused
with typer's "Input should be a valid integer, unable to parse string as an integer", which repeats neither the
value nor what to write. The line now quotes the value, and for a unit the number to write."""

import pytest

from conftest import cli_in_process

JOB = ("estimate", "--model", "qwen3-8b", "--task", "infer", "--gpu", "l4")


@pytest.mark.parametrize("flag, value, said", [
    ("--prompt-tokens", "8k", "(got '8k'): write the number itself, 8000 (or 8192 if you mean 8 x 1,024)"),
    ("--output-tokens", "0.5K", "(got '0.5K'): write the number itself, 500 (or 512 if you mean 0.5 x 1,024)"),
    ("--train-tokens", "50M", "(got '50M'): write the number itself, 50000000 "),
    ("--train-tokens", "1.5B", "(got '1.5B'): write the number itself, 1500000000 "),
    ("--batch-size", "1.5", "unable to parse string as an integer (got '1.5') (see"),
    ("--gpu-memory-utilization", "90%", "unable to parse string as a number (got '90%') (see"),
])
def test_a_number_refused_is_quoted_and_a_unit_written_out(flag, value, said):
    for words in ((flag, value), (f"{flag}={value}",)):
        r = cli_in_process(*JOB, *words)
        assert r.returncode == 2 and r.stdout == ""
        line = " ".join(r.stderr.split())
        assert line.startswith(f"error: Invalid value for '{flag}': Input should be a valid ") and said in line, line
