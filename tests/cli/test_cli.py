"""The CLI end to end, as a person or a script calls it."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def gpuplan(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpuplan.cli", *args], capture_output=True, text=True)


def test_model_json_reports_exact_params():
    proc = gpuplan("model", "llama-3.1-8b", "--json")
    assert proc.returncode == 0, proc.stderr
    facts = json.loads(proc.stdout)
    assert facts["params_total"] == 8_030_261_248
    assert facts["kv_bytes_per_token_bf16_total"] == 131_072
    assert facts["weight_bytes"]["bf16"] == 8_030_261_248 * 2


def test_model_table():
    proc = gpuplan("model", "gpt-oss-20b")
    assert proc.returncode == 0
    assert "20,914,757,184 parameters" in proc.stdout and "mxfp4" in proc.stdout


def test_models_filters_and_json():
    proc = gpuplan("models", "--moe", "--json", "--sort", "params")
    rows = json.loads(proc.stdout)
    assert [r["moe"] for r in rows] == [True] * 31  # 26 + Qwen3.6, Gemma 4 26B, MiniMax-M2.7, V4-Pro, GLM-5.1
    assert [r["params_total"] for r in rows] == sorted(r["params_total"] for r in rows)
    rows = json.loads(gpuplan("models", "--family", "qwen2", "--max-params", "2", "--json").stdout)
    assert {r["name"] for r in rows} == {"Qwen/Qwen2.5-0.5B", "Qwen/Qwen2.5-1.5B",
                                        "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B"}


def test_version():
    assert gpuplan("--version").stdout.startswith("gpuplan ")


@pytest.mark.parametrize("args, text", [
    (("model", "lama-3.1-8b"), "did you mean"),
    (("ESTIMATE",), "No such command 'ESTIMATE'. Did you mean 'estimate'?"),  # s20-fuzz2: click compares as typed
    (("model", "./missing/config.json"), "no such file"),
    (("models", "--sort", "size"), "--sort must be one of"),
    (("model", "None"), "unknown model 'None'. Run `gpuplan models`"),  # the fuzz report's run-together sentence
    (("table", "--catalog", ""), "--catalog needs the path of an offers CSV, got an empty string"),
    (("estimate", "--model", "gpt2", "--task", "infer", "--sharding", "fsdp"), "does not apply to serving"),
    (("estimate", "--model", "gpt2", "--task", "train", "--train-tokens", "inf"), "finite number"),
    (("recommend", "--model", "gpt2", "--task", "infer", "--top", "-1"), "top must be a whole number from 1"),
    (("buy", "4090", "--pue", "nan"), "--pue must be a number from 1 to 3"),
])
def test_bad_input_is_one_red_line_exit_2(args, text):
    proc = gpuplan(*args)
    assert proc.returncode == 2
    assert text in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") == 0


def test_usage_error_exit_2():
    proc = gpuplan("model", "llama-3.1-8b", "--bogus")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


@pytest.mark.parametrize("command", [(), ("models",), ("model",), ("estimate",), ("recommend",), ("table",),
                                     ("cost",), ("gpus",), ("buy",)])
def test_help_teaches(command):
    proc = gpuplan(*command, "--help")
    assert proc.returncode == 0 and "Usage" in proc.stdout
    if command in (("recommend",), ("estimate",)):
        assert "Example" in proc.stdout  # the help shows a command to copy


def test_estimate_json_and_flags_override_file(tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text("model: llama-3.1-8b\ntask: infer\nbatch_size: 4\nprompt_tokens: 2048\noutput_tokens: 0\n")
    proc = gpuplan("estimate", str(job), "--batch-size", "1", "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["scenario"]["batch_size"] == 1
    mem = result["memory"]
    assert mem["kv_cache_gib"] == pytest.approx(2048 * 131_072 / 2**30)
    assert mem["allocated_peak_gib"] <= mem["reserved_peak_gib"] <= mem["device_peak_gib"]


def test_estimate_table_names_parts_and_phase():
    proc = gpuplan("estimate", "--model", "qwen2.5-0.5b", "--task", "train", "--method", "lora",
                   "--lora-targets", "q_proj,v_proj", "--seq-len", "512")
    assert proc.returncode == 0, proc.stderr
    assert "allocated peak" in proc.stdout and "optimizer states" in proc.stdout


@pytest.mark.parametrize("args, text", [
    (("estimate", "--model", "llama-3.1-8b", "--task", "train", "--micro-batch-size", "x"), "--micro-batch-size"),
    (("estimate", "--model", "llama-3.1-8b", "--task", "train", "--sharding", "zero3"), "num_gpus >= 2"),
    (("estimate", "--model", "llama-3.1-8b"), "'task' is required"),
    (("estimate", "missing.yaml"), "no scenario file"),
])
def test_estimate_bad_input(args, text):
    proc = gpuplan(*args)
    assert proc.returncode == 2 and text in proc.stderr and "Traceback" not in proc.stderr


def test_gpus_list_filter_and_compare():
    rows = json.loads(gpuplan("gpus", "--nvlink", "--min-memory", "80", "--json").stdout)
    assert rows and all(r["nvlink_gbs"] and r["memory_gib"] >= 80 for r in rows)
    proc = gpuplan("gpus", "compare", "4090", "a6000", "rtx 6000 ada")
    assert proc.returncode == 0 and "165.2" in proc.stdout and "accumulates in FP32" in proc.stdout
    proc = gpuplan("gpus", "compare", "H100", "4090")  # an ambiguous name: the SXM board, said on stderr
    assert proc.returncode == 0 and "H100 taken as" in proc.stderr


def test_gpus_compare_says_a_card_has_no_nvlink():
    """The Spanish guide's comparison gives the RTX 6000 Ada 'NVLink 2-way'; Ada dropped NVLink (gpus.yaml:
    nvlink false), but `gpus compare` left the cell blank, as it does for a figure the catalog lacks."""
    proc = gpuplan("gpus", "compare", "4090", "a6000", "rtx 6000 ada", "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    row = next(r for r in csv.reader(proc.stdout.splitlines()) if r and r[0].startswith("NVLink"))
    assert row[1:] == ["none", "112", "none"]


def test_gpus_compare_names_the_fp16_rate_it_shows_for_a_card_without_bf16():
    """Session 24's fuzz: the 2080 Ti's and T4's 'bf16' cells held their fp16 rates (53.8 and 65.0 TFLOPS, FP32
    accumulate) beside a catalog that says they have no bf16; the row's label says which figure it is."""
    proc = gpuplan("gpus", "compare", "2080 ti", "t4", "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    row = next(r for r in csv.reader(proc.stdout.splitlines()) if r and r[0].startswith("bf16"))
    assert row == ["bf16 dense TFLOPS (fp16 without bf16)", "53.8", "65.0"]


def test_cost_json_sorted_by_total():
    proc = gpuplan("cost", "--model", "llama-3.2-1b", "--task", "train", "--method", "lora",
                   "--train-tokens", "1e8", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)["rows"]
    totals = [r["usd_total"] for r in rows]
    assert rows and totals == sorted(totals)
    assert all(r["pricing"] == "on_demand" for r in rows)


def test_buy_hours_of_use_against_renting_the_same_cards():
    """Without workloads, --hours of use (or --utilization, the share of the horizon's hours) against the cheapest
    recent on-demand rental of the same cards (Hyperbolic's 4090 at $0.23/h in the bundled snapshot); the cards at a
    dated street price unless --price (docs/owning.md; tests/owning has the arithmetic)."""
    proc = gpuplan("buy", "4090", "--hours", "8000", "--json")
    assert proc.returncode == 0, proc.stderr
    b = json.loads(proc.stdout)
    own = b["builds"][0]
    assert own["build"]["card"]["kind"] == "street new" and own["build"]["card"]["usd"] == 1700
    assert own["ownership"]["busy_hours"] == pytest.approx(8000)
    rent = b["rentals"][0]["jobs"][0]
    assert rent["usd_per_hour"] == pytest.approx(0.23)
    assert rent["usd_per_year"] == pytest.approx(0.23 * 8000)
    two = json.loads(gpuplan("buy", "2x4090", "--price", "1800", "--host-usd", "1200", "--host-w", "150",
                             "--pue", "1.4", "--hours", "3000", "--json").stdout)["builds"][0]
    assert two["build"]["count"] == 2 and two["ownership"]["purchase_usd"] == 2 * 1800 + 1200
    assert two["ownership"]["busy_w"] == 2 * 450 + 150
    assert gpuplan("buy", "l40s", "--hours", "100").returncode == 2  # no public price: --price needed
    priced = json.loads(gpuplan("buy", "l40s", "--price", "25000", "--hours", "100", "--json").stdout)
    assert priced["builds"][0]["ownership"]["cards_usd"] == 25000
    for bad in (("--hours", "inf"), ("--pue", "nan"), ("--usd-per-kwh", "-1"), ("--utilization", "-5"), ()):
        assert gpuplan("buy", "4090", *bad).returncode == 2


@pytest.mark.parametrize("name", ["full-llama-8b-zero3", "qlora-llama-70b", "serve-llama-70b-vllm"])
def test_the_shipped_examples_fit_where_their_comments_say(name):
    """The examples/ files a user copies first: each names its GPU, and each fits there (the serving one in
    FP8: in bf16, Llama-3.1-70B's 65.7 GiB of weights per H100 leave vLLM's 0.9 budget no KV pool)."""
    from pathlib import Path

    from gpuplan import estimate
    from gpuplan.scenario import load_scenario

    r = estimate(load_scenario(str(Path(__file__).parents[2] / "examples" / f"{name}.yaml")))
    assert r.memory.fits is True and r.memory.headroom_gib > 0
    if name == "serve-llama-70b-vllm":
        assert r.memory.max_concurrency >= 32
        bf16 = estimate(r.scenario | {"quant": None})
        assert bf16.memory.fits is False and bf16.memory.max_concurrency == 0
        assert any("KV pool 0.0 ->" in sug.change and sug.fits for sug in bf16.suggestions)


def _help_texts() -> dict[str, str]:
    """Every command's and group's --help, by its path (``gpuplan``, ``gpuplan prices update``...)."""
    import click
    import typer

    from gpuplan.cli import app

    def walk(cmd, path):
        yield path, cmd
        for name, sub in getattr(cmd, "commands", {}).items():
            yield from walk(sub, [*path, name])

    texts = {}
    for path, cmd in walk(typer.main.get_command(app), ["gpuplan"]):
        with click.Context(cmd, info_name=" ".join(path), terminal_width=120) as ctx:
            texts[" ".join(path)] = cmd.get_help(ctx)
    return texts


def test_every_help_prints_its_examples_one_per_line():
    """Click rewraps a docstring paragraph unless it opens with \\b: `capacity`, `launch`, `prices update` and
    `serve` printed their examples run together on one line ("Examples:   gpuplan launch ... -o run/   gpuplan
    launch ..."). Every command's help keeps one example command per line."""
    checked = 0
    for path, text in _help_texts().items():
        if "Examples:" not in text:
            continue
        examples = text.split("Examples:", 1)[1]
        assert all(line.count("gpuplan ") <= 1 for line in examples.splitlines()), (path, examples[:300])
        checked += 1
    assert checked >= 10


def test_every_file_a_help_example_reads_is_in_the_repository():
    """`gpuplan buy --help` showed `--workloads hobby.yaml`, a file the repository does not hold (docs/owning.md's
    copy of the example was moved to examples/owning-example.yaml in session 17, the help's was not:
    docs_audit_s18.md). Every scenario, workload or module a help example reads is a file of the repository (the
    examples run from its root); the files a user brings from elsewhere (benchmark results, probe records, price
    lists) are named here with where they come from."""
    theirs = {"probes/*.json": "gpuplan probe's records, written on a GPU",
              "run-2rps.json": "the user's vllm bench serve results", "run-8rps.json": "the same",
              "my-offers.csv": "the user's negotiated prices", "vms.csv": "a SkyPilot catalog the user downloaded"}
    read = set()
    for text in _help_texts().values():
        for line in text.split("Examples:", 1)[1].splitlines() if "Examples:" in text else []:
            if "gpuplan " not in line:
                continue  # the section's prose
            words = line.split("#", 1)[0].split("gpuplan ", 1)[1].split()
            outputs = {words[i + 1] for i, w in enumerate(words[:-1]) if w in ("-o", "--out", "--plot", "--launch-dir")}
            read |= {w.strip("'\"") for w in words if re.search(r"\.(ya?ml|json|csv|py)$", w) and w not in outputs}
            read |= {w.split(":")[0].replace(".", "/") + ".py" for w in words if re.match(r"examples\.\w+:\w+$", w)}
    assert "examples/weekly-8b-finetunes.yaml" in read and "examples/my_model.py" in read
    missing = sorted(f for f in read - set(theirs) if not (ROOT / f).is_file())
    assert missing == [], f"help examples read files the repository does not hold: {missing}"


def test_the_help_s_defaults_are_the_code_s():
    """`capacity --help` named the presets without their lengths and `--mtbi-hours` had no default (session 18's
    docs audit); the figures the help now gives are the ones the code takes: each preset's mean prompt and output
    tokens (serving/workload.py PRESETS, clipped as the plans take them) and the spot priors market/cost.py
    default_mtbi_h reads from data/providers.yaml."""
    from gpuplan.market.cost import default_mtbi_h
    from gpuplan.serving.workload import PRESETS, Workload

    texts = {path: " ".join(text.split()) for path, text in _help_texts().items()}
    preset = texts["gpuplan capacity"].split("--preset <str>", 1)[1].split("--prompt-tokens", 1)[0]
    said = dict(re.findall(r"\b([a-z]+) (\d+/\d+)", preset))
    assert set(said) == set(PRESETS)
    for name in PRESETS:
        w = Workload(preset=name)
        assert said[name] == f"{w.mean_prompt_tokens:.0f}/{w.mean_output_tokens:.0f}", name
    mtbi = texts["gpuplan estimate"].split("--mtbi-hours FLOAT", 1)[1].split("--disk-gbs", 1)[0]
    assert f"{default_mtbi_h(1):g} under 8 GPUs, {default_mtbi_h(8):g} from 8" in mtbi
    assert default_mtbi_h(7) == default_mtbi_h(1)


def test_every_command_s_help_has_an_example():
    """Session 9's walk: `gpuplan prices --help` and `gpuplan gpus compare --help` showed no example where every
    other command shows some (the third review's Q10 found `prices`, `gpus` and `table` without); session 18's docs
    audit: `gpuplan --help`, the first a new user types, showed none either."""
    texts = _help_texts()
    missing = [path for path, text in texts.items() if "Example:" not in text and "Examples:" not in text]
    assert len(texts) >= 20 and "gpuplan" in texts and "gpuplan prices update" in texts
    assert missing == [], missing


def test_every_command_is_named_in_the_lazy_table_with_its_module():
    """The root group imports a command's module when the command is named (gpuplan.cli.commands.COMMANDS): every
    command and group the modules register is in that table, with the module that registers it, and the table
    names nothing else."""
    import typer

    from gpuplan.cli import app
    from gpuplan.cli.commands import COMMANDS

    root = typer.main.get_command(app)
    listed = root.list_commands(None)  # loads every module
    assert listed == list(COMMANDS)
    homes = {c.name: c.callback.__module__ for c in app.registered_commands}
    homes |= {g.name: g.typer_instance.registered_commands[0].callback.__module__ for g in app.registered_groups}
    assert homes == {name: f"gpuplan.cli.{module}" for name, module in COMMANDS.items()}


def test_the_stack_help_names_trl_under_hf(capsys):
    """s18 walk: a student comparing "Unsloth vs axolotl vs TRL" tried --stack trl and was refused with the list of
    stacks, none of them TRL. hf is the Trainer TRL's SFTTrainer subclasses (launch writes `-m trl.scripts.sft` for
    it): --stack's help says so."""
    from gpuplan.cli import run

    assert run(["estimate", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "hf: the Hugging Face Trainer with peft, as TRL's SFTTrainer runs it" in text


@pytest.mark.parametrize("command", ["simulate", "estimate", "recommend", "cost", "fit"])
def test_the_module_option_says_it_runs_the_code_it_names(command):
    """--module imports and calls the function it names (by design, the one option that runs code a user points
    at: docs/security.md); its help says so (s19-sec: it said "run once on fake tensors" only)."""
    proc = gpuplan(command, "--help")
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    assert "imports and runs that code from the current folder, as python -m does: name only your own" in text


def test_the_help_s_unset_values_are_the_code_s():
    """Session 20's docs audit: `buy --count`, `--host-usd`, `--host-idle-w` and `--hours`, `prices --max-age`,
    `capacity --rate`, `simulate --layers`, `calibrate-serving --out` and the scenario's `--provider` took a value
    without saying what leaving them out does. Each help now says it, and says what the code does: a bare card is
    one of it in the smallest host at that profile's price and idle draw, no hours is refused, and prices of every
    age are listed (estimate's 90-day cut is its own --max-price-age-days)."""
    from gpuplan import api
    from gpuplan.errors import GpuplanError
    from gpuplan.owning.facts import host_for

    texts = {path: " ".join(text.split()) for path, text in _help_texts().items()}
    buy = texts["gpuplan buy"]
    for said in ("[default: the build's COUNTx, else 1]", "USD [default: the host profile's dated price",
                 "idle draw, W [default: the profile's]", "(this, --utilization or --workloads is needed)"):
        assert said in buy, said
    assert "[default: any age]" in texts["gpuplan prices"]
    assert "unset with no --users or --batch: each setup's most within the SLOs" in texts["gpuplan capacity"]
    assert "[default: two depths a layer pattern apart" in texts["gpuplan simulate"]
    assert "[default: none written]" in texts["gpuplan calibrate-serving"]
    assert "default: every provider's" in texts["gpuplan estimate"]
    build = api.buy("3090", hours=100).builds[0].build
    profile = host_for(1)
    assert (build.count, build.host, build.host_usd, build.host_idle_w) == (1, profile.id, profile.usd,
                                                                             profile.idle_w)
    with pytest.raises(GpuplanError, match="--hours"):
        api.buy("3090")
    assert len(api.prices().rows) > len(api.prices(max_age=90).rows) > 0
