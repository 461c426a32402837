"""What ``gpuplan probe`` runs on a GPU (issue 20): each installed library's own modules, chosen per part of the
step and written into the record; the choice is tested here on the CPU with the libraries present or not, the HF
Trainer's timing loop on a tiny model on the CPU, and the real libraries on CUDA (``gpu`` marker)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gpuplan.scenario import scenario_from
from gpuplan.sim.real import backends, trainer_arguments, uses

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

EVERYTHING = {"bitsandbytes", "liger_kernel", "torchtune", "torchtitan", "unsloth"}


def have(*names):
    return lambda module: module in names


def _parts(chosen):
    return {b.part: b for b in chosen}


def test_qlora_with_bitsandbytes_runs_its_4bit_linears_and_8bit_optimizer():
    s = scenario_from(dict(model="llama-3.1-8b", task="train", method="qlora", optimizer="paged-adamw-8bit"))
    parts = _parts(backends(s, have(*EVERYTHING)))
    assert parts["4-bit base"].real and "Linear4bit" in parts["4-bit base"].runs
    assert parts["optimizer"].real and "PagedAdamW8bit" in parts["optimizer"].runs
    assert parts["training loop"].real and "Trainer" in parts["training loop"].runs  # stack hf


def test_without_a_library_its_part_is_the_stand_in_and_the_record_says_why():
    s = scenario_from(dict(model="llama-3.1-8b", task="train", method="qlora", optimizer="adamw-8bit"))
    parts = _parts(backends(s, have()))
    assert not parts["4-bit base"].real and "bitsandbytes not installed" in parts["4-bit base"].why
    assert not parts["optimizer"].real and not uses(list(parts.values()), "optimizer")


def test_liger_for_the_fused_loss_on_hf_and_axolotl():
    for stack in ("hf", "axolotl"):
        s = scenario_from(dict(model="llama-3.1-8b", task="train", method="lora", stack=stack,
                               loss="fused-linear"))
        assert uses(backends(s, have("liger_kernel")), "fused kernels")
        assert not uses(backends(s, have()), "fused kernels")


def test_unsloth_stays_emulated_and_says_why():
    s = scenario_from(dict(model="llama-3.1-8b", task="train", method="qlora", stack="unsloth"))
    parts = _parts(backends(s, have(*EVERYTHING)))
    assert not parts["fused kernels"].real and "checkpoint" in parts["fused kernels"].why
    assert parts["4-bit base"].real  # bitsandbytes still runs the base


def test_torchtune_runs_its_own_model():
    s = scenario_from(dict(model="llama-3.2-1b", task="train", method="lora", stack="torchtune"))
    parts = _parts(backends(s, have("torchtune")))
    assert parts["model"].real and "torchtune" in parts["model"].runs
    assert "4-bit base" not in parts and "plain loop" in parts["training loop"].runs


def test_trainer_arguments_follow_the_scenario():
    s = scenario_from(dict(model="llama-3.1-8b", task="train", method="lora", micro_batch_size=4,
                           grad_accum_steps=8, grad_checkpointing="full", optimizer="paged-adamw-8bit"))
    args = trainer_arguments(s, "/tmp/x", 3, liger=True)
    assert (args["per_device_train_batch_size"], args["gradient_accumulation_steps"], args["max_steps"]) == (4, 8, 3)
    assert args["bf16"] and not args["fp16"] and args["gradient_checkpointing"]
    assert args["optim"] == "paged_adamw_8bit" and args["use_liger_kernel"] and args["report_to"] == []


@pytest.mark.sim
def test_trainer_times_each_optimizer_step_on_a_tiny_model():
    """The HF Trainer path end to end on the CPU: a 2-layer Llama, 3 optimizer steps, the first dropped."""
    transformers = pytest.importorskip("transformers")
    from gpuplan.sim.real import trainer_step_times

    cfg = transformers.LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=2, vocab_size=256)
    model = transformers.LlamaForCausalLM(cfg)
    s = scenario_from(dict(model="llama-3.2-1b", task="train", precision="fp32", micro_batch_size=2, seq_len=16,
                           optimizer_impl="foreach"))
    times = trainer_step_times(s, model, 256, 2, liger=False)
    assert len(times) == 2 and all(t > 0 for t in times)


@pytest.mark.gpu
def test_probe_on_cuda_names_the_libraries_it_ran(tmp_path):
    """On a CUDA GPU: a QLoRA probe of a narrowed Llama runs bitsandbytes' Linear4bit when it is installed, the
    record lists its backends, and the step is timed per optimizer step by the HF Trainer."""
    import oracle
    from gpuplan.sim.probe import probe

    path = oracle.narrowed("llama-3.1-8b", tmp_path, real_width=True)
    rec = probe({"model": path, "task": "train", "method": "qlora", "seq_len": 512}, simulate_too=False)
    parts = {b["part"]: b for b in rec["backends"]}
    assert parts["training loop"]["real"] and rec["probe"]["timed"].startswith("one optimizer step")
    try:
        import bitsandbytes  # noqa: F401
    except ImportError:
        assert not parts["4-bit base"]["real"]
    else:
        assert parts["4-bit base"]["real"] and any("bitsandbytes" in n for n in rec["notes"])
    assert not rec["probe"]["oom"] and rec["probe"]["tokens_per_s"] > 0


@pytest.mark.sim
def test_the_probe_builds_its_model_with_the_chosen_backends_on_the_cpu(tmp_path):
    """The probe's build path on the CPU (no bitsandbytes, no Liger here: their parts stay the stand-ins): a
    narrowed Llama with LoRA and Liger's fused loss asked for builds, its loss is gpuplan's emulated fused loss,
    and the backends say the kernels were emulated."""
    import oracle
    from gpuplan.model.catalog import load_model
    from gpuplan.sim.probe import _build_on_device

    path = oracle.narrowed("llama-3.1-8b", tmp_path)
    s = scenario_from({"model": path, "task": "train", "method": "lora", "seq_len": 64, "loss": "fused-linear",
                       "stack": "pytorch"})
    chosen = backends(s, have())
    notes: list[str] = []
    model, forward_loss = _build_on_device(s, load_model(path), chosen, notes, device="cpu")
    assert forward_loss is not None and any("lora_" in n for n, _ in model.named_parameters())
    assert not uses(chosen, "fused kernels")
