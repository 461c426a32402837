"""`gpuplan launch --engine llama.cpp --target llama.cpp`: llama-server's command carries the buffers the estimate
assumed (engines/llama_cpp.py), every option is one llama-server knows (its --help, captured), and the written script
starts a real llama-server on a tiny GGUF that answers a completion (the smoke run, gpuplan.launchers.smoke_serve).
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from gpuplan.launchers import launch_files, launch_plan, targets_for
from gpuplan.launchers.settings import LaunchOptions
from gpuplan.launchers.smoke_serve import LLAMA_CPP_COMMIT, TOKENS, llama_server
from gpuplan.scenario import scenario_from

SERVE = dict(model="llama-3.1-8b", task="infer", engine="llama.cpp", quant="gguf-q4_k_m", gpu="rtx-4090",
             batch_size=4, prompt_tokens=1000, output_tokens=200)
CONFIG = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 1000, "max_position_embeddings": 2048}
HELP = Path(__file__).resolve().parents[1] / "data" / "llama.cpp" / "llama-server-help.txt"


def script(scenario: dict) -> str:
    return {f.name: f.text for f in launch_files(launch_plan(scenario), ["llama.cpp"], LaunchOptions())}[
        "llama-server.sh"]


def flags(scenario: dict) -> dict[str, str]:
    lines = [line for line in script(scenario).splitlines() if line and not line.startswith(("#", "set ", "GGUF="))]
    argv = shlex.split(" ".join(lines).replace("\\ ", " "))
    assert argv[0] == "llama-server"
    return dict(zip(argv[1::2], argv[2::2], strict=True))


def test_the_command_sets_the_buffers_the_estimate_counted():
    """4 requests of 1,000 + 200 tokens: 4 slots of their own (-np 4) sharing -c 4 x 1,200 = 4,800 cells, the KV
    buffer the estimate counts; all 32 layers and the output head on the card (-ngl 33: llama.cpp counts the output
    as the 33rd); the micro-batch the compute buffer was sized at (512), flash attention auto, f16 cache."""
    f = flags(SERVE)
    assert f == {"-m": "$GGUF", "-c": "4800", "-np": "4", "-ngl": "33", "-ub": "512", "-fa": "auto", "-ctk": "f16",
                 "-ctv": "f16", "--port": "8000"}
    assert "GGUF=${GGUF:-Llama-3.1-8B-Q4_K_M.gguf}" in script(SERVE)


def test_layers_left_in_system_ram_stay_there():
    """The 70B Q4_K_M on a 24 GB card with cpu_layers: the estimate keeps 44 of 80 layers on the card, so -ngl 45
    (those and the output), and the notes say where the other 36 run."""
    s = {**SERVE, "model": "llama-3.1-70b", "cpu_layers": True, "batch_size": 1}
    plan = launch_plan(s)
    assert (plan.result.memory.gpu_layers, plan.result.memory.offloaded_layers) == (44, 36)
    assert flags(s)["-ngl"] == "45"
    assert "44 of 80 layers and the output on the GPU; the other 36 run from system RAM" in script(s)


def test_cache_type_micro_batch_and_a_split_over_two_cards():
    f = flags({**SERVE, "kv_cache_dtype": "int8", "ubatch_tokens": 4096, "flash_attention": "on"})
    assert (f["-ctk"], f["-ctv"], f["-ub"], f["-b"], f["-fa"]) == ("q8_0", "q8_0", "4096", "4096", "on")
    split = flags({**SERVE, "gpu": "rtx-3090", "extra_gpus": ["rtx-3060"], "tensor_split": [3, 1]})
    assert (split["-sm"], split["-ts"]) == ("layer", "3,1")
    assert flags({**SERVE, "gpu": "rtx-3090", "num_gpus": 2, "pp": 2})["-ts"] == "1,1"


def test_a_split_over_mixed_cards_launches_the_plan_estimate_makes():
    """Session 24's walk: an RTX 4070 beside an RTX 3060 was launched as two RTX 4070s (`plan: 2x GeForce RTX
    4070`), predicted at 187 tokens/s and priced at $0.06/h with `-ts 1,1`, where estimate composes each card's plan
    (141 tokens/s), splits by memory as llama.cpp does and prices nothing (no offer rents a mixed pair). The launch
    reads estimate's plan (plan/split.py), so the two say one thing."""
    import gpuplan

    s = {**SERVE, "gpu": "rtx-4090", "extra_gpus": ["rtx-3060"], "batch_size": 3}
    plan, est = launch_plan(s), gpuplan.estimate(s)
    assert plan.speed.tokens_per_s == pytest.approx(est.speed.tokens_per_s)
    assert plan.result.memory.device_peak_gib == pytest.approx(est.memory.device_peak_gib)
    assert plan.usd_per_hour is None and est.cost is None
    assert plan.setup_label == "GeForce RTX 4090 + GeForce RTX 3060 12GB, llama.cpp layer split"
    assert flags(s)["-ts"] == "23.88,11.94"  # by each card's memory (usable GiB), as estimate split it
    text = script(s)
    # the memory line is the fullest device's (the 3060's 11.9 usable, not the 4090's 23.9), as llama.cpp logs it
    peak = next(line for line in text.splitlines() if line.startswith("# predicted on the fullest device"))
    assert peak.startswith(f"# predicted on the fullest device, GeForce RTX 3060 12GB: device peak "
                           f"{est.memory.device_peak_gib:.1f} GiB of 11.9 (")
    assert "llama-server's load log" in peak and "torch.cuda" not in text
    said = next(line for line in text.splitlines() if line.startswith("# predicted: "))
    assert said.startswith(f"# predicted: {est.speed.tokens_per_s:,.0f} tokens/s") and "$" not in said


def test_only_llama_cpp_plans_take_the_target():
    assert targets_for(launch_plan(SERVE)) == ["llama.cpp"]
    with pytest.raises(Exception, match=r"plan again with --engine llama\.cpp"):
        targets_for(launch_plan({**SERVE, "engine": "vllm", "quant": None}), ["llama.cpp"])


def test_every_option_is_one_llama_server_knows():
    """The options written for every kind of plan above are in the ``llama-server --help`` of the llama.cpp commit
    the smoke run builds (captured from that build)."""
    known = set(re.findall(r"(?<![\w-])(-{1,2}[a-z][a-z0-9-]*)", HELP.read_text()))
    assert LLAMA_CPP_COMMIT[:7] in HELP.read_text().splitlines()[0]
    written = set()
    for s in (SERVE, {**SERVE, "kv_cache_dtype": "int8", "ubatch_tokens": 4096},
              {**SERVE, "gpu": "rtx-3090", "num_gpus": 2, "pp": 2}):
        written |= {k for k in flags(s) if k.startswith("-")}
    assert {"-c", "-np", "-ngl", "-ub", "-b", "-fa", "-ctk", "-ctv", "-sm", "-ts", "--port", "-m"} <= written
    assert written <= known, written - known


def test_the_script_takes_the_gguf_from_the_environment(tmp_path):
    """A stub llama-server prints its argv: -m is $GGUF when set, else the default file name in the folder."""
    (tmp_path / "llama-server.sh").write_text(script(SERVE))
    stub = tmp_path / "bin" / "llama-server"
    stub.parent.mkdir()
    stub.write_text('#!/bin/sh\nprintf "%s\\n" "$@"\n')
    stub.chmod(0o755)
    path = f"{stub.parent}:/usr/bin:/bin"
    for env, expected in (({}, "Llama-3.1-8B-Q4_K_M.gguf"), ({"GGUF": "/models/my file.gguf"}, "/models/my file.gguf")):
        out = subprocess.run(["bash", "llama-server.sh"], cwd=tmp_path, env={"PATH": path, **env}, check=True,
                             capture_output=True, text=True).stdout.splitlines()
        assert out[out.index("-m") + 1] == expected


HOSTILE = "m$(touch PWNED)`touch PWNED`;touch PWNED&&x|y 'q\"#${HOME}\\é"


def pasted_lines(text: str) -> dict[str, str]:
    """The two command lines the notes hold for pasting: the run line and the llama-quantize step."""
    run = next(line for line in text.splitlines() if line.startswith("# run: "))
    quantize = next(line for line in text.splitlines() if "llama-quantize" in line)
    return {"run": run.removeprefix("# run: ").split(" (default: ")[0],
            "quantize": quantize[quantize.index("llama-quantize"):]}


def test_the_notes_command_lines_keep_a_hostile_model_name_one_word(tmp_path):
    """A model folder named with ``$()``, backticks, ``;``, ``&&``, ``|``, quotes, ``#`` and ``${HOME}``: each
    command line of the notes, pasted into bash (``bash`` and ``llama-quantize`` replaced by functions that print
    their argv), runs nothing the name holds and passes the GGUF's name as one word (s27-sec)."""
    folder = tmp_path / HOSTILE
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(CONFIG))
    gguf = f"{HOSTILE}-Q4_K_M.gguf"
    lines = pasted_lines(script({**SERVE, "model": str(folder)}))
    stubs = 'bash() { printf "%s\\n" "$GGUF" "$@"; }; llama-quantize() { printf "%s\\n" "$@"; }; '
    said = {}
    for name, line in lines.items():
        done = subprocess.run(["bash", "-c", stubs + line], cwd=tmp_path, env={"PATH": "/usr/bin:/bin"},
                              capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, (line, done.stderr)
        said[name] = done.stdout.splitlines()
    assert not (tmp_path / "PWNED").exists(), lines
    assert said == {"run": [f"path/to/{gguf}", "llama-server.sh"], "quantize": ["F16.gguf", gguf, "Q4_K_M"]}


def test_the_written_script_serves_a_tiny_gguf(tmp_path):
    """The smoke run: qwen2.5-0.5b's plan on a tiny Qwen2 (2 layers, 64 wide, random weights) written as an f16
    GGUF by gguf-py, llama-server started by the written script, one completion of TOKENS tokens answered. Its log
    shows the slots the plan asked for (-np 2) and each slot's cells: the plan's 64 + 16 = 80, which llama.cpp pads
    to 256 (src/llama-context.cpp: ``n_ctx_seq = GGML_PAD(n_ctx / n_seq_max, 256)``)."""
    binary = llama_server()
    if binary is None:
        pytest.skip("no llama-server: build it with `python bench/llama_server.py` (.ci/run does; ~9 CPU-minutes, "
                    "once per machine)")
    pytest.importorskip("gguf")
    from gpuplan.launchers.smoke_serve import smoke_llama_cpp

    s = scenario_from(dict(model="qwen2.5-0.5b", task="infer", engine="llama.cpp", gpu="l40s", batch_size=2,
                           quant="gguf-q8_0"))
    plan, run = smoke_llama_cpp(s, tmp_path, binary)
    assert plan.model.num_layers == 2 and plan.model.hidden_size == 64 and plan.scenario.batch_size == 2
    assert flags_of(tmp_path / "llama-server.sh")[:4] == ["-c", "160", "-np", "2"]
    assert run.ready, run.tail
    assert run.tokens == TOKENS and run.text, run.tail
    log = (tmp_path / "llama-server.log").read_text(errors="replace")
    slots = re.search(r"n_slots = (\d+), n_ctx_slot = (\d+)", log)
    assert slots and slots.groups() == ("2", "256"), log[-2000:]
    assert run.passed


def flags_of(path: Path) -> list[str]:
    """The options after ``-m "$GGUF"`` in a written llama-server.sh."""
    lines = [line for line in path.read_text().splitlines() if line and not line.startswith(("#", "set ", "GGUF="))]
    argv = shlex.split(" ".join(lines).replace("\\ ", " "))
    return argv[3:]


def test_smoke_of_a_serving_plan_says_what_it_needs(tmp_path, capsys, monkeypatch):
    """`gpuplan launch --smoke` of a serving plan runs llama.cpp's only: another engine needs a GPU, and without a
    llama-server the answer is one sentence saying where to get one (exit 2, nothing written)."""
    from gpuplan.cli import run
    from gpuplan.launchers import smoke_serve

    base = ["launch", "--model", "qwen2.5-0.5b", "--task", "infer", "--gpu", "l40s", "--smoke", "-o", str(tmp_path)]
    assert run([*base, "--engine", "vllm"]) == 2
    assert "engine vllm needs a GPU" in capsys.readouterr().err
    monkeypatch.setattr(smoke_serve, "llama_server", lambda: None)
    assert run([*base, "--engine", "llama.cpp"]) == 2
    assert "needs llama.cpp's llama-server on PATH" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())
