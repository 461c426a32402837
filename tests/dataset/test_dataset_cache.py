"""The dataset's token counts kept between runs (gpuplan.dataset.cache, issue 35): keyed by the file's bytes and
the tokenizer's files, read back without tokenizing, bounded, and never trusted: an entry anything wrote is checked
field by field and dropped when it fails. bench/dataset_cache.py times the second run against --samples."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gpuplan.dataset import _read, _statistics, cache, lengths_of, tokenize

WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "hello", "world"]


@pytest.fixture
def folder(tmp_path, monkeypatch) -> Path:
    """An empty cache folder of this test's own, and no counts held in this process from before."""
    monkeypatch.setenv("GPUPLAN_CACHE_DIR", str(tmp_path / "cache"))
    _read.cache_clear()
    _statistics.cache_clear()
    yield tmp_path / "cache" / "datasets"
    _read.cache_clear()


@pytest.fixture
def tok(tmp_path) -> Path:
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers

    model = Tokenizer(models.WordLevel({"[UNK]": 0, "</s>": 1, **{w: i + 2 for i, w in enumerate(WORDS)}},
                                       unk_token="[UNK]"))
    model.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    model.add_special_tokens([AddedToken("</s>", special=True)])
    path = tmp_path / "tok" / "tokenizer.json"
    path.parent.mkdir()
    model.save(str(path))
    return path


def write(path: Path, texts: list[str]) -> Path:
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    return path


def counts(data: Path, tok: Path):
    _read.cache_clear()  # as a new process would: only the folder remembers
    return lengths_of({"dataset": str(data), "tokenizer": str(tok)})


def forbid_tokenizing(monkeypatch) -> None:
    def refuse(name):
        raise AssertionError("tokenized again: the kept counts were not used")

    monkeypatch.setattr(tokenize, "load_tokenizer", refuse)


def test_the_second_read_uses_the_kept_counts(folder, tok, tmp_path, monkeypatch):
    data = write(tmp_path / "train.jsonl", ["the cat sat", "a dog ran on the mat", "hello"])
    first = counts(data, tok)
    assert first.content == (3, 6, 1) and first.special == (1, 1, 1)  # words, and the EOS TRL appends
    assert len(list(folder.glob("*.json"))) == 1
    forbid_tokenizing(monkeypatch)
    second = counts(data, tok)
    assert (second.content, second.special, second.loss, second.scale, second.samples, second.kind,
            second.notes) == (first.content, first.special, first.loss, first.scale, first.samples, first.kind,
                              first.notes)
    # the same bytes under another name and date: the same entry
    copy = tmp_path / "renamed.jsonl"
    copy.write_bytes(data.read_bytes())
    assert counts(copy, tok).content == first.content and len(list(folder.glob("*.json"))) == 1


def test_edited_files_are_tokenized_again(folder, tok, tmp_path):
    data = write(tmp_path / "train.jsonl", ["the cat sat", "hello"])
    assert counts(data, tok).content == (3, 1)
    write(data, ["the cat sat on the mat", "hello"])  # the data changed
    assert counts(data, tok).content == (6, 1)
    (tok.parent / "tokenizer_config.json").write_text(json.dumps({"eos_token": "</s>"}))  # the tokenizer's settings
    assert counts(data, tok).content == (6, 1)
    assert len(list(folder.glob("*.json"))) == 3


F = cache.FORMAT  # the entries below are wrong in one field each, not in their layout


@pytest.mark.parametrize("entry", [
    b"not json", b"\xff\xfe binary", b"[1, 2, 3]", b'{"format": %d}' % cache.FORMAT,
    json.dumps({"format": F, "content": [1, -2], "special": [0, 0], "loss": [1, 1], "scale": 1.0, "samples": 2,
                "kind": "text", "notes": []}).encode(),  # a negative count
    json.dumps({"format": F, "content": [1, 2], "special": [0], "loss": [1, 2], "scale": 1.0, "samples": 2,
                "kind": "text", "notes": []}).encode(),  # lists of different lengths
    json.dumps({"format": F, "content": [1.5], "special": [0], "loss": [1], "scale": 1.0, "samples": 1,
                "kind": "text", "notes": []}).encode(),  # not whole
    json.dumps({"format": F, "content": [True], "special": [0], "loss": [1], "scale": 1.0, "samples": 1,
                "kind": "text", "notes": []}).encode(),  # a boolean for a count
    json.dumps({"format": F, "content": [1], "special": [0], "loss": [1], "scale": float("inf"), "samples": 1,
                "kind": "text", "notes": []}, allow_nan=True).encode(),  # Infinity
    json.dumps({"format": F, "content": [1], "special": [0], "loss": [1], "scale": 1.0, "samples": 1,
                "kind": "text; rm -rf /", "notes": []}).encode(),  # an unknown kind
    json.dumps({"format": F, "content": [1], "special": [0], "loss": [1], "scale": 1.0, "samples": 1,
                "kind": "text", "notes": ["\x1b[2J"]}).encode(),  # a control character in a note
    json.dumps({"format": cache.FORMAT - 1, "content": [1], "special": [0], "loss": [1], "scale": 1.0, "samples": 1,
                "kind": "text", "notes": []}).encode(),  # an older layout
    b"[" * 100_000 + b"]" * 100_000,  # nested past the reader's bound
    b'{"format": %d, "content": [' % cache.FORMAT + b"1," * (9 * 2**20) + b'1]}',  # over the size an entry may take
])
def test_a_hostile_entry_is_dropped_and_replaced(folder, tok, tmp_path, entry):
    data = write(tmp_path / "train.jsonl", ["the cat sat", "hello world"])
    right = counts(data, tok)
    (path,) = folder.glob("*.json")
    path.write_bytes(entry)
    again = counts(data, tok)  # tokenized again, not an error
    assert again.content == right.content == (3, 2)
    assert cache._lengths(json.loads(path.read_text()))  # and kept again, whole


def test_the_folder_is_bounded(folder, tok, tmp_path, monkeypatch):
    monkeypatch.setattr(cache, "MAX_ENTRIES", 3)
    files = [write(tmp_path / f"d{i}.jsonl", ["the cat"] * (i + 1)) for i in range(5)]
    names = []
    for i, data in enumerate(files):
        counts(data, tok)
        (newest,) = set(folder.glob("*.json")) - set(names)
        os.utime(newest, (1e9 + i, 1e9 + i))  # a clear order of use
        names = list(folder.glob("*.json"))
    assert len(names) == 3
    forbid_tokenizing(monkeypatch)
    assert counts(files[-1], tok).content == (2,) * 5  # the most recent are the ones kept
    monkeypatch.setattr(cache, "MAX_TOTAL_BYTES", 1)
    cache.trim(folder)
    assert len(list(folder.glob("*.json"))) == 0


def test_no_cache_folder_is_no_error(folder, tok, tmp_path):
    folder.parent.mkdir(parents=True)
    folder.write_text("a file where the folder would be")
    data = write(tmp_path / "train.jsonl", ["the cat sat"])
    assert counts(data, tok).content == (3,) and counts(data, tok).content == (3,)


def test_entries_are_named_by_the_digest_alone(folder, tok, tmp_path):
    data = write(tmp_path / "../etc passwd ; $(x).jsonl", ["hello"])
    counts(data, tok)
    (path,) = folder.glob("*.json")
    assert path.parent == folder and len(path.stem) == 64 and set(path.stem) <= set("0123456789abcdef")


def test_the_cli_answers_the_same_from_the_cache(tmp_path, tok, monkeypatch):
    """Two processes on one file: the second reads the counts and prints the same plan."""
    import subprocess
    import sys

    data = write(tmp_path / "train.jsonl", ["the cat sat on the mat"] * 50 + ["hello world"] * 50)
    env = {**os.environ, "GPUPLAN_CACHE_DIR": str(tmp_path / "c")}
    args = [sys.executable, "-m", "gpuplan", "estimate", "--model", "llama-3.2-1b", "--task", "train", "--gpu",
            "rtx-4090", "--dataset", str(data), "--tokenizer", str(tok), "--json"]
    one, two = (subprocess.run(args, capture_output=True, text=True, env=env) for _ in range(2))
    assert one.returncode == two.returncode == 0, one.stderr + two.stderr
    assert json.loads(one.stdout) == json.loads(two.stdout)
    assert json.loads(one.stdout)["dataset"]["tokens_total"] == 50 * 6 + 50 * 2
    assert len(list((tmp_path / "c" / "datasets").glob("*.json"))) == 1


def test_the_sampling_limit_is_in_the_key(folder, tok, tmp_path, monkeypatch):
    """A file past read.SAMPLE_RECORDS is tokenized in a stride: other counts, another entry."""
    from gpuplan.dataset import read

    data = write(tmp_path / "train.jsonl", ["the cat sat", "hello", "a dog ran on the mat", "world"])
    assert counts(data, tok).content == (3, 1, 6, 1)
    monkeypatch.setattr(read, "SAMPLE_RECORDS", 2)
    sampled = counts(data, tok)
    assert sampled.content == (3, 6) and sampled.scale == 2.0
    assert len(list(folder.glob("*.json"))) == 2
