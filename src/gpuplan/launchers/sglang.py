"""``sglang-serve.sh``: the ``python -m sglang.launch_server`` command of a serving plan (engine sglang).

The flags are the settings the estimate and the serving simulation assumed (:mod:`gpuplan.engines.sglang`,
:func:`gpuplan.engines.sglang.scheduler_of`), written out rather than left to SGLang's defaults, which change across
releases: ``--tp-size`` / ``--pp-size``, ``--mem-fraction-static`` (the pool), ``--context-length`` (past the
model's context, with ``SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1`` before the command:
:func:`.serving.long_context_env`),
``--chunked-prefill-size`` (a prefill batch's tokens), ``--max-running-requests``, ``--cuda-graph-max-bs``,
``--schedule-policy`` (``fcfs``, as simulated), ``--kv-cache-dtype`` and ``--quantization`` when the plan quantizes
a checkpoint that is not already quantized, ``--fp8-gemm-backend`` when the plan sets ``fp8_gemm_backend``,
``--scheduler-recv-interval`` when it sets ``scheduler_recv_interval``. The radix cache and, from 0.4, the overlap
scheduler are SGLang's defaults and stay on (no ``--disable-radix-cache``, ``--disable-overlap-schedule``);
``--enable-mixed-chunk`` stays off (prefill batches run apart from decodes, as simulated). Option names are those of
SGLang's ``ServerArgs`` (``python/sglang/srt/server_args.py`` ``add_cli_args``). A copy over several nodes runs the
same script on each (``NODE_RANK``, ``MASTER_ADDR``) with ``--nnodes``, ``--node-rank`` and ``--dist-init-addr``
(SGLang's multi-node serving: ``ServerArgs.nnodes``, ``node_rank``, ``dist_init_addr``). A speculative plan writes
its chain (:func:`speculative_flags`). SkyPilot's ``sky.yaml`` runs the same command (:mod:`.skypilot`).
"""

from __future__ import annotations

from .files import LaunchFile, Raw, shell_text
from .plan import LaunchPlan
from .serving import (
    DTYPE,
    converted_note,
    draft_to_load,
    long_context_env,
    no_startup,
    pool_line,
    quant_to_ask,
    refusal,
    run_line,
)
from .settings import LaunchOptions

NAME = "sglang"
PORT = 25000  # the first node's port for the others to join (SGLang's multi-node examples)
SCRIPT = "sglang-serve.sh"
POOL = "KV pool (SGLang's token pool)"  # the header's pool line names it as vLLM's does, then as SGLang does
KV_CACHE_DTYPE = {"auto": "auto", "fp16": "auto", "bf16": "auto", "fp8": "fp8_e4m3"}
# speculative_method -> SGLang's --speculative-algorithm (python/sglang/srt/speculative/spec_info.py
# SpeculativeAlgorithm)
SPECULATIVE_ALGORITHM = {"eagle": "EAGLE", "eagle3": "EAGLE3", "mtp": "NEXTN", "draft": "STANDALONE", "ngram": "NGRAM"}
QUANTIZATION = {"fp8": "fp8", "awq-int4": "awq", "gptq-int4": "gptq", "gptq-int8": "gptq", "mxfp4": "mxfp4",
                "nvfp4": "modelopt_fp4"}


def applies(plan: LaunchPlan) -> str | None:
    return refusal(plan, NAME, "SGLang", "SGLang's token pool") or no_startup(plan, "SGLang")


def command(plan: LaunchPlan, opts: LaunchOptions, *, multinode_env: bool = False) -> list[str]:
    s, engine = plan.scenario, plan.result.memory.engine
    argv = ["python", "-m", "sglang.launch_server", "--model-path", plan.model_ref, "--tp-size", str(s.tp)]
    if s.pp > 1:
        argv += ["--pp-size", str(s.pp)]
    argv += moe_layout(s) + nodes(plan, multinode_env=multinode_env)
    argv += ["--dtype", DTYPE[s.precision.split("-")[0]],
             "--mem-fraction-static", f"{engine['mem_fraction_static']:g}",
             "--context-length", str(engine["context_len"]),
             "--chunked-prefill-size", str(engine["chunked_prefill_size"]),
             "--max-running-requests", str(engine["max_running_requests"]),
             "--cuda-graph-max-bs", str(engine["cuda_graph_max_bs"]),
             "--schedule-policy", engine["schedule_policy"],
             "--kv-cache-dtype", KV_CACHE_DTYPE[s.kv_cache_dtype]]
    if quant_to_ask(plan) is not None:
        argv += ["--quantization", QUANTIZATION[quant_to_ask(plan)]]
    if s.fp8_gemm_backend:
        argv += ["--fp8-gemm-backend", s.fp8_gemm_backend]
    if s.scheduler_recv_interval:
        argv += ["--scheduler-recv-interval", str(s.scheduler_recv_interval)]
    return [*argv, *speculative_flags(plan), "--port", str(opts.port)]


def nodes(plan: LaunchPlan, *, multinode_env: bool = False) -> list[str]:
    """The flags that join the nodes of one copy (none on one node): this node's rank and the first node's address,
    from ``NODE_RANK`` and ``MASTER_ADDR``, or with ``multinode_env`` SkyPilot's ``SKYPILOT_NODE_RANK`` and the
    first of ``SKYPILOT_NODE_IPS`` (as :func:`.vllm.nodes`)."""
    if plan.num_nodes <= 1:
        return []
    rank, addr = (("$SKYPILOT_NODE_RANK", f'"$(echo "$SKYPILOT_NODE_IPS" | head -n1):{PORT}"') if multinode_env else
                  ('"${NODE_RANK:?set NODE_RANK to the rank of this node, 0 on the main one}"',
                   f'"${{MASTER_ADDR:?set MASTER_ADDR to the address of the main node}}:{PORT}"'))
    return ["--nnodes", str(plan.num_nodes), "--node-rank", Raw(rank), "--dist-init-addr", Raw(addr)]


def speculative_flags(plan: LaunchPlan) -> list[str]:
    """SGLang's speculative decoding as gpuplan times it, a chain of ``k`` draft tokens (``ServerArgs``:
    ``--speculative-algorithm`` EAGLE, EAGLE3, NEXTN (MTP), STANDALONE (a draft model) or NGRAM,
    ``--speculative-num-steps k``, ``--speculative-eagle-topk 1``, ``--speculative-num-draft-tokens k + 1``, and
    ``--speculative-draft-model-path`` for a head or draft model, :func:`~.serving.draft_to_load`)."""
    s = plan.scenario
    if s.speculative_method == "none":
        return []
    argv = ["--speculative-algorithm", SPECULATIVE_ALGORITHM[s.speculative_method]]
    if draft_to_load(plan):
        argv += ["--speculative-draft-model-path", draft_to_load(plan)]
    return [*argv, "--speculative-num-steps", str(s.speculative_tokens), "--speculative-eagle-topk", "1",
            "--speculative-num-draft-tokens", str(s.speculative_tokens + 1)]


def moe_layout(s) -> list[str]:
    """SGLang's flags for the MoE layout the plan was timed with (``ServerArgs``: ``--dp-size`` with
    ``--enable-dp-attention``, ``--ep-size``, ``--moe-a2a-backend``: ``deepep`` or ``none``, the gather and
    reduce-scatter)."""
    argv = ["--dp-size", str(s.tp), "--enable-dp-attention"] if s.attention_dp else []
    if s.ep > 1:
        argv += ["--ep-size", str(s.ep)]
    if s.ep > 1 and s.attention_dp:
        argv += ["--moe-a2a-backend", "deepep" if s.moe_dispatch == "deepep" else "none"]
    return argv


def notes(plan: LaunchPlan, opts: LaunchOptions) -> list[str]:
    s, mem = plan.scenario, plan.result.memory
    eng = mem.engine
    out = [run_line(plan, SCRIPT, opts.port), f"{pool_line(plan, POOL)}; memory rules of SGLang {eng['version']}",
           "scheduler as gpuplan timed it: prefill batches of up to "
           f"{eng['chunked_prefill_size']:,} tokens before decodes (no --enable-mixed-chunk), radix cache on"
           + (", overlap scheduler on" if eng["overlap_schedule"] else "")]
    return out + converted_note(plan, f"--quantization {QUANTIZATION.get(s.quant)}")


def files(plan: LaunchPlan, opts: LaunchOptions) -> list[LaunchFile]:
    return [LaunchFile(name=SCRIPT, target=NAME, text=shell_text(plan, command(plan, opts), long_context_env(plan),
                                                       notes=notes(plan, opts)),
                       reader="bash (python -m sglang.launch_server)", executable=True)]
