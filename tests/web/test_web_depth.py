"""The page's bound on nesting (web/guard.py MAX_DEPTH) against what its requests really take: it was 4, and
/api/buy refused a workloads file's job whose scenario has a list (``lora_targets: [q_proj, v_proj]``, which
``gpuplan buy --workloads`` reads), and the page's own "buy or rent" of such a scenario, with "nests deeper than 4
levels". The bound is now the deepest request body, derived here from the request models; hostile depth stays
refused in one sentence."""

from __future__ import annotations

import types
import typing
from pathlib import Path

import pytest

from conftest import require

require("fastapi")
require("httpx")

from fastapi.testclient import TestClient  # noqa: E402
from pydantic import BaseModel  # noqa: E402

import gpuplan  # noqa: E402
from gpuplan import api  # noqa: E402
from gpuplan.stored import StoredModel  # noqa: E402
from gpuplan.userfiles import read_mapping  # noqa: E402
from gpuplan.web import api as web_api  # noqa: E402
from gpuplan.web import guard  # noqa: E402
from gpuplan.web.app import create_app  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
# a field typed as any mapping that holds a scenario (a job's, as a workloads file writes it)
SCENARIOS = {(web_api.BuyJob, "scenario"): api.Scenario}


def depth(tp: typing.Any, seen: frozenset = frozenset()) -> int:
    """Containers around the deepest value a body of type ``tp`` holds (guard.check_bounds's count: a scalar in
    the body itself is at depth 1)."""
    args = [a for a in typing.get_args(tp) if a is not Ellipsis]
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return depth(args[0], seen)
    if origin in (typing.Union, types.UnionType, typing.Literal):
        return max((depth(a, seen) for a in args if not isinstance(a, str | int | float | bool)), default=0)
    if origin in (list, tuple, set, frozenset):
        return 1 + max((depth(a, seen) for a in args), default=0)
    if origin is dict:
        return 1 + depth(args[1], seen)
    if isinstance(tp, type) and issubclass(tp, BaseModel | StoredModel) and tp not in seen:
        return 1 + max((depth(SCENARIOS.get((tp, name), f.annotation), seen | {tp})
                        for name, f in tp.model_fields.items()), default=0)
    return 0


def test_the_bound_is_the_deepest_request_body():
    """/api/buy: the body, its workloads, a job, the job's scenario, a list field of it, its items: 5. Every other
    request is shallower (a scenario's list: 2 in estimate's body, 3 in recommend's)."""
    bodies = [m for m in vars(web_api).values()
              if isinstance(m, type) and issubclass(m, web_api.RequestBody) and m is not web_api.RequestBody]
    deepest = {m.__name__: depth(m) for m in bodies}
    assert deepest["BuyRequest"] == 5 and depth(api.Scenario) == 2 and deepest["RecommendRequest"] == 3
    assert guard.MAX_DEPTH == max([*deepest.values(), depth(api.Scenario)]) == 5


@pytest.fixture
def client():
    app = create_app()
    yield TestClient(app, base_url="http://127.0.0.1")
    app.state.pools.close()
    app.state.uploads.close()


def test_a_workloads_file_with_lists_in_its_scenarios_is_priced_on_the_page(client, tmp_path):
    """examples/weekly-8b-finetunes.yaml with LoRA on two projections, as `gpuplan buy --workloads` reads it: the
    page's answer is the Python API's (it was 422, "field 'workloads'[0].scenario.lora_targets[0] nests deeper
    than 4 levels")."""
    work = read_mapping(ROOT / "examples" / "weekly-8b-finetunes.yaml", "workloads")
    work["workloads"][0]["scenario"]["lora_targets"] = ["q_proj", "v_proj"]
    body = {"build": "8x5090", "rent": ["8xh100-sxm"], "host_usd": 6000, "years": work["years"],
            "workloads": work["workloads"]}
    r = client.post("/api/buy", json=body)
    assert r.status_code == 200, r.text
    report = gpuplan.buy("8x5090", rent=["8xh100-sxm"], workloads=work, host_usd=6000)
    assert r.json()["verdict"] == report.verdict


@pytest.mark.parametrize("levels", [guard.MAX_DEPTH + 1, 513, 15_000])
def test_hostile_depth_is_still_one_sentence(client, levels):
    """One level past the deepest request, session 19's 513 levels, and the review's 15,000 (past Python's own
    parser): 422, one sentence."""
    job = {"name": "deep", "per_week": 1, "scenario": {"model": "llama-3.2-1b", "task": "train",
                                                       "lora_targets": ["q_proj"]}}
    if levels == guard.MAX_DEPTH + 1:
        job["scenario"]["lora_targets"] = [["q_proj"]]
        content = None
    else:
        content = b'{"build": "2x5090", "workloads": ' + b"[" * levels + b"]" * levels + b"}"
    r = client.post("/api/buy", json={"build": "2x5090", "workloads": [job]}) if content is None else \
        client.post("/api/buy", content=content, headers={"content-type": "application/json"})
    assert r.status_code == 422
    assert r.json()["detail"].endswith(f"nests deeper than {guard.MAX_DEPTH} levels"), r.json()
