"""Every causal-LM architecture transformers ships: ``gpuplan model`` against transformers' own count on the meta
device, the core's honesty without transformers, and ``gpuplan simulate`` on each (bench/architectures.py holds the
sweep; bench/results/architectures.md its full, extrapolated run).

The architectures are swept once per session, over two processes (the CI machine's two cores). A run sweeps one
part of them in turn (:data:`PARTS`; tests/sampling.py: every architecture over that many days or seeds,
``GPUPLAN_SWEEP=all`` for every one at once), plus the architectures the layer-kind checks name; the counts the
whole sweep must reach are asked of a part in proportion, with a margin for the parts' unequal mixes. Simulating
(a fake-tensor forward and backward for three tasks) costs about ten times the count, and a few looped or
recurrent models (xLSTM, hrm_text, Inkling 2 Loop) a minute each: a run simulates a quarter of its part
(:data:`SIM_PARTS`), so that every architecture is simulated over 16 days or seeds; ``GPUPLAN_SWEEP=all``
simulates them all."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from conftest import fresh_structures, require

pytestmark = [pytest.mark.sim, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import architectures as sweep  # noqa: E402
from sampling import part_of  # noqa: E402

PARTS = 4
SIM_PARTS = 16  # a multiple of PARTS: part_of(types, SIM_PARTS) lies inside the round's part_of(types, PARTS)
NAMED = ("llama4_text", "qwen3_next", "falcon_h1", "nemotron_h", "deepseek_v3")  # test_new_layer_kinds_are_read


def share(rows: list, whole: int, count: int, margin: float = 0.75) -> float:
    """What ``count`` (a requirement on all ``whole`` architectures) asks of ``rows``: all of it on a full run,
    else in proportion to the part swept, times ``margin`` (a part's mix of families is not the whole's)."""
    return count if len(rows) >= whole else count * len(rows) / whole * margin


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    require("transformers")
    with fresh_structures(tmp_path_factory.mktemp("structures")):
        yield sweep.sweep(core=True, workers=2, types=part_of(sweep.causal_lm_types(), PARTS, always=NAMED))


def readme_misses() -> set[str]:
    """The model_types the accuracy tables list, each with its reason, as misses of `gpuplan model` (the paragraph
    after "Architectures `gpuplan model` misses" in src/gpuplan/data/accuracy.md, which the docs site includes)."""
    text = (ROOT / "src" / "gpuplan" / "data" / "accuracy.md").read_text(encoding="utf-8")
    paragraph = text.split("Architectures `gpuplan model` misses", 1)[1].split("\n\n", 1)[0]
    return set(re.findall(r"`([a-z0-9_\-]+)`:", paragraph))


def test_at_least_95_percent_of_architectures_count_within_half_a_percent(rows):
    swept = [r for r in rows if not r.skipped]
    within = [r for r in swept if r.within]
    whole = len(sweep.causal_lm_types())
    assert len(swept) >= share(rows, whole, 150), \
        f"only {len(swept)} architectures swept: {[r.model_type for r in rows if r.skipped]}"
    assert len(within) >= 0.95 * len(swept), [(r.model_type, r.gpuplan, r.reference, r.error) for r in swept
                                              if not r.within]
    misses = {r.model_type for r in swept if not r.within}
    assert misses <= readme_misses(), f"misses not listed with their reason in accuracy.md: {misses - readme_misses()}"


def test_skipped_defaults_are_toys_or_refused_by_transformers(rows):
    for r in rows:
        if r.skipped:
            assert r.skipped.startswith(("toy-sized", "transformers cannot")), r


def test_the_core_never_claims_exact_when_it_is_not(rows):
    """Without transformers, a family reader or the common keys: every count the core calls exact equals
    transformers' own, and many families are exact without transformers."""
    claims = [r for r in rows if not r.skipped and r.core_exact]
    wrong = [(r.model_type, r.core, r.reference) for r in claims if r.core != r.reference]
    assert not wrong, wrong
    assert len(claims) >= share(rows, len(sweep.causal_lm_types()), 45)


def test_new_layer_kinds_are_read(rows):
    kinds = {r.model_type: r.kinds for r in rows}
    assert "chunked(8192)" in kinds["llama4_text"] and "full+moe" in kinds["llama4_text"]
    assert "36 linear+moe" in kinds["qwen3_next"] and "12 full+moe" in kinds["qwen3_next"]
    assert "hybrid" in kinds["falcon_h1"]
    assert "mamba" in kinds["nemotron_h"] and "mla" in kinds["deepseek_v3"]


# ---- simulate on every architecture -----------------------------------------------------------------------
# Architectures whose LoRA count differs from peft's because of linears outside the decoder layers, which peft's
# all-linear adapts and the estimate (it adapts the decoder) leaves out: BERT-style prediction heads hold a dense
# transform; Gemma 4's per-layer embeddings go through per_layer_model_projection.
OUTSIDE_LAYERS = {"bert", "camembert", "data2vec-text", "ernie", "roberta", "roberta-prelayernorm", "roc_bert",
                  "xlm-roberta", "xlm-roberta-xl", "modernbert-decoder", "xmod", "megatron-bert", "big_bird",
                  "rembert", "roformer", "bert-generation", "electra", "gemma4", "gemma4_text"}


def simulated_share() -> float:
    """The share of this run's part that it simulates (1 on a full run)."""
    types = sweep.causal_lm_types()
    return len(part_of(types, SIM_PARTS)) / len(part_of(types, PARTS))


@pytest.fixture(scope="module")
def sims(rows):
    require("peft")
    chosen = set(part_of(sweep.causal_lm_types(), SIM_PARTS))
    return sweep.simulate_sweep([t for t in sweep.distinct(rows) if t in chosen], one_period=True, workers=2)


def test_simulate_runs_or_says_why_on_every_architecture(rows, sims):
    crashes = [(r.model_type, r.crash) for r in sims if r.crash]
    assert not crashes, crashes
    for r in sims:
        for task, outcome in r.outcome.items():
            assert outcome == "ok" or (outcome and "\n" not in outcome and "Traceback" not in outcome), (
                r.model_type, task, outcome)
    # encoder and encoder-decoder families are planned by their own profiles (or refused by name), not simulated
    # as decoders: each says so in its one sentence, and the share that must run is taken over the decoders (with
    # share()'s margin when a run simulates 7 to 12 of them); the share refused is read over the part's structures
    refused = [r for r in sims if r.not_decoder]
    assert all("not a decoder LLM" in o or "plans decoder LLMs" in o for r in refused for o in r.outcome.values())
    decoders = [r for r in sims if not r.not_decoder]
    ran = {task: sum(r.outcome[task] == "ok" for r in decoders) for task in sweep.SIM_TASKS}
    floor = 0.85 if simulated_share() == 1 else 0.85 * 0.75
    assert min(ran.values()) >= floor * len(decoders), ran
    distinct = sweep.distinct(rows)
    not_decoders = [t for t in distinct if sweep.not_a_decoder(sweep.default_config(t) or {})]
    assert len(not_decoders) <= 0.15 * len(distinct), not_decoders
    assert len(sims) >= share(rows, len(sweep.causal_lm_types()), 130) * simulated_share()  # distinct structures


def test_lora_parameters_equal_peft_count(sims):
    """On every architecture LoRA ran on, peft's own count of trainable parameters equals the estimate's."""
    wrong = [(r.model_type, r.lora_params) for r in sims if r.lora_params and r.model_type not in OUTSIDE_LAYERS
             and r.lora_params[0] != r.lora_params[1]]
    assert not wrong, wrong
