"""Usage errors the external fuzzer found (fuzz-report-2): a missing optional dependency is bad input (exit 2)
with its install line intact, a missing file is bad input, values echoed back are cut, and nothing a user or a
library wrote is read as rich markup."""

from __future__ import annotations

import shutil
import sys

import pytest

from gpuplan.cli import run
from gpuplan.model.catalog import bundled, bundled_repo


def cli(capsys, *args: str) -> tuple[int, str, str]:
    code = run(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("args, missing, install", [
    (["prices", "update"], ["gpuhunt"], "pip install 'gpuplan[live]'"),
    (["capacity", "--model", "qwen3-8b", "--gpus", "l4", "--preset", "chat"], ["numpy"],
     "pip install 'gpuplan[serving]'"),
    (["simulate", "--model", "qwen3-8b", "--task", "infer"], ["torch", "transformers"],
     "pip install 'gpuplan[sim]'"),
    (["serve"], ["fastapi", "uvicorn"], "pip install 'gpuplan[web]'"),
    (["model", "someorg/somemodel"], ["huggingface_hub"], "pip install 'gpuplan[hub]'"),
])
def test_a_missing_optional_dependency_is_a_usage_error_naming_its_extra(capsys, monkeypatch, args, missing,
                                                                         install):
    for module in missing:
        monkeypatch.setitem(sys.modules, module, None)  # `import module` raises ImportError
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, _, err = cli(capsys, *args)
    assert code == 2, err
    assert install in err and err.count("\n") == 1 and err.startswith("error: ")


def test_prices_update_from_a_missing_file_is_a_usage_error(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("GPUPLAN_CACHE_DIR", str(tmp_path / "cache"))
    for args in (["--file", "x"], ["--source", "file", "--file", str(tmp_path / "none.csv")],
                 ["--source", "skypilot", "--file", str(tmp_path / "missing.csv")]):
        code, _, err = cli(capsys, "prices", "update", *args)
        assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, (args, err)
    assert not (tmp_path / "cache" / "offers").exists()


def test_prices_update_when_the_source_cannot_answer_exits_1_and_keeps_the_prices(capsys, tmp_path, monkeypatch):
    """Offline, the input was right: not a usage error; the line says the prices in force stay."""
    from gpuplan.market.sources import gpuhunt_source

    def offline(**kwargs):
        raise OSError("Name or service not known")

    monkeypatch.setattr(gpuhunt_source, "_default_query", lambda: offline)
    monkeypatch.setenv("GPUPLAN_CACHE_DIR", str(tmp_path / "cache"))
    code, _, err = cli(capsys, "prices", "update")
    assert code == 1 and "prices not updated: gpuhunt could not fetch offers" in err and "stay as they were" in err
    assert not (tmp_path / "cache" / "offers").exists()


LONG = "a" * 437


@pytest.mark.parametrize("args", [
    ["model", LONG],
    ["estimate", "--model", "llama-3.1-8b", "--task", "train", "--compile", "b" * 400],  # click's own message
    ["estimate", "--model", "llama-3.1-8b", "--task", "train", "--attention", "c" * 400],  # pydantic's
    ["estimate", "--model", " ".join(["ab cd"] * 80), "--task", "train"],
    ["models", "--sort", "d" * 400],
])
def test_an_echoed_value_is_cut_at_60_characters(capsys, args):
    code, _, err = cli(capsys, *args)
    assert code == 2 and err.count("\n") == 1
    assert len(err) < 400, err
    assert "...'" in err  # the value, cut: 57 characters and an ellipsis inside its quotes


def test_square_brackets_print_as_written(capsys, tmp_path):
    """A name with [live] in it (rich would take it for a style tag) prints whole, on stdout as on stderr, and so
    does one with an emoji code in it (rich's consoles replace ``:fire:`` by default)."""
    folder = tmp_path / "m[live]"
    folder.mkdir()
    shutil.copy(bundled()[bundled_repo("llama-3.2-1b")], folder / "config.json")
    code, out, _ = cli(capsys, "model", str(folder))
    assert code == 0 and out.startswith("m[live]")
    from gpuplan.cli.render import err
    from gpuplan.cli.render import out as stdout

    for console in (stdout, err):
        with console.capture() as captured:
            console.print("pip install 'gpuplan[sim]' [bold]x[/] run:fire:")
        assert captured.get() == "pip install 'gpuplan[sim]' [bold]x[/] run:fire:\n"


@pytest.mark.parametrize("args, said", [
    (["model", "--model", "llama-3.1-8b"], "`gpuplan model` takes it as its argument, without --model: gpuplan model "
                                           "NAME"),
    (["buy", "--build", "2x3090"], "gpuplan buy BUILD"),
    (["gpus", "compare", "--gpu", "4090", "--gpu", "3090"], "gpuplan gpus compare NAMES..."),
])
def test_an_argument_given_as_an_option_is_taught(capsys, args, said):
    """Session 9's walk: every command takes --model, but `gpuplan model --model x` read 'No such option: --model
    (Possible options: --help)', which does not say that the name goes without the flag."""
    code, _, err = cli(capsys, *args)
    assert code == 2 and said in err and len(err.strip().splitlines()) == 1, err


def test_an_unknown_option_is_not_taken_for_the_argument(capsys):
    code, _, err = cli(capsys, "model", "llama-3.1-8b", "--foo")
    assert code == 2 and "takes it as its argument" not in err and "No such option: --foo" in err


def test_an_unknown_option_is_offered_the_options_that_hold_its_words(capsys):
    """Session 10's walk: `estimate --steps 2000` (a diffusion training's optimizer steps) read 'Possible options:
    --ep, --tp, --users', Click's nearest spellings; the options that hold the word are the ones meant."""
    code, _, err = cli(capsys, "estimate", "--model", "flux-dev", "--task", "train", "--steps", "2000")
    assert code == 2 and "(Possible options: --grad-accum-steps, --inference-steps, --train-steps)" in err, err
    assert "--ep" not in err and len(err.strip().splitlines()) == 1
    code, _, err = cli(capsys, "model", "llama-3.1-8b", "--foo")  # no option holds 'foo': Click's own list stays
    assert code == 2 and "No such option: --foo" in err


def test_capacity_says_a_workload_file_s_model_is_not_read(capsys, tmp_path):
    """Session 9's walk: 'gpuplan capacity w.yaml' with 'model: qwen3-8b' in the file read 'name the model:
    --model llama-3.1-8b', as if none had been named."""
    path = tmp_path / "w.yaml"
    path.write_text("model: qwen3-8b\nrate_rps: 2\nprompt: 800\noutput: 200\n")
    code, _, err = cli(capsys, "capacity", str(path))
    assert code == 2 and "its model: 'qwen3-8b' is not read there" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("args", [
    ["capacity", "--model", "qwen3-8b", "--rate", "1", "--gpus", ",,"],
    ["recommend", "--model", "qwen3-8b", "--task", "infer", "--gpus", " "],
    ["recommend", "--model", "qwen3-8b", "--task", "infer", "--providers", ","],
    ["buy", "4090", "--price", "1800", "--gpus", ","],
    ["launch", "--model", "qwen3-0.6b", "--task", "train", "--method", "lora", "--gpu", "4090", "-t", ",", "-o", "-"],
])
def test_a_list_that_names_nothing_is_refused(capsys, monkeypatch, args):
    """A list option given only commas or spaces was read as not given: `capacity --gpus ,,` searched every GPU
    type and `launch -t ,` wrote every target, the filter silently dropped (s15 rewalk). One sentence, exit 2."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, out, err = cli(capsys, *args)
    assert code == 2 and not out, out
    assert err.startswith("error: ") and "names nothing" in err and err.count("\n") == 1, err


def test_the_api_refuses_a_list_that_names_nothing():
    from gpuplan import GpuplanError, recommend

    for gpus in ([""], ["", " "], ","):
        with pytest.raises(GpuplanError, match="gpus names nothing"):
            recommend({"model": "qwen3-8b", "task": "infer"}, gpus=gpus)


def test_a_buy_price_for_no_card_is_refused(capsys):
    """``buy 2x3090 --price =5`` (a CARD=USD with no card) was read as a price for a card named '', and ignored
    (session 18's fuzzing): one sentence, exit 2."""
    code, out, err = cli(capsys, "buy", "2x3090", "--hours", "100", "--price", "=5")
    assert code == 2 and not out and err.count("\n") == 1, err
    assert err.startswith("error: --price takes USD (3000) or CARD=USD (5090=3000), got '=5': name the card"), err


def test_a_build_and_a_count_that_disagree_are_refused(capsys):
    """``buy 2x3090 --count 3`` priced three cards without a word, the build's own count dropped (session 18's
    fuzzing): one sentence; a count that agrees, or a build without one, is read."""
    code, out, err = cli(capsys, "buy", "2x3090", "--count", "3", "--hours", "100")
    assert code == 2 and not out, out
    assert err == "error: the build 2x3090 counts 2 cards and --count 3: give the count once\n", err
    code, out, _ = cli(capsys, "buy", "3090", "--count", "3", "--hours", "100", "--json")
    assert code == 0 and '"count": 3' in out, out


def test_fit_refuses_in_one_sentence_what_no_model_changes(capsys):
    """``fit --gpu rtx-4090 --pp 1000`` listed 92 rows, each refused as "tp x pp = 1000 must divide the 1 GPUs", and
    said "92 are refused as asked" at exit 0 (session 19's fuzzing): the parallel sizes against the cards given, and
    the scenario's own fields (a split over a card the catalog lacks), are one sentence before any model is planned;
    a layout some models take (tp 2 of 2 cards) still lists them."""
    code, out, err = cli(capsys, "fit", "--gpu", "rtx-4090", "--task", "infer", "--pp", "1000")
    assert code == 2 and not out, out
    assert err == "error: tp x pp = 1000 must divide the 1 GPUs (num_gpus x num_nodes)\n", err
    code, out, err = cli(capsys, "fit", "--gpu", "2x3090", "--task", "infer", "--engine", "llama.cpp",
                         "--extra-gpus", "1_000")
    assert code == 2 and err.startswith("error: unknown GPU '1_000'"), err
    code, out, _ = cli(capsys, "fit", "--gpu", "2x3090", "--task", "infer", "--tp", "2", "--json")
    assert code == 0 and '"fits": true' in out


GGUF_UNDER_TRANSFORMERS = ("error: transformers dequantizes a GGUF file when it loads it, so gguf-q4_k_m saves no "
                           "GPU memory there: serve it with engine llama.cpp, or drop quant\n")


@pytest.mark.parametrize("args, said", [
    (["--gpu", "rtx-4090", "--engine", "transformers", "--quant", "q4_k_m"], GGUF_UNDER_TRANSFORMERS),
    (["--gpu", "v100", "--engine", "transformers", "--precision", "bf16-true"],
     "error: Tesla V100 SXM2 32GB has no bf16 tensor cores (Volta): set precision fp16-true (for serving, precision "
     "is the dtype the weights run in), or leave precision unset to get the card's own\n"),
])
def test_fit_says_a_reason_every_model_is_refused_for_once(capsys, args, said):
    """Issue 30: ``fit --gpu rtx-4090 --engine transformers --quant q4_k_m`` printed an empty table, "92 are refused
    as asked" at exit 0, and with --all 92 rows of the one sentence estimate gives (bf16 on a V100 alike). One
    reason for every model is that sentence on stderr, exit 2; recommend and capacity give estimate's sentence too
    (capacity refuses transformers itself, and gives the GGUF sentence of the engine asked)."""
    code, out, err = cli(capsys, "fit", "--task", "infer", *args, "--all")
    assert (code, out, err) == (2, "", said)
    code, out, err = cli(capsys, "recommend", "--model", "llama-3.1-8b", "--task", "infer", "--engine",
                         "transformers", "--quant", "q4_k_m")
    assert (code, out, err) == (2, "", GGUF_UNDER_TRANSFORMERS)
    code, out, err = cli(capsys, "capacity", "--model", "llama-3.1-8b", "--users", "20", "--preset", "chat",
                         "--engine", "sglang", "--quant", "q4_k_m")
    assert (code, out) == (2, "") and err == ("error: SGLang cannot quantize to gguf-q4_k_m on load: choose fp8, or an "
                                              "AWQ/GPTQ checkpoint\n"), err


def test_fit_lists_the_rows_when_the_reasons_differ(capsys):
    """The shared refusal is one reason for every model: with MTP asked the 9 checkpoints that carry MTP layers plan
    and the other 83 are refused, so the table stays (exit 0)."""
    code, out, _ = cli(capsys, "fit", "--gpu", "rtx-4090", "--task", "infer", "--engine", "vllm",
                       "--speculative-method", "mtp", "--json")
    assert code == 0 and out.count('"device_peak_gib": null') == 83, out[:400]


def test_buy_gpus_beside_a_named_build_is_refused(capsys):
    """``buy 2x3090 --gpus h100`` (or ``--gpus -inf``) priced the 3090s and dropped --gpus without a word
    (session 19's fuzzing): --gpus narrows a budget search; beside a build it is one sentence."""
    for cards in ("h100", "-inf"):
        code, out, err = cli(capsys, "buy", "2x3090", "--hours", "100", "--gpus", cards)
        assert code == 2 and not out, out
        assert err.startswith("error: --gpus narrows a budget search, and the build 2x3090 names its cards"), err


@pytest.mark.parametrize("names", [[""], ["", " "], [","]])
def test_gpus_compare_without_names_is_one_clear_sentence(capsys, names):
    """Session 24: `gpuplan gpus compare ''` said "names names nothing ([''])": names_of's wording, with the
    argument's own name. The command says what it needs, once, and exits 2."""
    code, _, err = cli(capsys, "gpus", "compare", *names)
    assert code == 2 and err.strip() == "error: gpus compare needs two or more GPU names, e.g. 4090 a6000", err
