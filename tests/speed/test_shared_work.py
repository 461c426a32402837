"""One search's passes of the model worked out once (gpuplan.speed.work.shared_work): inside it each pass is the
number worked out outside it, a repeated pass is not worked out again, and nothing is kept past the search."""

from __future__ import annotations

from counting import counting
from gpuplan.hardware import load_gpu
from gpuplan.model.catalog import load_model
from gpuplan.speed import work

M, H100 = load_model("llama-3.1-8b"), load_gpu("h100-sxm")
LINEARS = "speed/work.py:linears_s"


def _passes() -> list[float]:
    recomputed = {layer: frozenset({"q_proj", "o_proj"}) for layer, _ in M.layer_kinds()}  # a fresh mapping
    return [work.linears_s(M, H100, "bf16", 4096, tp=2, layers=0.5),
            work.linears_s(M, H100, "bf16", 4096, per_layer=recomputed),
            work.lm_head_s(M, H100, "bf16", 2048),
            work.lora_s(M, H100, 4096, 16, frozenset({"q_proj", "v_proj"})),
            work.attention_s(M, H100, "bf16", 2, 2048, kernel="sdpa"),
            work.elementwise_s(M, H100, 4096), work.loss_s(M, H100, 4096)]


def test_a_search_works_each_pass_out_once_and_keeps_nothing_after():
    alone = _passes()
    with counting(LINEARS) as seen, work.shared_work():
        first, again = _passes(), _passes()
        with work.shared_work():  # a search nested in another shares its passes
            nested = _passes()
    assert first == again == nested == alone  # the same numbers, to the last bit
    assert alone[0] != work.linears_s(M, H100, "bf16", 4096)  # (the arguments tell the passes apart)
    assert seen[LINEARS] == 2  # the two calls of the first round; the others answered from the search's memo
    with work.shared_work():  # an argument that cannot be a key (a list): worked out each time, not kept
        assert work.lora_s(M, H100, 4096, 16, ["q_proj", "v_proj"]) == alone[3]
    with counting(LINEARS) as seen:
        assert _passes() == alone
    assert seen[LINEARS] == 2 and work._SHARED.get() is None  # past the search, worked out again
