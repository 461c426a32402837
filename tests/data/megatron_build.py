"""Build Megatron-Core's own GPTModel on the meta device (no memory, no GPU) on ``tp x pp x ep`` gloo ranks and print
each rank's parameter count: ``python megatron_build.py TP PP EP`` -> one JSON line per rank. Used by
tests/test_megatron.py (skipped where megatron-core is not installed). The local layer spec (no Transformer Engine,
which needs CUDA) builds the same parameters as the TE spec; sequence parallelism needs TE's norms and is off,
which does not change parameter counts."""

import json
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

CONFIG = dict(num_layers=4, hidden_size=256, num_attention_heads=8, num_query_groups=2, ffn_hidden_size=512,
              vocab_size=1024, experts=8, topk=2)


def run(rank: int, world: int, tp: int, pp: int, ep: int, port: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    from megatron.core import parallel_state as ps
    from megatron.core.models.gpt import GPTModel
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.transformer.transformer_config import TransformerConfig

    ps.initialize_model_parallel(tensor_model_parallel_size=tp, pipeline_model_parallel_size=pp,
                                 expert_model_parallel_size=ep, expert_tensor_parallel_size=1)
    c, moe = CONFIG, ep > 1
    cfg = TransformerConfig(num_layers=c["num_layers"], hidden_size=c["hidden_size"],
                            num_attention_heads=c["num_attention_heads"], num_query_groups=c["num_query_groups"],
                            ffn_hidden_size=c["ffn_hidden_size"], gated_linear_unit=True, add_bias_linear=False,
                            normalization="RMSNorm", tensor_model_parallel_size=tp, pipeline_model_parallel_size=pp,
                            pipeline_dtype=torch.bfloat16, use_cpu_initialization=True, params_dtype=torch.bfloat16,
                            bf16=True, num_moe_experts=c["experts"] if moe else None, moe_router_topk=c["topk"],
                            moe_ffn_hidden_size=c["ffn_hidden_size"] if moe else None,
                            expert_model_parallel_size=ep, expert_tensor_parallel_size=1)
    with torch.device("meta"):
        model = GPTModel(config=cfg, transformer_layer_spec=get_gpt_layer_local_spec(
                             num_experts=c["experts"] if moe else None),
                         vocab_size=c["vocab_size"], max_sequence_length=128, position_embedding_type="rope",
                         share_embeddings_and_output_weights=False, pre_process=ps.is_pipeline_first_stage(),
                         post_process=ps.is_pipeline_last_stage())
    params = sum(p.numel() for p in model.parameters())
    experts = sum(p.numel() for n, p in model.named_parameters() if ".experts." in n)
    print(json.dumps({"rank": rank, "pp_rank": ps.get_pipeline_model_parallel_rank(), "params": params,
                      "experts": experts}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    tp, pp, ep, port = (int(x) for x in sys.argv[1:5])
    world = tp * pp * max(1, ep // tp) if ep > 1 else tp * pp
    mp.spawn(run, args=(world, tp, pp, ep, port), nprocs=world)
