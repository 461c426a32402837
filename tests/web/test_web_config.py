"""A model's own config.json on the web page (review 3, Q9): the page uploads the file (``/api/upload?kind=config``)
and the scenario's ``model`` carries the reference; the server reads it with the CLI's own bounded JSON reader, as
``gpuplan estimate --model config.json`` reads a local file, so every number of the plan is the CLI's. Nothing in
the file runs; files on the server's disk, smuggled upload markers, nesting and shapes the reader refuses get one
sentence."""

from __future__ import annotations

import json

import pytest

from conftest import asked, require

require("fastapi")
require("httpx")

from fastapi.testclient import TestClient  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from gpuplan.cli import app as cli_app  # noqa: E402
from gpuplan.userfiles import MAX_DEPTH  # noqa: E402
from gpuplan.web.app import create_app  # noqa: E402

# A Llama-shaped model no catalog holds: 12 layers of 1,536, 12 heads (4 KV heads of 128), FFN 4,096, vocab 32,000
CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 1536,
          "intermediate_size": 4096, "num_hidden_layers": 12, "num_attention_heads": 12, "num_key_value_heads": 4,
          "head_dim": 128, "vocab_size": 32000, "max_position_embeddings": 4096, "rms_norm_eps": 1e-5,
          "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
# by hand: embeddings and head 2 x 32,000 x 1,536; per layer q 1,536 x 1,536, k and v 1,536 x 512 each, o 1,536 x
# 1,536, gate/up/down 3 x 1,536 x 4,096, two norms of 1,536; the final norm 1,536
PARAMS = 2 * 32000 * 1536 + 12 * (2 * 1536 * 1536 + 2 * 1536 * 512 + 3 * 1536 * 4096 + 2 * 1536) + 1536
SCENARIO = {"task": "train", "method": "lora", "gpu": "rtx-4090", "seq_len": 1024}


def upload(client, name: str, data: bytes, kind: str = "config"):
    return client.post("/api/upload", params={"kind": kind, "name": name}, content=data,
                       headers={"content-type": "application/octet-stream"})


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app(), base_url="http://127.0.0.1")


def test_an_uploaded_config_gives_the_cli_plan(client, tmp_path):
    folder = tmp_path / "config.json"  # the CLI names a folder's config after the folder: this one, as the page does
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(CONFIG))
    r = upload(client, "config.json", json.dumps(CONFIG).encode())
    assert r.status_code == 200, r.text
    ref = r.json()["ref"]
    assert ref.startswith("upload:") and ref.endswith("/config.json") and r.json()["name"] == "config.json"
    web = asked(client, "/api/estimate", {**SCENARIO, "model": ref})
    assert web.status_code == 200, web.text
    plan = web.json()
    assert plan["model"]["params_total"] == PARAMS == 400_332_288
    assert plan["model"]["name"] == "config.json" and plan["scenario"]["model"] == "config.json"
    assert "gpuplan-uploads" not in web.text and ref.split(":")[1].split("/")[0] not in web.text  # no hash, no path
    result = CliRunner().invoke(cli_app, ["estimate", "--model", str(folder / "config.json"), "--task", "train",
                                          "--method", "lora", "--gpu", "rtx-4090", "--seq-len", "1024", "--json"])
    assert result.exit_code == 0, result.output
    cli = json.loads(result.stdout.replace(str(folder / "config.json"), "config.json"))
    assert plan == cli  # the same plan, every number
    exported = client.post("/api/export", json={**SCENARIO, "model": ref}).json()
    assert "--model config.json" in exported["command"] and "gpuplan-uploads" not in json.dumps(exported)
    assert "model=upload%3A" in exported["query"]  # the permalink reopens the upload while the server keeps it
    assert client.post("/api/explain", json={**SCENARIO, "model": ref}).status_code == 200
    grid = client.post("/api/recommend", json={"scenario": {**SCENARIO, "model": ref},
                                               "constraints": {"gpus": ["rtx-4090"], "max_gpus": 1}})
    assert grid.status_code == 200 and "gpuplan-uploads" not in grid.text, grid.text



def test_the_launch_files_of_an_uploaded_config_name_no_server_path(client):
    """The model folder of an uploaded config (what vLLM loads, where the tokenizer is looked for) is named as the
    user named the file: before s19-sec the reply read ``vllm serve /tmp/gpuplan-uploads-XXXX/config.json``, the
    server's folder, and a plan with a dataset said ``tokenizer '/tmp/gpuplan-uploads-XXXX/config.json'``."""
    ref = upload(client, "config.json", json.dumps(CONFIG).encode()).json()["ref"]
    digest = ref.split(":")[1].split("/")[0]
    served = asked(client, "/api/launch", {"model": ref, "task": "infer", "engine": "vllm", "gpu": "l40s"})
    trained = asked(client, "/api/launch", {**SCENARIO, "model": ref, "pricing": "spot"})
    for r in (served, trained):
        assert r.status_code == 200, r.text
        assert "gpuplan-uploads" not in r.text and digest not in r.text, r.text
    (script,) = [f["text"] for f in served.json()["files"] if f["path"] == "vllm-serve.sh"]
    assert "vllm serve config.json \\\n" in script
    data = upload(client, "train.jsonl", b'{"text": "hello world"}\n', kind="dataset").json()["ref"]
    r = asked(client, "/api/estimate", {**SCENARIO, "model": ref, "dataset": data})
    assert r.status_code == 422 and r.json()["detail"].startswith("tokenizer 'config.json': no tokenizer.json"), r.text
    assert "gpuplan-uploads" not in r.text and digest not in r.text

def deep(levels: int) -> bytes:
    value: object = 1
    for _ in range(levels):
        value = {"a": value}
    return json.dumps({**CONFIG, "quantization_config": value}).encode()


@pytest.mark.parametrize("name, content, text", [
    ("config.json", b"[1, 2]", "holds a JSON list, not a config.json object"),
    ("config.json", b"{not json", "config.json"),
    ("config.json", deep(MAX_DEPTH + 1), "nest more than 64 levels deep"),
    ("config.json", json.dumps({"model_type": "llama", "hidden_size": 64}).encode(), "lacks"),
    ("config.json", json.dumps({**CONFIG, "num_hidden_layers": -3}).encode(),
     "num_hidden_layers must be between 1 and 10,000, got -3"),
], ids=["list", "malformed", "too-deep", "missing-keys", "impossible-shape"])
def test_a_config_the_reader_refuses_is_one_sentence(client, name, content, text):
    ref = upload(client, name, content).json()["ref"]
    r = client.post("/api/estimate", json={**SCENARIO, "model": ref})
    assert r.status_code == 422 and text in r.json()["detail"], r.text
    assert "\n" not in r.json()["detail"] and "gpuplan-uploads" not in r.text and "Traceback" not in r.text


def test_configs_are_json_and_paths_stay_refused(client, tmp_path):
    r = upload(client, "modeling_evil.py", b"import os\n")
    assert r.status_code == 422 and "not a file gpuplan reads as a config: choose a .json file" in r.json()["detail"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIG))
    # the marker of an upload is the server's own: a request that sends it still has its path refused
    r = client.post("/api/estimate", json={**SCENARIO, "model": str(path), "__uploaded__": ["model"]})
    assert r.status_code == 422 and "does not read files on the server" in r.json()["detail"], r.text
    r = client.post("/api/estimate", json={**SCENARIO, "model": "upload:0123456789abcdef/config.json"})
    assert r.status_code == 422 and "no longer on this server" in r.json()["detail"]
    r = client.post("/api/estimate", json={**SCENARIO, "model": "upload:../../etc/passwd"})
    assert r.status_code == 422 and "not an upload reference" in r.json()["detail"]


def test_remote_code_in_a_config_is_data(client):
    """``auto_map`` names code in the repo (transformers runs it only with trust_remote_code, which gpuplan never
    sets): the config's shape is read through the transformers class its ``architectures`` names, and nothing else
    of the repo exists on the server to run."""
    evil = {**CONFIG, "auto_map": {"AutoModelForCausalLM": "modeling_evil.EvilForCausalLM"},
            "model_type": "evil-llama"}
    ref = upload(client, "config.json", json.dumps(evil).encode()).json()["ref"]
    r = asked(client, "/api/estimate", {**SCENARIO, "model": ref})
    assert r.status_code == 200, r.text
    assert r.json()["model"]["params_total"] == PARAMS
