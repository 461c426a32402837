"""Every "cannot run", in one place: :func:`check` raises one sentence (what, and the fix) for a resolved scenario
that cannot run on its model and card, and returns the warnings for what runs but is doubtful.

The rules, in the order they are asked:

- what only diffusion pipelines and encoder-decoders read (a resolution, denoising steps, a diffusion trainer), asked
  of a decoder LLM; and what only a decoder LLM's plan reads (an engine, a loss, train_tokens, several GPUs), asked
  of a diffusion pipeline, Whisper, an encoder-decoder or an encoder (:func:`module_refusal`);
- what the training stack cannot run (each stack's recipe, :mod:`gpuplan.scenario.stacks`), and sharding asked of a
  serving plan;
- the method: QLoRA's 4-bit bases and compute dtypes;
- the layout: tp x pp x cp against the GPUs, data-parallel shardings against their ranks, DeepSpeed's pipeline
  limit, Megatron-Core's own sizes, tensor parallelism against the attention and KV heads, pipeline stages against
  the layers;
- offloading, and a base no trainer loads (:func:`frozen_base`: a full fine-tune of frozen quantized weights, a GGUF
  or MLX file);
- the serving engine: training on transformers only, another engine's settings, what it does not load (its
  profile's :meth:`~gpuplan.engines.Engine.refusal`), speculative decoding it does not run on the model
  (:func:`gpuplan.engines.speculative.refusal`), a max_model_len shorter than one request;
- the card: what the training stack does not run on it (:func:`stack_card`: the vendors its project documents,
  warned where it runs there in part), Liger's Triton kernels where Triton has no backend (:func:`technique_card`;
  torch.compile on Apple silicon warned), what the engine does not run on it
  (:meth:`~gpuplan.engines.Engine.card_refusal`), dtypes without tensor cores;
- the context: a learned position table the sequence runs past.

A module (diffusion pipeline, Whisper, encoder) is asked the base, loader and card-dtype rules that apply to it
(:func:`module_quant`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..engines import ENGINES, OWN_SETTINGS, REFUSES_FOREIGN, SHARED_SETTINGS, SIMULATED, engine_for, readers
from ..engines.transformers import flash_refusal
from ..errors import GpuplanError
from ..hardware import GpuSpec, resolve_gpu
from ..market.offers import NODE_GPUS, largest_node
from ..model.spec import ModelSpec
from ..scenario import INFER_ONLY, LOAD_FIELDS, TRAIN_ONLY, Scenario, stack_cards, stacks
from ..scenario.fields import MODULE_FIELDS
from ..sharding import sharding_for
from ..stacks import STACKS, stack_for
from ..tensors.state import weight_format

if TYPE_CHECKING:
    from ..model.module_spec import ModuleSpec

QLORA_BASES = ("nf4", "fp4", "gptq-int4", "awq-int4")  # the 4-bit bases QLoRA is estimated on


def check(s: Scenario, m: ModelSpec, gpu: GpuSpec | None) -> list[str]:
    """Raise :class:`GpuplanError` for what cannot run (the module docstring's rules, in that order); return the
    warnings for what is doubtful."""
    not_a_module(s, m.name)
    scenario_refusal(s)
    scenario_load(s)
    warnings = other_task(s)
    _qlora(s)
    warnings += _layout(s, m)
    if s.task == "train" and s.method == "lora" and s.quant not in (None, "none"):
        warnings.append(f"LoRA on a {s.quant} base: its memory holds the {s.quant} weights, its speed is LoRA's on a "
                        "16-bit base (the base's own kernels, int8 matmuls or dequantization, are not timed)")
    _offload(s)
    warnings += _engine(s, m)
    if gpu is not None:
        card_refusal(s, gpu)
        why = engine_for(s).weights_refusal(s, weight_format(s, m)[0].name, gpu) if s.task == "infer" else None
        if why:
            raise GpuplanError(why)
        warnings += _node(s, gpu) + _apple(s, gpu) + stack_card_warnings(s, gpu)
        said = engine_for(s).card_warning(s, gpu)
        warnings += ([said] if said else []) + (_deepgemm(s, m, gpu) if s.task == "infer" else [])
    return warnings + context_warnings(s, m)


def _deepgemm(s: Scenario, m: ModelSpec, gpu: GpuSpec) -> list[str]:
    """A serving plan's DeepGEMM warnings (:func:`gpuplan.speed.deepgemm.deepgemm_warnings`), loaded by the first
    serving plan only: a training estimate never reads the engines' step times."""
    from ..speed.deepgemm import deepgemm_warnings

    return deepgemm_warnings(s, m, gpu)


def _apple(s: Scenario, gpu: GpuSpec) -> list[str]:
    """Training on Apple silicon with software whose Metal support is new, said (s20 rewalk's leftover 3): a
    bitsandbytes QLoRA base (the stacks :func:`gpuplan.stacks.speedups.kernels` times with its kernels) runs on its
    MPS backend (bitsandbytes-foundation/bitsandbytes ``bitsandbytes/backends/mps/ops.py``: 4-bit quantize,
    dequantize and one-row gemv in Metal kernels loaded from the Kernels Hub, ``kernels-community/bitsandbytes-mps``,
    a matmul of more rows dequantized and run in 16 bits). What each stack lacks on a Mac (Unsloth's device check
    accepts MPS, ``unsloth/device_type.py``, while its Apple port was merged in part, unslothai/unsloth#4259,
    September 2026, and its Triton kernels have no Metal backend) is :func:`stack_card_warnings`'."""
    if gpu.vendor != "Apple" or s.task != "train":
        return []
    from ..stacks.speedups import kernels  # read for a training plan on a Mac only

    out = []
    if s.method == "qlora" and kernels(s.stack, s).dequant == "bnb":
        out.append(f"QLoRA on Apple silicon: bitsandbytes runs the {s.quant or 'nf4'} base on its MPS backend, new "
                   "(Metal kernels fetched from the Kernels Hub, kernels-community/bitsandbytes-mps, through the "
                   "kernels package, both to install; a training matmul dequantizes and runs in 16 bits), which no "
                   "run on a Mac has measured")
    return out


def not_a_module(s: Scenario, name: str) -> None:
    """The fields and trainers of diffusion pipelines and encoder-decoders (:mod:`gpuplan.plan.modules`), and the
    for-loop AdamW their plans time, given with a decoder LLM, ``name`` (or, for ``fit``, every bundled model)."""
    stray = [field for field in MODULE_FIELDS if field in s.model_fields_set]
    if stray:
        one = len(stray) == 1
        raise GpuplanError(f"{', '.join(stray)} appl{'ies' if one else 'y'} to diffusion pipelines and "
                           f"encoder-decoders, and {name} is a decoder LLM: drop {'it' if one else 'them'}")
    if s.stack in stacks.DIFFUSION_TRAINERS:
        raise GpuplanError(f"stack {s.stack} trains diffusion models, and {name} is a decoder LLM: use hf, "
                           "torchtune, torchtitan, unsloth, axolotl, pytorch or megatron")
    if s.optimizer_impl == "for-loop":
        raise GpuplanError(f"optimizer_impl for-loop (transformers' own AdamW) is planned for text encoders, Whisper "
                           f"and encoder-decoders, and {name} is a decoder LLM: use fused or foreach")


# the decoder LLM's fields a module's plan has no use for, by what they set (module_refusal's sentences)
SIZES_A_JOB = frozenset({"train_tokens", "dataset", "tokenizer", "samples", "mean_tokens", "max_tokens", "epochs",
                         "packing", "model_size", "dataset_gb", "eval_interval", "eval_tokens", "save_interval"})
LAYOUT = frozenset({"num_gpus", "num_nodes", "sharding", "tp", "pp", "cp", "ep", "vpp", "attention_dp", "offload",
                    "host_ram_gib", "extra_gpus", "tensor_split"})


def module_refusal(s: Scenario, spec: ModuleSpec) -> None:
    """A field given to the plan of ``spec`` (a diffusion pipeline, Whisper, an encoder-decoder, an encoder) that
    the plan does not read (:func:`gpuplan.scenario.modules.reads`): refused in one sentence naming what it reads
    instead, so no flag is taken and silently left out. A field given at its default changes nothing and passes."""
    from ..scenario.modules import TRAINER_READS, reads  # a decoder's plan never loads the modules' jobs

    read = set(reads(spec))
    for name, info in Scenario.model_fields.items():  # the first in the scenario's order
        if name in s.model_fields_set and name not in read and getattr(s, name) != info.default:
            what = "is read by another kind of model" if name in MODULE_FIELDS or name in TRAINER_READS else \
                "is a decoder LLM setting"
            if spec.kind == "module":
                what = "is not read by this plan"
            instead = _reads_instead(name, s, spec, t5="seq_len" in read)
            raise GpuplanError(f"{name} {what}, and {spec.describe()}: {instead}; drop {name}")


def _reads_instead(name: str, s: Scenario, spec: ModuleSpec, *, t5: bool) -> str:
    """What the plan of ``spec`` reads in place of field ``name`` (``t5``: its prompt has T5 tokens, seq_len)."""
    from ..scenario.modules import reads_kind

    kind = reads_kind(spec)
    if kind == "module":
        whole = ", trained whole" if s.task == "train" else ""
        return f"its plan is one pass of the example input its build() returns{whole}: set the batch and sizes there"
    samples = "images" if kind == "diffusion" else "samples"
    if name in SIZES_A_JOB:
        return (f"its training is sized by train_steps (optimizer steps) x micro_batch_size {samples} (x "
                "grad_accum_steps)")
    if name in LAYOUT:
        return (f"its plan runs on one GPU (data parallelism over several is not modelled for it), and N replicas make "
                f"N times its {samples} per hour at the same price per thousand")
    if kind == "diffusion" and name in ("prompt_tokens", "output_tokens", "shared_prefix_tokens"):
        return "a prompt is CLIP's 77 tokens" + (", plus the T5 tokens seq_len sets" if t5 else "")
    runs = {"diffusion": "it generates with diffusers' pipeline, per batch_size images x inference_steps (and cfg)",
            "whisper": "it runs on transformers, per batch_size windows of audio_seconds and decoder_tokens",
            "encoder-decoder": "it runs on transformers, per batch_size samples of prompt_tokens and output_tokens",
            "encoder": "it runs on transformers, per batch_size samples",
            "text-encoder": "it runs on transformers, per batch_size sequences of prompt_tokens"}[kind]
    if s.task == "infer" or name in ("engine", "kv_cache_dtype") or name.startswith(("max_", "engine")):
        return runs
    timed = ", cache_latents and text_encoders" if kind == "diffusion" else ""
    return f"its step is timed from its recorded profile, with precision, attention, grad_checkpointing{timed}"


def scenario_refusal(s: Scenario) -> None:
    """What the scenario's own fields cannot run together, whatever the model and card: the training stack's
    refusals (:func:`gpuplan.scenario.stacks.refusal`), a serving engine asked to train (:func:`training_engine`),
    a split of the layers by shares asked of an engine that does not split so
    (:attr:`gpuplan.engines.base.Engine.splits_by_share`) or over a card the catalog lacks, and ZeRO or FSDP asked of
    a serving plan. The searches (recommend, fit) ask it once before they plan a card or model."""
    why = stacks.refusal(s) or offload_refusal(s)
    if why:
        raise GpuplanError(why)
    frozen_base(s)
    training_engine(s)
    if (s.extra_gpus or s.tensor_split is not None) and not engine_for(s).splits_by_share:
        who = " or ".join(name for name in ENGINES if ENGINES[name].splits_by_share)
        raise GpuplanError(f"extra_gpus and tensor_split split a model's layers over devices by shares, which "
                           f"{engine_for(s).label or s.engine} does not: use them with engine {who} (other engines "
                           "split with tp or pp over cards of one kind)")
    for card in s.extra_gpus or ():  # a card beside gpu the catalog lacks: no searched card or model changes it
        resolve_gpu(card)
    if s.task == "infer" and s.sharding not in (None, "single", "ddp"):
        # serving splits a model with tensor or pipeline parallelism (tp, pp) or replicates it (ddp); ZeRO and
        # FSDP shard training states and do not apply
        raise GpuplanError(f"sharding {s.sharding!r} shards training states and does not apply to serving: to split "
                           "a model over GPUs set tp (vLLM) or pp, or leave sharding unset")


# the stacks whose multi-GPU runs go through accelerate, DeepSpeed or FSDP as gpuplan launches them (the HF Trainer
# and axolotl: accelerate or DeepSpeed; torchtune: FSDP2 only); torchtitan refuses for itself (scenario/stacks.py)
_OFFLOAD_BY_LAUNCHER = frozenset({"hf", "axolotl", "torchtune"})


def offload_refusal(s: Scenario, *, every_stack: bool = False) -> str | None:
    """Offloading that the plan's sharding has no switch for, which its launch files could not write (s20 walk:
    ``estimate --sharding fsdp --offload optimizer`` planned 28.6 GiB per GPU and ranked it, while ``launch``
    refused it). FSDP offloads the parameters, their gradients and the optimizer step together (FSDP1
    ``CPUOffload(offload_params=True)``, FSDP2 ``CPUOffloadPolicy``; accelerate's ``fsdp_offload_params``): there is
    no optimizer-only offload. DDP has none: DeepSpeed's ZeRO-Offload (``offload_optimizer`` in stages 1-3) is
    what puts the optimizer on the CPU. The stacks gpuplan launches so (:data:`_OFFLOAD_BY_LAUNCHER`), or
    ``every_stack`` for the accelerate, DeepSpeed and Trainer files a plan of another stack asks for."""
    if s.task != "train" or s.offload == "none" or not (every_stack or s.stack in _OFFLOAD_BY_LAUNCHER):
        return None
    if s.sharded_by in ("fsdp1", "fsdp2") and s.offload == "optimizer":
        return ("FSDP offloads parameters, gradients and optimizer states together (FSDP1 CPUOffload, FSDP2 "
                "CPUOffloadPolicy): set offload optimizer+params, or sharding zero3 (stack hf or axolotl) to offload "
                "the optimizer alone")
    if s.sharded_by == "ddp":
        return ("offloading with DDP needs DeepSpeed ZeRO: set sharding zero1 or zero2 (ZeRO-Offload: the optimizer "
                "states and step on the CPU, the gradients sharded too under zero2)")
    return None


def load_refusal(users: int | None, rate_rps: float | None, *, batch: int | None = None,
                 think_s: float = 0.0) -> str | None:
    """A serving load that cannot be simulated as given, in one sentence (None: it can): one load at a time
    (``users``, a closed loop; ``rate_rps``, an open loop; capacity's ``batch``, an offline job), and a think time
    only with users (only closed-loop users think). ``estimate`` asks it of the scenario's ``users``, ``rate_rps``
    and ``think_time_s`` (:func:`scenario_load`), ``capacity`` of its workload's, so the command line, the page and
    the API say the same sentence."""
    if users is not None and rate_rps is not None:
        return "give users (a closed loop) or rate_rps (an open loop), not both"
    if batch is not None and (users is not None or rate_rps is not None):
        return "batch is an offline job, a load of its own: give it without users or rate_rps"
    if think_s and users is None:
        return ("a think time is the pause of closed-loop users between a reply and their next request: give users "
                "too, or drop it")
    return None


def whole_prompts(s: Scenario, longest: int) -> None:
    """A simulated load's longest prompt against the engine (:meth:`gpuplan.engines.base.Engine.prompt_refusal`:
    TensorRT-LLM refuses one past ``max_num_tokens``), refused rather than simulate requests never served:
    ``estimate --users`` or ``--rate-rps`` (its prompts) and ``capacity`` (its workload's longest)."""
    why = engine_for(s).prompt_refusal(s, longest)
    if why:
        raise GpuplanError(why)


def scenario_load(s: Scenario) -> None:
    """The scenario's serving load (``users`` or ``rate_rps``, :mod:`gpuplan.serving.load`): its rules
    (:func:`load_refusal`), its other fields only with one of them, an engine whose scheduler is simulated
    (:data:`gpuplan.engines.SIMULATED`), prompts the engine takes (:func:`whole_prompts`). (A load asked of training
    is refused where the scenario is read.)"""
    given = [k for k in LOAD_FIELDS if getattr(s, k) != Scenario.model_fields[k].default]  # (a dump has them all)
    if not given or s.task != "infer":
        return
    if s.users is None and s.rate_rps is None:
        raise GpuplanError(f"{', '.join(given)} {'shape' if len(given) > 1 else 'shapes'} a simulated load: give "
                           "users (closed loop) or rate_rps (open loop) too")
    why = load_refusal(s.users, s.rate_rps, think_s=s.think_time_s)
    if why:
        raise GpuplanError(why)
    why = unsimulated(s.engine, "users and rate_rps run")
    if why:
        raise GpuplanError(why)
    whole_prompts(s, s.prompt_tokens)


def unsimulated(engine: str, what: str) -> str | None:
    """The sentence refusing a load on an engine whose scheduler is not simulated (:data:`gpuplan.engines.SIMULATED`),
    ``what`` its subject ("users and rate_rps run"), or None."""
    if engine in SIMULATED:
        return None
    slots = {"llama.cpp": "llama-server --parallel N"}.get(engine)  # (launchers/llama_cpp.py writes -np batch)
    # a llama.cpp user serving "3 friends" reached a refusal naming engines they do not run (session 24's walk)
    return (f"{what} a decoder LLM engine's scheduler, simulated for {', '.join(SIMULATED[:-1])} and "
            f"{SIMULATED[-1]}, not {engine}: set engine {' or '.join([', '.join(SIMULATED[:-1]), SIMULATED[-1]])}"
            + (f"; or, to stay on {engine}, give batch_size N instead (N requests decoded together, as {slots} "
               "serves N users at once: its tokens/s per user and time to first token for the last of N)"
               if slots else ""))


def refused(s: Scenario) -> bool:
    """Whether the scenario's own fields cannot run together (:func:`scenario_refusal`), for searches that skip
    such variants without a word."""
    try:
        scenario_refusal(s)
    except GpuplanError:
        return True
    return False


def other_task(s: Scenario, spec: ModuleSpec | None = None) -> list[str]:
    """The other task's settings, given (one file may hold both tasks' settings, so this is said once, not refused):
    a serving plan's ``mtbi_hours``, ``disk_gbs`` or ``dataset_gb`` (a training run's checkpoints and data), a
    training plan's ``batch_size``. Every command's answer carries it (estimate's plan through the resolver,
    recommend's result). A module's plan (``spec``: a diffusion pipeline, Whisper, T5, BERT, your own module) says
    so of each field given that it does not read for its task (:func:`gpuplan.scenario.modules.reads`): the other
    task's (a generation's micro_batch_size), and, in a second sentence, another kind of model's given at its
    default (a value that would change something is refused, :func:`module_refusal`)."""
    if spec is not None:
        return _module_unread(s, spec)
    other = sorted(s.model_fields_set & (INFER_ONLY if s.task == "train" else TRAIN_ONLY))
    if not other:
        return []
    batched = {"batch_size"} if s.task == "train" else {"micro_batch_size", "grad_accum_steps"}
    return [_other_task_sentence(s.task, other, batched & set(other))]


def _other_task_sentence(task: str, other: list[str], batched: set[str] | bool) -> str:
    kind, batch = ("serving", "micro_batch_size x grad_accum_steps") if task == "train" else ("training", "batch_size")
    return (f"{', '.join(other)} {'is a' if len(other) == 1 else 'are'} {kind} setting"
            f"{'s' if len(other) > 1 else ''}: this {'training' if task == 'train' else 'serving'} "
            f"plan leaves {'it' if len(other) == 1 else 'them'} out" + (f" (its batch is {batch})" if batched else ""))


def _module_unread(s: Scenario, spec: ModuleSpec) -> list[str]:
    """:func:`other_task` for the plan of module ``spec``: the fields given that it does not read for ``s.task``, the
    other task's in one sentence, the rest (another kind of model's, at their defaults) in another."""
    from ..scenario.modules import reads  # a decoder's plan never loads the modules' jobs

    read, either = set(reads(spec, s.task)), set(reads(spec))
    unread = [name for name in Scenario.model_fields if name in s.model_fields_set and name not in read]
    other = [name for name in unread if name in either]
    rest = [name for name in unread if name not in either]
    out = [_other_task_sentence(s.task, other, False)] if other else []
    if rest:
        out.append(f"{', '.join(rest)} {'is' if len(rest) == 1 else 'are'} not read by the plan of "
                   f"{spec.describe().replace(' is ', ', ', 1)}: it leaves {'it' if len(rest) == 1 else 'them'} out")
    return out


def _qlora(s: Scenario) -> None:
    if s.task == "train" and s.method == "qlora":
        if s.precision in ("fp32", "fp8-mixed"):
            raise GpuplanError(f"precision {s.precision!r} does not work with QLoRA: its 4-bit base computes in "
                               "bf16 or fp16; set precision to bf16-mixed (or fp16-mixed on GPUs without bf16)")
        if s.quant not in (None, *QLORA_BASES):
            raise GpuplanError(f"QLoRA trains adapters on a 4-bit base (nf4, fp4, gptq-int4 or awq-int4), not "
                               f"{s.quant!r}: set quant to nf4 or drop it")


def _layout(s: Scenario, m: ModelSpec) -> list[str]:
    """The GPUs against the parallel sizes, the sharding against its ranks, the heads and layers against tp, pp."""
    warnings: list[str] = []
    if s.task == "train":
        _model_parallel(s)
    world_refusal(s)
    if s.task == "infer" and s.num_nodes > 1:
        _across_nodes(s)
    if s.task == "train":
        warnings += STACKS[s.stack].check_layout(s, m)
    _data_parallel(s)
    if m.num_heads % s.tp:
        raise GpuplanError(f"tp={s.tp} does not divide the {m.num_heads} attention heads of {m.name}; "
                           f"use a divisor of {m.num_heads}")
    if s.tp > m.num_kv_heads and s.tp % m.num_kv_heads and not m.mla:
        raise GpuplanError(f"tp={s.tp} exceeds the {m.num_kv_heads} KV heads of {m.name} and is not a multiple of "
                           "them, so KV heads cannot be replicated evenly; use tp <= "
                           f"{m.num_kv_heads} or a multiple of it")
    if s.tp > m.num_kv_heads and not m.mla:
        warnings.append(f"tp={s.tp} > {m.num_kv_heads} KV heads: each rank replicates KV heads")
    if s.pp > m.num_layers:
        raise GpuplanError(f"pp={s.pp} is more pipeline stages than {m.name}'s {m.num_layers} layers")
    return warnings


def every_model(s: Scenario, gpu: GpuSpec, models: str = "every bundled model") -> None:
    """What refuses every model alike on ``gpu`` (``fit``'s cards), raised once before the search in estimate's
    sentence rather than on each of its rows (session 19's fuzz): a load that cannot be simulated as given, a
    diffusion field or trainer asked of ``models``, fields that cannot run together, parallel sizes over the cards
    given, a training stack off the card's vendor (unsloth on Gaudi)."""
    scenario_load(s)
    not_a_module(s, models)
    scenario_refusal(s)
    world_refusal(s)
    why = stack_card(s, gpu)
    if why:
        raise GpuplanError(why)


def world_refusal(s: Scenario) -> None:
    """The parallel sizes against the GPUs given, whatever the model: fit, whose cards are given, asks it once."""
    if s.world_size % (s.tp * s.pp * s.cp):
        what = "tp x pp x cp" if s.cp > 1 else "tp x pp"
        raise GpuplanError(f"{what} = {s.tp * s.pp * s.cp} must divide the {s.world_size} GPUs (num_gpus x "
                           "num_nodes)")


def _model_parallel(s: Scenario) -> None:
    """tp or pp asked of a training stack whose profile runs neither (:attr:`gpuplan.stacks.base.Stack.model_parallel`:
    the splits its launch files set), in one sentence naming the stacks whose profiles do (Megatron-Core,
    torchtitan): the HF Trainer has none; Axolotl's experimental ``tensor_parallel_size`` and torchtune's
    ``tensor_parallel_dim`` are not in their plans, whose files would run the GPUs as data parallel instead."""
    asked = [f"{name} {size}" for name, size in (("tp", s.tp), ("pp", s.pp)) if size > 1]
    runs = STACKS[s.stack].model_parallel
    if not asked or all(a.split()[0] in runs for a in asked):
        return
    kinds = " or ".join(k for k, a in (("tensor", "tp"), ("pipeline", "pp")) if any(x.startswith(a) for x in asked))
    splitting = [name for name in STACKS if all(a.split()[0] in STACKS[name].model_parallel for a in asked)]
    who = ("stack hf (the transformers Trainer with accelerate) runs" if s.stack == "hf" else
           f"gpuplan's plans and launch files for stack {s.stack} set")
    raise GpuplanError(f"{who} no {kinds} parallelism ({', '.join(asked)} asked): stacks {' and '.join(splitting)} "
                       "split a model so; or spread it over the GPUs with sharding zero3 or fsdp")


def _across_nodes(s: Scenario) -> None:
    """One copy of a model served across nodes (issue 33): an engine that runs across machines, tp x pp over all
    the GPUs, and a tensor-parallel group inside a node or over whole nodes."""
    if not engine_for(s).tensor_parallel_flag:  # the engines that shard a model run it across machines
        raise GpuplanError(f"{s.engine} serves on one machine: set engine to vllm, sglang or trtllm to split the "
                           f"model across {s.num_nodes} nodes, or plan one node")
    if s.tp * s.pp != s.world_size:
        raise GpuplanError(f"serving over {s.num_nodes} nodes runs one copy of the model across them: set tp x pp = "
                           f"{s.world_size} (tp {s.num_gpus} inside each node and pp {s.num_nodes} across nodes, or tp "
                           f"{s.world_size} over all of them); for replicas, plan one node and count the nodes")
    if s.tp % s.num_gpus and s.num_gpus % s.tp:
        raise GpuplanError(f"a tensor-parallel group of {s.tp} would straddle nodes of {s.num_gpus} GPUs: set tp to a "
                           f"divisor of {s.num_gpus} (inside each node) or a multiple of it (whole nodes)")


def _data_parallel(s: Scenario) -> None:
    """A training sharding against the data-parallel ranks it shards or replicates over."""
    sharding = s.resolved_sharding
    # on one GPU ZeRO-3 still streams the weights from CPU memory layer by layer (DeepSpeed's ZeRO-Offload /
    # ZeRO-Infinity and FSDP's CPUOffload run with one rank): what fits a model the card cannot hold
    alone = sharding_for(s).shards_weights(s) and s.offload == "optimizer+params"
    if s.task == "train" and sharding != "single" and s.dp * s.cp == 1 and not alone:
        taken = (f"tp x pp = {s.tp * s.pp} takes all {s.world_size} GPUs, leaving one data-parallel rank: add GPUs "
                 "(num_gpus a multiple of tp x pp)" if s.world_size > 1 else "there is one: set num_gpus >= 2")
        raise GpuplanError(f"sharding {s.sharding!r} shards or replicates over data-parallel GPUs, but {taken}, "
                           "or use sharding single (offload optimizer to save memory), or zero3 with offload "
                           "optimizer+params to stream the weights from CPU memory")
    if s.task == "train" and sharding == "single" and s.dp > 1:
        raise GpuplanError(f"sharding 'single' uses one GPU but the scenario has {s.dp} data-parallel GPUs: "
                           "choose ddp, zero1, zero2, zero3 or fsdp")


def _offload(s: Scenario) -> None:
    if s.offload != "none" and s.task == "infer":
        raise GpuplanError("offload applies to training states; for inference use quant or a llama.cpp engine")
    if s.offload == "optimizer+params" and not sharding_for(s).shards_weights(s):
        raise GpuplanError("offloading parameters needs ZeRO-3 (sharding zero3 or fsdp, on one GPU too) to fetch "
                           "them layer by layer; use offload optimizer, or sharding zero3")


def training_engine(s: Scenario) -> None:
    """Refuse a training plan given a serving engine that runs no model's modules (vLLM, SGLang, llama.cpp...),
    whatever the card or layout (s19-fuzz2: recommend warned the engine was left out, then refused each variant
    with it and answered that nothing in the catalog fits; fit listed 92 models refused so)."""
    if s.task == "train" and not engine_for(s).runs_model_modules:
        raise GpuplanError(f"engine {s.engine!r} serves models; training runs on transformers (drop engine)")


def _engine(s: Scenario, m: ModelSpec) -> list[str]:
    """The serving engine: another engine's settings; what the engine does not load
    (its profile's refusal); a request longer than the max_model_len it would reject. Warns of settings of other
    engines that change nothing."""
    foreign = _foreign_settings(s)
    if foreign:
        raise GpuplanError(foreign)
    engine = engine_for(s)
    why = engine_refusal(s, m) or _moe_layout(s, m)
    if why:
        raise GpuplanError(why)
    why = engine.chunked_prefill_refusal(s) or engine.async_scheduling_refusal(s) if s.task == "infer" else None
    if why:
        raise GpuplanError(why)
    tokens = s.prompt_tokens + s.output_tokens
    if s.task == "infer" and engine.checks_request_length and s.max_model_len and s.max_model_len < tokens:
        raise GpuplanError(f"max_model_len {s.max_model_len:,} is shorter than one request ({s.prompt_tokens:,} "
                           f"prompt + {s.output_tokens:,} output = {tokens:,} tokens), which {engine.label} "
                           f"rejects: set max_model_len to {tokens:,} or more (or leave it unset), or shorten the "
                           "requests")
    return _other_engines_settings(s)


def frozen_base(s: Scenario, *, full: bool = True) -> None:
    """A training plan's quantized base, refused where no trainer loads it so: a full fine-tune of frozen quantized
    weights (counted 16-bit otherwise), and a GGUF or MLX file under LoRA: those are serving formats, llama.cpp's
    and mlx-lm's, which no training stack gpuplan plans loads (transformers dequantizes a GGUF file to 16 bits on
    load, ``transformers/modeling_gguf_pytorch_utils.py``, and has no MLX quantizer). Asked of decoder LLMs and of
    modules (diffusion pipelines, Whisper, encoders) alike (s25-fuzz: BERT trained full on a q4_k_m base fitted).
    ``full`` False leaves a full fine-tune to the caller (recommend, whose variants and advice offer LoRA)."""
    if s.task != "train" or s.quant in (None, "none"):
        return
    if s.quant.startswith(("gguf-", "mlx-")):
        reader = "llama.cpp" if s.quant.startswith("gguf-") else "mlx-lm"
        raise GpuplanError(f"{s.quant} is a serving format that {reader} loads, and no training stack loads it as a "
                           "base (transformers dequantizes a GGUF file to 16 bits and reads no MLX one): train "
                           "LoRA on a 16-bit, int8 or fp8 base, or QLoRA on nf4")
    if full and s.method == "full":
        raise GpuplanError(f"full fine-tuning updates every weight, and {s.quant} weights take no gradients (they "
                           "are loaded frozen): train LoRA or QLoRA on them, or drop quant")


def module_quant(s: Scenario, spec: ModuleSpec, gpu: GpuSpec | None) -> None:
    """What a module's loader (transformers for Whisper, encoders and encoder-decoders; diffusers for pipelines)
    does not load, and the dtypes its card has no tensor cores for, as a decoder's plan refuses them (s25-fuzz: a
    BERT served in q4_k_m or mlx-4bit on an RTX 4090, Whisper in fp8 on a T4, were planned): the training base
    (:func:`frozen_base`), an MLX checkpoint (mlx-lm's, which only engine mlx serves, and no module runs there), a
    GGUF file where transformers loads it (diffusers keeps a GGUF denoiser quantized:
    ``diffusers/quantizers/gguf``), what transformers runs on no card of its kind (FlashAttention 2 before Ampere,
    fp8 weights without fp8 tensor cores) and :func:`card_dtypes`."""
    frozen_base(s)
    if (s.quant or "").startswith("mlx-"):
        raise GpuplanError(f"{s.quant} is MLX's own checkpoint format, which mlx-lm serves for decoder LLMs only, and "
                           f"{spec.describe()}: choose another quant, or drop it")
    if spec.kind != "diffusion" and (s.quant or "").startswith("gguf-"):
        raise GpuplanError(f"transformers dequantizes a GGUF file when it loads it, so {s.quant} saves no GPU memory "
                           f"for {spec.name}: choose int8 or nf4 (bitsandbytes), or drop quant")
    if gpu is None:
        return
    if spec.kind != "diffusion" and s.quant == "fp8" and not gpu.supports_dtype("fp8"):
        raise GpuplanError(f"{gpu.name} ({gpu.architecture}) has no fp8 tensor cores, which transformers' fp8 weights "
                           "need: choose int8 or nf4 (bitsandbytes), or drop quant")
    # a diffusion pipeline's weights are diffusers' (its own fp8 and GGUF rules), its flash attention the same
    # flash-attn package (s30-fuzz: SDXL with attention flash was planned on a T4 and an M3 Max)
    why = ENGINES["transformers"].card_refusal(s, gpu) if spec.kind != "diffusion" else flash_refusal(s, gpu)
    if why:
        raise GpuplanError(why)
    card_dtypes(s, gpu)


def engine_refusal(s: Scenario, m: ModelSpec) -> str | None:
    """Why the serving engine cannot serve model ``m`` whatever the card and the GPU count: what it does not load
    (its profile's :meth:`~gpuplan.engines.Engine.refusal`), no KV cache to size its pool in
    (:func:`_no_kv_cache`), or speculation it cannot run (:func:`gpuplan.engines.speculative.refusal`: the method,
    the draft model); asked once before a search (recommend, capacity, cost) as well as of each plan, since a
    search leaves out each card a plan refuses (session 17's outside fuzzer: recommend answered "nothing in the
    catalog fits, even on 8 x Instinct MI300X" to MTP on Llama-3.1-8B, which has no MTP layers)."""
    engine = engine_for(s)
    refused = engine.refusal(s, m) or _no_kv_cache(s, m, engine)
    if refused or s.task != "infer" or s.speculative_method == "none":
        return refused or None
    from ..engines import speculative  # loaded by the first plan that speculates

    return speculative.refusal(s, m)


def _no_kv_cache(s: Scenario, m: ModelSpec, engine) -> str | None:
    """A model with no attention layer (a pure state-space model: Mamba) served by an engine that sizes a KV pool
    in tokens: its per-request state is no KV cache, and the pool's arithmetic divided by zero (session 7's walk:
    review 2's Mamba config on vLLM, SGLang and TensorRT-LLM ended in tracebacks)."""
    if s.task != "infer" or not engine.preallocates or any(layer.kv_dims for layer in m.layers):
        return None
    return (f"{m.name} has no attention layer, so no KV cache: {engine.label} sizes its pool in KV-cache tokens, and "
            "gpuplan does not model its per-request state cache; plan it with engine transformers or llama.cpp")


def _moe_layout(s: Scenario, m: ModelSpec) -> str | None:
    """Expert parallelism and attention data parallelism of a served MoE model: an engine that runs them, an MoE
    model, one pipeline stage, ``ep`` dividing the copy's ``tp`` GPUs and the experts (SGLang's ``moe_tp_size =
    tp_size / ep_size``, TensorRT-LLM's ``moe_tp_size x moe_ep_size = tp_size``); then the engine's own rule
    (:meth:`gpuplan.engines.base.Engine.expert_parallel_refusal`: vLLM's group is every GPU of the copy)."""
    if s.task != "infer" or (s.ep == 1 and not s.attention_dp and s.moe_dispatch is None):
        return None
    if s.moe_dispatch is not None and not (s.ep > 1 and s.attention_dp):
        return (f"moe_dispatch {s.moe_dispatch} says how tokens reach experts on other GPUs: set ep and attention_dp "
                "too, or drop it")
    asked = " and ".join(x for x in (f"ep={s.ep}" if s.ep > 1 else "", "attention_dp" if s.attention_dp else "") if x)
    engine = engine_for(s)
    if not engine.expert_parallel:
        return f"{asked} lay out an MoE model under vLLM, SGLang or TensorRT-LLM: set engine vllm, sglang or trtllm"
    if not m.is_moe:
        return (f"{asked} lay out an MoE model's experts and attention, and {m.name} has no experts: for copies of "
                "a dense model set sharding ddp")
    if s.pp > 1:
        return f"{asked} apply to one pipeline stage: set pp 1 (tp = the GPUs of one copy of the model)"
    if s.attention_dp and s.tp == 1:
        return "attention_dp spreads the requests over the tp GPUs of one copy of the model: set tp 2 or more"
    if s.ep > 1 and s.tp % s.ep:
        return (f"ep={s.ep} must divide tp={s.tp}, the GPUs of one copy of the model (each expert is split over tp / "
                "ep of them)")
    if s.ep > 1 and m.num_experts % s.ep:
        return f"ep={s.ep} does not divide the {m.num_experts} experts of {m.name}: use a divisor of {m.num_experts}"
    return engine.expert_parallel_refusal(s)


def _foreign_settings(s: Scenario) -> str | None:
    """The sentence that refuses another engine's settings where that engine refuses them given elsewhere
    (TensorRT-LLM's)."""
    for name in REFUSES_FOREIGN:
        names = OWN_SETTINGS[name]
        if s.engine != name and any(getattr(s, field) is not None for field in names):
            return (f"{', '.join(names[:-1])} and {names[-1]} are {ENGINES[name].label}'s settings: set engine "
                    f"{name}, or drop them")
    return None


def _other_engines_settings(s: Scenario) -> list[str]:
    """A warning for each engine setting given to a scenario that serves with an engine that does not read it (it
    changes nothing): one engine's own (:data:`gpuplan.engines.OWN_SETTINGS`) or a few engines'
    (:data:`gpuplan.engines.SHARED_SETTINGS`, vLLM's max_num_seqs given to llama.cpp)."""
    if s.task != "infer":
        return []
    fields = [*(f for name, own in OWN_SETTINGS.items() if name not in REFUSES_FOREIGN for f in own),
              *SHARED_SETTINGS]
    out = []
    for field in fields:
        engines = readers(field)
        if s.engine not in engines and getattr(s, field) != Scenario.model_fields[field].default:
            whose = f"{engines[0]}'s setting" if len(engines) == 1 else \
                f"a setting of {', '.join(engines[:-1])} and {engines[-1]}"
            out.append(f"{field} is {whose} and changes nothing when serving with {s.engine}: drop it, or set "
                       f"engine {' or '.join(engines)}")
    return out


def _node(s: Scenario, gpu: GpuSpec) -> list[str]:
    """A warning where the scenario puts more GPUs in one node than any machine of the price catalog holds, and
    more than a board's 8: its links are timed as if one machine held them all (a review's walk: 16 H100 SXM per
    node over 3 nodes, planned without a word)."""
    if s.num_gpus <= NODE_GPUS:
        return []
    from ..market.store import load_offers  # the catalog, read only for a node of more than a board's GPUs

    largest = largest_node(gpu.id, load_offers())
    if s.num_gpus <= largest:
        return []
    return [f"{s.num_gpus} GPUs in one node: no {gpu.name} machine in the price catalog holds more than {largest} "
            f"(an HGX board holds {NODE_GPUS}), and the plan times all {s.num_gpus} on one node's links; set num_gpus "
            "to the GPUs of one machine and num_nodes to the machines"]


def stack_card(s: Scenario, gpu: GpuSpec) -> str | None:
    """Why the training stack does not run on ``gpu`` (:func:`gpuplan.scenario.stack_cards.refusal`: the vendors
    each stack's project documents), naming the stacks that train the same kind of model there; None: it runs, or
    the plan serves. recommend leaves such a card out with this sentence as its note, fit refuses with it."""
    if s.task != "train":
        return None
    family = [name for name in stacks.RECIPES if (name in stacks.DIFFUSION_TRAINERS) ==
              (s.stack in stacks.DIFFUSION_TRAINERS)]
    return stack_cards.refusal(s.stack, gpu.vendor, gpu.name, family)


def stack_card_warnings(s: Scenario, gpu: GpuSpec) -> list[str]:
    """What the training stack lacks on ``gpu``'s vendor where its project supports that vendor in part
    (:func:`gpuplan.scenario.stack_cards.warning`: a port, a backend called partial or new), and torch.compile on
    Apple silicon (:data:`COMPILE_APPLE`)."""
    said = stack_cards.warning(s.stack, gpu.vendor) if s.task == "train" else None
    compiled = s.task == "train" and s.compile and gpu.vendor == "Apple"
    return [said] * bool(said) + [COMPILE_APPLE] * bool(compiled)


# Liger's kernels are Triton and "inherit the full spectrum of hardware compatibility offered by Triton"; its
# README's dependencies name CUDA and ROCm builds only (linkedin/Liger-Kernel README.md, Installation). Triton has
# no Metal backend and no Gaudi (hpu) one.
TRITON_VENDORS = ("NVIDIA", "AMD")

# torch.compile's Inductor on MPS: "Device mps not supported" until PyTorch 2.3 (pytorch/pytorch#125254), generated
# Metal shaders in later releases, and a published MPS run slower compiled than eager (discuss.pytorch.org "jited
# nn.TransformerDecoderLayer runs significantly slower than in eager mode", PyTorch 2.10: 30.4 vs 4.95 ms an
# iteration). So the advice does not offer it on a Mac, and a plan that asks for it is warned.
COMPILE_APPLE = ("compile on Apple silicon: torch.compile's Inductor is new on MPS (it refused the device through "
                 "PyTorch 2.3, pytorch/pytorch#125254) and no MPS training run has measured its speed-up; the plan "
                 "times compile with the factor measured on CUDA, which may not hold on a Mac (compile false plans "
                 "PyTorch's own MPS kernels)")


# bitsandbytes' 8-bit optimizer step (``optimizer_update_8bit_blockwise``) is registered for CUDA (its ROCm build
# compiles the same source) and Intel's XPU (Triton) only: its MPS backend registers the int8 matmul and blockwise
# (de)quantization, its Gaudi (hpu) one nf4 dequantization, and its default PyTorch backend the 32-bit step alone
# (bitsandbytes-foundation/bitsandbytes ``bitsandbytes/backends/mps/ops.py``, ``hpu/ops.py``, ``default/ops.py``).
# Its 4-bit base (QLoRA) does run on both (:func:`_apple`; hpu's ``dequantize_4bit``), so QLoRA stays.
BNB_OPTIMIZER_VENDORS = ("NVIDIA", "AMD")
EIGHT_BIT_OPTIMIZERS = ("adamw-8bit", "paged-adamw-8bit")


def technique_card(s: Scenario, gpu: GpuSpec) -> str | None:
    """Why a technique the training job switches on does not run on ``gpu``: training over more than one Mac (a
    Mac has one GPU, :func:`gpuplan.plan.nodes.node_shape`, and MPS tensors have no collective backend: NCCL is
    CUDA-only, gloo's capability table lists cpu and cuda, pytorch/pytorch#160732 and #189853; DeepSpeed's MPS
    port, deepspeedai/DeepSpeed#8293, stages collectives through CPU copies and is single-device so far),
    bitsandbytes' 8-bit optimizers off :data:`BNB_OPTIMIZER_VENDORS`, and Liger's fused linear cross-entropy (the
    Trainer's ``use_liger_kernel``, :attr:`gpuplan.stacks.base.Stack.liger` "loss") on a vendor Triton has no
    backend for (:data:`TRITON_VENDORS`)."""
    if s.task != "train":
        return None
    if gpu.vendor == "Apple" and s.world_size > 1:
        return (f"training on {s.world_size} Macs: PyTorch's MPS backend has no collective backend (NCCL is "
                "CUDA-only and gloo takes no MPS tensors, pytorch/pytorch#189853), and \"the mps backend doesn't "
                "support distributed training\" (transformers' docs): train on one Mac (num_gpus 1, num_nodes 1)")
    if s.optimizer in EIGHT_BIT_OPTIMIZERS and gpu.vendor not in BNB_OPTIMIZER_VENDORS:
        return (f"optimizer {s.optimizer} on {gpu.name}: bitsandbytes' 8-bit optimizer step has no "
                f"{stack_cards.LABELS[gpu.vendor]} kernel (its backend there quantizes weights only): use adamw")
    if gpu.vendor in TRITON_VENDORS or s.stack not in STACKS:  # a diffusion trainer has no Liger loss
        return None
    stack = stack_for(s)
    if stack.liger == "loss" and stack.liger_loss(s):
        return (f"loss fused-linear on {gpu.name}: it is Liger's fused linear cross-entropy (use_liger_kernel), "
                f"whose Triton kernels run on NVIDIA and AMD cards only (Triton has no {stack_cards.LABELS[gpu.vendor]}"
                " backend): use loss chunked or full")
    return None


def advice_lacks(s: Scenario, changed: Scenario, gpu: GpuSpec) -> bool:
    """A change of ``s`` into ``changed`` that ``gpu`` cannot run, or runs unmeasured, so neither the advice
    (:func:`gpuplan.plan.fixes.on_card`) nor recommend's variants offer it: a stack or technique refused there
    (:func:`stack_card`, :func:`technique_card`); Liger's Triton kernels switched on where Triton has no backend (a
    stack with its Liger plugin, axolotl, included) and so Unsloth, whose kernels are all Triton (unslothai/unsloth
    README: "All kernels written in OpenAI's Triton language"; "Supports NVIDIA GPUs", its docs add AMD);
    torch.compile on Apple silicon (:data:`COMPILE_APPLE`). Training over more Macs is refused by
    :func:`technique_card`."""
    if stack_card(changed, gpu) or technique_card(changed, gpu):
        return True
    if gpu.vendor not in TRITON_VENDORS:
        liger = stack_for(changed).liger_kernels(changed) and not stack_for(s).liger_kernels(s)
        if liger or changed.stack == "unsloth" != s.stack:
            return True
    return gpu.vendor == "Apple" and changed.task == "train" and bool(changed.compile) and not s.compile


def card_refusal(s: Scenario, gpu: GpuSpec) -> None:
    """What the training stack or the engine does not run on the card, and dtypes the card has no tensor cores
    for: asked by :func:`check`, and by ``simulate`` and ``probe`` of a scenario that names its card
    (:func:`gpuplan.sim.simulate.refusal`), so that they say estimate's sentence."""
    why = stack_card(s, gpu) or technique_card(s, gpu)
    if why:
        raise GpuplanError(why)
    why = engine_for(s).card_refusal(s, gpu)
    if why:
        raise GpuplanError(why)
    card_dtypes(s, gpu)


def card_dtypes(s: Scenario, gpu: GpuSpec) -> None:
    """A precision, weight format or KV cache dtype ``gpu`` has no tensor cores for."""
    dtype = s.precision.split("-")[0]
    if dtype in ("bf16", "fp8") and not gpu.supports_dtype(dtype):
        if s.task == "infer":
            fix = "fp16-true (for serving, precision is the dtype the weights run in)"
        else:
            fix = "fp16-mixed" if dtype == "bf16" else "bf16-mixed"
        raise GpuplanError(f"{gpu.name} has no {dtype} tensor cores ({gpu.architecture}): set precision {fix}, or "
                           "leave precision unset to get the card's own")
    why = nvfp4_refusal(s, gpu)
    if why:
        raise GpuplanError(why)
    if s.kv_cache_dtype == "bf16" and not gpu.supports_dtype("bf16"):
        raise GpuplanError(f"{gpu.name} has no bf16: set kv_cache_dtype fp16")


def nvfp4_refusal(s: Scenario, gpu: GpuSpec) -> str | None:
    """Why nvfp4 weights are not planned on ``gpu`` (None: they are, on its fp4 tensor cores). A serving engine
    below its nvfp4 method's floor refuses to start there (:meth:`~gpuplan.engines.Engine.weights_refusal`: vLLM's
    ModelOptNvFp4Config, 10.0 before 0.9 and 8.0 before 0.13; SGLang's ModelOptFp4Config, 10.0 before 0.5.13); at or
    above it the engine runs them weight-only, dequantized to 16 bits in its Marlin kernel (vLLM from 0.13 on Turing
    and newer, SGLang from 0.5.13 on Ampere and newer), which gpuplan does not time;
    without an engine's floor, gpuplan's own sentence. Asked of every plan (:func:`card_dtypes`) and of the cards
    ``recommend --gpus`` names (:func:`gpuplan.plan.recommend.engine_left_out`)."""
    if s.quant != "nvfp4" or gpu.supports_dtype("fp4"):
        return None
    engine = engine_for(s) if s.task == "infer" else None
    least = engine.least_capability(s, "nvfp4") if engine else None
    if engine is None or least is None or gpu.capability is None:
        return (f"{gpu.name} ({gpu.architecture}) has no fp4 tensor cores for nvfp4 weights (Blackwell has): use "
                "quant fp8, or a B200/GB200-class card")
    return engine.weights_refusal(s, "nvfp4", gpu) or (
        f"{gpu.name} ({gpu.architecture}) has no fp4 tensor cores for nvfp4 weights: {engine.label} runs them there "
        "weight-only (dequantized to 16 bits in its Marlin kernel), which gpuplan does not time; use quant fp8 or "
        "awq-int4, or a Blackwell card (B200, RTX 5090)")


def context_warnings(s: Scenario, m: ModelSpec) -> list[str]:
    """A sequence past a learned position table is refused; past the context a rope scaling reaches, warned (with
    the switch a serving engine is started with past it): :func:`check`'s, and capacity's note of its rows."""
    tokens = s.seq_len if s.task == "train" else s.prompt_tokens + s.output_tokens
    if m.max_context and tokens > m.max_context and m.position_params:  # a learned position table has no row past it
        raise GpuplanError(f"{m.name} learns {m.max_context:,} positions (a position-embedding table, no RoPE to "
                           f"extend): {tokens:,} tokens index past it; use at most {m.max_context:,} tokens "
                           f"({'seq_len' if s.task == 'train' else 'prompt_tokens + output_tokens'})")
    scaled, started = m.scaled_context, _started_long(s, m)
    if m.max_context and tokens > scaled:
        limit = (f"max_position_embeddings {m.max_context:,}" if scaled == m.max_context else
                 f"context {scaled:,} (max_position_embeddings {m.max_context:,} with its rope_scaling)")
        return [f"{tokens:,} tokens exceed {m.name}'s {limit}: quality degrades unless the context is extended "
                f"(RoPE scaling){'; ' + started if started else ''}"]
    return [started] if started else []


def _started_long(s: Scenario, m: ModelSpec) -> str | None:
    """How the plan starts a serving engine with a context past the model's (the requests', or the scenario's
    max_model_len: :meth:`gpuplan.engines.base.Engine.context`), with the switch it needs to (the launch files write
    both), or None."""
    engine = engine_for(s) if s.task == "infer" else None
    env = engine.long_context(s, m) if engine is not None else None
    if env is None:
        return None
    return (f"the plan starts {engine.label} with {engine.context_flag} {engine.context(s, m):,} and {env}=1, "
            f"without which it does not start with a context past the model's {engine.model_context(m):,}")
