"""`gpuplan launch --engine sglang --target sglang`: the launch_server command carries the settings the estimate
and the serving simulation assumed (engines/sglang.py, serving/simulate.py sglang_scheduler)."""

from __future__ import annotations

import re
import shlex

import pytest

from gpuplan.engines import sglang
from gpuplan.hardware import load_gpu
from gpuplan.launchers import launch_files, launch_plan, targets_for
from gpuplan.launchers.settings import LaunchOptions
from gpuplan.model.catalog import load_model
from gpuplan.scenario import scenario_from
from gpuplan.serving.simulate import sglang_scheduler

SERVE = dict(model="llama-3.1-8b", task="infer", engine="sglang", gpu="h100-sxm", batch_size=16, prompt_tokens=2000,
             output_tokens=200)


def flags(scenario: dict) -> dict[str, str]:
    text = {f.name: f.text for f in launch_files(launch_plan(scenario), ["sglang"], LaunchOptions())}
    lines = [line for line in text["sglang-serve.sh"].splitlines() if line and not line.startswith(("#", "set "))]
    argv = shlex.split(" ".join(lines).replace("\\ ", " "))
    assert argv[:3] == ["python", "-m", "sglang.launch_server"]
    return dict(zip(argv[3::2], argv[4::2], strict=True))


def test_the_command_sets_the_scheduler_gpuplan_simulated():
    """An H100 at TP 1 (server_args.py, PR #10975's rule, by hand): chunked_prefill_size 8,192, cuda_graph_max_bs
    256, a reserve of 512 + 8,192 x 1.5 + 256 x 2 + 1/8 x 1,024 = 13,440 MiB (over the 10 GiB floor), so
    mem_fraction_static round((81,510 - 13,440) / 81,510, 3) = 0.835 of its 79.6 GiB; the scheduler capacity
    simulates (sglang_scheduler) takes the same chunk and request cap; fcfs as simulated."""
    f = flags(SERVE)
    s = scenario_from({**SERVE})
    sm = sglang.startup_memory(s, load_model("llama-3.1-8b"), load_gpu("h100-sxm"))
    eng = sglang_scheduler(sm)
    assert f["--model-path"] == "meta-llama/Llama-3.1-8B" and f["--tp-size"] == "1"
    assert float(f["--mem-fraction-static"]) == sm.mem_fraction_static == 0.835
    assert int(f["--chunked-prefill-size"]) == eng.max_num_batched_tokens == 8192
    assert int(f["--max-running-requests"]) == eng.max_num_seqs == sm.max_running_requests
    assert int(f["--cuda-graph-max-bs"]) == 256 and f["--schedule-policy"] == "fcfs"
    assert f["--kv-cache-dtype"] == "auto" and "--enable-mixed-chunk" not in f and "--disable-radix-cache" not in f


def test_fp8_and_tensor_parallel_flags():
    f = flags({**SERVE, "model": "llama-3.1-70b", "tp": 4, "num_gpus": 4, "quant": "fp8", "kv_cache_dtype": "fp8"})
    assert f["--tp-size"] == "4" and f["--quantization"] == "fp8" and f["--kv-cache-dtype"] == "fp8_e4m3"
    assert f["--cuda-graph-max-bs"] == "512"  # TP 4 on an 80 GB card


def test_only_sglang_plans_take_the_sglang_target():
    assert targets_for(launch_plan(SERVE)) == ["sglang", "skypilot"]
    with pytest.raises(Exception, match="plan again with --engine sglang"):
        targets_for(launch_plan({**SERVE, "engine": "vllm"}), ["sglang"])


def test_a_copy_over_two_nodes_joins_them(tmp_path):
    """DeepSeek-R1 with SGLang's two-node recipe (--tp 16 over 2 nodes of 8 H100s): the same script on each node,
    --nnodes 2, this node's rank from NODE_RANK and --dist-init-addr from MASTER_ADDR, as SGLang's multi-node
    examples run it; a missing NODE_RANK stops the script with one sentence."""
    import subprocess

    plan = launch_plan(dict(model="deepseek-r1", task="infer", engine="sglang", gpu="h100-sxm", num_gpus=8,
                            num_nodes=2, tp=16))
    assert (plan.gpus_per_node, plan.num_nodes) == (8, 2)
    script = tmp_path / "sglang-serve.sh"
    script.write_text({f.name: f.text for f in launch_files(plan, ["sglang"], LaunchOptions())}["sglang-serve.sh"])
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "python").write_text('#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done\n')
    (fake / "python").chmod(0o755)
    env = {"PATH": f"{fake}:/usr/bin:/bin", "NODE_RANK": "1", "MASTER_ADDR": "10.0.0.1"}
    argv = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, check=True).stdout.split()
    f = dict(zip(argv[2::2], argv[3::2], strict=True))
    assert (f["--tp-size"], f["--nnodes"], f["--node-rank"], f["--dist-init-addr"]) == ("16", "2", "1",
                                                                                       "10.0.0.1:25000")
    missing = subprocess.run(["bash", str(script)], env={"PATH": f"{fake}:/usr/bin:/bin"}, capture_output=True,
                             text=True)
    assert missing.returncode != 0 and "set NODE_RANK" in missing.stderr


@pytest.mark.parametrize("scenario", [SERVE, dict(SERVE, model="qwen3-30b-a3b", gpu="h200", users=50, batch_size=1),
                                      dict(SERVE, gpu="rtx-4090", kv_cache_dtype="fp8", batch_size=4),
                                      dict(SERVE, model="qwen3-0.6b", gpu="l40", prompt_tokens=200, output_tokens=56)])
def test_the_header_states_the_kv_pool_the_plan_expects(scenario):
    """The SGLang script's header has the KV pool line vLLM's has, read from the Plan: its GiB, its tokens and
    the requests it holds, the same numbers `gpuplan estimate` prints (a session's walk found it named otherwise
    and looked for it as vLLM's)."""
    plan = launch_plan(scenario)
    mem = plan.result.memory
    text = launch_files(plan, ["sglang"], LaunchOptions())[0].text
    pool = [line for line in text.splitlines() if line.startswith("# KV pool")]
    assert pool == [f"# KV pool (SGLang's token pool) {mem.kv_cache_pool_gib:.1f} GiB per GPU: "
                    f"{mem.max_context_tokens:,} tokens, up to {mem.max_concurrency:,} concurrent requests of "
                    f"{plan.scenario.prompt_tokens + plan.scenario.output_tokens:,} tokens (the plan: "
                    f"{plan.scenario.batch_size:,}); memory rules of SGLang {mem.engine['version']}"]
    if plan.scenario.model.lower().endswith("qwen3-0.6b"):  # s9's walk: '1193 concurrent requests'
        assert mem.max_concurrency >= 1000 and f"up to {mem.max_concurrency:,} concurrent" in pool[0]
    assert mem.max_context_tokens > plan.scenario.prompt_tokens + plan.scenario.output_tokens


def test_a_skypilot_task_serves_the_plan_with_sglang(tmp_path):
    """The s19 walk: a startup that chose SGLang for gpt-oss-120b got no sky.yaml ("--target skypilot does not
    apply: the plan is for engine sglang, whose memory differs from vLLM's preallocated pool"): the task ran vLLM
    only. Now it installs SGLang (docs.sglang.io: `pip install sglang`; at least 0.5, the release whose rules the
    estimate follows, or the release asked) and runs the script's own command; over two nodes the rank and the
    first node come from SkyPilot's environment. TensorRT-LLM is refused in one sentence naming what runs it."""
    import subprocess

    import yaml

    spot = {**SERVE, "provider": "aws", "pricing": "spot"}
    text = {f.name: f.text for f in launch_files(launch_plan(spot), None, LaunchOptions())}
    task = yaml.safe_load(text["sky.yaml"])
    assert task["resources"]["use_spot"] is True and task["resources"]["accelerators"] == "H100:1"
    assert shlex.split(task["setup"]) == ["pip", "install", "sglang>=0.5"]
    script = [line for line in text["sglang-serve.sh"].splitlines() if line and not line.startswith(("#", "set "))]
    assert shlex.split(task["run"].replace("\\\n", " ")) == shlex.split(" ".join(script).replace("\\ ", " "))
    pinned = yaml.safe_load(launch_files(launch_plan({**spot, "engine_version": "0.4.3.post2"}), ["skypilot"],
                                         LaunchOptions())[0].text)
    assert pinned["setup"].split() == ["pip", "install", "sglang==0.4.3.post2"]
    two = launch_plan(dict(model="deepseek-r1", task="infer", engine="sglang", gpu="h100-sxm", num_gpus=8,
                           num_nodes=2, tp=16))
    run = yaml.safe_load(launch_files(two, ["skypilot"], LaunchOptions())[0].text)["run"]
    fake = tmp_path / "python"
    fake.write_text('#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done\n')
    fake.chmod(0o755)
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin", "SKYPILOT_NODE_RANK": "1", "SKYPILOT_NODE_IPS": "10.0.0.7\n10.0.0.8"}
    argv = subprocess.run(["bash", "-c", run], env=env, capture_output=True, text=True, check=True).stdout.split()
    f = dict(zip(argv[2::2], argv[3::2], strict=True))
    assert (f["--nnodes"], f["--node-rank"], f["--dist-init-addr"]) == ("2", "1", "10.0.0.7:25000")
    with pytest.raises(Exception, match="TensorRT-LLM's pip wheel needs the CUDA toolkit"):
        targets_for(launch_plan({**spot, "engine": "trtllm"}), ["skypilot"])
    assert targets_for(launch_plan({**spot, "engine": "trtllm"})) == ["trtllm"]


def test_skypilot_reads_which_engines_it_cannot_run_from_their_profiles(monkeypatch):
    """s20's leftover: the SkyPilot launcher refused TensorRT-LLM by comparing the engine's launch target to
    "trtllm"; the refusal is the engine profile's own field (Engine.skypilot_refusal), which the launcher reads."""
    from gpuplan.engines.base import Engine
    from gpuplan.engines.trtllm import Trtllm
    from gpuplan.engines.vllm import Vllm

    assert Engine.skypilot_refusal is None and Trtllm.skypilot_refusal.startswith("TensorRT-LLM's pip wheel")
    spot = {**SERVE, "engine": "vllm", "provider": "aws", "pricing": "spot"}
    assert targets_for(launch_plan(spot), ["skypilot"]) == ["skypilot"]
    monkeypatch.setattr(Vllm, "skypilot_refusal", "vLLM refused for this test", raising=False)
    with pytest.raises(Exception, match="vLLM refused for this test"):
        targets_for(launch_plan(spot), ["skypilot"])


@pytest.mark.parametrize("fields, script", [
    ({"engine": "sglang"}, "sglang-serve.sh"),
    ({"engine": "vllm"}, "vllm-serve.sh"),
    ({"engine": "llama.cpp", "quant": "q4_k_m"}, "llama-server.sh"),
    ({"task": "train", "method": "lora", "stack": "torchtune"}, "tune-run.sh"),
    ({"task": "train", "method": "lora"}, "accelerate-launch.sh or torchrun.sh"),
])
def test_skypilot_on_owned_cards_names_the_script_that_runs_the_plan(fields, script):
    """s19-fuzz2 (seed 2003): ``launch --engine sglang --pricing owned --target skypilot`` was refused with "use
    accelerate-launch.sh or torchrun.sh", training scripts a serving plan does not write; the sentence names the
    engine's serving command, or the training stack's runner."""
    scenario = {**SERVE, "gpu": "rtx-4090", "pricing": "owned", **fields}
    if scenario["task"] == "train":
        scenario = {k: v for k, v in scenario.items() if k not in ("engine", "batch_size", "prompt_tokens",
                                                                   "output_tokens")} | {"model": "llama-3.2-1b"}
    with pytest.raises(Exception, match=re.escape(f"SkyPilot rents cloud ones (use {script})")):
        targets_for(launch_plan(scenario), ["skypilot"])
