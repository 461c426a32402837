"""TensorRT-LLM as a serving engine (engine trtllm): its KV cache from free_gpu_memory_fraction of the memory left
free, paged blocks, max_batch_size, fp8 KV and nvfp4 weights, checked by hand arithmetic written out here (the rules
are in gpuplan/engines/trtllm.py)."""

from __future__ import annotations

import math

import pytest

from gpuplan import GpuplanError, estimate
from gpuplan.engines import trtllm
from gpuplan.hardware import resolve_gpu
from gpuplan.model.catalog import load_model
from gpuplan.model.layers import Linear
from gpuplan.model.quant import make_format
from gpuplan.scenario import scenario_from

GIB = 2**30
SERVE = {"model": "llama-3.1-8b", "task": "infer", "engine": "trtllm", "gpu": "h100-sxm", "batch_size": 64,
         "prompt_tokens": 1024, "output_tokens": 1024}


def test_kv_pool_by_hand():
    """Llama-3.1-8B bf16 on one H100: KV per token 32 layers x 2 x 8 heads x 128 x 2 B = 131,072 B, a 32-token
    block 4 MiB; weights 16,060,522,496 B; the pool is 0.9 x (cudaMemGetInfo total - CUDA context - weights -
    profiling activation); a 2,048-token request takes 64 blocks."""
    s = scenario_from(SERVE)
    m, gpu = load_model("llama-3.1-8b"), resolve_gpu("h100-sxm")[0]
    act = trtllm.activation(s, m)
    sm = trtllm.startup_memory(s, m, gpu, act)
    assert sm.block_bytes == 32 * 131_072
    assert sm.weights == 16_060_522_496
    free = sm.total_gib * GIB - 16_060_522_496 - act
    assert sm.kv_pool == pytest.approx(0.9 * free)
    assert sm.num_blocks == int(0.9 * free // (32 * 131_072))
    assert sm.max_concurrency(2048) == min(2048, sm.num_blocks // 64)
    plan = estimate(SERVE, advise=False)
    assert plan.memory.max_concurrency == sm.max_concurrency(2048)
    assert plan.memory.kv_cache_pool_gib == pytest.approx(sm.kv_pool / GIB)
    assert plan.memory.fits and plan.speed is not None


def test_fp8_kv_doubles_the_blocks_and_max_batch_size_caps():
    base = estimate(SERVE, advise=False).memory
    fp8 = estimate({**SERVE, "kv_cache_dtype": "fp8"}, advise=False).memory
    assert fp8.max_concurrency == pytest.approx(2 * base.max_concurrency, abs=1)
    capped = estimate({**SERVE, "max_num_seqs": 100}, advise=False).memory
    assert capped.max_concurrency == 100  # max_batch_size


def test_tokens_per_block_rounds_requests_up():
    """A 2,050-token request takes ceil(2050/64) = 33 blocks of 64 tokens."""
    s = scenario_from({**SERVE, "tokens_per_block": 64, "output_tokens": 1026})
    m, gpu = load_model("llama-3.1-8b"), resolve_gpu("h100-sxm")[0]
    sm = trtllm.startup_memory(s, m, gpu, trtllm.activation(s, m))
    assert sm.max_concurrency(2050) == sm.num_blocks // math.ceil(2050 / 64)


def test_nvfp4_weights_are_4_5_bits():
    """NVFP4: 16 e2m1 values (8 bytes) share one e4m3 scale (1 byte), plus an fp32 scale per tensor: a 4096 x 4096
    weight is 16,777,216 / 16 x 9 + 4 = 9,437,188 bytes, 4.5 bits a weight."""
    lin = Linear(name="q_proj", in_features=4096, out_features=4096)
    assert make_format("nvfp4").linear_weight_bytes(lin) == 16_777_216 // 16 * 9 + 4


def test_nvfp4_needs_fp4_tensor_cores():
    with pytest.raises(GpuplanError, match="no fp4 tensor cores"):
        estimate({**SERVE, "quant": "nvfp4"}, advise=False)
    b200 = estimate({**SERVE, "quant": "nvfp4", "gpu": "b200"}, advise=False)
    assert b200.memory.weights_gib < 0.4 * estimate({**SERVE, "gpu": "b200"}, advise=False).memory.weights_gib


def test_trtllm_settings_need_the_engine():
    with pytest.raises(GpuplanError, match="TensorRT-LLM's settings"):
        estimate({**SERVE, "engine": "vllm", "tokens_per_block": 64}, advise=False)


def test_launch_file_uses_trtllm_serves_own_options(tmp_path):
    """``gpuplan launch --target trtllm``: every option of the command is one of trtllm-serve's click options
    (tests/data/trtllm/serve-options.json, transcribed from tensorrt_llm/commands/serve.py: TensorRT-LLM does not
    install without CUDA), with a value of its type, and the settings are the plan's."""
    import json
    import shlex
    from pathlib import Path

    import yaml

    from gpuplan.launchers import launch_files, launch_plan

    data = json.loads((Path(__file__).parents[1] / "data" / "trtllm" / "serve-options.json").read_text())
    names = {n: spec for name, spec in data["options"].items() for n in (name, *spec.get("aliases", ()))}
    plan = launch_plan({**SERVE, "kv_cache_dtype": "fp8", "tokens_per_block": 64})
    files = {f.name: f for f in launch_files(plan, ["trtllm"])}
    text = files["trtllm-serve.sh"].text
    argv = shlex.split(text[text.index("\ntrtllm-serve") + 1:].replace("\\\n", " "))
    assert argv[:2] == ["trtllm-serve", plan.model.name]
    args, i = {}, 2
    while i < len(argv):
        flag = argv[i]
        assert flag in names, f"{flag} is not a trtllm-serve option"
        spec = names[flag]
        if spec["type"] == "flag":
            args[flag], i = True, i + 1
            continue
        value = argv[i + 1]
        {"int": int, "float": float}.get(spec["type"], str)(value)
        if spec["type"] == "choice":
            assert value in spec["choices"]
        args[flag], i = value, i + 2
    engine = plan.result.memory.engine
    assert args["--max_batch_size"] == "2048" and args["--max_num_tokens"] == "8192"
    assert float(args["--kv_cache_free_gpu_memory_fraction"]) == engine["free_gpu_memory_fraction"] == 0.9
    cfg = yaml.safe_load(files["trtllm-config.yaml"].text)
    assert cfg["kv_cache_config"] == {"dtype": "fp8", "tokens_per_block": 64, "free_gpu_memory_fraction": 0.9}
    assert "scheduler_config" not in cfg


def test_launch_trtllm_writes_the_capacity_policy():
    """A plan given ``capacity_scheduler_policy`` carries it into the --config YAML as TensorRT-LLM's example
    configs write it (``scheduler_config: {capacity_scheduler_policy: MAX_UTILIZATION}``, a top-level LlmArgs key)."""
    import yaml

    from gpuplan.launchers import launch_files, launch_plan

    files = {f.name: f for f in launch_files(launch_plan({**SERVE, "capacity_scheduler_policy": "max_utilization"}),
                                              ["trtllm"])}
    cfg = yaml.safe_load(files["trtllm-config.yaml"].text)
    assert cfg["scheduler_config"] == {"capacity_scheduler_policy": "MAX_UTILIZATION"}


def test_launch_trtllm_refuses_other_engines():
    from gpuplan.launchers import launch_files, launch_plan

    with pytest.raises(GpuplanError, match="plan again with --engine trtllm"):
        launch_files(launch_plan({**SERVE, "engine": "vllm"}), ["trtllm"])


def test_fp8_needs_ada_or_later():
    """TensorRT-LLM's hardware support matrix (NVIDIA/TensorRT-LLM docs/source/features/quantization.md): FP8 per
    tensor on Blackwell, Hopper and Ada, not Ampere (vLLM runs fp8 weight-only there, TensorRT-LLM does not)."""
    with pytest.raises(GpuplanError, match="Ada, Hopper and Blackwell"):
        estimate({**SERVE, "gpu": "a100-80gb", "quant": "fp8"}, advise=False)
    assert estimate({**SERVE, "gpu": "l40s", "quant": "fp8"}, advise=False).speed is not None


@pytest.mark.parametrize("gpu", ["mi300x", "intel-gaudi3", "apple-m3-ultra"])
def test_trtllm_runs_on_nvidia_only(gpu):
    """TensorRT builds CUDA engines: an AMD, Intel or Apple card is refused in one sentence naming the engines
    that run there, not given a TensorRT-LLM pool."""
    with pytest.raises(GpuplanError, match="NVIDIA GPUs only"):
        estimate({"model": "qwen3-8b", "task": "infer", "engine": "trtllm", "gpu": gpu}, advise=False)
    assert estimate({"model": "qwen3-8b", "task": "infer", "engine": "vllm", "gpu": "mi300x"}, advise=False).memory.fits


def test_trtllm_backend_picks_the_runtime_and_the_launch_file_writes_it():
    """``trtllm_backend`` is trtllm-serve's ``--backend``: pytorch (the default) launches a context step's kernels
    from Python, tensorrt runs a built engine from the C++ runtime. Llama-3.1-8B on an H100 with a 128-token prompt:
    (14 - 7 + 7) x 32 = 448 launches at overheads.TRTLLM_EAGER_LAUNCH_S hold the PyTorch step; the TensorRT engine's
    step is the GPU's work alone. Decode steps (CUDA graphs) are the same in both."""
    from conftest import step_timer_of
    from gpuplan import overheads as oh
    from gpuplan.launchers import launch_files, launch_plan

    torch_flow, engine = step_timer_of(SERVE), step_timer_of(SERVE, trtllm_backend="tensorrt")
    assert trtllm.backend(scenario_from(SERVE)) == "pytorch" and torch_flow.timing.eager_prompts
    assert not engine.timing.eager_prompts and engine.timing.launch_s == 0.0
    launched = torch_flow.prefill_parts(128)
    assert launched["kernel_launches"] > 0
    assert sum(v for k, v in launched.items() if k != "host") == pytest.approx(448 * oh.TRTLLM_EAGER_LAUNCH_S)
    assert "kernel_launches" not in engine.prefill_parts(128)
    assert engine.prefill_s(128) < 0.5 * torch_flow.prefill_s(128)
    assert engine.decode_s(64, 1000) == torch_flow.decode_s(64, 1000)
    for value, flag in ((None, "pytorch"), ("tensorrt", "tensorrt"), ("pytorch", "pytorch")):
        fields = {"trtllm_backend": value} if value else {}
        text = {f.name: f for f in launch_files(launch_plan({**SERVE, **fields}), ["trtllm"])}["trtllm-serve.sh"].text
        assert f"--backend {flag} " in text


def test_trtllm_backend_is_said_only_when_set_and_refused_as_another_engines_setting():
    """Unset, the field stays out of a scenario's dump (answers recorded before it read as they did); a value
    outside trtllm-serve's choices is one clear error, and given to vLLM it is refused as TensorRT-LLM's setting."""
    assert "trtllm_backend" not in scenario_from(SERVE).model_dump()
    assert scenario_from({**SERVE, "trtllm_backend": "tensorrt"}).model_dump()["trtllm_backend"] == "tensorrt"
    with pytest.raises(GpuplanError, match="trtllm_backend"):
        scenario_from({**SERVE, "trtllm_backend": "onnx"})
    with pytest.raises(GpuplanError, match="trtllm_backend are TensorRT-LLM's settings: set engine trtllm"):
        estimate({**SERVE, "engine": "vllm", "trtllm_backend": "tensorrt"})


def test_the_replicated_down_projection_is_held_whole_by_every_rank():
    """Each rank holds all of TensorRT-LLM's fused_a (``DeepseekV3Linear`` without a tensor-parallel mode, the
    layout of every engine: gpuplan.tensors.layout.replicated): DeepSeek-R1 FP8 at TP 8, 61 layers x (7,168 x
    1,536 + 7,168 x 576 weights + a 4-byte FP8 scale each) = 61 x 15,138,824 B, of which an even split leaves 1/8 on
    a GPU: 7/8 of it, 808,034,731 B, more a GPU in the weights TensorRT-LLM loads before sizing its KV pool."""
    m = load_model("deepseek-r1")
    s = scenario_from({"model": "deepseek-r1", "task": "infer", "engine": "trtllm", "gpu": "h200", "num_gpus": 8,
                       "tp": 8, "quant": "fp8", "prompt_tokens": 1024, "output_tokens": 256})
    from gpuplan.tensors.state import weight_format

    fmt, skip = weight_format(s, m)
    gpu = resolve_gpu("h200")[0]
    held = trtllm.startup_memory(s, m, gpu, 0.0)
    even = sum(m.weight_bytes(fmt, skip=skip).values()) / 8
    assert held.weights == pytest.approx(even + 61 * 15_138_824 * 7 / 8)
    assert held.weights - even == pytest.approx(808_034_731, abs=1)


def test_an_fp8_launch_asks_for_the_fp8_checkpoint_it_has_none_of(tmp_path):
    """Session 17's first walk (left 9): the trtllm-serve.sh of an fp8 plan loaded the bf16 checkpoint id with a
    comment to replace it; run as written it served bf16 weights (Scout at TP 2: 108 GiB a card against the plan's
    54). TensorRT-LLM reads the format from the checkpoint and quantizes nothing as it loads (its quantization docs),
    so the script asks for CHECKPOINT: unset, the shell stops with the sentence before trtllm-serve starts; set, the
    server loads it."""
    import os
    import subprocess

    from gpuplan.launchers import launch_files, launch_plan

    plan = launch_plan({**SERVE, "quant": "fp8"})
    text = {f.name: f for f in launch_files(plan, ["trtllm"])}["trtllm-serve.sh"].text
    assert f"set CHECKPOINT to {plan.model.name} quantized to fp8 by NVIDIA ModelOpt" in text
    assert f"--model {plan.model.name} --quant fp8 --export_fmt hf" in text
    (tmp_path / "trtllm-serve.sh").write_text(text)
    fake = tmp_path / "bin" / "trtllm-serve"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\necho "loads $1"\n')
    fake.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "CHECKPOINT"}
    env["PATH"] = f"{fake.parent}:{env['PATH']}"
    run = subprocess.run(["bash", "trtllm-serve.sh"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert run.returncode == 1 and not run.stdout
    assert "CHECKPOINT: set CHECKPOINT to the model quantized to fp8 by NVIDIA ModelOpt" in run.stderr
    run = subprocess.run(["bash", "trtllm-serve.sh"], cwd=tmp_path, env={**env, "CHECKPOINT": "/ckpt/llama-fp8"},
                         capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout == "loads /ckpt/llama-fp8\n"
    bf16 = {f.name: f for f in launch_files(launch_plan(SERVE), ["trtllm"])}["trtllm-serve.sh"].text
    assert "CHECKPOINT" not in bf16 and f"trtllm-serve {plan.model.name} " in bf16


def test_cards_older_than_ampere_are_warned_not_refused():
    """NVIDIA's supported-hardware page (nvidia.github.io/TensorRT-LLM/supported-hardware.html) lists Blackwell,
    Hopper, Ada and Ampere; its support matrix leaves other architectures to community support. Volta and Turing
    plans are made, with one warning; Ampere's and newer carry none."""
    for gpu, arch in (("v100-32gb", "Volta"), ("t4", "Turing"), ("2080ti", "Turing")):
        plan = estimate({**SERVE, "model": "qwen2.5-1.5b", "gpu": gpu, "precision": "fp16-true"}, advise=False)
        said = [w for w in plan.warnings if w.startswith("TensorRT-LLM is not developed or tested")]
        assert len(said) == 1 and f"on {arch} (" in said[0] and "community support" in said[0]
    for gpu in ("a100-80gb", "l40s", "h100-sxm"):
        plan = estimate({**SERVE, "model": "qwen2.5-1.5b", "gpu": gpu}, advise=False)
        assert not [w for w in plan.warnings if "not developed or tested" in w]
    vllm = estimate({**SERVE, "model": "qwen2.5-1.5b", "gpu": "t4", "engine": "vllm", "precision": "fp16-true"},
                    advise=False)
    assert not [w for w in vllm.warnings if "not developed or tested" in w]
