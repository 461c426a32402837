"""Megatron-Core as a training stack (stack megatron): NeMo's recipe defaults, Megatron's rules for its parallel
sizes (one sentence, exit code 2), and memory per rank checked against hand arithmetic written out here.

Sources of the formulas are in gpuplan/stacks/megatron.py; the numbers below are counted from Llama-3.1-8B's and
Mixtral-8x22B's config.json (h, heads, KV heads, FFN width, vocabulary) by hand.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import cli_in_process
from gpuplan import GpuplanError, estimate
from gpuplan.model.catalog import load_model
from gpuplan.plan.refusals import scenario_refusal
from gpuplan.scenario import scenario_from
from gpuplan.stacks import megatron as mg

GIB = 2**30
BASE = {"model": "llama-3.1-8b", "task": "train", "stack": "megatron"}


def scenario(**fields):
    return scenario_from({**BASE, **fields})


def test_nemo_recipe_defaults():
    s = scenario(num_gpus=8, tp=2)
    assert (s.precision, s.grad_checkpointing, s.loss, s.sharding) == ("bf16-mixed", "selective", "full", "zero1")
    assert s.dp == 4
    fp8 = scenario(precision="fp8-mixed")
    assert fp8.fp8_recipe == "delayed"  # NeMo's fp8_recipe default
    assert scenario(num_gpus=8, cp=2).dp == 4  # context parallel ranks are not data-parallel ones


def test_layer_bytes_by_hand():
    """Llama-3.1-8B, one micro-batch of 8,192 tokens, TP 2 with sequence parallelism, bf16, per token per layer
    before the /t split (h 4096, 32 heads, 8 KV heads of 128, FFN 14336):
    norms 2·(2·4096 + 4) = 16,392; QKV input 2·4096 = 8,192; rotary q, k, v 2·(32 + 16)·128 = 12,288;
    output projection input 2·4096 = 8,192; FC1 input 8,192; FC1 output (gate, up) 2·2·14336 = 57,344;
    FC2 input 2·14336 = 28,672: 139,272 bytes under selective recompute (attention's output is recomputed,
    the projection keeps its input); without recompute attention also keeps its fp32 log-sum-exp, 4·32 = 128
    more (its 16-bit output is the projection's input, counted once). Korthikanti et al.'s ``34·s·b·h/t`` for GPT
    is the same count with two dropout masks (sbh each) and the unfused softmax terms."""
    m = load_model("llama-3.1-8b")
    layer = m.layers[0]
    s = scenario(num_gpus=2, tp=2, seq_len=8192)
    per_token = 16_392 + 8_192 + 12_288 + 8_192 + 8_192 + 57_344 + 28_672
    assert mg.layer_bytes(layer, m, s) == pytest.approx(per_token * 8192 / 2)
    assert mg.layer_bytes(layer, m, s, "none") == pytest.approx((per_token + 128) * 8192 / 2)
    assert mg.layer_bytes(layer, m, s, "full") == pytest.approx(2 * 4096 * 8192 / 2)
    # fp8: the five linear inputs (QKV, projection, FC1 at h wide, FC2 at FFN wide) are saved in 1 byte
    fp8 = scenario(num_gpus=2, tp=2, seq_len=8192, precision="fp8-mixed")
    assert mg.layer_bytes(layer, m, fp8) == pytest.approx((per_token - 3 * 4096 - 14336) * 8192 / 2)
    # context parallel 2 halves every rank's tokens
    cp = scenario(num_gpus=4, tp=2, cp=2, seq_len=8192)
    assert mg.layer_bytes(layer, m, cp) == pytest.approx(per_token * 4096 / 2)


def test_in_flight_micro_batches():
    """1F1B: stage r holds min(p - r, m) micro-batches; interleaved with v chunks, rank 0 holds
    2·(p-1) + (v-1)·p + 1 chunk-micro-batches: p = 4, v = 5: 6 + 16 + 1 = 23 chunks of L/20 layers = 4.6 stages'
    worth = p·(1 + (p-1)/(p·v)) = 4·(1 + 3/20) (Megatron's interleaved_schedule_memory_penalty)."""
    s = scenario(num_gpus=8, pp=4, grad_accum_steps=16)
    assert (mg.in_flight(s, 0), mg.in_flight(s, 3)) == (4, 1)
    assert mg.in_flight(scenario(num_gpus=8, pp=4, grad_accum_steps=2), 0) == 2
    v = scenario(num_gpus=8, pp=4, vpp=4, grad_accum_steps=16)
    assert mg.in_flight(v, 0) == pytest.approx((2 * 3 + 3 * 4 + 1) / 4)
    assert mg.in_flight(scenario(num_gpus=8, pp=4, vpp=5, grad_accum_steps=16), 0) == pytest.approx(4 * (1 + 3 / 20))


def test_state_per_rank_by_hand():
    """Llama-3.1-8B on 8 GPUs, TP 2: one layer has q, o 4096² + k, v 4096·1024 = 41,943,040 attention, 3·4096·14336 =
    176,160,768 MLP and 8,192 norm parameters; TP splits the 218,103,808 linear parameters of a layer and
    replicates the norms: 218,103,808 x 32 / 2 + 8,192 x 32 = 3,489,923,072 per rank, and the final norm's 4,096;
    embedding and output layer 2·128256·4096 / 2 = 525,336,576. Weights 2 B, fp32 gradients 4 B, 12 B of master
    weights and Adam moments over the 4 data-parallel ranks (Megatron's 6 + 12/N bytes per parameter)."""
    e = estimate({**BASE, "num_gpus": 8, "tp": 2, "gpu": "h100-sxm"}, advise=False).memory
    params = 3_489_923_072 + 4_096 + 525_336_576
    assert e.weights_gib == pytest.approx(2 * params / GIB, rel=1e-6)
    assert e.gradients_gib == pytest.approx(4 * params / GIB, rel=1e-6)
    assert e.optimizer_gib == pytest.approx(12 * params / 4 / GIB, rel=1e-6)
    ddp = estimate({**BASE, "num_gpus": 8, "tp": 2, "sharding": "ddp"}, advise=False).memory
    assert ddp.optimizer_gib == pytest.approx(12 * params / GIB, rel=1e-6)  # Megatron's 18 bytes/parameter


def test_experts_split_by_ep():
    """Mixtral-8x22B, PP 8 (7 of its 56 layers per stage), EP 8: each expert is 3·6144·16384 = 301,989,888
    parameters; a stage's 7 layers hold 8 of them each, 16,911,433,728, and EP 8 leaves 2,113,929,216 per rank.
    Their expert-data-parallel group is tp·dp·cp / ep = 2·4 / 8 = 1 rank: the states are not sharded."""
    m = load_model("mistralai/Mixtral-8x22B-v0.1")
    s = scenario_from({**BASE, "model": "mistralai/Mixtral-8x22B-v0.1", "num_gpus": 8, "num_nodes": 8, "tp": 2,
                       "pp": 8, "ep": 8, "grad_accum_steps": 32, "seq_len": 4096})
    st = mg.rank_state(s, m, None, first=True, last=False)
    assert st.experts == 2_113_929_216
    dense = st.dense + st.embedding
    assert st.optimizer == pytest.approx(12 * (dense / 4 + st.experts))
    plan = estimate(s, advise=False)
    assert "2.11B expert" in " ".join(plan.assumptions)


def test_pipeline_reports_the_larger_stage():
    plan = estimate({**BASE, "model": "llama-3.1-70b", "num_gpus": 8, "num_nodes": 4, "tp": 4, "pp": 4,
                     "vpp": 5, "grad_accum_steps": 16, "seq_len": 8192}, advise=False)
    said = " ".join(plan.assumptions)
    assert "first stage" in said and "last stage" in said and "x 4.6 in flight" in said


@pytest.mark.parametrize("fields, message", [
    (dict(num_gpus=8, cp=3, seq_len=8190), "tp x pp x cp = 3 must divide the 8 GPUs"),
    (dict(num_gpus=4, cp=4, seq_len=8196), "cp=4 needs seq_len divisible by 2 x cp = 8"),
    (dict(num_gpus=4, tp=4, seq_len=8190), "sequence parallelism splits each rank's 8190 tokens"),
    (dict(num_gpus=8, ep=2), "has none: set ep 1"),
    (dict(model="mistralai/Mixtral-8x22B-v0.1", num_gpus=8, ep=3, tp=1), "ep=3 does not divide the 8 experts"),
])
def test_megatron_rules_are_one_sentence(fields, message):
    with pytest.raises(GpuplanError, match=message) as info:
        estimate({**BASE, **fields}, advise=False)
    assert "\n" not in str(info.value)



def test_megatrons_size_rules_are_its_profiles():
    """The rules are the Megatron profile's (``Stack.check_layout``), asked of every training plan's stack; the other
    stacks' profiles add none (tp over 4 GPUs of a 8,190-token sequence: Megatron's sequence parallelism refuses it,
    the base profile says nothing)."""
    from gpuplan.stacks import STACKS

    s, m = scenario(num_gpus=4, tp=4, seq_len=8190), load_model("llama-3.1-8b")
    with pytest.raises(GpuplanError, match="sequence parallelism splits each rank's 8190 tokens"):
        STACKS["megatron"].check_layout(s, m)
    assert [name for name in STACKS if name != "megatron" and STACKS[name].check_layout(s, m)] == []
    uneven = scenario(num_gpus=8, pp=8, vpp=5, grad_accum_steps=8)  # 32 layers in 40 chunks, 34 neither
    assert [w.split(":")[0] for w in STACKS["megatron"].check_layout(uneven, m)] == [
        "32 layers do not split evenly into pp x vpp = 40 model chunks"]

@pytest.mark.parametrize("fields, message", [
    (dict(stack="hf", cp=2, num_gpus=2), "cp=2 is a Megatron-Core training setting"),
    (dict(vpp=2, num_gpus=2), "vpp=2 interleaves virtual stages of a pipeline: set pp >= 2"),
    (dict(method="qlora"), "no 4-bit"),
    (dict(precision="bf16-true"), "fp32 master weights"),
    (dict(sharding="zero3", num_gpus=2), "distributed optimizer"),
    (dict(fp8_recipe="current"), "set precision fp8-mixed"),
    (dict(fp8_transpose_cache=False), "fp8_transpose_cache keeps the transposes of fp8 weights: set precision"),
    (dict(recompute_layers=4, grad_checkpointing="selective"), "recompute_layers picks the layers of full"),
    (dict(recompute_layers=4, grad_checkpointing="full", num_gpus=2, pp=2, vpp=2, grad_accum_steps=4),
     "models recompute_layers on pipelines without virtual stages"),
    (dict(stack="hf", recompute_layers=4, grad_checkpointing="full"),
     "recompute_layers=4 is a Megatron-Core training setting"),
    (dict(stack="hf", fp8_transpose_cache=False, precision="fp8-mixed"),
     "fp8_transpose_cache=false is a Megatron-Core training setting"),
])
def test_what_megatron_cannot_run(fields, message):
    with pytest.raises(GpuplanError, match=message):
        scenario_refusal(scenario(**fields))


def test_cli_exit_code_2():
    out = cli_in_process("estimate", "--model", "llama-3.1-8b", "--task", "train", "--stack", "megatron",
                         "--num-gpus", "4", "--cp", "4", "--seq-len", "8196")
    assert out.returncode == 2 and "2 x cp = 8" in out.stderr and "Traceback" not in out.stderr


def test_interleaving_shrinks_the_bubble():
    """Narayanan et al. 2021: the bubble is (p-1)/v micro-steps per step; v = 2 halves it, the micro-step the same."""
    run = {**BASE, "model": "llama-3.1-70b", "num_gpus": 8, "num_nodes": 2, "tp": 4, "pp": 4, "grad_accum_steps": 16,
           "gpu": "h100-sxm", "seq_len": 4096}
    one = estimate(run, advise=False).speed
    two = estimate({**run, "vpp": 2}, advise=False).speed
    assert two.parts_s["pipeline_bubble"] == pytest.approx(one.parts_s["pipeline_bubble"] / 2, rel=1e-6)


def test_context_parallel_speed_counts_the_ring():
    """CP 2 with TP 8 spans two nodes: each rank runs half the tokens of every sequence and half its attention, so
    the step takes a little more than half as long for half the data-parallel ranks: half the rows make thinner
    GEMMs, which run below the full shape's efficiency (speed/gemm.py's shape model), and the ring's K/V exchange
    (2·8,192 tokens·2 B·1 KV head·128 = 4 MiB per layer) is priced; tokens/s then falls, by less than a quarter."""
    run = {**BASE, "num_gpus": 8, "num_nodes": 2, "tp": 8, "gpu": "h100-sxm", "seq_len": 16384,
           "micro_batch_size": 1}  # one sequence per micro-step in both runs (the hand count above)
    plan = estimate({**run, "cp": 2}, advise=False)
    assert any("context parallel 2: ring attention passes 1 K/V chunks of 4.0 MiB" in a for a in plan.assumptions)
    assert plan.speed.parts_s["context_parallel"] >= 0
    base = estimate(run, advise=False).speed
    assert 0.5 * base.step_time_s < plan.speed.step_time_s < 0.7 * base.step_time_s
    assert 0.75 * base.tokens_per_s < plan.speed.tokens_per_s < base.tokens_per_s


TINY = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 256, "num_attention_heads": 8,
        "num_key_value_heads": 2, "intermediate_size": 512, "num_hidden_layers": 4, "vocab_size": 1024,
        "tie_word_embeddings": False, "rms_norm_eps": 1e-5, "max_position_embeddings": 128, "torch_dtype": "bfloat16"}
TINY_MOE = {**TINY, "model_type": "mixtral", "architectures": ["MixtralForCausalLM"], "num_local_experts": 8,
            "num_experts_per_tok": 2}


@pytest.mark.sim
@pytest.mark.sampled(3)  # each layout spawns tp x pp x ep gloo ranks (13-44 s): one a run, all three in three rounds
@pytest.mark.parametrize("tp, pp, ep", [(2, 2, 1), (2, 1, 2), (1, 2, 4)])
def test_parameters_per_rank_equal_megatron_cores_own_model(tp, pp, ep, tmp_path):
    """Megatron-Core's GPTModel built on the meta device on tp x pp x ep gloo ranks (tests/data/megatron_build.py,
    the same 4-layer config) holds exactly the parameters per rank that gpuplan counts, first and last stage, routed
    experts split by EP (expert_tensor_parallel_size 1), norms and routers replicated over TP."""
    pytest.importorskip("megatron.core")
    import json
    import re
    from pathlib import Path

    from gpuplan.model.spec import ModelSpec

    script = Path(__file__).parents[1] / "data" / "megatron_build.py"
    port = 29500 + 10 * tp + 3 * pp + ep
    out = subprocess.run([sys.executable, str(script), str(tp), str(pp), str(ep), str(port)], capture_output=True,
                         text=True, timeout=600)
    ranks = [json.loads(text) for text in re.findall(r"\{[^{}]*\}", out.stdout)]  # ranks print concurrently
    assert ranks, out.stderr[-2000:]
    m = ModelSpec.from_config(TINY_MOE if ep > 1 else TINY, name="tiny")
    world = tp * pp * max(1, ep // tp) if ep > 1 else tp * pp
    s = scenario_from({**BASE, "model": "llama-3.2-1b", "num_gpus": world, "tp": tp, "pp": pp, "ep": ep,
                       "seq_len": 128})
    for r in ranks:
        first, last = r["pp_rank"] == 0, r["pp_rank"] == pp - 1
        st = mg.rank_state(s, m, None, first=first, last=last)
        assert st.dense + st.embedding + st.experts == r["params"], r
        assert st.experts == r["experts"], r


TINY_MLA = {"model_type": "deepseek_v3", "architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 256,
            "num_attention_heads": 8, "num_key_value_heads": 8, "q_lora_rank": 64, "kv_lora_rank": 32,
            "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 16, "intermediate_size": 512,
            "moe_intermediate_size": 512, "num_hidden_layers": 4, "first_k_dense_replace": 4, "n_routed_experts": 8,
            "num_experts_per_tok": 2, "vocab_size": 1024, "tie_word_embeddings": False, "rms_norm_eps": 1e-6,
            "max_position_embeddings": 128, "torch_dtype": "bfloat16"}


@pytest.mark.sim
@pytest.mark.sampled(2)  # gloo ranks again: one layout a run
@pytest.mark.parametrize("tp, pp", [(2, 1), (2, 2)])
def test_mla_down_projections_whole_on_every_megatron_rank(tp, pp):
    """Megatron-Core's own MLASelfAttention (tests/data/megatron_build.py ``mla``: the local spec with Transformer
    Engine's duplicated TELinear stood in by a whole linear) holds q_a (256 x 64) and kv_a (256 x (32 + 8)) whole on
    each of the TP ranks and splits the up-projections and the output projection: the parameters per rank equal
    gpuplan's count, which keeps those two whole (tensors/layout.training_extra_params)."""
    pytest.importorskip("megatron.core")
    import json
    import re
    from pathlib import Path

    from gpuplan.model.spec import ModelSpec
    from gpuplan.tensors.layout import replicated_params

    script = Path(__file__).parents[1] / "data" / "megatron_build.py"
    out = subprocess.run([sys.executable, str(script), str(tp), str(pp), "1", str(29700 + 10 * tp + pp), "mla"],
                         capture_output=True, text=True, timeout=600)
    ranks = [json.loads(text) for text in re.findall(r"\{[^{}]*\}", out.stdout)]
    assert len(ranks) == tp * pp, out.stderr[-2000:]
    m = ModelSpec.from_config(TINY_MLA, name="tiny-mla")
    s = scenario_from({**BASE, "model": "llama-3.2-1b", "num_gpus": tp * pp, "tp": tp, "pp": pp, "seq_len": 128})
    for r in ranks:
        first, last = r["pp_rank"] == 0, r["pp_rank"] == pp - 1
        st = mg.rank_state(s, m, None, first=first, last=last)
        layers = m.layers[:mg.stage_layers(s, m, first=first, last=last)]
        # 256 x (64 + 40) = 26,624 parameters a layer, whole on every rank
        assert r["down_proj"] == replicated_params(layers) == len(layers) * 26_624, r
        assert st.dense + st.embedding == r["params"], r


def test_mla_rank_state_by_hand(monkeypatch):
    """DeepSeek-V3 under Megatron at TP 8 x PP 8 x EP 8 on 256 GPUs (first stage, 8 layers; DP 4): each rank holds
    q_a_proj (7,168 x 1,536) and kv_a_proj_with_mqa (7,168 x 576) whole, 8 x 15,138,816 x 7/8 = 105,971,712
    parameters beyond its 1/8 share of them: +211,943,424 B of bf16 weights, +423,886,848 B of fp32 gradients and
    12 B x that over the 4 DP ranks of the distributed optimizer, +317,915,136 B; the model's trainable parameters
    (a checkpoint's) do not change."""
    fields = {**BASE, "model": "deepseek-v3", "gpu": "h100-sxm", "num_gpus": 8, "num_nodes": 32, "tp": 8, "pp": 8,
              "ep": 8, "seq_len": 2048, "micro_batch_size": 1, "grad_accum_steps": 8}
    s, m = scenario_from(fields), load_model("deepseek-v3")
    assert (s.dp, mg.stage_layers(s, m, first=True, last=False)) == (4, 8)
    whole = mg.rank_state(s, m, None, first=True, last=False)
    plan = estimate(fields, advise=False)
    monkeypatch.setattr(mg, "training_extra_params", lambda s, layers: 0.0)  # every linear split 8 ways
    split = mg.rank_state(s, m, None, first=True, last=False)
    assert whole.dense - split.dense == 8 * 7168 * (1536 + 576) * 7 / 8 == 105_971_712
    assert whole.weights - split.weights == 211_943_424
    assert whole.gradients - split.gradients == 423_886_848
    assert whole.optimizer - split.optimizer == pytest.approx(317_915_136)
    assert plan.model.params_trainable == estimate(fields, advise=False).model.params_trainable
    assert plan.memory.weights_gib * GIB - 211_943_424 == pytest.approx(
        estimate(fields, advise=False).memory.weights_gib * GIB)


def _megatron_argv(fields):
    import shlex

    from gpuplan.launchers import launch_files, launch_plan

    plan = launch_plan(fields)
    text = next(f for f in launch_files(plan, ["megatron"]) if f.name == "megatron-pretrain.sh").text
    argv = shlex.split(text[text.index("\ntorchrun") + 1:].replace("\\\n", " "), posix=True)
    return plan, argv[argv.index("pretrain_gpt.py") + 1:]


def _captured_parser():
    """Megatron-LM's pretrain_gpt.py options rebuilt from the capture of its own parser
    (tests/data/megatron/pretrain-args.json, written by tests/data/megatron/capture.py)."""
    import argparse
    import json
    from pathlib import Path

    data = json.loads((Path(__file__).parents[1] / "data" / "megatron" / "pretrain-args.json").read_text())
    parser = argparse.ArgumentParser(allow_abbrev=False, exit_on_error=False)
    for opt in data["options"]:
        if "-h" in opt["names"]:
            continue
        if not opt["takes_value"]:
            parser.add_argument(*opt["names"], dest=opt["dest"], action="store_true")
        else:
            parser.add_argument(*opt["names"], dest=opt["dest"], choices=opt["choices"],
                                nargs="+" if opt["nargs"] in ("+", "*") else None)
    return parser


@pytest.mark.parametrize("fields", [
    {**BASE, "model": "llama-3.1-70b", "gpu": "h100-sxm", "num_gpus": 8, "num_nodes": 8, "tp": 4, "pp": 4, "vpp": 5,
     "cp": 2, "grad_accum_steps": 16, "seq_len": 8192, "precision": "fp8-mixed", "train_tokens": 1e9},
    {**BASE, "gpu": "h100-sxm", "num_gpus": 8, "tp": 2, "seq_len": 8192, "grad_checkpointing": "full",
     "precision": "fp8-mixed", "fp8_recipe": "current"},
    {**BASE, "model": "llama-3.1-405b", "gpu": "h100-sxm", "num_gpus": 8, "num_nodes": 64, "tp": 8, "pp": 8,
     "vpp": 2, "cp": 4, "grad_accum_steps": 256, "seq_len": 8192},
])
def test_launch_megatron_parses_with_megatron_lms_parser(fields):
    """Every argument of ``megatron-pretrain.sh`` is accepted by Megatron-LM's own parser (captured), and the
    parsed values are the plan's."""
    plan, argv = _megatron_argv(fields)
    args = _captured_parser().parse_args(argv)
    s = plan.scenario
    assert (int(args.tensor_model_parallel_size), int(args.pipeline_model_parallel_size),
            int(args.context_parallel_size)) == (s.tp, s.pp, s.cp)
    assert args.sequence_parallel and args.use_distributed_optimizer and args.accumulate_allreduce_grads_in_fp32
    assert int(args.global_batch_size) == s.micro_batch_size * s.grad_accum_steps * s.dp
    assert args.recompute_granularity == s.grad_checkpointing
    assert args.fp8_recipe == {"delayed": "delayed", "current": "tensorwise", None: None}[s.fp8_recipe]
    assert args.fp8_param_gather == (s.precision == "fp8-mixed")  # weights in fp8, as the estimate assumes
    assert int(args.num_layers) == plan.model.num_layers and int(args.num_query_groups) == plan.model.num_kv_heads
    if s.vpp > 1:
        assert int(args.num_virtual_stages_per_pipeline_rank) == s.vpp
    split = mg.embedding_in_split(s, plan.model)  # 405B: 126 + 2 layers over pp 8 x vpp 2
    assert args.account_for_embedding_in_pipeline_split == args.account_for_loss_in_pipeline_split == split


def test_launch_megatron_nvfp4_parses():
    """precision fp4-mixed launches with Megatron-LM's --fp4-format e2m1 --fp4-recipe nvfp4 (TransformerConfig.fp4,
    fp4_recipe: Transformer Engine NVFP4BlockScaling), accepted by its captured parser; no fp8 flags beside them
    (Megatron refuses --fp4-format with --fp8-format)."""
    fields = {**BASE, "gpu": "b200", "num_gpus": 8, "tp": 2, "seq_len": 8192, "precision": "fp4-mixed"}
    _, argv = _megatron_argv(fields)
    args = _captured_parser().parse_args(argv)
    assert (args.fp4, args.fp4_recipe, args.fp8) == ("e2m1", "nvfp4", None)
    _, argv = _megatron_argv({**fields, "cuda_graphs": True})
    assert _captured_parser().parse_args(argv).cuda_graph_impl == "full_iteration"


def test_launch_megatron_refuses_what_its_parser_lacks():
    """fp8 attention and the fp8 activation store are TransformerConfig fields pretrain_gpt.py has no flag for: the
    launch says so in one sentence instead of dropping them."""
    from gpuplan.launchers import launch_files, launch_plan

    fields = {**BASE, "gpu": "h100-sxm", "num_gpus": 8, "tp": 2, "seq_len": 8192, "precision": "fp8-mixed",
              "fp8_attention": True}
    with pytest.raises(GpuplanError, match=r"pretrain_gpt\.py has no argument for fp8_attention"):
        launch_files(launch_plan(fields), ["megatron"])


def test_launch_megatron_needs_framework_megatron():
    from gpuplan.launchers import launch_files, launch_plan

    with pytest.raises(GpuplanError, match="stack megatron"):
        launch_files(launch_plan({"model": "llama-3.1-8b", "task": "train", "gpu": "h100-sxm", "method": "lora"}),
                     ["megatron"])


def test_lora_base_in_fp8_by_hand():
    """Llama-3.1-8B LoRA r16 on q, k, v, o, one GPU: the frozen base holds its 6,979,321,856 linear weights (32 layers
    of 218,103,808) in fp8 (1 B) with a cached fp8 transpose (1 B), the rest (embedding, output layer, norms:
    1,050,939,392) in bf16; each adapter is r·(d_in + d_out): q, o 16·8192, k, v 16·(4096 + 1024), 425,984 per
    layer, 13,631,488 in all, at 2 B + 4 B gradients + 12 B master weights and Adam moments."""
    plan = estimate({**BASE, "method": "lora", "lora_targets": ["q_proj", "k_proj", "v_proj", "o_proj"],
                     "precision": "fp8-mixed", "gpu": "h100-sxm"}, advise=False)
    mem = plan.memory
    adapters = 32 * 16 * (2 * 8192 + 2 * (4096 + 1024))
    assert adapters == 13_631_488
    assert mem.weights_gib == pytest.approx((6_979_321_856 + 2 * 1_050_939_392 + 2 * adapters) / GIB, rel=1e-6)
    assert mem.other["fp8 weight transposes (Transformer Engine)"] == pytest.approx(6_979_321_856 / GIB)
    assert mem.optimizer_gib == pytest.approx(12 * adapters / GIB) and mem.gradients_gib == pytest.approx(
        4 * adapters / GIB)


# NeMo's own Llama 3.1 405B pre-training on H100 (NVIDIA/NeMo@349c4019
# scripts/llm/performance/recommended_model_configs/model_configs_h100.csv, row pre_train,llama31,405b,h100,fp8:
# 576 GPUs, seq 8192, TP 8, PP 9, CP 2, DP 4, VP 7, micro-batch 1, global batch 252), with the recipe's
# bf16_with_fp8_mixed (nemo/collections/llm/recipes/precision/mixed_precision.py: fp8 hybrid, delayed scaling,
# fp8_param_gather=True)
NEMO_405B = {"model": "llama-3.1-405b", "task": "train", "stack": "megatron", "gpu": "h100-sxm", "num_gpus": 8,
             "num_nodes": 72, "tp": 8, "pp": 9, "vpp": 7, "cp": 2, "seq_len": 8192, "micro_batch_size": 1,
             "grad_accum_steps": 63, "precision": "fp8-mixed"}


def test_nemo_405b_recipe_fits_h100_by_hand():
    """The first stage (14 of 126 layers and the embedding) by hand. Each layer's linears: q and o 16384², k and v
    16384·1024, gate, up and down 16384·53248: 3,187,671,040; 14 layers / TP 8 = 5,578,424,320 per rank, held in
    fp8 (1 B) with their transposes (1 B); 16-bit: the embedding 128256·16384/8 = 262,668,288 and 28 norms of 16384
    (458,752, whole on every TP rank). fp32 gradients 4 B and 12 B of master weights and Adam over DP x CP = 8 for
    all 5,841,551,360 parameters. Activations per layer and micro-batch (T = 4096 tokens per CP rank, / TP 8):
    norms 2·(2·16384 + 4)·512 = 33,558,528; fp8 inputs of QKV, projection and FC1 3·8,388,608; rotary q, k, v
    2·512·18432 = 18,874,368; FC1's output 2·512·106496 = 109,051,904; FC2's fp8 input 512·53248 = 27,262,976:
    213,913,600. The interleaved schedule's first rank holds 2·(9-1) + (7-1)·9 + 1 = 71 chunks of 2 layers = 142
    layer-micro-batches, and in the backward one layer's gradients 2·4096·(2·53248 + 2·16384)/8 = 142,606,336.
    NVIDIA runs this split on 80 GB H100s, so it must fit; before fp8_param_gather was modelled (16-bit weights
    plus fp8 copies) and with the allocator's slack on the whole state it came to 86.9 GiB and did not."""
    plan = estimate(NEMO_405B, advise=False)
    mem = plan.memory
    linear, emb, norms = 5_578_424_320, 262_668_288, 458_752
    params = linear + emb + norms
    assert mem.weights_gib == pytest.approx((linear + 2 * (emb + norms)) / GIB, rel=1e-6)
    assert mem.other["fp8 weight transposes (Transformer Engine)"] == pytest.approx(linear / GIB, rel=1e-6)
    assert mem.gradients_gib == pytest.approx(4 * params / GIB, rel=1e-6)
    assert mem.optimizer_gib == pytest.approx(12 * params / 8 / GIB, rel=1e-6)
    assert mem.activations_gib == pytest.approx((142 * 213_913_600 + 142_606_336) / GIB, rel=1e-6)
    assert mem.fits and 65 < mem.device_peak_gib < 79.6  # fits, and not by a wide margin (the split is NVIDIA's)


def test_megatron_slack_on_activations_only():
    """Megatron allocates the state once in whole buffers: reserved = allocated + 8 % of the activations."""
    mem = estimate(NEMO_405B, advise=False).memory
    assert mem.reserved_peak_gib - mem.allocated_peak_gib == pytest.approx(0.08 * mem.activations_gib, rel=1e-6)


def test_embedding_and_loss_in_the_pipeline_split():
    """NeMo's llama31_405b recipe (NVIDIA/NeMo@8cfedd72 nemo/collections/llm/recipes/llama31_405b.py trainer():
    TP 8, PP 8, VP 2, CP 4, account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split True, 64
    nodes, global batch 512 of 8192 tokens): 126 + 2 layers in 16 chunks of 8; the first stage holds 7 + 8 layers
    and the embedding, a middle stage 16, the last 8 + 7 and the output layer. The second stage keeps
    2·(8-1-1) + (2-1)·8 + 1 = 21 chunks of 8 layers in flight, the first 23 chunks (15 layers in 2 chunks)."""
    s = scenario_from({**NEMO_405B, "num_nodes": 64, "pp": 8, "vpp": 2, "cp": 4, "grad_accum_steps": 256,
                       "precision": "bf16-mixed"})
    m = load_model(s.model)
    assert mg.embedding_in_split(s, m)
    assert [mg.stage_layers(s, m, first=f, last=la) for f, la in ((True, False), (False, False), (False, True))] \
        == [15, 16, 15]
    plan = estimate(s, advise=False)
    said = " ".join(plan.assumptions)
    assert "second stage, 16 layers" in said and "x 10.5 in flight" in said
    assert plan.memory.fits and not any("do not split evenly" in w for w in plan.warnings)


def test_lora_frozen_linears_keep_no_input():
    """Transformer Engine saves a linear's input only when its weight trains (``backward_needs_input =
    is_grad_enabled and weight.requires_grad``). LoRA on q, k, v, o of Llama-3.1-8B: the adapters keep the QKV and
    projection inputs (16-bit), the frozen FC1 and FC2 keep none. In bf16 that is 2·T·(h + f) = 2·8192·(4096 +
    14336) bytes less than full training; in fp8 the adapters' 16-bit inputs replace the fp8 ones of QKV and the
    projection (+T·h + T·4096) and FC1's and FC2's fp8 inputs go (-T·h - T·f)."""
    m = load_model("llama-3.1-8b")
    layer = m.layers[0]
    lora = {"method": "lora", "lora_targets": ["q_proj", "k_proj", "v_proj", "o_proj"], "seq_len": 8192}
    for precision, less in (("bf16-mixed", 2 * 8192 * (4096 + 14336)), ("fp8-mixed", 8192 * (14336 - 4096))):
        full = mg.layer_bytes(layer, m, scenario(seq_len=8192, precision=precision))
        assert full - mg.layer_bytes(layer, m, scenario(**lora, precision=precision)) == less


def test_blackwell_keeps_no_fp8_transpose():
    """Blackwell's fp8 GEMMs take any layout: Transformer Engine keeps no transposed weight there
    (is_non_tn_fp8_gemm_supported, compute capability 10.x); Hopper keeps one byte per linear weight more."""
    fields = {**BASE, "precision": "fp8-mixed", "seq_len": 8192}
    hopper = estimate({**fields, "gpu": "h100-sxm"}, advise=False).memory
    blackwell = estimate({**fields, "gpu": "b200"}, advise=False).memory
    assert "fp8 weight transposes (Transformer Engine)" not in blackwell.other
    assert hopper.other["fp8 weight transposes (Transformer Engine)"] == pytest.approx(6_979_321_856 / GIB)
    assert hopper.weights_gib == pytest.approx(blackwell.weights_gib)


def test_the_fp8_transposes_read_the_plans_card():
    """The card is read once, by the resolver: whether fp8 weights keep their transposes follows the card the plan
    holds (an H100 given Blackwell's compute capability 10.0 keeps none; no card: kept). A search that estimates a
    layout once without a card estimates a Megatron fp8 layout on each card instead: on a B200 its memory is
    estimate's on a B200, not the card-free one's with Hopper's transposes (6,979,321,856 B more, the test above)."""
    import dataclasses

    from gpuplan.hardware import load_gpu
    from gpuplan.memory import estimate_memory
    from gpuplan.plan.plan import card_memory
    from gpuplan.plan.resolve import resolve

    h100 = load_gpu("h100-sxm")
    assert mg.needs_fp8_transpose(h100) and mg.needs_fp8_transpose(None)
    assert not mg.needs_fp8_transpose(dataclasses.replace(h100, compute_capability="10.0"))
    m, free = load_model("llama-3.1-8b"), scenario(precision="fp8-mixed", seq_len=8192)
    shared = estimate_memory(free, m, None)
    _, on_b200 = card_memory(resolve(free.on_card("nvidia-b200"), m), shared)
    alone = estimate({**BASE, "precision": "fp8-mixed", "seq_len": 8192, "gpu": "b200"}, advise=False).memory
    assert shared.other["fp8 weight transposes (Transformer Engine)"] == pytest.approx(6_979_321_856)
    assert on_b200.device_peak_gib == pytest.approx(alone.device_peak_gib)


def test_mlperf_405b_h100_layout_fits():
    """NVIDIA's MLPerf Training v5.0 Llama 3.1 405B on 64 DGX H100 (mlcommons/training_results_v5.0@0fdc28f0
    NVIDIA/benchmarks/llama31_405b/implementations/eos-dfw_n64_ngc25.01_nemo/config_DGXH100_64x8x288xtp8pp8cp2.sh:
    TP 8, PP 8, interleaved 8, CP 2, micro-batch 1, ASYM_PP_EMBED / ASYM_PP_LOSS, FP8_PARAMS, no recompute; global
    batch 1152 = 288 x DP 4). It ran, so it fits: 128 layers' worth in 64 chunks of 2, a middle stage holds 16
    layers and 2·(8-1-1) + (8-1)·8 + 1 = 69 chunks in flight. Before fp8 weights, the embedding split and the slack
    rule gpuplan put it at 97.0 GiB."""
    plan = estimate({**NEMO_405B, "num_nodes": 64, "pp": 8, "vpp": 8, "cp": 2, "grad_accum_steps": 288,
                     "grad_checkpointing": "none"}, advise=False)
    said = " ".join(plan.assumptions)
    assert "second stage, 16 layers" in said and "x 8.62 in flight" in said
    assert plan.memory.fits and 70 < plan.memory.device_peak_gib < 79.6


def test_launch_megatron_tp_overlap():
    """tp_overlap userbuffers launches with Megatron-LM's --tp-comm-overlap (accepted by its captured parser); none
    (2021's Megatron-LM) and NeMo's recipe without MegatronCommOverlapCallback are refused in one sentence."""
    from gpuplan.launchers import launch_files, launch_plan

    fields = {**BASE, "gpu": "h100-sxm", "num_gpus": 8, "tp": 4, "seq_len": 8192, "precision": "fp8-mixed"}
    _, argv = _megatron_argv({**fields, "tp_overlap": "userbuffers"})
    assert _captured_parser().parse_args(argv).tp_comm_overlap
    _, argv = _megatron_argv(fields)
    assert not _captured_parser().parse_args(argv).tp_comm_overlap
    with pytest.raises(GpuplanError, match="tp_overlap none is Megatron-LM of 2021"):
        launch_files(launch_plan({**fields, "tp_overlap": "none"}), ["megatron"])
    with pytest.raises(GpuplanError, match="without its MegatronCommOverlapCallback"):
        launch_files(launch_plan({**fields, "tp_overlap": "userbuffers"}), ["nemo"])


def test_tp_overlap_is_a_megatron_setting():
    with pytest.raises(GpuplanError, match="tp_overlap=none is a Megatron-Core training setting"):
        estimate({"model": "llama-3.1-8b", "task": "train", "stack": "torchtitan", "num_gpus": 8, "tp": 2,
                  "tp_overlap": "none"}, advise=False)


# AMD's MLPerf Training Llama-2-70B LoRA on one MI300X node (mlcommons/training_results_v5.1
# AMD/benchmarks/llama2_70b_lora/implementations/MI300X_EPYC_9575F_pytorch_llama2_70b/config_MI300X_1x8x1.sh: TP 1,
# MBS 1, FP8=True, FP8_ACTIVATION=True, ACG=full ACM=block ACL=21, ENABLE_TRANSPOSE_CACHE=0)
AMD_LORA = {"model": "llama-2-70b", "task": "train", "stack": "megatron", "gpu": "amd-instinct-mi300x", "num_gpus": 8,
            "seq_len": 8192, "micro_batch_size": 1, "precision": "fp8-mixed", "fp8_activation_store": True,
            "method": "lora", "lora_rank": 16, "lora_targets": ["q_proj", "k_proj", "v_proj", "o_proj"]}
# Llama-2-70B's linear weights per layer: q, o 8192·8192; k, v 8192·1024; gate, up, down 8192·28672
LINEAR_70B = 80 * (2 * 8192 * 8192 + 2 * 8192 * 1024 + 3 * 8192 * 28672)


def test_amd_lora_fp8_weights_and_transposes_by_hand():
    """The frozen base's 68,451,041,280 linear weights in fp8, 1 B each (63.75 GiB): Transformer Engine keeps a
    transposed copy of each, 1 B more, unless fp8_transpose_cache is false, as AMD's configs set it; then only the
    transpose one dgrad GEMM makes is alive, the largest fused site's: linear_fc1, gate and up, 2·8192·28672 =
    469,762,048 B."""
    assert LINEAR_70B == 68_451_041_280
    kept = estimate({**AMD_LORA, "grad_checkpointing": "none"}, advise=False).memory
    freed = estimate({**AMD_LORA, "grad_checkpointing": "none", "fp8_transpose_cache": False}, advise=False).memory
    assert kept.other["fp8 weight transposes (Transformer Engine)"] == pytest.approx(LINEAR_70B / GIB)
    assert freed.other["fp8 weight transpose, one at a time (Transformer Engine)"] == pytest.approx(
        2 * 8192 * 28672 / GIB)
    assert "fp8 weight transposes (Transformer Engine)" not in freed.other
    assert freed.weights_gib == pytest.approx(kept.weights_gib) and kept.weights_gib > LINEAR_70B / GIB
    # true is the default where the GEMMs need a transpose; on Blackwell there is none to keep
    assert estimate({**AMD_LORA, "grad_checkpointing": "none", "fp8_transpose_cache": True},
                    advise=False).memory.device_peak_gib == pytest.approx(kept.device_peak_gib)
    b200 = estimate({**AMD_LORA, "gpu": "b200", "grad_checkpointing": "none", "fp8_transpose_cache": False},
                    advise=False).memory
    assert not any("transpose" in k for k in b200.other)


def test_block_recompute_of_21_layers_by_hand():
    """recompute_layers 21 (Megatron-Core recompute_method block): the first 21 of the 80 layers keep their 16-bit
    input, 2·8192·8192 = 134,217,728 B; the other 59 keep everything. Per token under LoRA on q, k, v, o in fp8 with
    fp8_activation_store: norms 2·(2·8192 + 4) = 32,776; the QKV adapter's 16-bit input 16,384; rotary q, k, v
    2·(64 + 16)·128 = 20,480; attention's output 16,384 (the projection adapter's input too) and fp32 log-sum-exp
    4·64 = 256; SwiGLU's fp8 input 2·28672 = 57,344; frozen FC1 and FC2 keep none: 143,624 B, 1,176,567,808 B a
    layer. The backward adds the recomputed layer's whole set to what full recompute of none adds: 21 layers'
    difference less one layer's set."""
    m, s = load_model("llama-2-70b"), scenario_from({**AMD_LORA, "grad_checkpointing": "full",
                                                     "recompute_layers": 21})
    none_layer = 143_624 * 8192
    assert mg.layer_bytes(m.layers[0], m, s, "none") == none_layer
    assert mg.layer_bytes(m.layers[0], m, s) == 2 * 8192 * 8192
    plain = estimate({**AMD_LORA, "grad_checkpointing": "none"}, advise=False).memory
    block = estimate({**AMD_LORA, "grad_checkpointing": "full", "recompute_layers": 21}, advise=False).memory
    assert plain.peak_phase == block.peak_phase == "backward"
    saved = 21 * (none_layer - 2 * 8192 * 8192) - none_layer
    assert (plain.activations_gib - block.activations_gib) * GIB == pytest.approx(saved, rel=1e-9)
    # the speed model re-runs the forward of 21 of 80 layers
    from gpuplan.stacks import stack_for
    assert stack_for(s).recompute(s, m).layers == pytest.approx(21 / 80)


def test_freed_transposes_are_made_again_each_backward():
    """Without a kept transpose each dgrad GEMM transposes its fp8 weight again: 1 B read and 1 B written per
    linear weight a micro-step, 2 x 68,451,041,280 B more Transformer Engine traffic for Llama-2-70B on TP 1."""
    from gpuplan.speed.float8 import te_cast_bytes

    m = load_model("llama-2-70b")
    more = te_cast_bytes(m, 8192, weight_grads=False, weight_transposes=True) - te_cast_bytes(m, 8192,
                                                                                             weight_grads=False)
    assert more == pytest.approx(2 * LINEAR_70B)
    assert te_cast_bytes(m, 8192, tp=4, weight_transposes=True) - te_cast_bytes(m, 8192, tp=4) == pytest.approx(
        2 * LINEAR_70B / 4)
