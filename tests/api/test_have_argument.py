"""``have``, the cards owned already, read by one reader for ``recommend`` and ``buy`` (session 18's architecture
walk: each had its own, ``recommend``'s a bare ``int()`` of the count after its list check, ``buy``'s its own checks
and sentence)."""

from __future__ import annotations

import pytest

import gpuplan
from gpuplan.api.arguments import owned_cards
from gpuplan.errors import GpuplanError


@pytest.mark.parametrize("item", ["2x3090", " 2x3090 ", ("rtx-3090", 2), ["3090", 2]])
def test_every_spelling_reads_as_two_3090s(item):
    assert owned_cards(item) == ("nvidia-geforce-rtx-3090", 2)


def test_a_bare_name_is_one_card():
    assert owned_cards("4090") == ("nvidia-geforce-rtx-4090", 1)


@pytest.mark.parametrize(("item", "sentence"), [
    (3, "have takes the cards you own as 2x3090 (or (card, count)), not 3"),
    (("rtx-3090", 0), "have's count must be a whole number from 1 to 512, got 0"),
    ((3090, 2), "have's card takes text, not 3090"),
])
def test_a_bad_entry_is_one_sentence(item, sentence):
    with pytest.raises(GpuplanError) as err:
        owned_cards(item)
    assert str(err.value).startswith(sentence)


def test_buy_and_recommend_read_the_same_pair():
    """2 of a 3x3090 build owned (their price left out), and 2 owned 3090s ranked by recommend, from one reader."""
    report = gpuplan.buy("3x3090", have=["rtx-3090", 2], hours=100)
    assert report.builds[0].build.owned == 2
    job = {"model": "qwen3-1.7b", "task": "infer", "engine": "vllm"}
    found = gpuplan.recommend(job, have=[("rtx-3090", 2)], gpus="l40s", max_gpus=1, top=1)
    assert found.owned and all(row.gpu_id == "nvidia-geforce-rtx-3090" for row in found.owned)
