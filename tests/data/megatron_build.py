"""Build Megatron-Core's own GPTModel on the meta device (no memory, no GPU) on ``tp x pp x ep`` gloo ranks and print
each rank's parameter count: ``python megatron_build.py TP PP EP PORT [mla]`` -> one JSON line per rank. Used by
tests/stacks/test_megatron.py (skipped where megatron-core is not installed). The local layer spec (no Transformer
Engine, which needs CUDA) builds the same parameters as the TE spec; sequence parallelism needs TE's norms and is
off, which does not change parameter counts.

``mla``: multi-head latent attention (``MLATransformerConfig``, DeepSeek-V3's layer shape, small). Megatron's
``MLASelfAttention`` builds its down-projections with ``parallel_mode='duplicated'`` only when the spec gives them
as Transformer Engine's ``TELinear`` (``submodules.linear_q_down_proj in [TELinear]``), which needs CUDA; the local
spec's column-parallel ones would split them. So ``TELinear`` is stood in by :class:`WholeLinear`, a plain linear
of the whole ``input x output`` weight, what ``TELinear`` holds under ``'duplicated'`` (``tp_size = 1``,
``megatron/core/extensions/transformer_engine.py``): Megatron's own class still chooses which linears are duplicated
and which are split."""

import json
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

CONFIG = dict(num_layers=4, hidden_size=256, num_attention_heads=8, num_query_groups=2, ffn_hidden_size=512,
              vocab_size=1024, experts=8, topk=2)
MLA = dict(q_lora_rank=64, kv_lora_rank=32, qk_head_dim=16, qk_pos_emb_head_dim=8, v_head_dim=16)


class WholeLinear(torch.nn.Module):
    """Transformer Engine's ``TELinear`` with ``parallel_mode='duplicated'``: the whole weight on every rank."""

    def __init__(self, input_size, output_size, *, parallel_mode=None, bias=False, **_):
        super().__init__()
        assert parallel_mode == "duplicated", parallel_mode
        self.weight = torch.nn.Parameter(torch.empty(output_size, input_size))
        self.bias = torch.nn.Parameter(torch.empty(output_size)) if bias else None

    def forward(self, x):
        return x @ self.weight.t(), None


class CoreAttention(torch.nn.Module):
    """Transformer Engine's ``TEDotProductAttention`` (MLA passes it ``k_channels``/``v_channels``, which the local
    ``DotProductAttention`` lacks): no parameters either way."""

    def __init__(self, *args, **kwargs):
        super().__init__()


def _mla_spec():
    """The local layer spec with MLA, its down-projections given as (the stand-in of) ``TELinear``."""
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.transformer import multi_latent_attention

    multi_latent_attention.TELinear = WholeLinear
    torch.cuda.current_device = lambda: "cpu"  # MLA's RotaryEmbedding asks for it (no parameters)
    spec = get_gpt_layer_local_spec(multi_latent_attention=True, qk_layernorm=True)
    sub = spec.submodules.self_attention.submodules
    sub.linear_q_down_proj = sub.linear_kv_down_proj = WholeLinear
    sub.core_attention = CoreAttention
    return spec


def run(rank: int, world: int, tp: int, pp: int, ep: int, port: int, mla: bool) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    from megatron.core import parallel_state as ps
    from megatron.core.models.gpt import GPTModel
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.transformer.transformer_config import MLATransformerConfig, TransformerConfig

    ps.initialize_model_parallel(tensor_model_parallel_size=tp, pipeline_model_parallel_size=pp,
                                 expert_model_parallel_size=ep, expert_tensor_parallel_size=1)
    c, moe = CONFIG, ep > 1
    cfg = (MLATransformerConfig if mla else TransformerConfig)(
                            **(dict(MLA, rope_type="rope") if mla else {}), num_layers=c["num_layers"],
                            hidden_size=c["hidden_size"],
                            num_attention_heads=c["num_attention_heads"], num_query_groups=c["num_query_groups"],
                            ffn_hidden_size=c["ffn_hidden_size"], gated_linear_unit=True, add_bias_linear=False,
                            normalization="RMSNorm", tensor_model_parallel_size=tp, pipeline_model_parallel_size=pp,
                            pipeline_dtype=torch.bfloat16, use_cpu_initialization=True, params_dtype=torch.bfloat16,
                            bf16=True, num_moe_experts=c["experts"] if moe else None, moe_router_topk=c["topk"],
                            moe_ffn_hidden_size=c["ffn_hidden_size"] if moe else None,
                            expert_model_parallel_size=ep, expert_tensor_parallel_size=1)
    with torch.device("meta"):
        model = GPTModel(config=cfg, transformer_layer_spec=_mla_spec() if mla else get_gpt_layer_local_spec(
                             num_experts=c["experts"] if moe else None),
                         vocab_size=c["vocab_size"], max_sequence_length=128, position_embedding_type="rope",
                         share_embeddings_and_output_weights=False, pre_process=ps.is_pipeline_first_stage(),
                         post_process=ps.is_pipeline_last_stage())
    params = sum(p.numel() for p in model.parameters())
    experts = sum(p.numel() for n, p in model.named_parameters() if ".experts." in n)
    whole = sum(p.numel() for n, p in model.named_parameters() if "_down_proj." in n)
    print(json.dumps({"rank": rank, "pp_rank": ps.get_pipeline_model_parallel_rank(), "params": params,
                      "experts": experts, "down_proj": whole}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    tp, pp, ep, port = (int(x) for x in sys.argv[1:5])
    world = tp * pp * max(1, ep // tp) if ep > 1 else tp * pp
    # Megatron-Core imported once here and the ranks forked from this process: spawned ranks would each import torch
    # and Megatron-Core again (about 7 CPU-seconds apiece, most of the 8-rank layout's time on two cores)
    import megatron.core.models.gpt.gpt_layer_specs  # noqa: F401

    mp.start_processes(run, args=(world, tp, pp, ep, port, sys.argv[5:6] == ["mla"]), nprocs=world,
                       start_method="fork")
