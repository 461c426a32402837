"""``trtllm-serve.sh`` and ``trtllm-config.yaml``: the ``trtllm-serve`` command of a serving plan (engine trtllm).

The flags are the settings the memory estimate assumed (:mod:`gpuplan.engines.trtllm`), written out rather than
left to TensorRT-LLM's defaults: ``--backend`` (``pytorch`` unless the plan sets ``trtllm_backend``), ``--tp_size``
/ ``--pp_size``, ``--max_batch_size`` and ``--max_num_tokens`` (the profiling forward's size), ``--max_seq_len``
(past the model's context, with ``TLLM_ALLOW_LONG_MAX_MODEL_LEN=1`` before the command:
:func:`.serving.long_context_env`),
``--kv_cache_free_gpu_memory_fraction``;
the KV cache's dtype and block size go in the ``--config`` YAML (``kv_cache_config``: ``dtype``,
``tokens_per_block``), and a ``capacity_scheduler_policy`` the plan was given as ``scheduler_config`` (top-level
``LlmArgs`` key, the enum's name: ``MAX_UTILIZATION``, as TensorRT-LLM's own example configs write it), and a
speculative plan's ``speculative_config`` (:func:`speculative_config`). Option
names are those of ``trtllm-serve``'s click command (``tensorrt_llm/commands/serve.py``; transcribed in
tests/data/trtllm, since TensorRT-LLM does not install without CUDA). An fp8 or nvfp4 plan needs a checkpoint
quantized that way (NVIDIA ModelOpt): TensorRT-LLM reads the format from the checkpoint and quantizes nothing as it
loads, so where no such checkpoint is known the script asks for one (:func:`checkpoint`).
"""

from __future__ import annotations

from ..engines import trtllm as trtllm_engine
from .files import LaunchFile, Raw, pasted, shell_text, yaml_text
from .plan import LaunchPlan
from .serving import draft_to_load, long_context_env, no_startup, pool_line, refusal, run_line
from .settings import LaunchOptions

NAME = "trtllm"
SCRIPT = "trtllm-serve.sh"
CONFIG = "trtllm-config.yaml"
# speculative_method -> TensorRT-LLM's speculative_config decoding_type (tensorrt_llm/llmapi/llm_args.py; MTP apart)
DECODING_TYPE = {"eagle3": "Eagle3", "ngram": "NGram", "draft": "DraftTarget"}
KV_DTYPE = {"auto": "auto", "fp16": "auto", "bf16": "auto", "fp8": "fp8"}


def applies(plan: LaunchPlan) -> str | None:
    nodes = None if plan.num_nodes <= 1 else (
        f"trtllm-serve over {plan.num_nodes} nodes starts under mpirun or Slurm, which gpuplan does not write: plan "
        "with engine vllm or sglang to launch across nodes")
    return (refusal(plan, NAME, "TensorRT-LLM", "TensorRT-LLM's", trainers="trainer, torchrun or its stack's")
            or nodes or no_startup(plan, "TensorRT-LLM"))


def command(plan: LaunchPlan, opts: LaunchOptions) -> list[str]:
    s, engine = plan.scenario, plan.result.memory.engine
    ep = ["--ep_size", str(s.ep)] if s.ep > 1 else []
    return ["trtllm-serve", checkpoint(plan), "--backend", trtllm_engine.backend(s), "--tp_size", str(s.tp),
            "--pp_size", str(s.pp), *ep,
            "--max_batch_size", str(engine["max_batch_size"]), "--max_num_tokens", str(engine["max_num_tokens"]),
            "--max_seq_len", str(engine["max_seq_len"]),
            "--kv_cache_free_gpu_memory_fraction", f"{engine['free_gpu_memory_fraction']:g}",
            "--config", CONFIG, "--port", str(opts.port)]


def checkpoint(plan: LaunchPlan) -> str:
    """The checkpoint trtllm-serve loads: the plan's model, or its publisher's checkpoint in the plan's format. An
    fp8 or nvfp4 plan of a model with no known checkpoint in that format asks for one in ``CHECKPOINT`` (the shell
    stops with a sentence while it is unset): TensorRT-LLM takes the format from the checkpoint's
    ``hf_quant_config.json`` (its quantization docs: "Running Pre-quantized Models", "Offline Quantization with
    ModelOpt"), so the 16-bit checkpoint would be served in 16 bits, twice the fp8 plan's weights."""
    if plan.scenario.quant in ("fp8", "nvfp4") and plan.model_ref == plan.model.name:
        quant = plan.scenario.quant
        return Raw(f'"${{CHECKPOINT:?set CHECKPOINT to the model quantized to {quant} by NVIDIA ModelOpt, as the '
                   'comments above say}"')
    return plan.model_ref


def config(plan: LaunchPlan) -> dict:
    s, engine = plan.scenario, plan.result.memory.engine
    out = {"kv_cache_config": {"dtype": KV_DTYPE[s.kv_cache_dtype], "tokens_per_block": engine["tokens_per_block"],
                               "free_gpu_memory_fraction": engine["free_gpu_memory_fraction"]}}
    if s.attention_dp:  # a top-level LlmArgs key: each GPU runs attention for its own requests
        out["enable_attention_dp"] = True
    if s.capacity_scheduler_policy:
        out["scheduler_config"] = {"capacity_scheduler_policy": s.capacity_scheduler_policy.upper()}
    if s.speculative_method != "none":
        out["speculative_config"] = speculative_config(plan)
    return out


def speculative_config(plan: LaunchPlan) -> dict:
    """The ``speculative_config`` of the options file (``LlmArgs``' decoding configs by ``decoding_type``: ``MTP``
    with ``num_nextn_predict_layers`` (DeepSeek's MTP layers run ``k`` times, tech blog 2 "MTP Eagle"), ``Eagle3``,
    ``NGram`` and ``DraftTarget`` with ``max_draft_len`` and, for a head or draft model, ``speculative_model``)."""
    s = plan.scenario
    if s.speculative_method == "mtp":
        return {"decoding_type": "MTP", "num_nextn_predict_layers": s.speculative_tokens}
    out = {"decoding_type": DECODING_TYPE[s.speculative_method], "max_draft_len": s.speculative_tokens}
    if draft_to_load(plan):
        out["speculative_model"] = draft_to_load(plan)
    return out


def notes(plan: LaunchPlan, opts: LaunchOptions) -> list[str]:
    s, mem = plan.scenario, plan.result.memory
    out = [run_line(plan, SCRIPT, opts.port),
           pool_line(plan, "KV cache", f" in blocks of {mem.engine['tokens_per_block']}")]
    if s.quant in ("fp8", "nvfp4") and plan.model_ref != plan.model.name:
        out.append(f"{s.quant} weights: the command loads {plan.model_ref}, the {s.quant} checkpoint of "
                   f"{plan.model.name} that its publisher ships")
    elif s.quant in ("fp8", "nvfp4"):
        out.append(f"{s.quant} weights: set CHECKPOINT to {plan.model.name} quantized to {s.quant} by NVIDIA ModelOpt "
                   "(TensorRT-LLM reads the format from its hf_quant_config.json and quantizes nothing as it loads); "
                   "Model-Optimizer's examples/llm_ptq writes one: "
                   + pasted(["scripts/huggingface_example.sh", "--model", plan.model.name, "--quant", s.quant,
                             "--export_fmt", "hf"])
                   + " (TensorRT-LLM's quantization docs, 'Offline Quantization with ModelOpt')")
    return out


def files(plan: LaunchPlan, opts: LaunchOptions) -> list[LaunchFile]:
    return [LaunchFile(name=SCRIPT, target=NAME, text=shell_text(plan, command(plan, opts), long_context_env(plan),
                                                       notes=notes(plan, opts)),
                       reader="bash (trtllm-serve)", executable=True),
            LaunchFile(name=CONFIG, target=NAME, text=yaml_text(plan, config(plan)),
                       reader="trtllm-serve --config (LLM API options)")]
