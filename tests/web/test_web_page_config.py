"""A model's own config.json chosen on the page (review 3, Q9: "no config.json upload for non-bundled models"), in a
real headless Chromium: the file is uploaded, the model field carries its reference, and the verdict, memory and
speed are the numbers ``gpuplan estimate --model config.json --json`` prints for the same file. The server and
browser are test_web_page.py's (Debian's chromium; these tests skip without it)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from test_web_config import CONFIG, PARAMS
from test_web_page import browser, page, server, settle, value  # noqa: F401 (fixtures)


def test_a_config_file_gives_the_cli_plan(server, page, tmp_path):  # noqa: F811
    folder = tmp_path / "config.json"  # the CLI names a folder's config.json after the folder: as the page does
    folder.mkdir()
    path = folder / "config.json"
    path.write_text(json.dumps(CONFIG))
    proc = subprocess.run([sys.executable, "-m", "gpuplan", "estimate", "--model", str(path), "--task", "train",
                           "--method", "lora", "--gpu", "rtx-4090", "--json"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    cli = json.loads(proc.stdout)
    page.goto(server + "/?model=llama-3.2-1b&task=train&method=lora&gpu=rtx-4090")
    settle(page)
    page.set_input_files("#f-model-config", str(path))
    page.wait_for_function("() => document.getElementById('f-model-config-status').textContent.endsWith('bytes')")
    settle(page)
    assert page.get_attribute("#verdict", "data-fits") != "error", page.text_content("#verdict")
    ref = page.input_value("#f-model")
    assert ref.startswith("upload:") and ref.endswith("/config.json")
    assert cli["model"]["params_total"] == PARAMS
    assert page.text_content("#model-facts").startswith("config.json (llama): ")
    peak = float(page.get_attribute("#verdict", "data-peak"))
    assert peak == pytest.approx(cli["memory"]["device_peak_gib"], rel=1e-12)
    assert value(page, 'details[data-key="speed.tokens_per_s"] .value') == pytest.approx(cli["speed"]["tokens_per_s"])
    assert "--model config.json" in page.text_content("#export-command")
    assert "model=upload%3A" in page.url  # the permalink reopens the upload while the server keeps the file
    assert "gpuplan-uploads" not in page.content()


def test_a_config_the_reader_refuses_shows_its_sentence(server, page, tmp_path):  # noqa: F811
    path = tmp_path / "config.json"
    path.write_text("[1, 2]")
    page.goto(server + "/?model=llama-3.2-1b&task=train&method=lora&gpu=rtx-4090")
    settle(page)
    page.set_input_files("#f-model-config", str(path))
    page.wait_for_function("() => document.getElementById('f-model-config-status').textContent.endsWith('bytes')")
    settle(page)
    assert page.get_attribute("#verdict", "data-fits") == "error"
    assert "holds a JSON list, not a config.json object" in page.text_content("#verdict")
    assert "gpuplan-uploads" not in page.text_content("#verdict")
