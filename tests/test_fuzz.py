"""Property-based fuzzing of the Python API and the CLI (hypothesis): whatever comes in, the answer is sane or
one clear line with exit code 2, never a traceback and never NaN, Infinity or a negative amount.

Cases mix valid values (bundled models, GPUs, every field's choices) with what an outside fuzzer tried: NaN and
Infinity, tiny and huge numbers, negative counts, strings with brackets and non-ASCII text, empty values, long
names, configs with broken fields, probe records and price files that are not what they claim. ``fit``,
``capacity`` and ``launch`` also get generated valid inputs, on which they must answer (exit 0, the JSON keys and
files they promise). The CLI runs in process (:func:`gpuplan.cli.run`), so a case takes milliseconds; ~2,700 cases
run in CI.

A run draws a third of those cases, seeded by the run's round (tests/sampling.py: the date, or
``GPUPLAN_SWEEP_SEED``), so that each day explores other inputs and a failure is reproduced with the seed the
run's header prints; ``GPUPLAN_SWEEP=all`` draws every case. ``GPUPLAN_FUZZ_SEED=<int>`` seeds the fuzzing alone,
and ``GPUPLAN_FUZZ_SCALE=<x>`` runs x times as many cases.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import re

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

import gpuplan
from gpuplan import GpuplanError
from sampling import every_item, sweep_round

SCALE = float(os.environ.get("GPUPLAN_FUZZ_SCALE", "1")) * (1 if every_item() else 1 / 3)
SEED = int(os.environ.get("GPUPLAN_FUZZ_SEED") or sweep_round())


def fuzz_settings(examples: int):
    # a case may take 120 s at most: far above the slowest answer (fit, ~2 s), and above what the first case of a
    # test pays once in this process (imports, catalogs: up to ~45 s on a loaded machine), so only a hang fails
    decorated = settings(max_examples=max(1, int(examples * SCALE)), deadline=120_000, database=None,
                         suppress_health_check=list(HealthCheck))

    def wrap(fn):
        return seed(SEED)(decorated(fn))

    return wrap


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    """No network: an unknown repo id must fail in a sentence, not after retries."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("COLUMNS", "100")


# ---- values ----------------------------------------------------------------------------------------------
MODELS = ["llama-3.1-8b", "llama-3.2-1b", "qwen2.5-0.5b", "qwen2.5-7b", "mixtral-8x7b", "deepseek-r1", "gpt2",
          "gemma-2-9b", "gpt-oss-20b", "falcon-7b", "phi-3-mini", "bloom", "llama-3.1-70b", "qwen3-30b",
          "meta-llama/Llama-3.1-8B-Instruct", "qwen2.5-72b-instruct", "Llama 3 70B", "BLOOM"]
BAD_MODELS = ["", " ", "lama-3.1-8b", "None", "nosuch/model", "a" * 300, "./missing/config.json", "[red]x[/]",
              "ünï", "../", "org/name/extra", "x.json"]
GPUS = ["rtx-4090", "4090", "h100", "h100-sxm", "a100-80gb", "a100-40gb", "v100", "t4", "l40s", "apple-m4-max",
        "mi300x", "b200", "rtx-3090", "gh200", "a6000"]
BAD_GPUS = ["", "rtx-9090", "H100 SXM 80 GB extra", "[bold]", "ünï", "0x3090", "2x", "x3090", "-1x3090"]
NUMBERS = st.one_of(
    st.sampled_from(["nan", "inf", "-inf", "0", "-1", "1e-9", "1e300", "-0", "1e3", "0.5", "3", "2.5", "1e9", "x",
                     "", "1,000", "０"]),
    st.integers(-10, 10**7).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
JSON_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12), st.floats(), TEXT,
                        st.lists(st.integers(0, 3), max_size=3), st.dictionaries(TEXT, st.integers(), max_size=2))


def flag_value(name: str):
    """Valid values of a scenario flag (mostly) and junk (sometimes)."""
    from gpuplan.scenario import Scenario

    info = Scenario.model_fields[name]
    import typing

    args = [a for a in typing.get_args(info.annotation) if a is not type(None)] or [info.annotation]
    choices = [v for a in args for v in (typing.get_args(a) if typing.get_origin(a) is typing.Literal else ())]
    if name == "model":
        good = st.sampled_from(MODELS)
    elif name == "gpu":
        good = st.sampled_from(GPUS)
    elif name == "quant":
        good = st.sampled_from(["none", "int8", "nf4", "awq-int4", "gptq-int4", "fp8", "q4_k_m", "gguf-q8_0",
                                "mxfp4"])
    elif name == "lora_targets":
        good = st.sampled_from(["all-linear", "q_proj,v_proj", ",", "q_proj,[x]"])
    elif name == "provider":
        good = st.sampled_from(["runpod", "vast", "lambda", "lambdalabs"])
    elif choices:
        good = st.sampled_from(choices)
    elif int in args:
        good = st.sampled_from(["1", "2", "4", "8", "16", "512", "2048", "4096"])
    elif float in args:
        good = st.sampled_from(["0.5", "1", "1e7", "1e8", "2e8", "0.9"])
    else:
        good = TEXT
    return st.one_of(good, good, good, NUMBERS if (int in args or float in args) else TEXT)


# ---- invariants ------------------------------------------------------------------------------------------
def strict_json(text: str):
    """Parse JSON, refusing NaN and Infinity."""
    def refuse(token):
        raise AssertionError(f"{token} in JSON")

    return json.loads(text, parse_constant=refuse)


AMOUNT = re.compile(r"(_gib|_usd|usd_.*|_days|hours|_s|tokens_per_s.*)$")


def sane_numbers(data, path="") -> None:
    """Every number finite; amounts (GiB, USD, days, hours, seconds, rates) not negative (headroom may be)."""
    if isinstance(data, dict):
        for k, v in data.items():
            sane_numbers(v, f"{path}.{k}")
            if isinstance(v, (int, float)) and not isinstance(v, bool) and AMOUNT.search(str(k)) \
                    and "headroom" not in str(k) and "difference" not in str(k) and "error" not in str(k):
                assert v >= 0, f"{path}.{k} = {v}"
    elif isinstance(data, list):
        for i, v in enumerate(data):
            sane_numbers(v, f"{path}[{i}]")
    elif isinstance(data, float):
        assert math.isfinite(data), f"{path} = {data}"


def check_result(r) -> None:
    data = r.model_dump()
    strict_json(json.dumps(data, allow_nan=True))
    sane_numbers(data)
    mem = r.memory
    for part in (mem.weights_gib, mem.gradients_gib, mem.optimizer_gib, mem.activations_gib, mem.kv_cache_gib):
        assert part >= 0
    assert mem.allocated_peak_gib <= mem.reserved_peak_gib * (1 + 1e-9) + 1e-9
    assert mem.reserved_peak_gib <= mem.device_peak_gib * (1 + 1e-9) + 1e-9
    if mem.fits and r.scenario.get("engine", "transformers") == "transformers":
        assert mem.device_peak_gib <= mem.capacity_gib + 1e-9
    if mem.fits is False:
        assert r.cost is None  # a job that does not fit is not priced
    assert r.resolved  # the first line of every answer


# ---- the API ---------------------------------------------------------------------------------------------
def scenario_dicts():
    from gpuplan.scenario import FIELDS

    def value(name):
        return st.one_of(flag_value(name).map(lambda v: _typed(name, v)), flag_value(name).map(
            lambda v: _typed(name, v)), JSON_VALUES)

    keys = st.lists(st.sampled_from([f for f in FIELDS if f not in ("model", "task")]), max_size=6, unique=True)
    return st.builds(
        lambda model, task, extra: {"model": model, "task": task, **extra},
        st.one_of(st.sampled_from(MODELS), st.sampled_from(BAD_MODELS)),
        st.sampled_from(["train", "infer", "train", "infer", "serve", ""]),
        keys.flatmap(lambda ks: st.fixed_dictionaries({k: value(k) for k in ks})))


def _typed(name: str, text: str):
    """The value as a YAML file would hold it: numbers as numbers where they parse."""
    from gpuplan.scenario import Scenario

    annotation = str(Scenario.model_fields[name].annotation)
    if "int" in annotation or "float" in annotation:
        try:
            return float(text) if "float" in annotation or "." in text or "e" in text.lower() else int(text)
        except ValueError:
            return text
    if "bool" in annotation:
        return {"true": True, "false": False}.get(text, text)
    return text


@fuzz_settings(1100)
@given(scenario_dicts())
def test_api_estimate_is_sane_or_says_why(fields):
    try:
        r = gpuplan.estimate(fields)
    except GpuplanError as err:
        assert str(err) and "\n" not in str(err).strip()
        return
    check_result(r)


@fuzz_settings(120)
@given(st.sampled_from(["llama-3.2-1b", "qwen2.5-0.5b", "mistral-7b", "gemma-2-9b", "mixtral-8x7b"]),
       st.sampled_from(["full", "lora", "qlora"]), st.sampled_from(["none", "full"]),
       st.integers(6, 14), st.integers(1, 4))
def test_longer_sequences_never_need_less_training_memory(model, method, checkpointing, log_len, batch):
    base = dict(model=model, task="train", method=method, grad_checkpointing=checkpointing, micro_batch_size=batch)
    short = gpuplan.estimate({**base, "seq_len": 2**log_len}, advise=False).memory
    longer = gpuplan.estimate({**base, "seq_len": 2**log_len + 2**(log_len - 1)}, advise=False).memory
    assert longer.allocated_peak_gib >= short.allocated_peak_gib * (1 - 1e-9)


CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256, "intermediate_size": 512,
          "num_attention_heads": 8, "num_key_value_heads": 4, "num_hidden_layers": 4, "vocab_size": 1000,
          "max_position_embeddings": 2048, "torch_dtype": "bfloat16"}


CONFIG_KEYS = [*CONFIG, "quantization_config", "text_config", "layer_types", "num_local_experts", "num_experts_per_tok",
               "head_dim", "sliding_window", "tie_word_embeddings", "n_routed_experts", "moe_intermediate_size",
               "first_k_dense_replace", "kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "vision_config"]
CONFIG_VALUES = st.one_of(JSON_VALUES, st.integers(0, 300), st.sampled_from([1, 2, 3, 7, 64, 4096, 2**31]))


@fuzz_settings(300)
@given(st.dictionaries(st.sampled_from(CONFIG_KEYS), CONFIG_VALUES, min_size=1, max_size=3),
       st.sampled_from(["llama", "mixtral", "qwen2", "qwen3_moe", "gemma3", "deepseek_v3", "RefinedWeb", "gpt2",
                        "unknown"]),
       st.sampled_from(["train", "infer"]))
def test_any_config_json_is_read_or_refused_in_a_sentence(tmp_path_factory, changes, model_type, task):
    config = {**CONFIG, "model_type": model_type, **changes}
    path = tmp_path_factory.mktemp("cfg") / "config.json"
    path.write_text(json.dumps(config, allow_nan=True))
    try:
        m = gpuplan.load_model(str(path))
        assert m.params_total > 0 and m.num_layers > 0
        check_result(gpuplan.estimate({"model": str(path), "task": task, "gpu": "l40s"}))
    except GpuplanError as err:
        assert str(err) and "\n" not in str(err).strip()


# ---- the CLI ---------------------------------------------------------------------------------------------
def cli(args: list[str]) -> tuple[int, str, str]:
    from gpuplan.cli import run

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run(args)
    return code, out.getvalue(), err.getvalue()


def check_cli(args: list[str], allowed=(0, 2)) -> None:
    code, out, err = cli(args)
    assert code in allowed, (args, code, out[-500:], err[-500:])
    assert "Traceback" not in out + err
    if code == 2:  # bad input: one line saying what is wrong
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), (args, err)
        return
    if "--json" in args or "--format=json" in args or args[-2:] == ["--format", "json"]:
        sane_numbers(strict_json(out))
    else:
        assert not re.search(r"(?<![\w.-])-?(nan|inf)(?![\w-])", out, re.IGNORECASE), (args, out)


def answer(args: list[str]):
    """The JSON a valid command prints; it must succeed."""
    code, out, err = cli([*args, "--json"])
    assert code == 0 and "Traceback" not in err, (args, code, err[-800:])
    data = strict_json(out)
    sane_numbers(data)
    return data


def scenario_flags(required: bool = True):
    from gpuplan.scenario import FIELDS

    names = st.lists(st.sampled_from([f for f in FIELDS if f not in ("model", "task")]), max_size=5, unique=True)
    pairs = names.flatmap(lambda ns: st.tuples(*[st.tuples(st.just(n), flag_value(n)) for n in ns]))
    model = st.one_of(st.sampled_from(MODELS), st.sampled_from(MODELS), st.sampled_from(BAD_MODELS))
    task = st.sampled_from(["train", "infer", "train", "infer", "Train", ""])
    return st.builds(lambda m, t, ps, drop: (["--model", m] if drop != 1 or not required else [])
                     + (["--task", t] if drop != 2 or not required else [])
                     + [x for n, v in ps for x in (f"--{n.replace('_', '-')}", v)],
                     model, task, pairs, st.integers(0, 8))


OUTPUT = st.sampled_from([[], [], ["--json"], ["--format", "plain"], ["--format", "csv"], ["--format", "markdown"],
                          ["--format", "json"], ["--format", "xml"]])


@fuzz_settings(420)
@given(scenario_flags(), st.sampled_from([[], ["--json"], ["--check"], ["--check", "--json"]]))
def test_cli_estimate(flags, extra):
    check_cli(["estimate", *flags, *extra], allowed=(0, 2, 3) if "--check" in extra else (0, 2))


@fuzz_settings(150)
@given(scenario_flags(), OUTPUT, st.sampled_from([[], ["--top", "3"], ["--top", "0"], ["--top", "-1"],
                                                   ["--discount", "runpod=0.85"], ["--discount", "vast=nan"],
                                                   ["--discount", "nobody=2"], ["--catalog", ""]]))
def test_cli_cost(flags, output, extra):
    flags = [x for i, x in enumerate(flags) if not (x == "--gpu" or (i and flags[i - 1] == "--gpu"))]
    check_cli(["cost", *flags, *output, *extra])


CONSTRAINTS = st.lists(st.sampled_from([
    ["--budget-usd", "50"], ["--budget-usd", "-5"], ["--budget-usd", "nan"], ["--deadline-hours", "inf"],
    ["--deadline-hours", "2"], ["--max-gpus", "0"], ["--max-gpus", "2"], ["--max-gpus", "16"], ["--top", "-1"],
    ["--top", "3"], ["--have", "2x3090"], ["--have", "0x3090"], ["--have", "1x4090"], ["--have", "2xa7000"],
    ["--min-headroom", "10%"], ["--min-headroom", "lots"], ["--min-headroom", "nan"], ["--objective", "time"],
    ["--objective", "fastest"], ["--any-method"], ["--any-quant"], ["--providers", "runpd"],
    ["--providers", "vast"], ["--gpus", "h100,l40s"], ["--gpus", "rtx-9090"], ["--pricing", "spot"],
]), max_size=4).map(lambda xs: [x for pair in xs for x in pair])


@fuzz_settings(110)
@given(scenario_flags(), CONSTRAINTS, OUTPUT)
def test_cli_recommend(flags, constraints, output):
    skip = ("--gpu", "--num-gpus", "--num-nodes", "--tp", "--pp", "--strategy")
    flags = [x for i, x in enumerate(flags) if x not in skip and not (i and flags[i - 1] in skip)]
    if "--max-gpus" not in constraints:
        constraints += ["--max-gpus", "4", "--gpus", "l40s,h100-sxm,rtx-4090"]  # a few cards: fast cases
    check_cli(["recommend", *flags, *constraints, *output])


FIT_CARDS = ["1x4090", "2x3090", "h100", "l40s", "a100-80gb", "4xh100", "rtx-3090", "v100"]
FIT_FLAGS = [[], ["--task", "train", "--method", "lora"], ["--task", "train", "--method", "qlora",
                                                           "--grad-checkpointing", "full"],
             ["--task", "train", "--method", "full"], ["--task", "infer"], ["--engine", "vllm"]]


@fuzz_settings(12)
@given(st.one_of(st.tuples(st.just(True), st.sampled_from(FIT_CARDS), st.sampled_from(FIT_FLAGS)),
                 st.tuples(st.just(True), st.sampled_from(FIT_CARDS), st.sampled_from(FIT_FLAGS)),
                 st.tuples(st.just(False), st.sampled_from([*FIT_CARDS, "0x3090", "rtx-9090", "9x4090", ""]),
                           st.sampled_from([*FIT_FLAGS, ["--task", "infer", "--prompt-tokens", "nan"],
                                            ["--strategy", "fsdp"]]))), OUTPUT)
def test_cli_fit(case, output):
    """Valid cards and flags (two cases in three) must answer: every bundled model, the 0.5B ones fitting."""
    valid, gpu, flags = case
    if not valid:
        check_cli(["fit", "--gpu", gpu, *flags, *output])
        return
    rows = answer(["fit", "--gpu", gpu, *flags])["rows"]  # gpuplan.api.FitReport: the job, the cards, the rows
    assert len(rows) >= 50 and all({"model", "fits", "device_peak_gib"} <= set(r) for r in rows)
    assert any(r["fits"] for r in rows)  # the 0.5B models fit any of these cards in any mode


MISC = st.one_of(
    st.tuples(st.just("models"), st.lists(st.sampled_from([
        ["--moe"], ["--dense"], ["--sort", "active"], ["--sort", "size"], ["--min-params", "nan"],
        ["--min-params", "7"], ["--max-params", "-1"], ["--family", "qwen2"], ["--search", "[x"], ["--reverse"]]),
        max_size=3).map(lambda xs: [x for p in xs for x in p]), OUTPUT),
    st.tuples(st.just("model"), st.one_of(st.sampled_from(MODELS), st.sampled_from(BAD_MODELS)).map(lambda m: [m]),
              st.sampled_from([[], ["--json"]])),
    st.tuples(st.just("gpus"), st.lists(st.sampled_from([
        ["--min-memory", "40"], ["--min-memory", "nan"], ["--sort", "usd_per_tflop"], ["--sort", "x"], ["--nvlink"],
        ["--vendor", "AMD"], ["--segment", "consumer"], ["--reverse"]]), max_size=3).map(
        lambda xs: [x for p in xs for x in p]), OUTPUT),
    st.tuples(st.just("gpus"), st.lists(st.one_of(st.sampled_from(GPUS), st.sampled_from(BAD_GPUS)), min_size=1,
                                        max_size=3).map(lambda g: ["compare", *g]), OUTPUT),
    st.tuples(st.just("buy"), st.tuples(st.one_of(st.sampled_from(GPUS), st.sampled_from(BAD_GPUS)), st.lists(
        st.sampled_from(["--hours", "--pue", "--usd-per-kwh", "--utilization", "--count"]), max_size=3, unique=True
    ).flatmap(lambda ks: st.tuples(*[st.tuples(st.just(k), NUMBERS) for k in ks]))).map(
        lambda t: [t[0], *[x for k, v in t[1] for x in (k, v)]]), st.sampled_from([[], ["--json"]])),
)


@fuzz_settings(180)
@given(MISC)
def test_cli_catalog_commands(case):
    command, args, output = case
    check_cli([command, *args, *output])


YAML_TEXTS = st.one_of(
    st.sampled_from(["", "null", "[1, 2]", "just text", "model: gpt2\ntask: train\n", "model: [gpt2]\ntask: train",
                     "model: gpt2\ntask: train\nseq_len: .nan\n", "model: gpt2\ntask: infer\nbatch_size: .inf\n",
                     "model: gpt2\ntask: train\nmicro_batch_size: 1e400\n", "a: b: c", "model: gpt2\n  task: x",
                     "? [a]\n: 1", "model: gpt2\ntask: train\n1: 2\n", "!!python/object:os.system x"]),
    st.dictionaries(st.one_of(st.sampled_from(["model", "task", "seq_len", "gpu", "quant", "scenario"]), TEXT),
                    JSON_VALUES, max_size=4).map(lambda d: json.dumps(d, allow_nan=True)),
    st.binary(max_size=20).map(lambda b: b.decode("latin-1")),
)


@fuzz_settings(80)
@given(YAML_TEXTS, st.sampled_from([[], ["--model", "gpt2"], ["--task", "infer"]]))
def test_cli_scenario_files(tmp_path_factory, text, flags):
    path = tmp_path_factory.mktemp("job") / "job.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    check_cli(["estimate", str(path), *flags])


PRICES = st.lists(st.sampled_from([
    ["--gpu", "l4"], ["--gpu", "h100"], ["--gpu", "rtx-9090"], ["--provider", "aws"], ["--provider", "nobody"],
    ["--spot"], ["--max-age", "-1"], ["--max-age", "30"], ["--max-age", "nan"], ["--no-low-confidence"], ["--json"],
]), max_size=3).map(lambda xs: [x for pair in xs for x in pair])
CAPACITY = st.tuples(st.sampled_from(MODELS[:4] + BAD_MODELS[:3]), NUMBERS, st.lists(st.sampled_from([
    ["--preset", "chat"], ["--preset", "nosuch"], ["--prompt-tokens", "0"], ["--prompt-tokens", "2048"],
    ["--output-tokens", "-5"], ["--ttft", "nan"], ["--ttft", "2"], ["--tpot", "0"], ["--percentile", "42"],
    ["--burstiness", "inf"], ["--shared-prefix", "-1"], ["--max-gpus", "0"], ["--top", "-1"], ["--json"],
]), max_size=3).map(lambda xs: [x for pair in xs for x in pair]))


@fuzz_settings(40)
@given(PRICES)
def test_cli_prices(args):
    check_cli(["prices", *args])


@fuzz_settings(25)
@given(CAPACITY)
def test_cli_capacity(case):
    model, rate, extra = case
    check_cli(["capacity", "--model", model, "--rate", rate, "--gpus", "l4", "--max-gpus", "1", *extra])


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory):
    """The fuzz report's fixtures: probe records and price files that are not what they claim."""
    d = tmp_path_factory.mktemp("files")
    record = {"scenario": {"model": "gpt2", "task": "train"}, "model": "gpt2", "gpu": "H100",
              "probe": {"allocated_peak_gib": 2.0, "reserved_peak_gib": 2.2, "device_used_gib": 2.8, "oom": False},
              "estimate": {"allocated_peak_gib": 2.1, "reserved_peak_gib": 2.3, "device_peak_gib": 2.9}}
    files = {"ok.json": record, "probe_null.json": {**record, "probe": None}, "null.json": None,
             "no_keys.json": {**record, "estimate": {}},
             "strings.json": {**record, "probe": {**record["probe"], "allocated_peak_gib": "2.0"}},
             "nan.json": {**record, "probe": {**record["probe"], "allocated_peak_gib": float("nan")}},
             "list.json": [1, 2], "zero.json": {**record, "probe": {**record["probe"], "allocated_peak_gib": 0}}}
    for name, data in files.items():
        (d / name).write_text(json.dumps(data, allow_nan=True))
    (d / "binary.json").write_bytes(b"\x89PNG\r\n\x1a\n\x00")
    (d / "folder").mkdir()
    head = "provider,tier,gpu_id,gpu_count,pricing,price_usd_per_gpu_hour,region,intra_node,observed_at,source,notes\n"
    offers = {"future.csv": "vast,marketplace,nvidia-l40s,1,on_demand,0.5,,pcie,2999-01-01,x,\n",
              "nanprice.csv": "vast,marketplace,nvidia-l40s,1,on_demand,nan,,pcie,2025-01-01,x,\n",
              "infprice.csv": "vast,marketplace,nvidia-l40s,1,on_demand,inf,,pcie,2025-01-01,x,\n",
              "badgpu.csv": "vast,marketplace,nvidia-l41s,1,on_demand,0.5,,pcie,2025-01-01,x,\n",
              "zero.csv": "vast,marketplace,nvidia-l40s,0,on_demand,0.5,,pcie,2025-01-01,x,\n",
              "ok.csv": "vast,marketplace,nvidia-l40s,1,on_demand,0.55,,pcie,2025-06-01,x,\n"}
    for name, row in offers.items():
        (d / name).write_text(head + row)
    (d / "binary.csv").write_bytes(b"\xff\xfe\x00\x01")
    return d


@fuzz_settings(60)
@given(st.lists(st.sampled_from(["ok.json", "probe_null.json", "null.json", "no_keys.json", "strings.json",
                                 "nan.json", "list.json", "zero.json", "binary.json", "folder", "missing.json"]),
                min_size=1, max_size=3), OUTPUT)
def test_cli_calibrate(bad_files, names, output):
    check_cli(["calibrate", *(str(bad_files / n) for n in names), *output])


@fuzz_settings(60)
@given(st.sampled_from(["future.csv", "nanprice.csv", "infprice.csv", "badgpu.csv", "zero.csv", "ok.csv",
                        "binary.csv", "missing.csv", "folder"]),
       st.sampled_from(["cost", "recommend", "estimate"]), st.sampled_from([[], ["--json"]]))
def test_cli_price_files(bad_files, name, command, output):
    args = [command, "--model", "qwen2.5-0.5b", "--task", "train", "--train-tokens", "1e7"]
    if command == "estimate":
        check_cli([*args, "--gpu", "l40s", *output])  # estimate reads the bundled catalog only
        return
    if command == "recommend":
        args += ["--gpus", "l40s", "--max-gpus", "2"]
    check_cli([*args, "--catalog", str(bad_files / name), *output])


# ---- valid inputs: capacity, fit and launch answer (exit 0, the JSON and files they promise) --------------------
SMALL = ["qwen2.5-0.5b", "llama-3.2-1b"]  # fit every card below in every method, so every case must answer
BIG_CARDS = ["h100", "a100-80gb", "l40s", "h200", "mi300x"]
# training stacks and what each writes: (framework, methods, strategies over 2+ GPUs, models)
STACKS = [("hf", ("full", "lora", "qlora"), ("ddp", "zero2", "zero3", "fsdp"), SMALL),
          ("axolotl", ("full", "lora", "qlora"), ("ddp", "zero2", "zero3", "fsdp"), SMALL),
          ("torchtune", ("full", "lora"), ("fsdp",), SMALL),
          ("torchtune", ("qlora",), ("fsdp",), ["llama-3.2-1b"]),  # torchtune's QLoRA builders are Llama's
          ("unsloth", ("lora", "qlora"), ("ddp",), SMALL),
          ("torchtitan", ("full",), ("fsdp",), ["llama-3.1-8b"])]  # torchtitan builds its own Llama 3 only


@st.composite
def launch_cases(draw) -> list[str]:
    if draw(st.integers(0, 4)) == 0:  # a serving plan: vLLM, tensor parallel over the cards
        tp = draw(st.sampled_from([1, 2]))
        return ["--model", draw(st.sampled_from([*SMALL, "llama-3.1-8b", "qwen2.5-7b"])), "--task", "infer",
                "--engine", "vllm", "--gpu", draw(st.sampled_from(BIG_CARDS[:3])), "--num-gpus", str(tp),
                "--tp", str(tp), "--batch-size", draw(st.sampled_from(["1", "8", "32"])),
                "--prompt-tokens", draw(st.sampled_from(["512", "2048"]))]
    framework, methods, strategies, models = draw(st.sampled_from(STACKS))
    method = draw(st.sampled_from(methods))
    gpus = draw(st.sampled_from([1, 2, 4, 8] if framework != "torchtitan" else [4, 8]))
    cards = BIG_CARDS[:2] if framework == "torchtitan" else BIG_CARDS if method == "full" else [
        *BIG_CARDS, "rtx-4090", "rtx-3090", "a6000"]
    args = ["--model", draw(st.sampled_from(models)), "--task", "train", "--method", method, "--framework", framework,
            "--gpu", draw(st.sampled_from(cards)), "--num-gpus", str(gpus),
            "--seq-len", draw(st.sampled_from(["512", "1024", "2048"])),
            "--micro-batch-size", draw(st.sampled_from(["1", "2"]))]
    if gpus > 1 or framework == "torchtitan":
        args += ["--strategy", draw(st.sampled_from(strategies))]
    if draw(st.booleans()):
        args += ["--train-tokens", draw(st.sampled_from(["1e6", "2e7"]))]
    return args


@fuzz_settings(40)
@given(launch_cases())
def test_cli_launch_writes_the_files_of_a_valid_plan(tmp_path_factory, args):
    folder = tmp_path_factory.mktemp("launch") / "run"
    data = answer(["launch", *args, "-o", str(folder)])
    assert {"folder", "setup", "predicted", "files"} <= set(data)
    assert data["files"] and data["predicted"]["device_peak_gib_per_gpu"] <= data["predicted"]["capacity_gib_per_gpu"]
    for f in data["files"]:  # each written, under the folder asked for
        assert os.path.isfile(f["path"]) and os.path.getsize(f["path"]) > 0 and f["path"].startswith(str(folder)), f
    plan = strict_json((folder / "plan.json").read_text())
    assert plan["predicted"] == data["predicted"]  # plan.json holds the numbers the answer printed


@fuzz_settings(4)
@given(st.sampled_from([*SMALL, "llama-3.1-8b", "qwen2.5-7b"]), st.floats(0.1, 20).map(lambda r: f"{r:.2f}"),
       st.one_of(st.sampled_from(["chat", "summarize", "generate", "balanced", "rag", "code"]).map(
           lambda p: ["--preset", p]), st.tuples(st.integers(16, 8192), st.integers(1, 1024)).map(
           lambda t: ["--prompt-tokens", str(t[0]), "--output-tokens", str(t[1])])),
       st.sampled_from([[], ["--ttft", "2"], ["--ttft", "1", "--tpot", "0.1"], ["--e2e", "30"]]),
       st.sampled_from(["l4", "l40s", "h100", "a100-80gb"]), st.sampled_from(["1", "2"]))
def test_cli_capacity_answers_a_valid_workload(model, rate, lengths, slo, gpus, max_gpus):
    data = answer(["capacity", "--model", model, "--rate", rate, *lengths, *slo, "--gpus", gpus,
                   "--max-gpus", max_gpus])
    assert {"workload", "plans"} <= set(data)
    from gpuplan.hardware import load_gpu

    allowed = {load_gpu(g).id for g in gpus.split(",")}
    for p in data["plans"]:
        assert p["gpu_id"] in allowed and 1 <= p["num_gpus"] <= int(max_gpus) and p["max_rate_rps"] >= 0
