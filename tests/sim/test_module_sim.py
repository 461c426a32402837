"""``gpuplan simulate --module my_pkg.my_model:build`` (issue 34): any PyTorch module, run once on fake tensors; its
FLOPs are torch's own count (``torch.utils.flop_counter``), its parameters the module's, and the answer says what
was simulated and what modelled. A pipeline's simulation runs its denoiser at the scenario's exact sizes."""

from __future__ import annotations

import json
import textwrap

import pytest

from conftest import require
from gpuplan.cli import run

pytestmark = pytest.mark.sim

MODEL = textwrap.dedent('''
    import torch
    from torch import nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 64, 3, padding=1)
            self.blocks = nn.Sequential(*[nn.Sequential(nn.Linear(256, 1024), nn.GELU(), nn.Linear(1024, 256))
                                          for _ in range(4)])
            self.attn = nn.MultiheadAttention(256, 8, batch_first=True)
            self.head = nn.Linear(256, 10)

        def forward(self, x, tokens):
            y = self.conv(x).mean()
            h = self.blocks(tokens) + y
            h, _ = self.attn(h, h, h, need_weights=False)
            return self.head(h)


    def build():
        return Net(), ((torch.randn(8, 3, 64, 64), torch.randn(8, 128, 256)), {})


    def mlp():
        """Linear 1,024 -> 4,096, GELU, Linear 4,096 -> 1,024 on 64 rows of fp32."""
        net = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024))
        return net, torch.randn(64, 1024)


    def broken():
        raise RuntimeError("no weights here")


    def not_a_pair():
        return Net()


    def two_names():
        return "net", "input"


    def chatty():
        print("building the net")
        return mlp()


    def sized(width, *layers, depth=2, **options):
        return nn.Linear(width, width), torch.randn(4, width)
''')


@pytest.fixture
def package(tmp_path, monkeypatch):
    folder = tmp_path / "my_pkg"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "my_model.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield folder
    import sys

    for name in [n for n in sys.modules if n == "my_pkg" or n.startswith("my_pkg.")]:
        del sys.modules[name]


def torch_count():
    """The module's parameters and forward FLOPs as torch counts them, on fake tensors."""
    torch = require("torch")
    import my_pkg.my_model as m
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils.flop_counter import FlopCounterMode

    with FakeTensorMode():
        net, (args, _) = m.build()
        with FlopCounterMode(display=False) as counter, torch.no_grad():
            net(*args)
    return sum(p.numel() for p in net.parameters()), counter.get_total_flops()


def test_a_module_simulated_counts_what_torch_counts(package, capsys):
    assert run(["simulate", "--module", "my_pkg.my_model:build", "--task", "train", "--gpu", "rtx-4090",
                "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    params, flops = torch_count()
    assert data["params"] == params
    # torch's counter has no formula for the CPU kernel of scaled_dot_product_attention: its 4·B·H·S²·D is added
    attention = 4 * 8 * 8 * 128 * 128 * 32
    assert data["flops_forward"] == flops + attention  # the GEMMs, convolutions and attention, exactly
    assert data["flops_step"] == pytest.approx(3 * data["flops_forward"], rel=0.05)
    assert data["weights_gib"] * 2**30 == pytest.approx(params * 4)
    # zero_grad()'s default frees the gradients: this Net's activations outweigh them, so its peak (before the
    # backward) holds none, and the activations are the recorded ones
    assert data["gradients_gib"] == 0 and data["optimizer_gib"] == 2 * data["weights_gib"]
    assert data["activations_gib"] > data["weights_gib"] and data["fits"] and data["step_s"] > 0
    assert any("activation peak" in s for s in data["simulated"])
    assert any("AdamW" in m for m in data["modelled"])


def test_an_inference_peak_is_the_hand_count(package, capsys):
    """Under no_grad the MLP holds its first linear's output (64 x 4,096 fp32, 1 MiB) while GELU writes another
    1 MiB; the second linear's 64 x 1,024 output comes after the first is freed: the peak is 2 MiB exactly. Its
    FLOPs are two GEMMs, 2 x 64 x 1,024 x 4,096 each."""
    assert run(["simulate", "--module", "my_pkg.my_model:mlp", "--task", "infer", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["activations_gib"] * 2**30 == 2 * 64 * 4096 * 4
    assert data["flops_forward"] == 2 * (2 * 64 * 1024 * 4096)
    assert data["params"] == 2 * 1024 * 4096 + 4096 + 1024


def test_inference_has_no_gradients(package, capsys):
    assert run(["simulate", "--module", "my_pkg.my_model:build", "--task", "infer", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["gradients_gib"] == 0 and data["optimizer_gib"] == 0 and data["step_s"] is None


def test_the_table_says_simulated_and_modelled(package, capsys):
    assert run(["simulate", "--module", "my_pkg.my_model:build", "--gpu", "l4"]) == 0
    out = capsys.readouterr().out
    assert "simulated" in out and "modelled" in out and "Net" in out


@pytest.mark.parametrize("target, words", [
    ("my_pkg.my_model", "package.module:function"),
    ("my_pkg.nowhere:build", "cannot import my_pkg.nowhere"),
    ("my_pkg.my_model:missing", "no callable missing"),
    ("my_pkg.my_model:broken", "failed on fake tensors (RuntimeError: no weights here)"),
    ("my_pkg.my_model:not_a_pair", "must return (module, example_input)"),
    ("my_pkg.my_model:two_names", "an nn.Module first, not (str, str)"),  # was "not tuple"
    # was "failed on fake tensors (TypeError: sized() missing 1 required positional argument: 'width')"
    ("my_pkg.my_model:sized", "my_pkg.my_model:sized takes arguments (width) and --module calls it with none"),
])
def test_a_bad_target_is_one_sentence(package, target, words, capsys):
    assert run(["simulate", "--module", target]) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and "\n" not in err and "Traceback" not in err


@pytest.mark.parametrize("source, target, words", [
    ("def build(:\n", "my_pkg.typo:build", "cannot import my_pkg.typo for --module: SyntaxError: invalid syntax "
                                           "(typo.py, line 1)"),
    ("raise ValueError('no GPU here')\n", "my_pkg.typo:build", "cannot import my_pkg.typo for --module: "
                                                                 "ValueError: no GPU here"),
    ("import sys\nsys.exit(3)\n", "my_pkg.typo:build", "cannot import my_pkg.typo for --module: it called "
                                                       "sys.exit(3)"),
    ("def build():\n    import sys\n    sys.exit(0)\n", "my_pkg.typo:build",
     "my_pkg.typo:build failed on fake tensors (it called sys.exit(0))"),
    ("", ".typo:build", "--module takes package.module:function"),
])
def test_the_users_code_failing_as_it_is_imported_or_run_is_one_sentence(package, source, target, words, capsys):
    """The outside fuzzer's session 17: a module that does not import (a SyntaxError, an error raised at import), a
    relative name, and a sys.exit in the user's code (which left gpuplan at exit 0 with nothing said) were
    tracebacks or a silent exit; each is now the sentence naming the failure, exit 2."""
    (package / "typo.py").write_text(source)
    assert run(["estimate", "--module", target, "--task", "train", "--gpu", "rtx-4090"]) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and "\n" not in err and "Traceback" not in err


def test_a_linear_of_no_width_is_recorded_and_timed_as_no_work(package, capsys):
    """The outside fuzzer's session 17: a module holding nn.Linear(0, 0) was "does not run on fake tensors
    (ZeroDivisionError)", the recorder's (rows as the input's elements over in_features, 0), not the module's; then
    the GEMM timer divided by k = 0. Its rows are the input's leading sizes (4), and an empty GEMM takes 0 s."""
    from gpuplan.hardware import load_gpu
    from gpuplan.sim.module import module_spec
    from gpuplan.speed.gemm import gemm_time_s

    (package / "empty.py").write_text("import torch\n\n\ndef build():\n    return torch.nn.Linear(0, 0), "
                                      "torch.randn(4, 0)\n")
    (op,) = module_spec("my_pkg.empty:build").components[0].profile.ops
    assert op.kind == "linear" and [d.terms[0][1] for d in op.dims] == [4.0, 0.0, 0.0]
    assert gemm_time_s(load_gpu("rtx-4090"), "bf16", 4, 0, 0) == 0.0
    assert run(["estimate", "--module", "my_pkg.empty:build", "--task", "train", "--gpu", "rtx-4090"]) == 0


def test_a_module_whose_weights_start_truncated_normal_is_built_on_fake_tensors(package, capsys):
    """s18 walk: ModernBertForSequenceClassification was "failed on fake tensors (DataDependentOutputException:
    aten._local_scalar_dense.default)": its _init_weights calls nn.init.trunc_normal_, whose rejection loop in torch
    2.13 asks ``mask.any()`` of values a fake tensor does not hold. The initializer runs without the loop while
    build() does, so the module plans: 1,024 x 4,096 + 4,096 weights, fp32, 12 B each with AdamW's moments (the
    gradients freed by zero_grad(): the new weight gradient is the backward's peak); and torch's own trunc_normal_
    is back as it was afterwards."""
    torch = require("torch")
    (package / "trunc.py").write_text(
        "import torch\n\n\ndef build():\n    net = torch.nn.Linear(1024, 4096)\n"
        "    torch.nn.init.trunc_normal_(net.weight, std=0.02)\n    return net, torch.randn(8, 1024)\n")
    original = torch.nn.init._no_grad_trunc_normal_
    data = _json(capsys, "simulate", "--module", "my_pkg.trunc:build", "--task", "train", "--gpu", "rtx-4090")
    assert data["params"] == 1024 * 4096 + 4096 == 4_198_400
    # 4 B of weight and 8 B of AdamW's moments each; zero_grad() freed the gradients, and the backward's new weight
    # gradient (4,096 x 1,024 x 4 B), among the recorded transients, is the peak's, before the other gradients
    assert (data["weights_gib"] + data["optimizer_gib"]) * 2**30 == pytest.approx(4_198_400 * 12)
    assert data["gradients_gib"] == 0 and data["activations_gib"] * 2**30 >= 4096 * 1024 * 4
    assert torch.nn.init._no_grad_trunc_normal_ is original
    from torch._subclasses.fake_tensor import DataDependentOutputException, FakeTensorMode

    with pytest.raises(DataDependentOutputException), FakeTensorMode():  # the cause, still in torch's loop
        torch.nn.init.trunc_normal_(torch.empty(64, 64))


def _json(capsys, *args: str) -> dict:
    assert run([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_estimate_of_a_module_is_simulates_numbers_on_the_one_road(package, capsys):
    """simulate --module and estimate --module are one plan (the one resolver and builder on the profile of the
    module's pass): in the precision the module was built in (fp32 here) every memory level and the step's time
    are equal, and the parts are the hand count's (weights, gradients and AdamW's two moments at 4 B)."""
    sim = _json(capsys, "simulate", "--module", "my_pkg.my_model:build", "--task", "train", "--gpu", "rtx-4090")
    plan = _json(capsys, "estimate", "--module", "my_pkg.my_model:build", "--task", "train", "--gpu", "rtx-4090",
                 "--precision", "fp32")
    mem = plan["memory"]
    for key in ("weights_gib", "gradients_gib", "optimizer_gib", "activations_gib", "allocated_peak_gib",
                "device_peak_gib"):
        assert mem[key] == sim[key], key
    assert plan["work"]["step_s"] == sim["step_s"] > 0
    params, _ = torch_count()
    assert plan["model"]["params_total"] == params and mem["weights_gib"] * 2**30 == params * 4
    assert mem["optimizer_gib"] == 2 * mem["weights_gib"] and mem["gradients_gib"] == 0  # freed: see below
    assert plan["resolved"].startswith("my_pkg.my_model:build: a training step (forward, loss, backward) of Net")
    # the precision was given, so no default is said; an fp32 plan states the rates it times (PyTorch's defaults)
    # and the gradients zero_grad() frees
    freed, rates = plan["assumptions"]
    assert rates.startswith("fp32: convolutions on TF32 tensor cores (cuDNN's default), matmuls at the fp32 rate")
    assert freed.startswith("gradients freed after each optimizer step (zero_grad(set_to_none=True)): none held")


def test_a_modules_training_peak_frees_its_gradients_as_zero_grad_does(package, capsys):
    """s31-beyond's question 9: the MLP (1,024 -> 4,096, GELU, 4,096 -> 1,024, 64 rows of fp32) was planned at
    147.5 MiB, the peak of a loop that keeps its gradients between steps (zero_grad(set_to_none=False)): the
    recorder's 19.5 MiB of backward transients (a new 16 MiB weight gradient among them) on top of every gradient.
    PyTorch's default optimizer.zero_grad() sets them to None (set_to_none=True since torch 2.0), so a backward's
    first gradient becomes .grad, not a copy beside one. By hand: 1,024 x 4,096 + 4,096 + 4,096 x 1,024 + 1,024 =
    8,393,728 parameters, 33,574,912 B each of weights and gradients in fp32, AdamW's two moments 67,149,824 B; the
    gradients (32.02 MiB) outweigh every transient, so the peak is the end of the backward: 4 x 33,574,912 =
    134,299,648 B = 128.08 MiB, none of it activations (the 64 x 1,024 input and the loss, 0.25 MiB, not counted)."""
    torch = require("torch")
    data = _json(capsys, "simulate", "--module", "my_pkg.my_model:mlp", "--task", "train", "--gpu", "rtx-4090")
    assert data["params"] == 8_393_728
    assert (data["weights_gib"], data["gradients_gib"], data["optimizer_gib"]) == \
        (33_574_912 / 2**30, 33_574_912 / 2**30, 67_149_824 / 2**30)
    assert data["activations_gib"] == 0 and data["allocated_peak_gib"] * 2**30 == 134_299_648
    plan = _json(capsys, "estimate", "--module", "my_pkg.my_model:mlp", "--task", "train", "--gpu", "rtx-4090",
                 "--precision", "fp32")
    assert plan["memory"]["peak_phase"] == "end of backward"
    assert any("zero_grad() does by default (set_to_none=True)" in n for n in plan["defaults"])
    # the premise, in the installed torch on real CPU tensors: zero_grad() leaves no gradient behind
    import my_pkg.my_model as m

    net, x = m.mlp()
    opt = torch.optim.AdamW(net.parameters())
    net(x).sum().backward()
    opt.step()
    opt.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_recommend_cost_and_fit_search_cards_for_a_module(package, capsys):
    """A module of one's own was refused by the card searches: recommend ranks the cards it fits, cost lists the
    offers, fit answers for the user's cards, each row the one builder's plan on that card (as estimate gives)."""
    ranked = _json(capsys, "recommend", "--module", "my_pkg.my_model:build", "--task", "train", "--top", "3")
    assert ranked["fitting"] > 0 and len(ranked["setups"]) == 3
    first = ranked["setups"][0]
    alone = _json(capsys, "estimate", "--module", "my_pkg.my_model:build", "--task", "train", "--gpu",
                  first["gpu_id"])
    assert first["device_peak_gib"] == alone["memory"]["device_peak_gib"] and first["step_s"] == \
        alone["work"]["step_s"]
    # a loop of the user's own, not a stack's: the precision it was planned in is said as gpuplan's default
    assert alone["assumptions"] == ["precision bf16-mixed: gpuplan's default (set --precision for the one your code "
                                    "runs in)", "gradients freed after each optimizer step (zero_grad(set_to_none="
                                    "True)): none held at the peak, which comes before the backward"]
    costs = _json(capsys, "cost", "--module", "my_pkg.my_model:build", "--task", "infer", "--gpu", "l4")
    assert costs["setups"] and {row["gpu_id"] for row in costs["setups"]} == {"nvidia-l4"}
    # s18 walk: cost's "samples/s" and "$/1k samples" said nothing of what a sample is, where estimate does
    sample = ("of Net on the example input of my_pkg.my_model:build (its batch and sizes): a sample here is one "
              "example input")
    assert f"one forward {sample}" in costs["defaults"] and f"one training step {sample}" in ranked["defaults"]
    assert costs["setups"][0]["unit"] == "samples"
    prices = [row["usd_per_hour"] for row in costs["setups"]]
    assert prices == sorted(prices)
    fit = _json(capsys, "fit", "--module", "my_pkg.my_model:build", "--task", "train", "--gpu", "2xrtx-4090")
    (row,) = fit["rows"]
    assert row["model"] == "my_pkg.my_model:build" and row["fits"] and row["change"] == ""
    on_one = _json(capsys, "estimate", "--module", "my_pkg.my_model:build", "--task", "train", "--gpu", "rtx-4090")
    assert row["device_peak_gib"] == on_one["memory"]["device_peak_gib"]
    assert any("one of the 2 cards" in n for n in fit["notes"])


@pytest.mark.parametrize("args, words", [
    (["--model", "sdxl"], "give --model (a model gpuplan builds from a config) or --module (your own nn.Module)"),
    (["--batch-size", "8", "--task", "infer"], "batch_size is not read by this plan, and my_pkg.my_model:build is "
     "your own PyTorch module (module): its plan is one pass of the example input its build() returns: set the "
     "batch and sizes there; drop batch_size"),
    (["--grad-checkpointing", "full", "--task", "train"], "grad_checkpointing is not read by this plan"),
])
def test_what_a_modules_plan_does_not_read_is_refused(package, args, words, capsys):
    assert run(["estimate", "--module", "my_pkg.my_model:build", *args]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert words in err and err.count("error:") == 1


@pytest.mark.slow
def test_a_pipeline_simulated_at_its_sizes_matches_its_profile(capsys):
    """SD 1.5's UNet at 512 x 512 (a 64 x 64 latent: a fitted size) gives the profile's activation peak."""
    require("diffusers")
    assert run(["simulate", "--model", "sd1.5", "--task", "train", "--method", "lora", "--resolution", "512",
                "--gpu", "a100-80gb", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["sizes"] == [64 * 64, 77]
    assert data["simulated_activations_gib"] == pytest.approx(data["estimated_activations_gib"], rel=0.02)


def test_what_the_users_code_prints_leaves_json_on_stdout(package, capsys):
    """s25-fuzz: a print() in build() came first on stdout, so ``--json`` printed no JSON."""
    assert run(["estimate", "--module", "my_pkg.my_model:chatty", "--task", "infer", "--gpu", "l4", "--json"]) == 0
    said = capsys.readouterr()
    assert json.loads(said.out)["memory"]["fits"] is True and "building the net" in said.err


def test_the_current_folder_leaves_sys_path_once_the_module_is_planned(tmp_path, monkeypatch, capsys):
    """s27-sec: ``--module`` put the current folder first on ``sys.path`` for the rest of the process, so a module
    that gpuplan (or the caller) imports later, when first needed, was found there first: here ``planted.py``. Now
    the folder is on ``sys.path`` while the user's code is imported, built and run, and ``sys.path`` is as it was
    after, the user's modules forgotten (a second plan imports the file as it is then)."""
    import importlib
    import sys

    folder = tmp_path / "own"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "net.py").write_text(MODEL)
    (tmp_path / "planted.py").write_text("raise SystemExit('planted.py ran')\n")
    monkeypatch.chdir(tmp_path)
    before = list(sys.path)
    assert "" not in before and str(tmp_path) not in before  # else the folder is importable anyway
    assert run(["simulate", "--module", "own.net:mlp", "--task", "infer", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["params"] == 2 * 1024 * 4096 + 4096 + 1024
    assert sys.path == before
    assert not [n for n in sys.modules if n == "own" or n.startswith("own.")]
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("planted")
    (folder / "net.py").write_text(MODEL.replace("nn.Linear(1024, 4096)", "nn.Linear(1024, 2048)")
                                   .replace("nn.Linear(4096, 1024)", "nn.Linear(2048, 1024)"))
    assert run(["simulate", "--module", "own.net:mlp", "--task", "infer", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["params"] == 2 * 1024 * 2048 + 2048 + 1024
