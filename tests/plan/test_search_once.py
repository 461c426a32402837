"""``recommend`` times each setup once on each card per class of links: the speed its layout was chosen by (the
ladder's, on the card's own links) is the speed its offers of that class are priced at, not timed again."""

from __future__ import annotations

import collections

from gpuplan.hardware import Network
from gpuplan.model.catalog import load_model
from gpuplan.plan import build, layout
from gpuplan.plan import recommend as recommend_module
from gpuplan.plan.recommend import Constraints, recommend
from gpuplan.scenario import Scenario


def test_a_search_times_each_setup_once_per_card_and_class_of_links(monkeypatch):
    timed: collections.Counter = collections.Counter()
    real = build.speed_of

    def counted(s, m, gpu, network=None):
        timed[s.model_dump_json(), gpu.id, build.links_that_matter(s, gpu, network or Network())] += 1
        return real(s, m, gpu, network)

    monkeypatch.setattr(layout, "speed_of", counted)  # the ladder's timings
    monkeypatch.setattr(build, "speed_of", counted)  # the offers'
    s = Scenario.model_validate(dict(model="llama-3.1-8b", task="train", method="lora", train_tokens=1e8))
    result = recommend(s, load_model(s.model), Constraints(max_gpus=2))
    assert result.fitting > 20 and sum(timed.values()) > result.fitting  # each fitting row timed, some ladders more
    assert max(timed.values()) == 1, timed.most_common(1)[0][1:]


def test_nothing_fits_searches_each_setup_once_and_the_budget_not_again(monkeypatch):
    """When nothing fits, the relaxations (``recommend._what_would_fit``) read the first search's rows under a wider
    budget or deadline, and a wider search (more GPUs, LoRA/QLoRA, other stacks) reads the variant x layouts the
    narrower ones worked out: across the whole answer each layout's memory is estimated once and each setup is timed
    once per card and class of links; only the shorter lengths, other scenarios, search again. Session 28 counted
    12 full searches for an 8B job over budget (bench/results/suite_s28.md). (A memory is counted by the scenario's
    values and the fields it was given: a row's scenario at the recipe's accumulation, its micro-batch not given, is
    estimated beside the ladder's that gives it, as in any search: bench/results/nofit_s29.md.)"""
    timed: collections.Counter = collections.Counter()
    estimated: collections.Counter = collections.Counter()
    searches: list[int] = []
    real_speed, real_memory, real_recommend = build.speed_of, recommend_module.estimate_memory, recommend

    def counted(s, m, gpu, network=None):
        timed[s.model_dump_json(), gpu.id, build.links_that_matter(s, gpu, network or Network())] += 1
        return real_speed(s, m, gpu, network)

    def memory(s, m, gpu):
        estimated[s.model_dump_json(), frozenset(s.model_fields_set)] += 1
        return real_memory(s, m, gpu)

    def search(s, m, c, explain=True):
        searches.append(s.seq_len)
        return real_recommend(s, m, c, explain)

    monkeypatch.setattr(layout, "speed_of", counted)
    monkeypatch.setattr(build, "speed_of", counted)
    monkeypatch.setattr(recommend_module, "estimate_memory", memory)
    monkeypatch.setattr(recommend_module, "recommend", search)
    # checkpointing given: else QLoRA's recipe turns it on and "QLoRA" and "QLoRA + checkpointing" are one setup
    s = Scenario.model_validate(dict(model="llama-3.1-8b", task="train", grad_checkpointing="full", train_tokens=1e8))
    result = search(s, load_model(s.model), Constraints(budget_usd=1, max_gpus=2,
                                                        gpus=("nvidia-h100-sxm5-80gb", "nvidia-a100-sxm4-80gb")))
    assert not result.setups and result.changes[0].startswith("raise the budget to $")
    assert searches == [2048, 1024, 512, 256]  # the search asked, then the three shorter lengths
    assert sum(timed.values()) > 500 and max(timed.values()) == 1, timed.most_common(1)[0][1:]
    assert max(estimated.values()) == 1, estimated.most_common(1)[0][1:]
