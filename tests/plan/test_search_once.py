"""``recommend`` times each setup once on each card per class of links: the speed its layout was chosen by (the
ladder's, on the card's own links) is the speed its offers of that class are priced at, not timed again."""

from __future__ import annotations

import collections

from gpuplan.hardware import Network
from gpuplan.model.catalog import load_model
from gpuplan.plan import build, layout
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
