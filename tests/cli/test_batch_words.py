"""What the command line says of the largest batch at the search's limit, and of a card count cut by a space
(s14 rewalk findings 12 and 13)."""

from __future__ import annotations

import json

import pytest

from gpuplan.cli import run
from gpuplan.result import batch_words

GPT2_H200 = ["--gpu", "h200", "--prompt-tokens", "128", "--output-tokens", "128"]


def test_batch_words():
    assert batch_words(4096, True) == "4,096 or more (the search stops there)"
    assert batch_words(4096, True, why=False) == "4,096 or more"
    assert batch_words(498) == batch_words(498, False) == "498"
    assert batch_words(None) == batch_words(0, True) == "none"


def test_estimate_says_the_limit_is_a_floor(capsys):
    """gpt2 serving 128 + 128 tokens on an H200: 8,192 fits too (tests/plan/test_advice.py), so 4,096 is said as
    the floor it is, in the text and in --json."""
    assert run(["estimate", "--model", "gpt2", "--task", "infer", *GPT2_H200]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "largest batch that fits: 4,096 or more (the search stops there); longest prompt: 896 tokens" in text
    assert run(["estimate", "--model", "gpt2", "--task", "infer", *GPT2_H200, "--json"]) == 0
    memory = json.loads(capsys.readouterr().out)["memory"]
    assert (memory["max_batch_size"], memory["max_batch_size_capped"]) == (4096, True)


def test_fit_says_the_limit_is_a_floor_in_every_format(capsys, monkeypatch):
    """fit's table and plain text write "4,096 or more" and a note on what it means; csv keeps the number; --json
    carries max_batch_size_capped on the capped row only."""
    import gpuplan.api

    real = gpuplan.api.fit
    monkeypatch.setattr(gpuplan.api, "fit", lambda *a, **k: real(*a, models=["gpt2", "llama-3.1-8b"], **k))
    monkeypatch.setenv("COLUMNS", "200")
    for fmt in ("table", "plain"):
        assert run(["fit", *GPT2_H200, "--format", fmt]) == 0
        out = capsys.readouterr().out
        row = next(line for line in out.splitlines() if "gpt2" in line)
        assert "4,096 or more" in row, out
        assert "4,096 or more: every batch up to 4,096 fits, and the search stops there" in out
    assert run(["fit", *GPT2_H200, "--format", "csv"]) == 0
    rows = [line.split(",") for line in capsys.readouterr().out.splitlines()]
    assert rows[0][-2:] == ["max batch", "max prompt"]
    assert {r[0]: r[-2] for r in rows[1:]} == {"gpt2": "4096", "llama-3.1-8b": "2485"}
    assert run(["fit", *GPT2_H200, "--json"]) == 0
    found = {r["model"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert found["gpt2"]["max_batch_size_capped"] is True
    assert "max_batch_size_capped" not in found["llama-3.1-8b"]


@pytest.mark.parametrize("words", [["2x", "rtx-3060"], ["2", "x", "rtx-3060"], ["--gpu", "2x", "rtx-3060"],
                                   ["--gpu", "2", "x", "rtx-3060"], ["2x", "RTX-3060"]])
def test_a_card_count_cut_by_a_space_is_named_in_one_word(words, capsys):
    """`fit 2x rtx-3060` got click's "Got unexpected extra argument(s) (rtx-3060)" where `fit 2x3090` gets "fit
    needs your cards: --gpu 2x3090": the same sentence, with the user's cards in the one word --gpu takes."""
    assert run(["fit", *words]) == 2
    err = capsys.readouterr().err
    name = words[-1]
    assert err == f"error: fit needs your cards in one word: --gpu 2x{name} (count x name, or a name for one card)\n"


def test_fit_words_that_are_no_card_count(capsys):
    assert run(["fit", "2x3090"]) == 2  # unchanged: one word, no --gpu
    said = capsys.readouterr().err
    assert said == "error: fit needs your cards: --gpu 2x3090 (count x name, or a name for one card)\n"
    assert run(["fit", "a.yaml", "b.yaml"]) == 2
    assert capsys.readouterr().err == "error: fit takes one scenario file, not also b.yaml\n"
