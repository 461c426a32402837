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
