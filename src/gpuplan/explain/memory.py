"""Formulas of the memory breakdown: each part, the three levels, the card's usable memory and the headroom.

The rules are those of :mod:`gpuplan.memory` (each cited there), written out with the scenario's values.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from .. import overheads as oh
from ..engines import deepep, engine_for
from ..hardware import DRIVER_RESERVE, ECC_INBAND_RESERVE, REPORTED_USABLE_GIB
from ..model.quant import make_format
from ..tensors.layout import replicated_bytes
from ..tensors.state import LION_STATE_BYTES, optimizer_state_bytes, weight_format
from . import megatron
from .formula import GIB, Constant, Context, Formula, count, gib


def weights(x: Context) -> Formula:
    s = x.s
    value = x.r.memory.weights_gib
    if x.megatron:
        return megatron.weights(x)
    if s.task == "train" and s.offload == "optimizer+params":
        return Formula(label="weights", value=value, unit="GiB", formula="offloaded to CPU memory (ZeRO-3 offload)",
                       substituted="0 GiB on the GPU", computed=0.0)
    own = _engine_formula(x, "weights")
    if own:
        return own
    if s.task == "infer" or s.method != "full":
        return _stored_weights(x, value)
    return _full_weights(x, value)


def _stored_weights(x: Context, value: float) -> Formula:
    """The weights of a served model or of a LoRA / QLoRA base: each part's parameters in its storage format (the
    adapters and peft's fp32 upcast added in training), over the GPUs that split them."""
    s, m = x.s, x.m
    if s.task == "train" and s.method == "lora" and s.quant in (None, "none"):  # else the quant named holds it
        fmt, skip = make_format("none", high_bytes=x.c), ("router",)
    else:
        fmt, skip = weight_format(s, m)
    parts = {k: v for k, v in m.weight_bytes(fmt, skip=skip).items() if v}
    params = m.params_breakdown()
    host = s.task == "infer" and engine_for(s).host_embedding
    if host:  # llama.cpp keeps the embeddings in host memory, a tied output's token_embd also on the GPU
        from ..engines.llama_cpp import gpu_embedding_bytes

        parts["embeddings"] = gpu_embedding_bytes(m, fmt)
        params = {**params, "embeddings": m.vocab_size * m.embedding_dim}
        parts = {k: v for k, v in parts.items() if v}
    base = sum(parts.values())
    terms = " + ".join(f"{k} {count(params[k])} x {v / params[k]:.3g} B" for k, v in parts.items() if params[k])
    formula = "W = sum over parts of parameters x bytes per parameter in the storage format"
    if host:
        formula += (" (the embeddings stay in host memory; the tied output's copy of the token embedding is on "
                    "the GPU)" if m.tie_word_embeddings else " (the token embedding stays in host memory)")
    extra, upcast = "", 0.0
    if s.task == "train":
        if s.method == "qlora" and fmt.name in ("nf4", "fp4") and s.qlora_fp32_upcast:
            high = x.P - sum(count * sum(lin.weight_params for lin in layer.linears if not lin.kept(skip))
                             for layer, count in m.layer_kinds())
            upcast = high * (4 - x.c)
            extra += f" + fp32 upcast {count(high)} x {4 - x.c} B"
        extra += f" + adapters {x.trainable:,} x {x.state_bytes} B"
        formula += " (+ peft's fp32 upcast of non-4-bit parameters, + the LoRA adapters)"
    total = base + upcast + (x.state_bytes * x.trainable if s.task == "train" else 0)
    div = x.shard * x.w_n
    whole = replicated_bytes(s, m.layers, fmt, skip) / s.pp if s.task == "infer" else 0.0
    computed = (total / div + whole) / GIB
    formula += f", / ({x.shards_text(x.w_n)})"
    substituted = f"({terms}{extra}) / {div}"
    off = _llama_cpp_offloaded(x)
    if off:  # llama.cpp's layers left in system RAM (engines/llama_cpp.py): their share of all but the head
        head = sum(v for k, v in m.weight_bytes(fmt).items() if k in ("lm_head", "norms"))
        cpu = off * (total - head) / m.num_layers / div
        computed -= cpu / GIB
        formula += f" - the {off} layers llama.cpp keeps in system RAM"
        substituted += f" - {off} x ({gib(total)} - head {gib(head)}) / {m.num_layers} / {div}"
    if whole:  # held whole on every tensor-parallel GPU (tensors/layout.replicated)
        formula += " + the 1 - 1/TP of MLA's down-projections each GPU holds beyond its share"
        substituted += f" + {whole / GIB:.2f} GiB"
    return Formula(label="weights", value=value, unit="GiB", formula=formula,
                   substituted=f"{substituted} = {computed:,.2f} GiB",
                   computed=computed, constants=[Constant(name="storage format", value=fmt.name,
                                                          source="gpuplan/model/quant.py (bytes per format)")])


def _full_weights(x: Context, value: float) -> Formula:
    """A full fine-tune's weights: the parameters this rank holds, in fp32 under autocast or the precision's
    dtype, or a 16-bit working copy beside the fp32 master partition."""
    s = x.s
    # full fine-tuning: the parameters this rank holds (sharding/base.py ``held_params``), over the data-parallel
    # ranks that split them
    held, text = _held(x)
    if x.master_partition and x.mixed:
        offloaded = s.offload != "none"  # ZeRO-Offload: the fp32 master partition goes with the optimizer
        master = 0.0 if offloaded else 4 * held / x.N
        computed = (2 * held / x.w_n + master) / GIB
        formula = "W = 2 B x H (bf16 working copy, / ranks under ZeRO-3) + 4 B x H fp32 master / ranks"
        substituted = f"2 x {text} / {x.w_n} + " + ("0 (master offloaded)" if offloaded else f"4 x {text} / {x.N}")
        return Formula(label="weights", value=value, unit="GiB", formula=formula + f", H = {_HELD}",
                       substituted=f"{substituted} = {computed:,.2f} GiB",
                       computed=computed, constants=[Constant(name="ZeRO model states", value="2 + 4 B per parameter",
                                                              source="ZeRO paper section 3; DeepSpeed stage3.py")])
    wbytes = 4 if (x.mixed or s.precision == "fp32") else 2
    computed = wbytes * held / x.w_n / GIB
    why = "fp32 master weights under torch autocast" if x.mixed else f"weights in {s.precision}"
    return Formula(label="weights", value=value, unit="GiB",
                   formula=f"W = {wbytes} B x H / data-parallel shards ({why}), H = {_HELD}",
                   substituted=f"{wbytes} x {text} / {x.w_n} = {computed:,.2f} GiB", computed=computed)


def _vllm_weights(x: Context) -> Formula | None:
    """vLLM's first pipeline stage, whose budget the plan shows: its layers, the embedding, the head where it is
    also the last, over TP, MXFP4 experts padded for the kernel (engines/vllm.py ``stage_weights``)."""
    from ..engines.vllm import absorbed_mla_bytes, mxfp4_padding, stage_weights, stages

    s, m = x.s, x.m
    if x.gpu is None or not x.r.memory.engine:
        return None
    first = stages(m, s.pp)[0]
    fmt, _ = weight_format(s, m)
    computed = stage_weights(s, m, first, x.gpu) / GIB
    held = [f"{len(first.layers)} of {m.num_layers} layers", "the embedding"] + (["the output head"] if first.last
                                                                                 else [])
    pad = mxfp4_padding(m, s.tp, x.gpu, s.engine_version) if fmt.name == "mxfp4" else 1.0
    if pad != 1.0:
        held.append(f"MXFP4 experts padded x {pad:.4f} for the kernel")
    absorbed = absorbed_mla_bytes(s, m, first.layers, fmt) / GIB
    if absorbed:
        held.append(f"+ {absorbed:,.2f} GiB of MLA's absorbed decode matrices (vLLM 0.7)")
    return Formula(label="weights", value=x.r.memory.weights_gib, unit="GiB",
                   formula="W = the first pipeline stage's weights in the storage format (its layers, the "
                           "embedding; the output head on the last stage) / TP, + MLA's down-projections (and, "
                           "under attention data parallelism, the attention) whole on every GPU, + the absorbed "
                           "decode matrices vLLM 0.7's MLA backend materializes (engines/vllm.py "
                           "absorbed_mla_bytes)",
                   substituted=f"{', '.join(held)}, in {fmt.name}, / TP {s.tp} = {computed:,.2f} GiB",
                   computed=computed, constants=[Constant(name="layers per stage", value="L // PP, the remainder "
                                                          "to the stages before the last",
                                                          source="vllm/distributed/utils.py get_pp_indices")])


_HELD = "the parameters on this rank: P / (TP x PP), + MLA's down-projections whole on every TP rank / PP"


def _held(x: Context) -> tuple[float, str]:
    """The parameters one rank holds in full training before data-parallel sharding, as the plan's sharding
    counts them, and that count written out."""
    held = x.holder.held_params(x.s, x.m)
    whole = held - x.P / x.shard
    text = f"{count(x.P)} / {x.shard}" if x.shard > 1 else count(x.P)
    return held, f"({text} + {count(whole)})" if whole else text


def _gradient_total(x: Context) -> tuple[float, str]:
    s = x.s
    if s.method == "full":
        gbytes = 2 if x.master_partition and x.mixed else 4 if (x.mixed or s.precision == "fp32") else 2
        held, text = _held(x)
        return gbytes * held / x.g_n, f"{gbytes} x {text} / {x.g_n}"
    div = x.shard * x.g_n
    return x.state_bytes * x.trainable / div, f"{x.state_bytes} x {x.trainable:,} adapter parameters / {div}"


def _gradients_offloaded(x: Context) -> bool:
    """ZeRO-Offload of a mixed-precision full training keeps no gradient partition on the GPU, FSDP's CPU offload
    none either (sharding/deepspeed.py and sharding/fsdp.py ``offload``)."""
    s = x.s
    if x.master_partition:
        return s.offload != "none" and s.method == "full" and x.mixed
    return x.s.sharded_by.startswith("fsdp") and s.offload == "optimizer+params"


def gradients(x: Context) -> Formula:
    if x.megatron:
        return megatron.gradients(x)
    if _gradients_offloaded(x):
        return Formula(label="gradients", value=x.r.memory.gradients_gib, unit="GiB",
                       formula="offloaded to CPU memory", substituted="0 GiB on the GPU", computed=0.0)
    total, text = _gradient_total(x)
    phase = x.r.memory.peak_phase
    return Formula(label="gradients", value=x.r.memory.gradients_gib, unit="GiB",
                   formula="G = bytes per gradient x trainable parameters / shards (ZeRO-2/3 split them over ranks)",
                   substituted=f"{text} = {gib(total)}", computed=total / GIB,
                   note=f"the bar shows the gradients live at the {phase} peak: the backward pass makes them layer by "
                        "layer, the forward holds only accumulated ones")


def optimizer(x: Context) -> Formula:
    s = x.s
    value = x.r.memory.optimizer_gib
    if x.megatron:
        return megatron.optimizer(x)
    if s.offload != "none":
        return Formula(label="optimizer states", value=value, unit="GiB", formula="offloaded to CPU memory",
                       substituted="0 GiB on the GPU", computed=0.0)
    if s.optimizer == "paged-adamw-8bit":  # memory/training.py ``_model_state``
        return Formula(label="optimizer states", value=value, unit="GiB",
                       formula="bitsandbytes' paged states live in CUDA managed memory (cudaMallocManaged), outside "
                               "PyTorch's allocator: counted in the device level, not here",
                       substituted="0 GiB in the allocator", computed=0.0)
    b, t = x.state_bytes, x.trainable
    rules = {"adamw": (2 * b * t, f"2 moments x {b} B x {t:,}", "AdamW keeps two moments per parameter"),
             "lion": (LION_STATE_BYTES * t, f"1 moment x {LION_STATE_BYTES} B x {t:,}",
                      "bitsandbytes' 32-bit Lion keeps one fp32 moment, whatever the parameters' dtype"),
             "sgd-momentum": (b * t, f"1 buffer x {b} B x {t:,}", "SGD with momentum keeps one buffer"),
             "sgd": (0.0, "0", "plain SGD keeps no state")}
    eight = t * (2 + 2 * 4 / oh.BNB_STATE_BLOCK)
    rules["adamw-8bit"] = rules["paged-adamw-8bit"] = (
        eight, f"{t:,} x (2 x 1 B + 2 x 4 B / {oh.BNB_STATE_BLOCK})",
        "bitsandbytes 8-bit AdamW: one byte per moment + an fp32 absmax per block (Dettmers et al. 2022)")
    factored = optimizer_state_bytes(s, x.m, t, b)  # tensors/state.py: what the plan counts for Adafactor
    rules["adafactor"] = (factored, f"{gib(factored)} of factors",
                          "Adafactor: row and column factors of the second moment per matrix (Shazeer & Stern "
                          "2018), full moments for vectors, in fp32 whatever the weights' dtype (transformers' "
                          "Adafactor.step upcasts the gradient and makes its states from it)")
    if s.sharded_by == "deepspeed":
        rules["adafactor"] = (factored, f"1 moment x 4 B x {t:,}", "Adafactor under DeepSpeed ZeRO keeps the whole "
                              "fp32 second moment: ZeRO hands it flat 1-D partitions, which it does not factor")
    total, text, why = rules[s.optimizer]
    div = x.shard * x.o_n
    formula, substituted = f"O = state bytes x trainable parameters / shards ({why})", f"{text} / {div}"
    # MLA's down-projections whole on every tensor-parallel rank, their states over the data-parallel shards
    copies = x.holder.held_params(s, x.m) - x.P / x.shard if s.method == "full" else 0.0
    whole = total / max(t, 1) * copies / x.o_n
    if whole:
        formula += " + the 1 - 1/TP of MLA's down-projections each rank holds beyond its share"
        substituted += f" + {gib(whole)}"
    return Formula(label="optimizer states", value=value, unit="GiB", formula=formula,
                   substituted=f"{substituted} = {gib(total / div + whole)}", computed=(total / div + whole) / GIB,
                   constants=[Constant(name="8-bit block", value=str(oh.BNB_STATE_BLOCK),
                                       source="overheads.BNB_STATE_BLOCK (bitsandbytes blocksize)")]
                   if "8bit" in s.optimizer else [])


def _kv_tokens(x: Context) -> int:
    s = x.s
    if engine_for(s).grows_cache and x.r.memory.peak_phase == "prefill":
        return s.prompt_tokens
    return s.prompt_tokens + s.output_tokens


def _kv_bytes(x: Context, tokens: int, windowed: bool = True) -> tuple[float, list[str]]:
    """Bytes of the cache of ``batch_size`` sequences of ``tokens`` tokens (GQA; windows capped when
    ``windowed``; the fixed recurrent states of linear-attention and Mamba layers)."""
    s, m = x.s, x.m
    engine = engine_for(s)
    b, heads = engine.kv_element_bytes(s), engine.kv_heads_share(s, m)
    windowed = windowed and engine.caps_windows(m)  # llama.cpp caches whole contexts but in SWA families
    # an engine that splits layers over the cards holds its share of every layer's cache; the others one stage's
    split = 1 if engine.tensor_parallel else s.tp * s.pp
    layers = m.layers[: math.ceil(m.num_layers / s.pp)] if split == 1 else m.layers
    block = engine.kv_block_tokens
    total, terms, state = 0.0, {}, 0.0
    for layer in layers:
        cached = (layer.cached_tokens(tokens) if windowed else tokens) if layer.kv_dims else 0
        cached = math.ceil(cached / block) * block
        dims = layer.kv_dims * heads
        total += cached * dims * b
        state += layer.state_elements * engine.state_element_bytes(s) / s.tp
        if layer.kv_dims:
            key = (cached, dims)
            terms[key] = terms.get(key, 0) + 1
    text = [f"{count} layers x {cached:,} tokens x {dims:,.0f} values" for (cached, dims), count in terms.items()]
    text.append(f"{b:g} B each")
    if state:
        text.append(f"+ recurrent states {state / 2**20:,.1f} MiB")
    if split > 1:
        text.append(f"/ {split} GPUs")
    return s.batch_size * (total + state) / split, [*text, f"x {s.batch_size} sequences"]


def _llama_cpp_offloaded(x: Context) -> int:
    """The layers llama.cpp keeps in system RAM in this plan (0 for other engines and for a ``--tensor-split``)."""
    s = x.s
    if s.task != "infer" or not engine_for(s).offloads_layers or s.tensor_split or s.extra_gpus:
        return 0
    return x.r.memory.offloaded_layers or 0


def _llama_cpp_kv(x: Context) -> Formula | None:
    """llama-server's cache: every slot's cells padded up (engines/llama_cpp.py ``slot_cells``, ``kv_bytes``), the
    layers on the GPUs' share; a split by shares over devices (``tensor_split``) takes the general formula."""
    from ..engines.llama_cpp import kv_bytes, slot_cells

    s, m = x.s, x.m
    if s.tensor_split or s.extra_gpus:
        return None
    cells, n = slot_cells(s), s.tp * s.pp
    whole = kv_bytes(s, m, cells, s.batch_size)
    on_gpu = m.num_layers - _llama_cpp_offloaded(x)
    computed = whole * on_gpu / m.num_layers / n
    return Formula(label="KV cache", value=x.r.memory.kv_cache_gib, unit="GiB",
                   formula="KV = slots x cells per slot (the request's tokens padded up) x K and V of every layer "
                           "(windows capped in SWA families, recurrent states in f32), x the layers on the GPUs / GPUs",
                   substituted=f"{s.batch_size} x {cells:,} cells: {gib(whole)} x {on_gpu} / {m.num_layers} layers "
                               f"/ {n} = {gib(computed)}", computed=computed / GIB,
                   constants=[Constant(name="cell padding", value=f"{oh.LLAMA_CPP_CTX_PAD}",
                                       source="overheads.LLAMA_CPP_CTX_PAD (llama.cpp pads n_ctx per slot)")])


def kv_cache(x: Context) -> Formula:
    own = _engine_formula(x, "kv_cache")
    if own:
        return own
    tokens = _kv_tokens(x)
    # at transformers' prefill peak the sliding layers still hold the whole prompt (DynamicSlidingWindowLayer)
    prefill = engine_for(x.s).grows_cache and x.r.memory.peak_phase == "prefill"
    total, text = _kv_bytes(x, tokens, windowed=not prefill)
    note = "MLA models cache decompressed keys and values in transformers" if x.m.mla else ""
    return Formula(label="KV cache", value=x.r.memory.kv_cache_gib, unit="GiB",
                   formula="KV = sequences x (sum over layers of min(tokens, window) x 2 x KV heads x head_dim / TP "
                           "x bytes + recurrent states)",
                   substituted=f"{'; '.join(text)} = {gib(total)} ({tokens:,} tokens at the {x.r.memory.peak_phase} "
                               "peak)", computed=total / GIB, note=note,
                   constants=[Constant(name="KV heads x head_dim", value=f"{x.m.num_kv_heads} x {x.m.head_dim}",
                                       source="the model's config.json")])


def _vllm_pool(x: Context) -> Formula:
    """vLLM gives the KV cache what its budget leaves (engines/vllm.py ``startup_memory``)."""
    mem, eng = x.r.memory, x.r.memory.engine
    requested = eng["requested_gib"]
    rest = mem.weights_gib + mem.activations_gib + sum(mem.other.values())
    pool = max(requested - rest, 0.0)
    parts = " - ".join(f"{v:.2f} ({k})" for k, v in [("weights", mem.weights_gib),
                                                       ("profiling peak", mem.activations_gib), *mem.other.items()])
    return Formula(label="KV cache pool", value=mem.kv_cache_gib, unit="GiB",
                   formula="KV pool = ceil(total x gpu_memory_utilization) - weights - profiling-run peak - non-torch "
                           "memory - CUDA graphs (counted in the budget since vLLM 0.21)",
                   substituted=f"{requested:.2f} - {parts} = {pool:.2f} GiB", computed=pool,
                   note="vLLM v" + str(eng.get("version", "")) + ": the pool holds "
                        f"{eng.get('kv_cache_tokens', 0):,} tokens",
                   constants=[Constant(name="gpu_memory_utilization", value=f"{x.s.gpu_memory_utilization}",
                                       source="vLLM's default (0.9) unless set")])


def _trtllm_pool(x: Context) -> Formula:
    """TensorRT-LLM gives the KV cache its fraction of the memory free after the weights and the profiling forward
    (engines/trtllm.py ``startup_memory``)."""
    from ..engines.trtllm import total_at_start_gib

    mem, eng = x.r.memory, x.r.memory.engine
    assert x.gpu is not None
    total, fraction = total_at_start_gib(x.gpu), eng["free_gpu_memory_fraction"]
    free = max(total - mem.weights_gib - mem.activations_gib, 0.0)
    return Formula(label="KV cache pool", value=mem.kv_cache_gib, unit="GiB",
                   formula="KV pool = free_gpu_memory_fraction x (total at start - weights - profiling forward of "
                           "max_num_tokens tokens), total being cudaMemGetInfo's less the CUDA context",
                   substituted=f"{fraction} x ({total:,.2f} - {mem.weights_gib:,.2f} - {mem.activations_gib:,.2f}) = "
                               f"{fraction * free:,.2f} GiB", computed=fraction * free,
                   note=f"TensorRT-LLM: {eng['num_blocks']:,} blocks of {eng['tokens_per_block']} tokens "
                        f"({eng['kv_cache_tokens']:,} tokens)",
                   constants=[Constant(name="free_gpu_memory_fraction", value=f"{fraction}",
                                       source="TensorRT-LLM KvCacheConfig default (0.9) unless set")])


def applied(eng: dict) -> str:
    """The fraction SGLang sizes its pool with where it differs from the flag (ROCm's aiter rule,
    engines/sglang.py ``aiter_scale``), else ""."""
    scaled = eng.get("applied_mem_fraction_static")
    return "" if scaled is None else f" (x 0.85 = {scaled:g}: aiter attention on ROCm, context above 8,192 tokens)"


def _sglang_pool(x: Context) -> Formula:
    """SGLang's token pool: what the weights leave once the reserve is set aside, in whole tokens
    (engines/sglang.py ``profile_max_num_token``)."""
    from ..engines.sglang import cell_bytes

    mem, eng = x.r.memory, x.r.memory.engine
    cell = cell_bytes(x.s, x.m)
    tokens = eng["max_total_num_tokens"]
    return Formula(label="KV cache pool", value=mem.kv_cache_gib, unit="GiB",
                   formula="tokens = (free after the weights - free at start x (1 - mem_fraction_static)) / bytes "
                           "per token (K and V of every layer on this GPU); pool = tokens x bytes per token",
                   substituted=f"{tokens:,} tokens x {cell:,.0f} B = {tokens * cell / GIB:.2f} GiB",
                   computed=tokens * cell / GIB,
                   note=f"SGLang: mem_fraction_static {eng['mem_fraction_static']}"
                        f"{applied(eng)}, max_running_requests "
                        f"{eng['max_running_requests']:,}",
                   constants=[Constant(name="mem_fraction_static", value=f"{eng['mem_fraction_static']}",
                                       source="SGLang's default for the card (server_args.py) unless set")])


def activations(x: Context) -> Formula:
    s, m = x.s, x.m
    value = x.r.memory.activations_gib
    if s.task == "train":
        T = s.micro_batch_size * s.seq_len
        logits = 4 * T * m.vocab_size
        kept = ("each layer's input (b x s x h x bytes) kept, one layer recomputed in the backward"
                if s.grad_checkpointing == "full" else "the tensors each layer saves for backward")
        return Formula(
            label="activations", value=value, unit="GiB",
            formula=f"A = {kept}, over {m.num_layers} layers of T = micro_batch x seq_len tokens, + logits and loss "
                    "(fp32 log-softmax 4 x T x V, plus bf16/fp32 copies in forward and backward)",
            substituted=f"T = {s.micro_batch_size} x {s.seq_len:,} = {T:,} tokens, h = {m.hidden_size:,}, "
                        f"V = {m.vocab_size:,}: fp32 log-softmax alone {gib(logits)}; at the {x.r.memory.peak_phase} "
                        f"peak {value:,.2f} GiB",
            note="counted tensor by tensor from the Hugging Face implementations (gpuplan/tensors/activations.py), "
                 "not one closed formula")
    prompt = s.batch_size * s.prompt_tokens
    return Formula(
        label="activations", value=value, unit="GiB",
        formula="prefill: one layer's temporaries for all prompt tokens (MLP 3 x i + 2 x h per token, attention "
                "q, k, v) + last-token logits (sequences x V x (bytes + 4)); decode: the same for one token",
        substituted=f"{s.batch_size} x {s.prompt_tokens:,} = {prompt:,} prompt tokens, i = {m.intermediate_size:,}, "
                    f"h = {m.hidden_size:,}, V = {m.vocab_size:,}: {value:,.2f} GiB at the {x.r.memory.peak_phase} "
                    "peak", note="the working set of the phase at the peak (gpuplan/memory/inference.py)")


OTHER_SOURCES = {
    "cuBLAS workspace": "PyTorch's CUBLAS_WORKSPACE_CONFIG :4096:8 (8 x 4 MiB) + cuBLASLt "
                        "(overheads.CUBLAS_WORKSPACE_GIB)",
    "DDP gradient buckets": "PyTorch DDP keeps flat bucket copies of the gradients (25 MiB buckets, all of them)",
    "ZeRO communication buckets": "DeepSpeed reduce bucket = hidden^2 elements as the HF integration sets it, "
                                  "2 buffers x 2 B (transformers/integrations/deepspeed.py)",
    "ZeRO-3 gathered layers": "DeepSpeed stage 3 gathers the current layer and prefetches the next",
    "dequantized 4-bit weight": "bitsandbytes dequantizes one 4-bit weight to the compute dtype per matmul",
    "optimizer step temporaries": "what optimizer.step() allocates beyond the states (foreach AdamW's sqrt(v))",
}


DEEPEP_SOURCE = ("deepseek-ai/DeepEP csrc/config.hpp get_nvl_buffer_size_hint, get_low_latency_rdma_size_hint; "
                 "SGLang token_dispatcher/deepep.py, vLLM all2all.py (gpuplan/engines/deepep.py)")


def other(x: Context, name: str, value: float) -> Formula:
    computed, formula, sub = None, name, f"{value:,.3f} GiB"
    if name == "cuBLAS workspace":
        computed, formula, sub = oh.CUBLAS_WORKSPACE_GIB, "8 x 4 MiB + cuBLASLt", f"{oh.CUBLAS_WORKSPACE_GIB:.4f} GiB"
    elif name == "ZeRO communication buckets":
        h = x.m.hidden_size
        computed = 4 * oh.deepspeed_bucket_elements(h) / GIB
        formula, sub = "2 buffers x 2 B x hidden^2", f"4 x {h:,}^2 = {computed:,.3f} GiB"
    elif name == "DDP gradient buckets":
        total, text = _gradient_total(x)
        computed, formula, sub = total / GIB, "= the gradients", f"{text} = {gib(total)}"
    elif name == "dequantized 4-bit weight":
        largest = max(lin.weight_params / lin.count for layer, _ in x.m.layer_kinds() for lin in layer.linears)
        computed = x.c * largest / x.shard / GIB
        formula, sub = "compute bytes x the largest linear weight", f"{x.c} x {count(largest)} / {x.shard} = " \
                                                                    f"{computed:,.3f} GiB"
    elif name.startswith("DeepEP buffers"):
        computed = deepep.buffer_bytes(x.s, x.m) / GIB
        formula = "num_nvl_bytes + num_rdma_bytes (DeepEP's size hints for the engine's settings)"
        sub = f"{computed:,.3f} GiB"
    source = DEEPEP_SOURCE if name.startswith("DeepEP") else OTHER_SOURCES.get(name, "gpuplan/memory/training.py")
    return Formula(label=name, value=value, unit="GiB", formula=formula, substituted=sub, computed=computed,
                   note="" if computed is not None else source,
                   constants=[Constant(name=name, value=f"{value:,.3f} GiB",
                                       source=source)])


# ---- levels -------------------------------------------------------------------------------------------
def allocated(x: Context) -> Formula:
    mem = x.r.memory
    parts = {"weights": mem.weights_gib, "gradients": mem.gradients_gib, "optimizer": mem.optimizer_gib,
             "activations": mem.activations_gib, "KV cache": mem.kv_cache_gib, **mem.other}
    parts = {k: v for k, v in parts.items() if v > 0.0005}
    return Formula(label="allocated peak", value=mem.allocated_peak_gib, unit="GiB",
                   formula="allocated = sum of the parts live at the peak (= torch.cuda.max_memory_allocated)",
                   substituted=" + ".join(f"{k} {v:,.2f}" for k, v in parts.items()) +
                   f" = {sum(parts.values()):,.2f} GiB", computed=sum(parts.values()))


def _trtllm_reserved(x: Context) -> Formula:
    mem = x.r.memory
    parts = [("weights", mem.weights_gib), ("profiling forward", mem.activations_gib),
             ("KV pool", mem.kv_cache_gib), *mem.other.items()]
    computed = sum(v for _, v in parts)
    return Formula(label="reserved peak", value=mem.reserved_peak_gib, unit="GiB",
                   formula="TensorRT-LLM holds its weights, its max_num_tokens profiling forward and "
                           "free_gpu_memory_fraction of the memory they leave (KV blocks, then its reserve): the "
                           "device level is their sum, whatever a step uses",
                   substituted=" + ".join(f"{v:.2f} ({k})" for k, v in parts) + f" = {computed:.2f} GiB",
                   computed=computed)


def _sglang_reserved(x: Context) -> Formula:
    mem = x.r.memory
    parts = [("weights", mem.weights_gib), ("token pool", mem.kv_cache_gib), *mem.other.items()]
    computed = sum(v for _, v in parts)
    return Formula(label="reserved peak", value=mem.reserved_peak_gib, unit="GiB",
                   formula="SGLang holds its weights and token pool and keeps its reserve for activations and "
                           "CUDA graphs: the device level is their sum, whatever a step uses",
                   substituted=" + ".join(f"{v:.2f} ({k})" for k, v in parts) + f" = {computed:.2f} GiB",
                   computed=computed)


def _vllm_reserved(x: Context) -> Formula:
    s, mem = x.s, x.r.memory
    total = mem.capacity_gib - oh.CUDA_TOTAL_BELOW_USABLE_GIB
    requested = mem.engine["requested_gib"]
    computed = max(requested, mem.allocated_peak_gib)
    over = f"; its tensors, {mem.allocated_peak_gib:,.2f} GiB, exceed it" if computed > requested else ""
    return Formula(label="reserved peak", value=mem.reserved_peak_gib, unit="GiB",
                   formula="vLLM requests ceil(total x gpu_memory_utilization), total being what cudaMemGetInfo "
                           "reports (vllm/v1/worker/utils.py request_memory), or holds its tensors where they "
                           "exceed that (no KV block left: it does not start)",
                   substituted=f"max(ceil({total:,.2f} GiB x {s.gpu_memory_utilization}) = {requested:,.2f}, "
                               f"allocated {mem.allocated_peak_gib:,.2f}) = {computed:,.2f} GiB{over}",
                   computed=computed,
                   constants=[Constant(name="cudaMemGetInfo total below usable",
                                       value=f"{oh.CUDA_TOTAL_BELOW_USABLE_GIB} GiB",
                                       source="overheads.CUDA_TOTAL_BELOW_USABLE_GIB (vLLM startup logs)")])


# each engine's own formulas, by the part they explain (the rest are every engine's): vLLM's weights are its first
# pipeline stage's, and vLLM, SGLang and TensorRT-LLM hold a KV pool and a reserve of their budget; llama.cpp pads
# its slots and keeps some layers in system RAM. Each returns None where the general formula applies.
ENGINE_FORMULAS: dict[str, dict[str, Callable[[Context], Formula | None]]] = {
    "vllm": {"weights": _vllm_weights, "kv_cache": _vllm_pool, "reserved": _vllm_reserved},
    "sglang": {"kv_cache": _sglang_pool, "reserved": _sglang_reserved},
    "trtllm": {"kv_cache": _trtllm_pool, "reserved": _trtllm_reserved},
    "llama.cpp": {"kv_cache": _llama_cpp_kv},
}
# the parts an engine that preallocates its budget explains from its start-up record (the plan's memory.engine)
_BUDGETED = ("kv_cache", "reserved")


def _engine_formula(x: Context, part: str) -> Formula | None:
    """The serving engine's own formula of ``part`` (:data:`ENGINE_FORMULAS`), None where the general one
    applies: training, an engine without one, a budget without its start-up record."""
    own = ENGINE_FORMULAS.get(x.s.engine, {}).get(part) if x.s.task == "infer" else None
    if own is None or (part in _BUDGETED and engine_for(x.s).preallocates and not x.r.memory.engine):
        return None
    return own(x)


def reserved(x: Context) -> Formula:
    s, mem = x.s, x.r.memory
    own = _engine_formula(x, "reserved")
    if own:
        return own
    slack = oh.ALLOCATOR_SLACK_TRAIN if s.task == "train" else oh.ALLOCATOR_SLACK_INFER
    computed = mem.allocated_peak_gib * (1 + slack)
    formula = "reserved = allocated x (1 + allocator slack)"
    sub = f"{mem.allocated_peak_gib:,.2f} x {1 + slack:g}"
    if x.megatron:  # Megatron allocates its model state once, in whole buffers: the slack is the activations'
        computed = mem.allocated_peak_gib + slack * mem.activations_gib
        formula = "reserved = allocated + allocator slack x activations (the model state is whole buffers)"
        sub = f"{mem.allocated_peak_gib:,.2f} + {slack:g} x {mem.activations_gib:,.2f}"
    constants = [Constant(name="allocator slack", value=f"{slack:.0%}",
                          source="overheads.ALLOCATOR_SLACK_*: max_memory_reserved is typically 3-15 % above "
                                 "allocated (measured.md)")]
    frag = 0.0
    if s.task == "infer" and engine_for(s).grows_cache:
        final_kv, _ = _kv_bytes(x, s.prompt_tokens + s.output_tokens)
        prefill, decode = mem.phases_gib.get("prefill", 0.0), mem.phases_gib.get("decode", 0.0)
        frag = max(0.0, decode + oh.KV_GROWTH_FRAGMENTATION * final_kv / GIB - max(prefill, decode))
        if frag > 0 and frag >= mem.cached_gib - 0.0005:
            computed += frag
            formula += " + segments the growing KV cache leaves"
            sub += f" + max(0, decode {decode:,.2f} + {oh.KV_GROWTH_FRAGMENTATION} x KV {gib(final_kv)} - peak)"
            constants.append(Constant(name="KV growth fragmentation", value=str(oh.KV_GROWTH_FRAGMENTATION),
                                      source="overheads.KV_GROWTH_FRAGMENTATION (Qwen KV-cache profile)"))
    if mem.cached_gib > frag + 0.0005:  # blocks freed at one point of the step that the allocator keeps cached
        computed += mem.cached_gib
        formula += (" + freed blocks the allocator keeps cached (the loss's at the last layer, gathered layers "
                    "between layers, a second sliding-window mask, FSDP1's side streams)")
        sub += f" + cached {mem.cached_gib:,.2f}"
    return Formula(label="reserved peak", value=mem.reserved_peak_gib, unit="GiB", formula=formula + " "
                   "(= torch.cuda.max_memory_reserved)", substituted=f"{sub} = {computed:,.2f} GiB",
                   computed=computed, constants=constants)


def device(x: Context) -> Formula:
    mem = x.r.memory
    extra = mem.device_overheads
    computed = mem.reserved_peak_gib + sum(extra.values())
    generation = x.gpu.generation if x.gpu else "unknown GPU"
    constants = [Constant(name="CUDA context", value=f"{extra.get('CUDA context', 0):.2f} GiB ({generation})",
                          source="overheads.CUDA_CONTEXT_GIB: nvidia-smi beyond memory_reserved, ~0.3-0.6 GB "
                          "(CUDA_CONTEXT_EAGER_LOADING_GIB, 1.3 GB, before torch 1.13)")]
    if "NCCL buffers" in extra:
        constants.append(Constant(name="NCCL buffers", value=f"{oh.NCCL_GIB} GiB",
                                  source="overheads.NCCL_GIB: 342-392 MB measured at TP >= 2 (aiconfigurator)"))
    return Formula(label="device peak", value=mem.device_peak_gib, unit="GiB",
                   formula="device = reserved + memory outside the allocator (CUDA context, NCCL) (~ nvidia-smi)",
                   substituted=f"{mem.reserved_peak_gib:,.2f} + " + " + ".join(f"{k} {v:.2f}" for k, v in extra.items())
                   + f" = {computed:,.2f} GiB", computed=computed, constants=constants)


def capacity(x: Context) -> Formula:
    gpu, cap = x.gpu, x.r.memory.capacity_gib or 0.0
    assert gpu is not None
    if gpu.id in REPORTED_USABLE_GIB:
        return Formula(label="usable memory", value=cap, unit="GiB", formula="the total the driver reports",
                       substituted=f"{cap:,.2f} GiB", computed=REPORTED_USABLE_GIB[gpu.id],
                       constants=[Constant(name=gpu.name, value=f"{cap:,.2f} GiB",
                                           source="data/GPUS.md section 5 (reported usable totals)")])
    inband = abs(cap - gpu.memory_gib * (1 - ECC_INBAND_RESERVE)) < 1e-9
    reserve = ECC_INBAND_RESERVE if inband else DRIVER_RESERVE
    why = "in-band ECC check bits (GDDR data-center card)" if inband else "driver reserve (HBM ECC is out of band)"
    return Formula(label="usable memory", value=cap, unit="GiB", formula="usable = marketed size x (1 - reserve)",
                   substituted=f"{gpu.memory_gib:g} x (1 - {reserve:.4g}) = {gpu.memory_gib * (1 - reserve):,.2f} GiB",
                   computed=gpu.memory_gib * (1 - reserve),
                   constants=[Constant(name="reserve", value=f"{reserve:.2%}: {why}",
                                       source="gpuplan/hardware.py, data/GPUS.md section 5")])


def headroom(x: Context) -> Formula:
    mem = x.r.memory
    computed = (mem.capacity_gib or 0) - mem.device_peak_gib
    return Formula(label="headroom", value=mem.headroom_gib or 0.0, unit="GiB", formula="headroom = usable - device",
                   substituted=f"{mem.capacity_gib:,.2f} - {mem.device_peak_gib:,.2f} = {computed:+,.2f} GiB",
                   computed=computed)
