"""DPO (``train_objective: dpo``, TRL's DPOTrainer): the reference copy counted by hand, the paired batch, the
reference forward in memory and speed, the refusals, and the estimate against the fake-tensor simulation of a DPO
step (real transformers, TRL's own head) within the 5 % the simulator's matrix holds (bench/results/dpo_s24.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import require
from gpuplan import GpuplanError
from gpuplan.hardware import load_gpu
from gpuplan.memory.training import training_memory
from gpuplan.model.catalog import load_model
from gpuplan.plan.refusals import scenario_refusal
from gpuplan.scenario import scenario_from
from gpuplan.speed.training import training_speed

GIB = 2**30
REF = "DPO reference model (frozen copy)"
BASE = {"model": "llama-3.1-8b", "task": "train", "seq_len": 1024, "micro_batch_size": 2, "gpu": "h100"}


def plan(**fields):
    s = scenario_from({**BASE, **fields})
    return s, training_memory(s, load_model(s.model))


def test_full_keeps_a_frozen_copy_as_the_policy_holds_its_weights():
    """By hand, Llama-3.1-8B's 8,030,261,248 parameters: ZeRO-3 over 8 GPUs keeps the reference's bf16 copy in
    eighths (2 x P / 8 = 1.87 GiB; DeepSpeed's fp32 master partition is the policy optimizer's, not the
    reference's), FSDP's fp32 parameters in eighths (4 x P / 8 = 3.74 GiB), one GPU the whole bf16 model under
    bf16-true (2 x P = 14.96 GiB); peft's reference is the base with the adapters off: no copy."""
    P = load_model("llama-3.1-8b").params_total
    assert P == 8_030_261_248
    _, zero3 = plan(method="full", num_gpus=8, sharding="zero3", train_objective="dpo")
    assert zero3.other[REF] == pytest.approx(2 * P / 8)
    _, fsdp = plan(method="full", num_gpus=8, sharding="fsdp", train_objective="dpo")
    assert fsdp.other[REF] == pytest.approx(4 * P / 8)
    _, single = plan(method="full", precision="bf16-true", train_objective="dpo")
    assert single.other[REF] == pytest.approx(2 * P) and single.weights == pytest.approx(2 * P)
    for method in ("lora", "qlora"):
        assert REF not in plan(method=method, train_objective="dpo")[1].other
    _, pre = plan(method="full", num_gpus=8, sharding="zero3", train_objective="dpo", precompute_ref_log_probs=True)
    assert REF not in pre.other and "reference_forward" not in pre.phases


def test_the_pair_is_two_rows_and_the_reference_forward_a_phase():
    """The reference's forward is a phase of its own, above the policy's forward (it runs while the policy's
    activations are kept). A pair is two rows, so DPO at micro-batch 1 keeps more than SFT at 1; TRL's head scores
    them in tiles, so it keeps less than SFT at 2, whose fp32 logits alone are 2 x 1024 x 128,256 x 4 B = 0.98
    GiB."""
    _, dpo = plan(method="lora", micro_batch_size=1, train_objective="dpo")
    assert set(dpo.phases) == {"forward", "reference_forward", "backward", "optimizer_step"}
    assert dpo.phases["reference_forward"] > dpo.phases["forward"]
    _, sft1 = plan(method="lora", micro_batch_size=1)
    _, sft2 = plan(method="lora", micro_batch_size=2)
    assert sft1.allocated < dpo.allocated < sft2.allocated


def test_speed_is_the_paired_step_plus_one_reference_forward():
    """With the reference precomputed, a DPO step is an SFT step at twice the micro-batch, to the second; without,
    it adds the reference forward, which is a forward without recompute or backward: under full fine-tuning
    between a quarter and a half of the step's GPU work (a forward is about a third of forward + backward)."""
    gpu = load_gpu("h100")
    s_pre, _ = plan(method="full", num_gpus=8, sharding="zero3", train_objective="dpo", precompute_ref_log_probs=True)
    s_sft, _ = plan(method="full", num_gpus=8, sharding="zero3", micro_batch_size=4)
    s_dpo, _ = plan(method="full", num_gpus=8, sharding="zero3", train_objective="dpo")
    m = load_model("llama-3.1-8b")
    pre, sft, dpo = (training_speed(s, m, gpu) for s in (s_pre, s_sft, s_dpo))
    assert pre.step_time_s == pytest.approx(sft.step_time_s)
    ref = dpo.parts_s["reference_forward"]
    assert dpo.step_time_s == pytest.approx(pre.step_time_s + ref, rel=0.05)
    work = sum(dpo.parts_s[k] for k in ("gemm", "attention", "elementwise"))
    assert 0.25 < ref / work < 0.5
    assert any("DPO: each micro-step runs 4 rows" in a for a in dpo.assumptions)


@pytest.mark.parametrize(("fields", "said"), [
    ({"stack": "torchtune", "method": "lora", "precompute_ref_log_probs": True}, "no precompute_ref_log_probs"),
    ({"stack": "torchtune", "method": "full"}, "full_dpo_distributed only"),
    ({"stack": "torchtune", "method": "lora", "compile": True}, "drop compile"),
    ({"stack": "torchtune", "method": "lora", "activation_offload": True}, "read no enable_activation_offloading"),
    ({"stack": "torchtune", "method": "lora", "loss": "chunked"}, "fp32 logits (no output chunks)"),
    ({"stack": "torchtitan"}, "torchtitan has no DPO recipe"),
    ({"stack": "megatron"}, "no DPO loss"),
    ({"stack": "pytorch"}, "your own loop"),
    ({"packing": "bfd"}, "set packing none"),
    ({"loss": "full"}, "drop loss and loss_chunks"),
    ({"train_objective": "sft", "precompute_ref_log_probs": True}, "set train_objective dpo"),
])
def test_what_dpo_does_not_plan_is_one_sentence(fields, said):
    s = scenario_from({**BASE, "train_objective": "dpo", **fields})
    with pytest.raises(GpuplanError) as err:
        scenario_refusal(s)
    assert said in str(err.value) and str(err.value).count(". ") == 0


@pytest.mark.sim
@pytest.mark.parametrize("fields", [{"method": "full"}, {"method": "lora"}, {"method": "qlora"},
                                    {"method": "full", "precompute_ref_log_probs": True}])
def test_estimate_matches_the_simulated_dpo_step(tmp_path, fields):
    """A narrowed Llama-3.2-1B (4 layers), every layer run (no extrapolation): the estimate's allocated peak without
    the cuBLAS workspace (absent on the CPU) within 5 % of the simulated DPO step's."""
    require("torch")
    require("trl")
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    import oracle
    from gpuplan import overheads as oh
    from gpuplan.sim.simulate import simulate

    model = oracle.narrowed("llama-3.2-1b", tmp_path, real_width=True)
    s = scenario_from({"model": model, "task": "train", "seq_len": 256, "micro_batch_size": 2,
                       "train_objective": "dpo", **fields})
    sim = simulate(s, layers=4)
    est = training_memory(s, load_model(model)).allocated / GIB - oh.CUBLAS_WORKSPACE_GIB
    assert est == pytest.approx(sim.allocated_peak_gib, rel=0.05)


def test_launch_refuses_what_axolotl_cannot_run_in_one_sentence():
    """A DPO plan axolotl's own validator refuses (4-bit loading under FSDP2 with rl: dpo) is one sentence on
    stderr, exit 2, no file written (tests/launchers/test_launch_dpo.py has the files axolotl does run)."""
    import subprocess

    proc = subprocess.run([sys.executable, "-m", "gpuplan", "launch", "--model", "qwen2.5-7b", "--task", "train",
                           "--method", "qlora", "--train-objective", "dpo", "--stack", "axolotl", "--gpu", "l40s",
                           "--num-gpus", "2", "--sharding", "fsdp2", "--target", "axolotl",
                           "--output", "dpo-launch-never-written"], capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "axolotl refuses 4-bit or 8-bit loading under FSDP2 with rl: dpo" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not Path("dpo-launch-never-written").exists()


@pytest.mark.sim
@pytest.mark.parametrize("fields", [{"grad_checkpointing": "full"}, {"grad_checkpointing": "none"}])
def test_torchtune_dpo_matches_the_simulated_recipe_step(tmp_path, fields):
    """torchtune 0.6.1's lora_dpo_single_device step run on fake tensors (sim/stacks.py ``_torchtune_dpo``: real
    torchtune modules, get_batch_log_probs, disable_adapter, DPOLoss; the reference's logits kept in ``_``): a
    narrowed Llama-3.2-1B (4 layers, every layer run), 2 pairs x 256, within 5 % (Llama-3.2-1B at full depth:
    +0.2 % and +0.3 %, bench/results/dpo_s25.md)."""
    require("torch")
    require("torchtune")
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    import oracle
    from gpuplan import overheads as oh
    from gpuplan.sim.simulate import simulate

    model = oracle.narrowed("llama-3.2-1b", tmp_path, real_width=True)
    s = scenario_from({"model": model, "task": "train", "seq_len": 256, "micro_batch_size": 2, "stack": "torchtune",
                       "method": "lora", "train_objective": "dpo", **fields})
    sim = simulate(s, layers=4)
    e = training_memory(s, load_model(model))
    assert e.peak_phase == "reference_forward"
    assert e.allocated / GIB - oh.CUBLAS_WORKSPACE_GIB == pytest.approx(sim.allocated_peak_gib, rel=0.05)


def test_axolotl_loads_the_reference_in_bf16_and_keeps_it_when_precomputed():
    """axolotl 0.18.0 loads the full fine-tune's reference itself (train.py ``setup_reference_model``, cast to
    ``cfg.torch_dtype`` by core/builders/rl.py ``ensure_dtype``) and hands it to TRL's DPOTrainer, which keeps a
    reference it was given even with ``precompute_ref_log_probs`` (trl 1.16 ``__init__``: ``self.ref_model =
    ref_model``). By hand, Llama-3.1-8B's P = 8,030,261,248: under FSDP bf16-mixed the copy is bf16 in eighths,
    2 x P / 8 = 1.87 GiB (TRL's own: the fp32 policy's dtype, 4 x P / 8); precomputed under ZeRO-3 the same
    2 x P / 8 stays, with no reference forward in the step."""
    P = load_model("llama-3.1-8b").params_total
    _, fsdp = plan(method="full", num_gpus=8, sharding="fsdp", precision="bf16-mixed", train_objective="dpo",
                   stack="axolotl")
    assert fsdp.other[REF] == pytest.approx(2 * P / 8)
    s, pre = plan(method="full", num_gpus=8, sharding="zero3", train_objective="dpo", stack="axolotl",
                  precompute_ref_log_probs=True)
    assert pre.other[REF] == pytest.approx(2 * P / 8) and "reference_forward" not in pre.phases
    speed = training_speed(s, load_model(s.model), load_gpu("h100"))
    assert not any("reference forward" in a and "ms" in a for a in speed.assumptions)
    assert REF not in plan(method="lora", train_objective="dpo", stack="axolotl",
                           precompute_ref_log_probs=True)[1].other
