"""``vllm-serve.sh``: the ``vllm serve`` command of a serving plan (engine vllm).

The flags are the settings the memory estimate assumed (``gpuplan.engines.vllm``, the release it names), written out
rather than left to vLLM's defaults, so the server starts with the pool gpuplan predicted: ``--gpu-memory-utilization``,
``--tensor-parallel-size`` / ``--pipeline-parallel-size``, ``--dtype``, ``--kv-cache-dtype``, ``--quantization`` when
the plan quantizes a checkpoint that is not already quantized, ``--max-num-seqs`` and ``--max-num-batched-tokens`` (the
scheduler limits of the profiling run), ``--enforce-eager``, the chunked-prefill and async-scheduling switches when the
scenario sets them, and ``--max-model-len``: the scenario's, else the model's context when one request of it fits the
predicted KV pool, else the longest that fits (the plan's: :func:`gpuplan.engines.vllm.started`; vLLM refuses to start
otherwise), or the requests' length where they run past the model's context, with
``VLLM_ALLOW_LONG_MAX_MODEL_LEN=1`` before the command (:func:`.serving.long_context_env`). A copy over several nodes
runs the same script on each (``NODE_RANK``, ``MASTER_ADDR``): vLLM's
multiprocessing executor across nodes, ``--nnodes``, ``--node-rank``, ``--master-addr``, ``--master-port`` and
``--headless`` on every node but the first (vLLM's multi-node serving without Ray, its parser's ``nnodes``,
``node_rank``, ``master_addr``, ``headless``). A speculative plan writes ``--speculative-config``
(:func:`speculative_flag`). Option names and choices are those of vLLM 0.32's and 0.33's parsers
(``make_arg_parser`` in ``vllm/entrypoints/launchers/cli_args.py``, in 0.33 ``entrypoints/common/cli_args.py``;
``vllm/config/cache.py`` ``CacheDType``; ``vllm/model_executor/layers/quantization`` ``QuantizationMethods``; captured
in tests/data/vllm).
"""

from __future__ import annotations

import json

from ..engines.vllm import version_tuple
from ..errors import GpuplanError
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

NAME = "vllm"
PORT = 29500  # the first node's port for the others to join (vLLM's --master-port default)
SCRIPT = "vllm-serve.sh"
KV_CACHE_DTYPE = {"auto": "auto", "fp16": "float16", "bf16": "bfloat16", "fp8": "fp8", "int8": "int8_per_token_head"}
QUANTIZATION = {"fp8": "fp8", "awq-int4": "awq", "gptq-int4": "gptq", "gptq-int8": "gptq", "mxfp4": "mxfp4",
                "nvfp4": "modelopt_fp4",
                "int8": "int8_per_channel_weight_only"}  # online int8 weight-only; AWQ/GPTQ need such a checkpoint
# speculative_method -> vLLM's SpeculativeConfig method (vllm/config/speculative.py SpeculativeMethod)
SPECULATIVE_METHOD = {"eagle": "eagle", "eagle3": "eagle3", "mtp": "mtp", "ngram": "ngram", "draft": "draft_model"}


def applies(plan: LaunchPlan) -> str | None:
    entry = plan.scenario.entry_point
    own = None if entry == "serve" else (f"the plan is for vLLM's {entry} entry point, whose defaults differ from "
                                         "`vllm serve`: plan with entry_point serve")
    return refusal(plan, NAME, "vLLM", "vLLM's preallocated pool") or own or no_startup(plan, "vLLM")


def max_model_len(plan: LaunchPlan) -> int:
    """The ``max_model_len`` of the plan (:func:`gpuplan.engines.vllm.started`), refused where one planned request
    does not fit the predicted KV pool."""
    engine, s = plan.result.memory.engine, plan.scenario
    if engine["max_model_len_that_fits"] < s.prompt_tokens + s.output_tokens:
        raise GpuplanError(f"the predicted KV pool holds one request of up to {engine['max_model_len_that_fits']:,} "
                           f"tokens, less than the {s.prompt_tokens + s.output_tokens:,} planned: lower the context, "
                           "quantize or add GPUs")
    return engine["max_model_len"]


def nodes(plan: LaunchPlan, *, multinode_env: bool = False) -> list[str]:
    """The flags that join the nodes of one copy (none on one node): this node's rank and the first node's address,
    from ``NODE_RANK`` and ``MASTER_ADDR`` (with ``multinode_env``, SkyPilot's ``SKYPILOT_NODE_RANK`` and the first
    of ``SKYPILOT_NODE_IPS``); the nodes after the first run headless (no API server)."""
    if plan.num_nodes <= 1:
        return []
    var = "SKYPILOT_NODE_RANK" if multinode_env else "NODE_RANK"
    rank, addr = (("$SKYPILOT_NODE_RANK", '"$(echo "$SKYPILOT_NODE_IPS" | head -n1)"') if multinode_env else
                  ('"${NODE_RANK:?set NODE_RANK to the rank of this node, 0 on the main one}"',
                   '"${MASTER_ADDR:?set MASTER_ADDR to the address of the main node}"'))
    return ["--distributed-executor-backend", "mp", "--nnodes", str(plan.num_nodes), "--node-rank", Raw(rank),
            "--master-addr", Raw(addr), "--master-port", str(PORT), Raw(f'$([ "${var}" = 0 ] || echo --headless)')]


def parallel(s) -> list[str]:
    """How vLLM splits the copy over its ``tp`` GPUs: ``--tensor-parallel-size``, or under attention data
    parallelism ``--data-parallel-size`` ranks of one GPU each (vLLM's data-parallel deployment of MoE models);
    ``--enable-expert-parallel`` (EP = TP x DP) and ``--all2all-backend`` (``allgather_reducescatter``, vLLM's
    default, or ``deepep_low_latency``)."""
    argv = ["--tensor-parallel-size", "1", "--data-parallel-size", str(s.tp)] if s.attention_dp else \
        ["--tensor-parallel-size", str(s.tp)]
    if s.ep > 1:
        argv.append("--enable-expert-parallel")
    if s.ep > 1 and s.attention_dp:
        argv += ["--all2all-backend", "deepep_low_latency" if s.moe_dispatch == "deepep" else
                 "allgather_reducescatter"]
    return argv


def command(plan: LaunchPlan, opts: LaunchOptions, *, multinode_env: bool = False) -> list[str]:
    s = plan.scenario
    argv = ["vllm", "serve", plan.model_ref, *parallel(s)]
    if s.pp > 1:
        argv += ["--pipeline-parallel-size", str(s.pp)]
    argv += nodes(plan, multinode_env=multinode_env)
    engine = plan.result.memory.engine
    argv += ["--dtype", DTYPE[s.precision.split("-")[0]], "--gpu-memory-utilization", f"{s.gpu_memory_utilization:g}",
             "--max-model-len", str(max_model_len(plan)), "--max-num-seqs", str(engine["max_num_seqs"]),
             "--max-num-batched-tokens", str(engine["max_num_batched_tokens"]),
             "--kv-cache-dtype", KV_CACHE_DTYPE[s.kv_cache_dtype]]
    if quant_to_ask(plan) is not None:
        argv += ["--quantization", QUANTIZATION[quant_to_ask(plan)]]
    if s.enforce_eager:
        argv.append("--enforce-eager")
    return [*argv, *chunked_prefill_flag(s), *async_scheduling_flag(s), *speculative_flag(plan), "--port",
            str(opts.port)]


def speculative_flag(plan: LaunchPlan) -> list[str]:
    """``--speculative-config`` as JSON (one shell word, quoted by the script): vLLM's ``SpeculativeConfig`` fields
    ``method`` (its choices: ``eagle``, ``eagle3``, ``mtp``, ``ngram``, ``draft_model``; tests/data/vllm), ``model``
    (the head or draft model, :func:`~.serving.draft_to_load`) and ``num_speculative_tokens``."""
    s = plan.scenario
    if s.speculative_method == "none":
        return []
    config = {"method": SPECULATIVE_METHOD[s.speculative_method]}
    if draft_to_load(plan):
        config["model"] = draft_to_load(plan)
    config["num_speculative_tokens"] = s.speculative_tokens
    return ["--speculative-config", json.dumps(config)]


def chunked_prefill_flag(s) -> list[str]:
    """The chunked-prefill switch when the scenario sets it: ``--enable-chunked-prefill``, and to turn it off
    ``--disable-chunked-prefill`` in 0.33 (its parser's ``EnableDisableAction`` pair, tests/data/vllm),
    ``--no-enable-chunked-prefill`` from 0.9 to 0.32 (``argparse.BooleanOptionalAction``; 0.32's parser), or
    ``--enable-chunked-prefill False`` in earlier releases, whose flag took an optional value (``StoreBoolean``,
    ``nargs="?"``, in ``vllm/engine/arg_utils.py`` of 0.6-0.8)."""
    if s.chunked_prefill is None:
        return []
    v = version_tuple(s.engine_version)
    if v < (0, 9, 0):
        return ["--enable-chunked-prefill", str(s.chunked_prefill)]
    off = "--disable-chunked-prefill" if v >= (0, 33, 0) else "--no-enable-chunked-prefill"
    return ["--enable-chunked-prefill" if s.chunked_prefill else off]


def async_scheduling_flag(s) -> list[str]:
    """The async-scheduling switch when the scenario sets it: ``--async-scheduling`` or ``--no-async-scheduling``
    (0.32's parser: ``BooleanOptionalAction``; 0.33's: ``EnableDisableAction`` with the same two names; from 0.10,
    whose ``EngineArgs`` took the field). Releases before 0.10 have no such flag and schedule synchronously: off is
    their only state, and nothing is written (on is refused: :func:`gpuplan.engines.vllm.async_refusal`)."""
    if s.async_scheduling is None or version_tuple(s.engine_version) < (0, 10, 0):
        return []
    return ["--async-scheduling" if s.async_scheduling else "--no-async-scheduling"]


def notes(plan: LaunchPlan, opts: LaunchOptions) -> list[str]:
    s, mem = plan.scenario, plan.result.memory
    out = [run_line(plan, SCRIPT, opts.port),
           f"{pool_line(plan, 'KV pool')}; memory rules of vLLM {mem.engine['version']}"]
    if plan.model.max_context and max_model_len(plan) < plan.model.max_context:
        out.append(f"--max-model-len {max_model_len(plan):,}: the longest request the predicted KV pool holds (vLLM "
                   f"would refuse to start at the model's {plan.model.max_context:,})")
    return out + converted_note(plan, f"--quantization {QUANTIZATION.get(s.quant)}")


def files(plan: LaunchPlan, opts: LaunchOptions) -> list[LaunchFile]:
    return [LaunchFile(name=SCRIPT, target=NAME, text=shell_text(plan, command(plan, opts), long_context_env(plan),
                                                       notes=notes(plan, opts)),
                       reader="bash (vllm serve)", executable=True)]
