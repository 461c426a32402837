"""A dataset file on the web page (issue 23, "everywhere"): the page uploads the file it read (``/api/upload``) and
the scenario carries the reference; the server reads it with the CLI's own reader, so the plan is the one
``gpuplan estimate --dataset F --tokenizer T --json`` prints for the same files. Files on the server's disk stay
refused; sizes, types and stale references get one sentence."""

from __future__ import annotations

import json
from urllib.parse import quote_plus

import pytest

from conftest import require

require("fastapi")
require("httpx")
require("tokenizers")

from fastapi.testclient import TestClient  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from gpuplan.cli import app as cli_app  # noqa: E402
from gpuplan.web import uploads  # noqa: E402
from gpuplan.web.app import create_app  # noqa: E402

WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "hello", "world"]
# four records of 5, 3, 2 and 6 words; the word-level tokenizer below gives one token per word
TEXTS = ["the cat sat on the", "a dog ran", "hello world", "the cat sat on the mat"]
SCENARIO = {"model": "llama-3.2-1b", "task": "train", "gpu": "h100-sxm", "epochs": 2}


def make_files(folder):
    """train.jsonl and a word-level tokenizer.json (whitespace split, EOS </s>) in ``folder``."""
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers

    vocab = {"[UNK]": 0, "</s>": 1, "<s>": 2, **{w: i + 3 for i, w in enumerate(WORDS)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.add_special_tokens([AddedToken("</s>", special=True), AddedToken("<s>", special=True)])
    tok.save(str(folder / "tokenizer.json"))
    (folder / "train.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in TEXTS))
    return folder / "train.jsonl", folder / "tokenizer.json"


def upload(client, kind, name, data: bytes):
    return client.post("/api/upload", params={"kind": kind, "name": name}, content=data,
                       headers={"content-type": "application/octet-stream"})


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app(), base_url="http://127.0.0.1")


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the CLI is given the names the page shows
    return make_files(tmp_path)


def test_an_uploaded_dataset_gives_the_cli_plan(client, files):
    data, tok = files
    refs = {}
    for kind, path in (("dataset", data), ("tokenizer", tok)):
        r = upload(client, kind, path.name, path.read_bytes())
        assert r.status_code == 200, r.text
        assert r.json()["name"] == path.name and r.json()["bytes"] == path.stat().st_size
        refs[kind] = r.json()["ref"]
    assert refs["dataset"].startswith("upload:") and refs["dataset"].endswith("/train.jsonl")
    web = client.post("/api/estimate", json={**SCENARIO, **refs})
    assert web.status_code == 200, web.text
    result = CliRunner().invoke(cli_app, ["estimate", "--model", "llama-3.2-1b", "--task", "train", "--gpu",
                                          "h100-sxm", "--epochs", "2", "--dataset", "train.jsonl", "--tokenizer",
                                          "tokenizer.json", "--json"])
    assert result.exit_code == 0, result.output
    cli = json.loads(result.stdout)
    d = web.json()["dataset"]
    # the numbers by hand: 5 + 3 + 2 + 6 = 16 tokens, one EOS per record, the longest 6 + 1; 2 epochs x 20
    assert (d["samples"], d["tokens_total"], d["special_tokens"], d["max_tokens"]) == (4, 16, 4, 7)
    assert web.json()["scenario"]["train_tokens"] == 40
    assert (d["source"], d["tokenizer"]) == ("train.jsonl", "tokenizer.json")  # no server path shown
    assert web.json() == cli  # the same plan, every number
    # the export names the user's files, and the same bytes give the same reference
    exported = client.post("/api/export", json={**SCENARIO, **refs}).json()
    assert "--dataset train.jsonl" in exported["command"] and "gpuplan-uploads" not in json.dumps(exported)
    assert "dataset=" + quote_plus(refs["dataset"]) in exported["query"]  # the permalink reopens the upload
    assert upload(client, "dataset", "train.jsonl", data.read_bytes()).json()["ref"] == refs["dataset"]
    explained = client.post("/api/explain", json={**SCENARIO, **refs})
    assert explained.status_code == 200 and "gpuplan-uploads" not in explained.text


@pytest.mark.parametrize("kind, name, content, status, text", [
    ("dataset", "notes.txt", b"hello", 422, "not a file gpuplan reads as a dataset: choose a .jsonl, .ndjson"),
    ("tokenizer", "vocab.txt", b"hello", 422, "not a file gpuplan reads as a tokenizer: choose a .json file"),
    ("dataset", "empty.jsonl", b"", 422, "'empty.jsonl' is empty"),
    ("dataset", "big.jsonl", b"x" * (uploads.MAX_UPLOAD_BYTES + 1), 413, "at most 16,777,216 are what the page takes"),
], ids=["text-file", "vocab-file", "empty", "too-big"])
def test_bad_uploads_get_one_sentence(client, kind, name, content, status, text):
    r = upload(client, kind, name, content)
    assert r.status_code == status and text in r.json()["detail"], r.text
    r = client.post("/api/upload", params={"kind": "model", "name": "a.jsonl"}, content=b"{}",
                    headers={"content-type": "application/octet-stream"})
    assert r.status_code == 422 and r.json()["detail"].startswith("field 'kind'"), r.text


def test_folders_in_a_name_are_dropped(client):
    r = upload(client, "dataset", "../../etc/x.jsonl", b'{"text": "a"}\n')
    assert r.status_code == 200 and r.json()["name"] == "x.jsonl"


def test_stale_references_and_server_paths_are_refused(client, files):
    r = client.post("/api/estimate", json={**SCENARIO, "dataset": "upload:0123456789abcdef/gone.jsonl"})
    assert r.status_code == 422 and "no longer on this server" in r.json()["detail"]
    r = client.post("/api/estimate", json={**SCENARIO, "dataset": "upload:../../etc/passwd"})
    assert r.status_code == 422 and "not an upload reference" in r.json()["detail"]
    r = client.post("/api/estimate", json={**SCENARIO, "dataset": str(files[0])})
    assert r.status_code == 422 and "does not read files on the server" in r.json()["detail"]


def test_a_reader_error_names_the_users_file(client, files):
    ref = upload(client, "dataset", "broken.jsonl", b'{"text": "a"}\nnot json\n').json()["ref"]
    tok = upload(client, "tokenizer", "tokenizer.json", files[1].read_bytes()).json()["ref"]
    r = client.post("/api/estimate", json={**SCENARIO, "dataset": ref, "tokenizer": tok})
    assert r.status_code == 422 and "broken.jsonl" in r.json()["detail"], r.text
    assert "gpuplan-uploads" not in r.json()["detail"]


@pytest.mark.parametrize("name, kept", [
    ("données été.jsonl", "données_été.jsonl"), ("日本語データ.jsonl", "日本語データ.jsonl"),
    ("🚀.jsonl", "upload.jsonl"),
    ("cafe\u0301.csv", "café.csv"), ("a\u202eb.jsonl", "a_b.jsonl"), ("日" * 150 + ".jsonl", "日" * 64 + ".jsonl"),
], ids=["accents", "japanese", "emoji-only", "combining-accent", "bidi-override", "long-cjk"])
def test_a_name_in_any_script_is_kept_and_read(client, files, name, kept):
    """The page kept only ASCII letters of a file's name: 'é🚀.jsonl' became 'jsonl' and was refused as "not a file
    gpuplan reads as a dataset", and 'données.jsonl' became 'donn_es.jsonl'. Letters and digits of any script are
    kept now (NFC), anything else is one '_', and a name fits a file system's 255 bytes."""
    r = upload(client, "dataset", name, files[0].read_bytes())
    assert r.status_code == 200, r.text
    assert r.json()["name"] == kept and r.json()["ref"].endswith("/" + kept) and len(kept.encode()) <= 200
    tok = upload(client, "tokenizer", "tokenizer.json", files[1].read_bytes()).json()["ref"]
    plan = client.post("/api/estimate", json={**SCENARIO, "dataset": r.json()["ref"], "tokenizer": tok})
    assert plan.status_code == 200, plan.text
    assert plan.json()["dataset"]["source"] == kept and plan.json()["dataset"]["samples"] == 4


def test_launch_files_name_the_users_dataset_not_the_servers_copy(client, files):
    """``POST /api/launch`` makes the files `gpuplan launch -o -` makes; a dataset uploaded from the page is named in
    them as the user named it (the server's upload folder never shows), and nothing is written on the server."""
    refs = {kind: upload(client, kind, path.name, path.read_bytes()).json()["ref"]
            for kind, path in (("dataset", files[0]), ("tokenizer", files[1]))}
    scenario = {**SCENARIO, **refs, "method": "lora"}
    r = client.post("/api/launch", json=scenario)
    assert r.status_code == 200, r.text
    made = {f["path"]: f["text"] for f in r.json()["files"]}
    assert {"trainer.yaml", "accelerate-launch.sh", "plan.json"} <= set(made)
    assert "gpuplan-uploads" not in r.text and "upload:" not in r.text
    assert "train.jsonl" in made["trainer.yaml"]
    assert r.json()["again"].startswith("gpuplan launch --model llama-3.2-1b --task train")
    assert not any(p.name.startswith("gpuplan-launch") for p in files[0].parent.iterdir())
    r = client.post("/api/launch", json={"model": "llama-3.2-1b", "task": "train"})
    assert r.status_code == 422 and r.json()["detail"].startswith("launch needs a GPU")
