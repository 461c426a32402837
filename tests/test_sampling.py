"""The sampled heavy checks (tests/sampling.py): over ``parts`` consecutive rounds every item is checked exactly
once, the items a check always needs are in every part, and ``GPUPLAN_SWEEP=all`` checks every item."""

from __future__ import annotations

import sampling

ITEMS = [f"case-{i}" for i in range(23)]


def test_consecutive_rounds_check_every_item_once(monkeypatch):
    monkeypatch.delenv("GPUPLAN_SWEEP", raising=False)
    seen: list[str] = []
    for r in range(100, 105):
        monkeypatch.setenv("GPUPLAN_SWEEP_SEED", str(r))
        part = sampling.part_of(ITEMS, 5)
        assert 4 <= len(part) <= 5 and part == [x for x in ITEMS if x in part]  # the items' own order
        seen += part
    assert sorted(seen) == sorted(ITEMS)


def test_the_round_is_the_date_unless_seeded(monkeypatch):
    import datetime as dt

    monkeypatch.delenv("GPUPLAN_SWEEP_SEED", raising=False)
    assert sampling.sweep_round() == dt.date.today().toordinal()
    monkeypatch.setenv("GPUPLAN_SWEEP_SEED", "7")
    assert sampling.sweep_round() == 7 and "GPUPLAN_SWEEP_SEED=7" in sampling.header()


def test_always_and_all(monkeypatch):
    monkeypatch.setenv("GPUPLAN_SWEEP_SEED", "1")
    monkeypatch.delenv("GPUPLAN_SWEEP", raising=False)
    assert "case-3" not in sampling.part_of(ITEMS, 4)  # sorted, case-3 is the 17th: part 0
    assert "case-3" in sampling.part_of(ITEMS, 4, always=["case-3"])
    monkeypatch.setenv("GPUPLAN_SWEEP", "all")
    assert sampling.part_of(ITEMS, 4) == ITEMS and "every item" in sampling.header()


def test_the_header_names_a_fuzzing_seed_given_apart(monkeypatch):
    monkeypatch.delenv("GPUPLAN_SWEEP", raising=False)
    monkeypatch.setenv("GPUPLAN_SWEEP_SEED", "7")
    monkeypatch.delenv("GPUPLAN_FUZZ_SEED", raising=False)
    assert "fuzzing seed" not in sampling.header()
    monkeypatch.setenv("GPUPLAN_FUZZ_SEED", "42")
    assert sampling.header().endswith("; fuzzing seed 42 (GPUPLAN_FUZZ_SEED)")
