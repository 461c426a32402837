"""The training stacks as scenario fields: each framework's defaults, explicit fields winning over them, and one
sentence (exit code 2 in the CLI) for what a framework cannot run."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gpuplan import GpuplanError, estimate, load_scenario
from gpuplan.scenario import scenario_from
from gpuplan.stacks import FRAMEWORKS, STACKS, TECHNIQUES

BASE = {"model": "llama-3.1-8b", "task": "train"}


def scenario(**fields):
    return scenario_from({**BASE, **fields})


@pytest.mark.parametrize("framework, method, expected", [
    # the HF Trainer as before, with peft's fp32 adapters and the QLoRA recipe's checkpointing
    ("hf", "lora", dict(precision="bf16-mixed", loss="full", grad_checkpointing="none", adapter_dtype="fp32",
                        activation_offload=False, compile=False, optimizer_in_backward=False)),
    ("hf", "qlora", dict(grad_checkpointing="full", qlora_fp32_upcast=True, adapter_dtype="fp32")),
    ("torchtune", "lora", dict(precision="bf16-true", loss="chunked", loss_chunks=8, grad_checkpointing="full",
                               adapter_dtype="bf16", qlora_fp32_upcast=False)),
    ("torchtitan", "full", dict(precision="bf16-mixed", loss="full", grad_checkpointing="selective")),
    ("unsloth", "qlora", dict(loss="fused-linear", grad_checkpointing="full", activation_offload=True,
                              qlora_fp32_upcast=False, adapter_dtype="fp32")),
    ("axolotl", "qlora", dict(loss="fused-linear", grad_checkpointing="full", qlora_fp32_upcast=True)),
    ("pytorch", "lora", dict(precision="bf16-true", loss="full", grad_checkpointing="none", adapter_dtype="fp32")),
])
def test_each_framework_sets_its_recipe_defaults(framework, method, expected):
    s = scenario(framework=framework, method=method)
    assert {k: getattr(s, k) for k in expected} == expected
    assert all(getattr(s, k) is not None for k in TECHNIQUES if k != "loss_chunks")  # every technique resolved


def test_explicit_fields_win_and_stay_explicit():
    s = scenario(framework="torchtune", method="lora", loss="full", grad_checkpointing="none")
    assert (s.loss, s.loss_chunks, s.grad_checkpointing, s.precision) == ("full", None, "none", "bf16-true")
    assert {"loss", "grad_checkpointing"} <= s.model_fields_set and "precision" not in s.model_fields_set
    assert scenario(method="qlora", grad_checkpointing="none").grad_checkpointing == "none"
    # without prepare_model_for_kbit_training (no fp32 upcast) the HF QLoRA recipe does not checkpoint either
    assert scenario(method="qlora", qlora_fp32_upcast=False).grad_checkpointing == "none"
    assert scenario(method="lora", adapter_dtype="bf16").adapter_bytes == 2
    assert scenario(method="lora").adapter_bytes == 4


def test_fsdp_means_each_stacks_own_engine():
    two = dict(num_gpus=2, strategy="fsdp")
    assert scenario(**two).sharding_engine == "fsdp1"  # accelerate's FSDP plugin
    assert scenario(framework="torchtune", **two).sharding_engine == "fsdp2"
    assert scenario(framework="torchtitan", **two).strategy == "fsdp2"
    assert scenario(strategy="fsdp2", num_gpus=2).sharding_engine == "fsdp2"
    assert scenario(strategy="zero3", num_gpus=2).sharding_engine == "deepspeed"
    for strategy in ("fsdp", "fsdp1", "fsdp2", "zero3"):
        assert scenario(strategy=strategy, num_gpus=2).resolved_strategy == "zero3"  # FULL_SHARD shards as ZeRO-3


def test_a_change_of_framework_or_method_reapplies_the_defaults():
    s = scenario(method="lora", micro_batch_size=2)
    tt = s.model_copy(update={"framework": "torchtune"})
    assert (tt.precision, tt.loss, tt.adapter_dtype, tt.micro_batch_size) == ("bf16-true", "chunked", "bf16", 2)
    assert s.model_copy(update={"method": "qlora"}).grad_checkpointing == "full"
    with pytest.raises(GpuplanError, match="no LoRA"):
        s.model_copy(update={"framework": "torchtitan"})


@pytest.mark.parametrize("fields, message", [
    (dict(framework="torchtune", precision="bf16-mixed"), "one dtype"),
    (dict(framework="torchtune", method="lora", adapter_dtype="fp32"), "model dtype"),
    (dict(framework="torchtune", num_gpus=2, strategy="zero3"), "FSDP2 only"),
    (dict(framework="torchtune", loss="fused-linear"), "no fused linear cross-entropy"),
    (dict(framework="torchtune", method="lora", optimizer_in_backward=True), "full fine-tuning recipes"),
    (dict(framework="torchtitan", method="qlora"), "no LoRA"),
    (dict(framework="torchtitan", optimizer="adamw-8bit"), "torch AdamW"),
    (dict(framework="torchtitan", precision="bf16-true"), "fp32 parameters"),
    (dict(framework="torchtitan", activation_offload=True), "no activation offloading"),
    (dict(framework="unsloth", num_gpus=2, strategy="zero3"), "one GPU"),
    (dict(framework="unsloth", method="qlora", quant="gptq-int4"), "bitsandbytes"),
    (dict(framework="hf", loss="chunked"), "full logits"),
    (dict(framework="hf", activation_offload=True), "no activation offloading"),
    (dict(framework="hf", optimizer_in_backward=True), "optimizer_in_backward needs"),
    (dict(framework="hf", grad_checkpointing="selective"), "no selective checkpointing"),
    (dict(framework="axolotl", grad_checkpointing="full", checkpoint_every=2), "every decoder layer"),
    (dict(framework="pytorch", optimizer_in_backward=True, grad_accum_steps=4), "cannot accumulate"),
    (dict(framework="torchtune", loss="full", loss_chunks=4), "loss_chunks applies"),
    (dict(framework="torchtitan", checkpoint_every=2), "grad_checkpointing full"),
    (dict(framework="unsloth", task="infer"), "training stack"),
    (dict(framework="tourchtune"), "framework"),
])
def test_what_a_framework_cannot_run_is_one_sentence(fields, message):
    with pytest.raises(GpuplanError, match=message) as info:
        scenario(**fields)
    assert "\n" not in str(info.value)


def test_every_stack_is_described():
    assert set(STACKS) == set(FRAMEWORKS)
    for stack in STACKS.values():
        assert stack.title and stack.logs and stack.logs_level in ("allocated", "reserved")
        assert stack.fsdp in (None, "fsdp1", "fsdp2")


def test_the_result_names_the_framework_and_every_technique():
    r = estimate({**BASE, "method": "qlora", "framework": "hf"}, advise=False)
    for key in ("framework", "loss", "loss_chunks", "activation_offload", "compile", "optimizer_in_backward",
                "adapter_dtype", "grad_checkpointing", "checkpoint_every", "precision", "qlora_fp32_upcast"):
        assert key in r.scenario
    assert r.scenario["grad_checkpointing"] == "full"
    said = " ".join(r.assumptions)
    assert "grad_checkpointing full (peft's prepare_model_for_kbit_training" in said
    assert "adapter_dtype fp32" in said
    infer = estimate({"model": "llama-3.1-8b", "task": "infer"}, advise=False).scenario
    assert "loss" not in infer and "adapter_dtype" not in infer and infer["framework"] == "hf"


def gpuplan(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpuplan", *args], capture_output=True, text=True,
                          env={**__import__("os").environ, "COLUMNS": "160"})


def test_cli_flags_and_files_take_the_framework(tmp_path):
    flags = ["--model", "llama-3.1-8b", "--task", "train", "--method", "lora", "--framework", "torchtune", "--json"]
    done = gpuplan("estimate", *flags)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)["scenario"]
    assert (data["framework"], data["precision"], data["loss"], data["loss_chunks"]) == ("torchtune", "bf16-true",
                                                                                        "chunked", 8)
    job = tmp_path / "job.yaml"
    job.write_text("model: llama-3.1-8b\ntask: train\nmethod: lora\nframework: unsloth\n")
    s = load_scenario(job, {"compile": "true"})
    assert (s.framework, s.loss, s.activation_offload, s.compile) == ("unsloth", "fused-linear", True, True)
    bad = gpuplan("estimate", "--model", "llama-3.1-8b", "--task", "train", "--method", "lora", "--framework",
                  "torchtitan")
    assert bad.returncode == 2 and "no LoRA" in bad.stderr and "Traceback" not in bad.stderr
