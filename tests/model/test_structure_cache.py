"""The user cache of model structures is bounded and written by the cache's one writer (session 18's security
audit: each config the page was sent and traced added a file without bound, written at a fixed KEY.tmp)."""

from __future__ import annotations

import json

from gpuplan.model import structure


def test_the_structures_kept_are_the_ones_used_last(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUPLAN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(structure, "MAX_ENTRIES", 2)
    traced = structure.from_json(json.loads(sorted(structure.bundled_folder().glob("*.json"))[0].read_text()))
    configs = [{"model_type": "made-up", "hidden_size": 64 * (i + 1)} for i in range(3)]
    structure.store(configs[0], traced)
    structure.store(configs[1], traced)
    assert structure.lookup(configs[0]).traced == traced  # read: used now, so configs[1] is the oldest
    import os

    os.utime(structure.user_folder() / f"{structure.config_key(configs[1])}.json", (1e9, 1e9))
    structure.store(configs[2], traced)
    assert [structure.lookup(c) is not None for c in configs] == [True, False, True]
    assert sorted(p.name for p in structure.user_folder().iterdir()) == sorted(
        f"{structure.config_key(c)}.json" for c in (configs[0], configs[2]))  # no temporary left


def test_what_is_traced_is_what_the_key_names():
    """The key leaves out "_" keys (bookkeeping: _name_or_path), and so does the trace now: with
    "_experts_implementation": "eager" transformers' forward on the meta device failed (torch.nonzero), so a config
    sent with it was traced "not exact" and kept under the key of the config without it, for every later plan of
    that model (session 18's security audit)."""
    from conftest import require

    require("transformers")
    from gpuplan.model.catalog import bundled
    from gpuplan.model.trace import trace

    config = json.loads(bundled()["Qwen/Qwen3.5-35B-A3B"].read_text())
    sent = {**config, "_experts_implementation": "eager", "_attn_implementation": "eager"}
    assert structure.config_key(sent) == structure.config_key(config)
    assert structure.to_json(*trace(sent), None) == structure.to_json(*trace(config), None)
