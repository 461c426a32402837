"""One spelling of a count and a card (``2x3090``) for every command that takes ``--gpu``, read by one parser
(:func:`gpuplan.hardware.counted_card`): the s18 walk's finding 10 (``estimate --gpu 2x3090`` was refused where
``fit --gpu 2x3090`` and ``--have 2x3090`` took it)."""

import json
import re

import pytest

from gpuplan import GpuplanError
from gpuplan.cli import run
from gpuplan.hardware import counted_card
from gpuplan.plan.recommend import parse_have
from gpuplan.scenario import load_scenario

ELAPSED = re.compile(r'"elapsed_s": [0-9.]+')  # simulate's own wall time
JOB = ["--model", "llama-3.2-1b", "--task", "train", "--method", "lora", "--seq-len", "512"]


@pytest.mark.parametrize(("text", "parsed"), [
    ("2x3090", ("3090", 2)), ("8xh100-sxm", ("h100-sxm", 8)), ("2 x rtx-3090", ("rtx-3090", 2)),
    ("rtx-3090", ("rtx-3090", None)), ("h100", ("h100", None)), ("2xnothing", ("2xnothing", None))])
def test_the_one_parser(text, parsed):
    assert counted_card(text) == parsed


@pytest.mark.parametrize("text", ["2\uff383090", "\uff12\uff58\uff13\uff10\uff19\uff10", "2\u00d73090",
                                  "2 \u00d7 3090"])
def test_a_count_written_full_width_or_with_a_times_sign_is_read(text):
    """s22 fuzz: 'recommend --have 2\uff383090' (a full-width X, as an East Asian keyboard types it) and '2\u00d73090'
    (the multiplication sign) were 'unknown GPU', while the names they count fold with NFKC (71dcb799) and
    '\uff12x3090' was read. A count's 'x' is read in every form the name's letters are."""
    assert counted_card(text) == ("3090", 2)
    assert parse_have(text) == parse_have("2x3090") == ("nvidia-geforce-rtx-3090", 2)


def test_a_count_below_one_is_refused():
    with pytest.raises(GpuplanError, match=r"^a count of cards starts at 1: '0x3090' has 0"):
        counted_card("0x3090")


def test_have_and_the_scenario_read_it_alike():
    assert parse_have("2x3090") == ("nvidia-geforce-rtx-3090", 2)
    s = load_scenario(None, {"model": "llama-3.2-1b", "task": "infer", "gpu": "2x3090"})
    assert (s.gpu, s.num_gpus, "num_gpus" in s.model_fields_set) == ("3090", 2, True)
    assert load_scenario(None, {"model": "llama-3.2-1b", "task": "infer", "gpu": "2x3090", "num_gpus": 2}).num_gpus == 2
    split = load_scenario(None, {"model": "llama-3.2-1b", "task": "infer", "engine": "llama.cpp", "quant": "q4_k_m",
                                 "gpu": "rtx-4060-ti-16gb", "extra_gpus": "2x3090"})
    assert (split.extra_gpus, split.num_gpus) == (["3090", "3090"], 3)


def test_two_counts_that_disagree_are_one_sentence(capsys):
    assert run(["estimate", *JOB, "--gpu", "2x3090", "--num-gpus", "3"]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: gpu 2x3090 says 2 cards and num_gpus says 3: give the count once (--gpu 2x3090, or --gpu 3090 "
        "--num-gpus 3)")


def _answer(capsys, args: list[str]) -> str:
    assert run(args) == 0, capsys.readouterr().err
    return capsys.readouterr().out


@pytest.mark.parametrize(("command", "count"), [
    (["estimate", "--json"], 2), (["cost", "--json"], 2), (["launch", "-o", "-", "--sharding", "ddp"], 2),
    (["simulate", "--layers", "1", "--json"], 1)])  # simulate runs one GPU's step
def test_every_command_takes_the_count_and_the_card(capsys, command, count):
    counted = _answer(capsys, [*command, *JOB, "--gpu", f"{count}x3090"])
    apart = _answer(capsys, [*command, *JOB, "--gpu", "3090", "--num-gpus", str(count)])
    assert ELAPSED.sub("", counted) == ELAPSED.sub("", apart)


def test_estimate_counts_the_cards(capsys):
    plan = json.loads(_answer(capsys, ["estimate", "--json", *JOB, "--gpu", "2x3090"]))
    assert (plan["scenario"]["gpu"], plan["scenario"]["num_gpus"]) == ("nvidia-geforce-rtx-3090", 2)


@pytest.mark.parametrize(("task", "said"), [
    ("train", "training over different cards is not planned (DDP and FSDP step at the slower card's pace within the "
              "smaller card's memory); plan that card as many times, --gpu 2x<smaller card>, or each card alone"),
    ("infer", "to split a served model over different cards, engine llama.cpp takes --gpu rtx-3090 --extra-gpus "
              "rtx-4090")])
def test_a_list_of_cards_says_what_runs_on_mixed_cards(capsys, task, said):
    """Session 22's walk: `--gpu rtx-3090,rtx-4090` (two cards in one PC) was "unknown GPU 'rtx-3090,rtx-4090'; did
    you mean 'rtx-3090-ti'", a card the user does not have."""
    args = ["estimate", "--model", "llama-3.2-1b", "--task", task, "--gpu", "rtx-3090,rtx-4090"]
    assert run(args) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: gpu names one kind of card, not a list ('rtx-3090,rtx-4090'): {said}")


def test_fit_refuses_a_list_of_cards_without_guessing_a_third(capsys):
    """`fit --gpu rtx-3090,rtx-4090` was "unknown GPU ...; did you mean 'rtx-3090-ti' or 'rtx-4090' or 'rtx-3090'"."""
    assert run(["fit", "--gpu", "rtx-3090,rtx-4090", "--task", "train", "--method", "lora"]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: 'rtx-3090,rtx-4090' is a list where one card is asked: name one (2x3090 for two of the same)")


@pytest.mark.parametrize(("text", "parsed"), [("2x L4 24GB", ("L4 24GB", 2)), ("4 x Tesla T4", ("Tesla T4", 4))])
def test_a_count_of_a_card_in_any_spelling_the_resolver_reads(text, parsed):
    """The s30 walk: '2x L4 24GB' and '--have 2x rtx 3090 24gb' were unknown GPUs where 'L4 24GB' named the L4: the
    count was read only before a catalog name, not before the spellings the resolver reads (words, a memory size)."""
    assert counted_card(text) == parsed
    assert parse_have("2x rtx 3090 24gb") == ("nvidia-geforce-rtx-3090", 2)
