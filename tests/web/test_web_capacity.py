"""``POST /api/capacity``: the page's serving-capacity search is ``gpuplan.capacity`` (and ``gpuplan capacity
--json``) on the same inputs, kept within the request's deadline; bad bodies are one sentence and a 4xx."""

from __future__ import annotations

import json
import math

import pytest

from conftest import require

require("fastapi")
require("httpx")
from fastapi.testclient import TestClient  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

import gpuplan  # noqa: E402
from gpuplan.cli import app as cli_app  # noqa: E402
from gpuplan.web import lanes  # noqa: E402
from gpuplan.web.api import PAGE_SEARCH_EVENTS  # noqa: E402
from gpuplan.web.app import create_app  # noqa: E402

BODY = {"model": "llama-3.1-8b", "engine": "trtllm", "rate_rps": 5, "prompt_tokens": 2000, "output_tokens": 300,
        "ttft_s": 1, "tpot_s": 0.05, "gpus": ["h100-sxm"], "max_gpus": 2, "top": 2}


@pytest.fixture(scope="module")
def client():
    """The page's app with the lane's deadline raised for this module: its tests compare the page's answers with the
    API's, and a loaded machine takes the searches past the 10 s a request has (503; session 31: no clock decides
    an answer any more, so the only way a busy machine differs is that 503)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lanes, "TIMEOUT_S", 600.0)
        yield TestClient(create_app(), base_url="http://127.0.0.1")


def test_the_page_search_is_the_python_api_and_the_cli_json(client):
    """TensorRT-LLM on one and two H100s at 5 requests/s: the page's answer is gpuplan.capacity's (the same
    search, within the page's budget of simulated events) and the command line's --json rows (session 31: the
    budget was 6 wall seconds, and under load the page's rows stopped earlier than the API's)."""
    r = client.post("/api/capacity", json=BODY)
    assert r.status_code == 200, r.text
    page = r.json()
    fields = {k: v for k, v in BODY.items() if k != "model"}
    report = gpuplan.capacity("llama-3.1-8b", search_events=PAGE_SEARCH_EVENTS, **fields)
    assert page == json.loads(report.model_dump_json())
    assert [p["setup"] for p in page["plans"]] == ["1x h100-sxm tp1", "2x h100-sxm tp2"]
    assert all(p["engine"] == "trtllm" and p["max_rate_rps"] > 1 and not p["warnings"] for p in page["plans"])
    out = CliRunner().invoke(cli_app, ["capacity", "--model", "llama-3.1-8b", "--engine", "trtllm", "--rate", "5",
                                       "--prompt-tokens", "2000", "--output-tokens", "300", "--ttft", "1", "--tpot",
                                       "0.05", "--gpus", "h100-sxm", "--max-gpus", "2", "--top", "2", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["plans"] == page["plans"]


def test_an_offline_batch_and_users_on_the_page_api(client):
    """``batch``: each setup's time for the job (the offline run of the engine's scheduler); ``users``: the most
    users a replica serves."""
    batch = client.post("/api/capacity", json={**BODY, "rate_rps": None, "batch": 500, "ttft_s": None,
                                               "tpot_s": None})
    assert batch.status_code == 200, batch.text
    rows = batch.json()["plans"]
    assert rows and all(p["job_s"] > 0 and p["job_preemptions"] == 0 for p in rows)
    users = client.post("/api/capacity", json={**BODY, "rate_rps": None, "users": 32})
    assert users.status_code == 200, users.text
    assert all(1 <= p["max_users"] <= 32 for p in users.json()["plans"])


@pytest.mark.parametrize("change, status, words", [
    ({"engine": "llama.cpp"}, 422, "engine"),
    ({"max_gpus": 64}, 422, "max_gpus"),
    ({"top": 50}, 422, "top"),
    ({"colour": "red"}, 422, "colour"),
    ({"model": "/etc/passwd"}, 422, "does not read files on the server"),
    ({"prompt_tokens": 0}, 422, "prompt_tokens"),
    ({"users": 4}, 422, "give users (a closed loop) or rate_rps (an open loop), not both"),  # estimate's sentence
    ({"engine": "trtllm", "chunked_prefill": True}, 422, "TensorRT-LLM takes no chunked_prefill true"),
    ({"chunked_prefill": "sometimes"}, 422, "chunked_prefill"),
    ({"engine": "sglang", "async_scheduling": True}, 422, "SGLang takes no async_scheduling"),
])
def test_bad_bodies_are_one_sentence(client, change, status, words):
    r = client.post("/api/capacity", json={**BODY, **change})
    assert r.status_code == status, r.text
    assert words in r.text and "Traceback" not in r.text


def test_security_md_states_the_capacity_limits():
    """docs/security.md states the bounds of /api/capacity as the request model enforces them."""
    from pathlib import Path

    from gpuplan.web.api import CapacityRequest

    def most(field: str) -> int:
        return next(m.le for m in CapacityRequest.model_fields[field].metadata if hasattr(m, "le"))

    doc = " ".join((Path(__file__).resolve().parents[2] / "docs" / "security.md").read_text(encoding="utf-8").split())
    assert (f"capacity searches over {most('max_gpus')} GPUs a setup, more than {most('top')} setups simulated, over "
            f"{most('users'):,} users or an offline batch over {most('batch'):,} requests; the simulations of one "
            f"search share {PAGE_SEARCH_EVENTS:,} simulated events") in doc


def test_no_output_tokens_is_planned_as_estimate_plans_it(client):
    """Session 8's walk: ``estimate --output-tokens 0`` plans a prefill-only load (timed as the one token a
    prefill samples, and said), while capacity refused it ("must be a number from 1", on the page HTTP 422). Both
    plan it now, the same in the page, the API and the CLI: one fixed output token, TPOT n/a with its note."""
    body = {**BODY, "output_tokens": 0, "tpot_s": None, "length_spread": 0.5}
    r = client.post("/api/capacity", json=body)
    assert r.status_code == 200, r.text
    page = r.json()
    assert page["workload"]["output"] == {"kind": "fixed", "mean": 1.0, "std": 0.0, "min": 1, "max": 10_000_000}
    assert page["plans"] and all(p["tpot_s"] is None and p["max_rate_rps"] > 1 for p in page["plans"])
    assert page["notes"][-1].startswith("TPOT n/a: no request of the workload streams a second token")
    out = CliRunner().invoke(cli_app, ["capacity", "--model", "llama-3.1-8b", "--engine", "trtllm", "--rate", "5",
                                       "--prompt-tokens", "2000", "--output-tokens", "0", "--ttft", "1",
                                       "--gpus", "h100-sxm", "--max-gpus", "2", "--top", "2", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["plans"] == page["plans"]


def test_spot_on_the_page_api_is_the_python_apis(client):
    """``pricing: spot`` (the page's pricing select): interruptible offers and each fleet sized for the interruptions,
    the same answer as gpuplan.capacity's; another pricing is a 422."""
    body = {**BODY, "engine": "vllm", "rate_rps": 30, "pricing": "spot", "mtbi_hours": 0.5}
    r = client.post("/api/capacity", json=body)
    assert r.status_code == 200, r.text
    rows = r.json()["plans"]
    assert rows and all("spot" in p["offer"] and p["spot_mtbi_h"] == 0.5 for p in rows)
    assert all(p["replicas_for_target"] == math.ceil(p["replicas_needed"] / p["availability"])
               and p["replicas_needed"] == pytest.approx(30 / p["max_rate_rps"]) for p in rows)
    assert any(n.startswith("spot:") and "not guaranteed" in n for n in r.json()["notes"])
    refused = client.post("/api/capacity", json={**body, "pricing": "owned"})
    assert refused.status_code == 422 and refused.json()["detail"] == (
        "capacity prices rented replicas on demand or on spot, not 'owned': --pricing on-demand or spot")
    # on-demand as the CLI and the docs spell it (was a 422 naming 'on_demand': the request's own Literal)
    typed = client.post("/api/capacity", json={**body, "pricing": "on-demand"})
    assert typed.status_code == 200 and not any("spot" in p["offer"] for p in typed.json()["plans"])


def test_the_cli_s_flag_names_on_the_page_get_the_body_s_names(client):
    """s19-rewalk's finding: a body written from `gpuplan capacity --ttft 2 --tpot 0.04` was answered "unknown field
    'ttft' (and 1 more)", naming neither the second nor the fields meant. Each unknown field is named, with the
    body's own closest field; an unknown field beside another error still counts that error."""
    body = {k: v for k, v in BODY.items() if k not in ("ttft_s", "tpot_s")}
    r = client.post("/api/capacity", json={**body, "ttft": 2, "tpot": 0.04})
    assert (r.status_code, r.json()) == (422, {"detail": "unknown fields 'ttft', 'tpot'; did you mean 'ttft_s' or "
                                                         "'tpot_s'?"})
    r = client.post("/api/buy", json={"build": "4x4090", "hourz": 5})
    assert r.json() == {"detail": "unknown field 'hourz'; did you mean 'hours'?"}
    r = client.post("/api/capacity", json={**body, "zzzqqq": 1, "users": "many", "tpot": 1})
    assert r.json()["detail"].startswith("field 'users': Input should be a valid integer")
    assert r.json()["detail"].endswith("(got 'many') (and 2 more)")


def test_a_preset_on_the_page_api_is_the_cli_s(client):
    """The s20 walk: ``capacity --preset chat`` had no counterpart on the page's API (its ``prompt_tokens`` and
    ``output_tokens`` defaulted to 1,024 and 256, a 422 for ``preset``). Now a preset draws ShareGPT's lengths as the
    CLI does, the same row. Without a preset or lengths the API once filled 1,024 + 256 where ``gpuplan capacity``
    and ``gpuplan.capacity`` refuse: one road now, the Python API's sentence as a 422 (the page sends its form's
    lengths, the plan's resolved 1,024 + 256 by default, so the page still answers)."""
    body = {"model": "qwen3-14b", "engine": "vllm", "rate_rps": 0.5, "ttft_s": 1.5, "percentile": 90,
            "gpus": ["a40"], "max_gpus": 1, "top": 1}
    r = client.post("/api/capacity", json={**body, "preset": "chat"})
    assert r.status_code == 200, r.text
    page = r.json()["plans"][0]
    cli = gpuplan.capacity("qwen3-14b", rate_rps=0.5, preset="chat", ttft_s=1.5, percentile=90, gpus=["a40"],
                           max_gpus=1, top=1).deployments[0]
    assert (page["setup"], page["max_rate_rps"], page["ttft_s"]) == (cli.setup, cli.max_rate_rps, cli.ttft_s)
    assert r.json()["workload"]["preset"] == "chat"
    bare = client.post("/api/capacity", json=body)
    assert bare.status_code == 422 and "Traceback" not in bare.text
    with pytest.raises(gpuplan.GpuplanError) as refused:
        gpuplan.capacity("qwen3-14b", rate_rps=0.5, ttft_s=1.5, percentile=90, gpus=["a40"], max_gpus=1, top=1)
    assert bare.json()["detail"] == str(refused.value)
    assert "say how long requests are" in bare.json()["detail"]
    given = client.post("/api/capacity", json={**body, "prompt_tokens": 1024, "output_tokens": 256}).json()
    assert (given["workload"]["prompt"]["mean"], given["workload"]["output"]["mean"]) == (1024, 256)
    assert client.post("/api/capacity", json={**body, "preset": "chatt"}).status_code == 422
