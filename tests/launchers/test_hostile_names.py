"""Names are data: every launch target written with hostile names cannot run what they hold (fuzz-report-3 S1,
issue 29 item 1).

A name holding quotes of both kinds, ``$()``, backticks, ``;``, ``&&``, ``|``, ``#``, a right-to-left override, a
zero-width space and non-ASCII letters is given as the model's folder, the dataset's file, the scenario file,
``--script``, ``--bucket`` and the output folder, through the CLI (:func:`gpuplan.cli.run`, with the command line
it echoes in every header) and through the Python API (with a ``command`` that holds line breaks). The same plan
is written again with a plain name. Then every file is read by its own format's parser (PyYAML, tomllib, json,
``ast``): the hostile reading is the plain one with the plain name replaced, so nothing was added, cut or moved.
Every shell script (and sky.yaml's ``setup`` and ``run``) passes ``bash -n`` and is run with stub commands on the
PATH that record their argv: no ``PWNED`` file appears, and the argv holds the hostile name whole where the plain
run held the plain one. A name holding a control character (newline, carriage return, NUL, escape, NEL, line
separator, a byte that is not UTF-8) is refused in one sentence with exit 2, and nothing is written.
"""

from __future__ import annotations

import ast
import io
import json
import os
import shlex
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest
import yaml

import gpuplan
from gpuplan.cli import run
from gpuplan.errors import GpuplanError
from gpuplan.launchers import TARGETS

# ${HOME} and ${oc.env:HOME}: the readers that expand ${...} (torchtune's OmegaConf, ai-toolkit's get_config) must
# read them back as written (s17-sec)
HOSTILE = ("h'q\"$(touch PWNED)`touch PWNED`;touch PWNED&&touch PWNED|touch PWNED #x RTL\u200bzw é漢 "
           "${HOME}\\${oc.env:HOME}")
PLAIN = "plainname"
# the header of every file holds the command; through the API it is free text, so it may break lines: escaped
COMMAND = "gpuplan launch\ntouch PWNED\r\u2028touch PWNED\x85touch PWNED\x0b\u202e`touch PWNED` #"
# a right-to-left override or isolate in a name prints what follows backwards (Trojan Source): refused as controls
CONTROL = ["\n", "\r", "\x00", "\x1b[2J", "\x85", "\u2028", "\udcff", "\u202e", "\u2067"]
STUBS = ("accelerate", "torchrun", "tune", "hf", "axolotl", "vllm", "python", "trtllm-serve", "pip", "llama-server",
         "simpletuner")
CONFIG = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 1000, "max_position_embeddings": 2048,
          "torch_dtype": "bfloat16"}
LOCAL, DATA = "{local}", "{data}"  # replaced by the model folder and the dataset file named after the case's name
TRAIN_DATA = {"dataset": DATA}
# one plan per group of targets: together they write all 15 targets (a test below checks it), each carrying the
# hostile name in the files that hold a name (the command line's copy is in every file's header)
CASES = {
    "hf-spot": (dict(model=LOCAL, task="train", method="lora", gpu="rtx-4090", pricing="spot", **TRAIN_DATA),
                ["trainer", "accelerate", "torchrun", "skypilot"],
                {"trainer.yaml", "accelerate-launch.sh", "torchrun.sh", "sky.yaml", "plan.json"}),
    "zero2": (dict(model=LOCAL, task="train", gpu="l40s", num_gpus=2, sharding="zero2", **TRAIN_DATA),
              ["deepspeed", "accelerate", "torchrun"], {"accelerate-launch.sh", "torchrun.sh", "plan.json"}),
    "torchtune": (dict(model="llama-3.2-1b", task="train", method="lora", gpu="l40s", stack="torchtune",
                       qlora_fp32_upcast=False, **TRAIN_DATA), ["torchtune", "skypilot"],
                  {"torchtune.yaml", "plan.json"}),
    "torchtitan": (dict(model="llama-3.1-8b", task="train", stack="torchtitan", gpu="h100-sxm5", num_gpus=8,
                        sharding="fsdp", seq_len=2048), ["torchtitan", "skypilot"], {"plan.json"}),
    "axolotl": (dict(model=LOCAL, task="train", stack="axolotl", method="qlora", gpu="l40s", pricing="spot",
                     **TRAIN_DATA), ["axolotl", "skypilot"], {"axolotl.yaml", "sky.yaml", "plan.json"}),
    "unsloth": (dict(model=LOCAL, task="train", stack="unsloth", method="qlora", gpu="rtx-4090",
                     **TRAIN_DATA), ["unsloth", "skypilot"], {"unsloth_train.py", "plan.json"}),
    "megatron": (dict(model=LOCAL, task="train", stack="megatron", gpu="h100-sxm", num_gpus=2), ["megatron"],
                 {"megatron-pretrain.sh", "plan.json"}),
    "nemo": (dict(model="llama-3.2-1b", task="train", stack="megatron", gpu="h100-sxm", num_gpus=2), ["nemo"],
             {"plan.json"}),
    "vllm": (dict(model=LOCAL, task="infer", engine="vllm", gpu="l40s"), ["vllm", "skypilot"],
             {"vllm-serve.sh", "sky.yaml", "plan.json"}),
    "sglang": (dict(model=LOCAL, task="infer", engine="sglang", gpu="l40s"), ["sglang"],
               {"sglang-serve.sh", "plan.json"}),
    "trtllm": (dict(model=LOCAL, task="infer", engine="trtllm", gpu="l40s"), ["trtllm"],
               {"trtllm-serve.sh", "plan.json"}),
    "llama.cpp": (dict(model=LOCAL, task="infer", engine="llama.cpp", quant="gguf-q4_k_m", gpu="l40s"),
                  ["llama.cpp"], {"llama-server.sh", "plan.json"}),  # the GGUF file is named after the model
}


@pytest.fixture(scope="module")
def kit(tmp_path_factory) -> dict[str, Path]:
    """A word-level tokenizer (the dataset's tokens are counted offline) and a folder of stub commands that
    append their name and argv, as JSON, to $STUB_LOG."""
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers

    root = tmp_path_factory.mktemp("kit")
    tok = Tokenizer(models.WordLevel({"[UNK]": 0, "</s>": 1, "hello": 2, "world": 3}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.add_special_tokens([AddedToken("</s>", special=True)])
    tok.save(str(root / "tokenizer.json"))
    stubs = root / "bin"
    stubs.mkdir()
    for name in STUBS:
        (stubs / name).write_text(f"#!{sys.executable}\nimport json, os, sys\n"
                                  "with open(os.environ['STUB_LOG'], 'a', encoding='utf-8') as f:\n"
                                  "    f.write(json.dumps([os.path.basename(sys.argv[0]), *sys.argv[1:]]) + '\\n')\n")
        (stubs / name).chmod(0o755)
    return {"tokenizer": root / "tokenizer.json", "bin": stubs}


def scenario_for(case: str, folder: Path, name: str, kit: dict[str, Path]) -> dict:
    """The case's scenario, its model folder and dataset file created in ``folder`` and named after ``name``."""
    local, data = folder / name, folder / f"{name}.jsonl"
    local.mkdir(exist_ok=True)
    (local / "config.json").write_text(json.dumps(CONFIG))
    data.write_text('{"text": "hello world"}\n{"text": "hello"}\n{"text": "world hello world"}\n')
    fields = {k: str(local) if v == LOCAL else str(data) if v == DATA else v for k, v in CASES[case][0].items()}
    if "dataset" in fields:
        fields["tokenizer"] = str(kit["tokenizer"])
    return fields


def write_case(case: str, folder: Path, name: str, via: str, kit: dict[str, Path], monkeypatch) -> Path:
    """Write the case's targets with ``name`` in every place a name goes, through the CLI or the API."""
    fields, targets = scenario_for(case, folder, name, kit), CASES[case][1]
    out = folder / "out" / name
    script = [f"{name}.py", "--flag", name]
    if via == "cli":
        scenario = folder / f"{name}.yaml"
        scenario.write_text(yaml.safe_dump(fields, allow_unicode=True), encoding="utf-8")
        args = ["launch", str(scenario), "--target", ",".join(targets), "--script", shlex.join(script),
                "--bucket", name, "-o", str(out)]
        monkeypatch.setattr(sys, "argv", ["gpuplan", *args])  # the command line every header echoes
        assert run(args) == 0
    else:
        gpuplan.launch(fields, targets=targets, folder=out, dataset=fields.get("dataset"), script=script,
                       bucket=name, command=f"{COMMAND} {name}")
    return out


# ---- reading the files back -----------------------------------------------------------------------------------
def swap(value, old: str = PLAIN, new: str = HOSTILE):
    """``value`` (parsed data) with every ``old`` in its strings and keys replaced by ``new``."""
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, dict):
        return {swap(k, old, new): swap(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [swap(v, old, new) for v in value]
    return value


def strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*strings(k), *strings(v))]
    return [s for v in value for s in strings(v)] if isinstance(value, list) else []


def run_shell(text: str, cwd: Path, kit: dict[str, Path]) -> list[list[str]]:
    """``bash -n``, then run ``text`` in ``cwd`` with the stubs first on the PATH (the real ``touch``, ``ls`` and
    ``sed`` after them, so an injected command would run): the argv of every stub called."""
    script = cwd / ".under-test.sh"
    script.write_text(text, encoding="utf-8")
    syntax = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert syntax.returncode == 0, syntax.stderr
    log = cwd / ".stub-log"
    log.unlink(missing_ok=True)
    env = {"PATH": f"{kit['bin']}{os.pathsep}/usr/bin{os.pathsep}/bin", "STUB_LOG": str(log), "HOME": str(cwd),
           "LANG": "C.UTF-8"}
    done = subprocess.run(["bash", str(script)], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    script.unlink()
    assert not (cwd / "PWNED").exists(), text[:2000]
    assert done.returncode == 0, done.stderr
    calls = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] if log.exists() else []
    log.unlink(missing_ok=True)
    assert calls, f"no stub ran: {text[-300:]}"
    return calls


def python_reading(text: str) -> str:
    """The Python file's syntax tree (comments are not in it); every token holding PWNED is a string or a
    comment, never code."""
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if "PWNED" in tok.string:
            assert tok.type in (tokenize.STRING, tokenize.COMMENT), tok
    return ast.parse(text)


def reading(path: Path, kit: dict[str, Path]):
    """What the file's own reader makes of it; shell text as the stubs' argv."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".sh":
        return run_shell(text, path.parent, kit)
    if path.suffix == ".py":
        return python_reading(text)
    if path.suffix == ".toml":
        import tomllib  # Python 3.11's

        return tomllib.loads(text)
    if path.name == "torchtune.yaml":  # tune run: OmegaConf.load, its ${...} resolved where the recipe reads them
        from omegaconf import OmegaConf

        return OmegaConf.to_container(OmegaConf.load(path), resolve=True)
    if path.name == "ai-toolkit.yaml":
        return ai_toolkit_reading(text)
    data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    if path.name == "sky.yaml":  # its shell parts run; its task name is a slug of the model's
        assert set(data["name"]) <= set("abcdefghijklmnopqrstuvwxyz0123456789-"), data["name"]
        data.update(name=None, setup=run_shell(data["setup"], path.parent, kit),
                    run=run_shell(data["run"], path.parent, kit))
    return data


def ai_toolkit_reading(text: str):
    """ai-toolkit's ``toolkit/config.py`` ``get_config`` (ostris/ai-toolkit 01c9f830): ``${VAR}`` replaced by the
    environment's VAR in the file's text (an unset one is an error), then the YAML read, then ``[name]`` replaced
    by the job's name in every value (``preprocess_config``)."""
    import re

    def replacer(match):
        value = os.environ.get(match.group(1))
        assert value is not None, f"ai-toolkit: environment variable {match.group(1)} not set"
        return value

    data = yaml.safe_load(re.sub(r"\$\{([^}]+)\}", replacer, text))
    return json.loads(json.dumps(data).replace("[name]", data["config"]["name"]))


def without_headers(data):
    """plan.json's and ds_config.json's copies of the header and the command (quoted as a shell echoes them)."""
    if isinstance(data, dict):
        return {k: without_headers(v) for k, v in data.items() if k not in ("written_by", "again", "header")}
    return data


def same_reading(hostile, plain) -> bool:
    if isinstance(hostile, ast.AST):
        return ast.dump(hostile) == ast.dump(_swap_constants(plain))
    return without_headers(hostile) == swap(without_headers(plain))


def _swap_constants(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            node.value = swap(node.value)
    return tree


def carries(reading_) -> bool:
    """Whether the hostile name is whole in what the reader made of the file (in a command line as a shell reads
    it: plan.json's ``written_by``)."""
    if isinstance(reading_, ast.AST):
        return any(isinstance(n, ast.Constant) and HOSTILE in str(n.value) for n in ast.walk(reading_))
    return any(HOSTILE in s or any(HOSTILE in word for word in _words(s)) for s in strings(reading_))


def _words(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:  # not a command line
        return []


@pytest.mark.parametrize("via", ["cli", "api"])
@pytest.mark.parametrize("case", list(CASES))
def test_hostile_names_stay_data(case, via, kit, tmp_path, monkeypatch):
    hostile_out = write_case(case, tmp_path, HOSTILE, via, kit, monkeypatch)
    plain_out = write_case(case, tmp_path, PLAIN, via, kit, monkeypatch)
    names = sorted(p.name for p in hostile_out.iterdir())
    assert names == sorted(p.name for p in plain_out.iterdir())
    assert {json.loads((hostile_out / "plan.json").read_text())["files"][n] for n in names if n != "plan.json"}
    carried = set()
    for name in names:
        hostile, plain = reading(hostile_out / name, kit), reading(plain_out / name, kit)
        assert same_reading(hostile, plain), name
        if carries(hostile):
            carried.add(name)
    assert CASES[case][2] <= carried, f"the hostile name did not reach {CASES[case][2] - carried}"
    assert not [p for p in tmp_path.rglob("*") if p.name == "PWNED"]
    assert not Path("PWNED").exists()


def test_the_cases_write_every_target():
    assert {t for _, targets, _ in CASES.values() for t in targets} == set(TARGETS)
    assert len(TARGETS) >= 15


# ---- names with control characters are refused ---------------------------------------------------------------
def cli_routes(folder: Path, bad: str, kit: dict[str, Path]) -> dict[str, list[str]]:
    """The launch command with ``bad`` in one name at a time (the files it names exist where they can)."""
    base = ["--task", "train", "--method", "lora", "--gpu", "rtx-4090"]
    plain = scenario_for("hf-spot", folder, PLAIN, kit)
    named = {}
    for kind, suffix in (("model", ""), ("dataset", ".jsonl"), ("scenario", ".yaml")):
        path = folder / f"{kind}{bad}x{suffix}"
        named[kind] = str(path)
        try:
            if kind == "model":
                path.mkdir()
                (path / "config.json").write_text(json.dumps(CONFIG))
            else:
                path.write_text(Path(plain["dataset"]).read_text() if kind == "dataset" else
                                yaml.safe_dump({**plain, "dataset": None, "tokenizer": None}))
        except (OSError, ValueError, UnicodeEncodeError):
            pass  # a NUL cannot be in a file name
    out = ["-o", str(folder / "out")]
    model = ["--model", plain["model"], *base]
    return {"model": ["--model", named["model"], *base, *out],
            "dataset": [*model, "--dataset", named["dataset"], "--tokenizer", str(kit["tokenizer"]), *out],
            "scenario file": [named["scenario"], *out],
            "--script": [*model, "--script", f"train{bad}.py", *out],
            "--bucket": [*model, "--pricing", "spot", "--bucket", f"b{bad}", *out],
            "-o": [*model, "-o", str(folder / f"out{bad}x")]}


@pytest.mark.parametrize("bad", CONTROL, ids=[ascii(c) for c in CONTROL])
def test_control_characters_are_refused_and_nothing_is_written(bad, kit, tmp_path, capsys):
    for route, args in cli_routes(tmp_path, bad, kit).items():
        before = set(tmp_path.rglob("*"))
        assert run(["launch", *args]) == 2, route
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and ("control character" in err or "not UTF-8" in err), (route, err)
        assert set(tmp_path.rglob("*")) == before, route


@pytest.mark.parametrize("bad", ["\n", "\x00", "\u2028"], ids=ascii)
def test_the_api_refuses_control_characters_and_writes_nothing(bad, kit, tmp_path):
    fields = scenario_for("hf-spot", tmp_path, PLAIN, kit)
    routes = {"model": ({**fields, "model": fields["model"] + bad}, {}),
              "dataset": (fields, {"dataset": fields["dataset"] + bad}),
              "script": (fields, {"script": [f"train{bad}.py"]}),
              "bucket": (fields, {"bucket": f"b{bad}"}),
              "folder": (fields, {"folder": tmp_path / f"out{bad}"})}
    for route, (scenario, options) in routes.items():
        before = set(tmp_path.rglob("*"))
        with pytest.raises(GpuplanError, match="control character"):
            gpuplan.launch(scenario, targets=["trainer", "torchrun", "skypilot"],
                           **{"folder": tmp_path / "out", **options})
        assert set(tmp_path.rglob("*")) == before, route


# ---- command lines that the notes hold for pasting --------------------------------------------------------------
def test_a_pasted_command_line_gives_back_its_words(tmp_path):
    """:func:`pasted` (the notes' ``run:`` lines, llama-quantize, ModelOpt's example): bash, given the line with
    ``printf`` as the command, prints each word whole, the assignment's value included, and runs none of it."""
    from gpuplan.launchers.files import pasted

    line = pasted(["printf", "%s\\n", HOSTILE, f"x{HOSTILE}.gguf", "plain"], {"GGUF": f"path/to/{HOSTILE}"})
    assert shlex.split(line) == [f"GGUF=path/to/{HOSTILE}", "printf", "%s\\n", HOSTILE, f"x{HOSTILE}.gguf", "plain"]
    done = subprocess.run(["bash", "-c", line + '; printf "%s\\n" "${GGUF-unset}"'], cwd=tmp_path,
                          env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}, capture_output=True, text=True)
    assert done.stdout.splitlines() == [HOSTILE, f"x{HOSTILE}.gguf", "plain", "unset"]
    assert not (tmp_path / "PWNED").exists()
