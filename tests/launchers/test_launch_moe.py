"""Launch files of a served MoE layout (issue 31 item 2): SGLang's --dp-size/--enable-dp-attention/--ep-size, vLLM's
--data-parallel-size/--enable-expert-parallel/--all2all-backend read by vLLM's captured parser, TensorRT-LLM's
--ep_size and enable_attention_dp; a plan in NVFP4 loads NVIDIA's published checkpoint."""

from __future__ import annotations

from test_launch import captured_vllm, command_of

from gpuplan.launchers import launch_files, launch_plan
from gpuplan.launchers.settings import LaunchOptions

R1 = dict(model="deepseek-r1", task="infer", engine="sglang", gpu="h200", num_gpus=8, batch_size=64,
          prompt_tokens=4096, output_tokens=512)
DP = dict(ep=8, attention_dp=True)


def test_launch_files_carry_the_layout():
    sg = {f.name: f.text for f in launch_files(launch_plan({**R1, **DP}), ["sglang"], LaunchOptions())}
    line = " ".join(command_of(sg["sglang-serve.sh"]))
    for flag in ("--tp-size 8", "--dp-size 8 --enable-dp-attention", "--ep-size 8", "--moe-a2a-backend none"):
        assert flag in line
    v = {f.name: f.text for f in launch_files(launch_plan({**R1, **DP, "engine": "vllm", "moe_dispatch": "deepep"}),
                                              ["vllm"], LaunchOptions())}
    parser, _ = captured_vllm("0.33.0")
    args = parser.parse_args(command_of(v["vllm-serve.sh"])[2:])
    assert (args.tensor_parallel_size, args.data_parallel_size) == (1, 8)
    assert args.enable_expert_parallel and args.all2all_backend == "deepep_low_latency"
    t = {f.name: f.text for f in launch_files(launch_plan({**R1, **DP, "engine": "trtllm", "gpu": "b200"}),
                                              ["trtllm"], LaunchOptions())}
    assert "--ep_size 8" in " ".join(command_of(t["trtllm-serve.sh"]))
    assert "enable_attention_dp: true" in t["trtllm-config.yaml"]


def test_an_nvfp4_plan_loads_nvidias_checkpoint():
    s = dict(model="deepseek-r1", task="infer", engine="vllm", gpu="b200", num_gpus=8, batch_size=32, quant="nvfp4")
    files = {f.name: f.text for f in launch_files(launch_plan(s), ["vllm"], LaunchOptions())}
    args = captured_vllm("0.33.0")[0].parse_args(command_of(files["vllm-serve.sh"])[2:])
    assert args.model_tag == "nvidia/DeepSeek-R1-FP4" and args.quantization == "modelopt_fp4"
    assert "the fp4" not in files["vllm-serve.sh"] and "nvfp4 checkpoint of deepseek-ai/DeepSeek-R1" in files[
        "vllm-serve.sh"]


def test_the_resolver_takes_the_engines_dispatch_and_the_launchers_read_it():
    """s20-left2's leftover 3: the MoE dispatch default was filled by the speed model (``speed.experts.moe_dispatch``)
    and the vLLM and SGLang launchers imported it. Now the resolver takes the engine's own, says so, and the plan's
    scenario carries it for the speed model and the launchers; where tokens never leave their GPU (no ep and
    attention_dp) nothing is taken, and a dispatch the user set is kept unsaid."""
    import gpuplan
    from gpuplan.launchers import sglang, vllm

    for engine, gpu, dispatch, flag in (("sglang", "h200", "allgather", "--moe-a2a-backend none"),
                                        ("vllm", "h200", "allgather", "--all2all-backend allgather_reducescatter"),
                                        ("trtllm", "b200", "deepep", "timed as DeepEP's")):
        plan = gpuplan.estimate({**R1, **DP, "engine": engine, "gpu": gpu})
        assert plan.scenario["moe_dispatch"] == dispatch
        said = [d for d in plan.defaults if d.startswith(f"moe_dispatch {dispatch}: ")]
        assert len(said) == 1 and flag in said[0] and said[0].endswith("(set moe_dispatch to choose)")
    assert "moe_dispatch" not in gpuplan.estimate(R1).scenario
    assert not [d for d in gpuplan.estimate({**R1, **DP, "moe_dispatch": "deepep"}).defaults if "moe_dispatch" in d]
    for module in (sglang, vllm):
        assert not any(getattr(v, "__module__", "").startswith("gpuplan.speed") for v in vars(module).values())
    launched = launch_plan({**R1, **DP}).scenario.model_copy(update={"moe_dispatch": "deepep"})
    assert sglang.moe_layout(launched)[-2:] == ["--moe-a2a-backend", "deepep"]
    assert vllm.parallel(launched)[-2:] == ["--all2all-backend", "deepep_low_latency"]
