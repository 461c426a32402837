"""What a serving-engine profile answers: its name and label, what it refuses to load, how it holds memory at
start-up and sizes its KV pool, whether it shares a prompt prefix across requests, how its steps are timed, and
which ``gpuplan launch`` target writes its command.

The answers here are the neutral ones (no pool, nothing refused, no shared prefix, no host loop); each engine's
module overrides what its own code does (:mod:`.transformers`, :mod:`.vllm`, :mod:`.sglang`, :mod:`.llama_cpp`,
:mod:`.trtllm`). The calculators (memory, speed, the refusals, the verdict) ask the profile instead of comparing
the engine's name.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, ClassVar

from ..hardware import GpuSpec
from ..model.quant import Format
from ..model.spec import ModelSpec
from ..result import MemoryReport
from ..scenario import Scenario
from ..tensors.breakdown import Estimate
from ..tensors.kv import kv_dtype_bytes

if TYPE_CHECKING:
    from .records import KvPool, Timing

# the 4-bit weight formats a serving engine loads as converted checkpoints, in the order the advice offers them
FOUR_BIT = ("awq-int4", "gptq-int4")


class Engine:
    """A serving engine. The neutral answers: nothing preallocated, nothing refused, no shared prefix cache."""

    name = ""
    label = ""  # as people write it: vLLM, SGLang, TensorRT-LLM
    # how the verdict names the pool of an engine that preallocates one ("vLLM's KV pool"); None: no pool
    pool_words: str | None = None
    # the engine takes its budget whatever the job: it fits when its pool holds the requests (and the budget the
    # card), not by the device peak alone
    preallocates = False
    # the flag that splits one model over several GPUs by tensor parallelism (None: it does not by default) and the
    # words for a split by layers
    tensor_parallel_flag: str | None = None
    layer_split_words = ""
    # it rejects a request longer than its max_model_len
    checks_request_length = False
    # the flag that sets the context it starts with, and the environment variable without which it refuses (vLLM,
    # SGLang) or shortens (TensorRT-LLM) one past the model's (:func:`engine_context`); None: it takes no such limit
    context_flag: str | None = None
    long_context_env: str | None = None
    # the KV-cache dtypes it holds
    kv_dtypes: tuple[str, ...] = ("auto", "fp16", "bf16", "fp8", "int8")
    # it loads int8 and AWQ / GPTQ checkpoints (llama.cpp: GGUF files only), and fp8 weights on cards without fp8
    # tensor cores (weight-only, Marlin)
    loads_quants = True
    fp8_weight_only = False
    # the least compute capability (major x 10 + minor) of each weight format's quantization method, below which
    # the engine refuses to start (:meth:`Engine.weights_refusal`); a format not named has no floor in the catalog
    min_capability: ClassVar[dict[str, int]] = {}
    # it can split one model over GPUs by tensor parallelism at all (llama.cpp: by layer only)
    tensor_parallel = True
    # a change is judged by the KV pool it leaves (its budget is a fixed share of the card, so the device peak does
    # not move) rather than by the device peak
    advised_by_pool = False
    # the setting that grows its pool, the value to suggest and why: (field, value, label, cost)
    budget_fix: tuple[str, float, str, str] | None = None
    # its KV cache is held in blocks of this many tokens (a batch's cache without a card)
    kv_block_tokens = 1
    # it runs the model's own PyTorch modules (transformers' generate): what training runs on, and what gpuplan
    # simulate replays on fake tensors
    runs_model_modules = False
    # it places what fits on the GPU and runs the other layers from system RAM on the CPU
    offloads_layers = False
    # it splits one copy's layers over devices by shares, cards of different kinds among them (llama.cpp's
    # --tensor-split; the scenario's extra_gpus and tensor_split)
    splits_by_share = False
    # NVIDIA's trtllm-bench tables time it at maximum load too (``Speed.offline_tokens_per_s``)
    offline_bench = False
    # the ``gpuplan launch`` target that writes its command (None: the plan is launched with another engine)
    launch_target: str | None = None
    # why a SkyPilot task cannot install and run it (None: the task's setup installs it with pip)
    skypilot_refusal: str | None = None
    # what its shared-prefix cache is called ("prefix cache", "radix cache")
    cache_words = "prefix cache"
    # why it takes no chunked_prefill setting (None: it has the switch, vLLM and SGLang) and the one state gpuplan
    # models it in (None: neither is asked of it)
    no_chunked_prefill: str | None = "it has no switch to split a prompt over steps"
    chunked_prefill_fixed: bool | None = None
    # its cache grows with each step (transformers' ``generate``): the peak may be the prefill's, and the freed
    # smaller blocks stay reserved
    grows_cache = False
    # the token embedding stays in host memory (llama.cpp's ``get_rows`` runs on the CPU)
    host_embedding = False
    # it serves an MoE model with expert parallelism and attention data parallelism (ep, attention_dp)
    expert_parallel = False
    # its FP8 and FP4 GEMMs are timed at the share of the peak that its own published runs show for their rows
    # (TensorRT-LLM: gpuplan.speed.gemm.trtllm_gpu), not at the rates of vLLM's kernels
    gemm_share_by_rows = False
    # it has a ROCm build timed on AMD cards (:mod:`.rocm`: its decode's GPU work scaled by the measured share)
    rocm_build = False
    # the fit grid's note on how a card's cell is judged for it ("": none)
    grid_note = ""
    # how its MoE layers send tokens to their experts unless moe_dispatch is set: SGLang and vLLM gather and
    # reduce-scatter ("allgather")
    moe_dispatch = "allgather"
    # that default in words, the resolver's line when it takes it (:func:`gpuplan.plan.resolve.dispatch_default`)
    moe_dispatch_words = "each GPU gathers the step's tokens and reduce-scatters the experts' outputs"
    # a speculative draft's layers take their KV cache from the engine's one pool, sized with them (vLLM's KV cache
    # spec lists every attention layer, TensorRT-LLM's pool counts the MTP layers); False: the engine holds the draft
    # apart and says how in its memory (SGLang: a draft pool of the target's tokens, out of its reserve)
    draft_in_pool = True
    # the --quantization it asks of the target that it applies to a draft from a 16-bit checkpoint of its own too (an
    # EAGLE head or a draft model: :func:`gpuplan.engines.speculative.own_quant`); none in vLLM, whose
    # draft reads its own checkpoint's (vllm/model_executor/models/utils.py get_draft_quant_config; a draft model's
    # draft_model_config, vllm/config/speculative.py), nor in TensorRT-LLM's
    draft_inherits: tuple[str, ...] = ()
    # it runs on Apple silicon's GPU (Metal: llama.cpp, MLX; transformers through PyTorch's MPS backend)
    metal = False
    # the environment setting that turns its DeepGEMM kernels off (a block-scaled fp8 checkpoint's GEMMs:
    # engines/block_fp8.py without_deepgemm), said with what it costs where the plan times DeepGEMM; None: it runs none
    deepgemm_switch: str | None = None
    # where a simulated run's numbers come from, as the capacity table's note says it ("From a simulation of ...")
    scheduler_words = ""
    # the setting that caps the requests running at once, and what its pool does with those admitted (an offline
    # job's note: "at most max_num_seqs requests run at once, and no more than the KV pool ...")
    running_cap = "max_num_seqs"
    pool_admits = ("holds; the others wait for them to finish, and a pool that runs out preempts requests, which "
                   "recompute when they resume.")

    def model_context(self, m: ModelSpec) -> int:
        """The model's context as the engine derives it from its config (0: none named): max_position_embeddings
        here; vLLM, SGLang and TensorRT-LLM apply their own rope_scaling rules (``derived_max_len``,
        ``derived_context_len``, ``derived_max_seq_len``)."""
        return m.max_context or 0

    def context(self, s: Scenario, m: ModelSpec) -> int:
        """The context the engine is started with (:attr:`context_flag`): the scenario's max_model_len, else the
        model's (:meth:`model_context`), or the requests' tokens where they run past it: a request past the model's
        context is planned on purpose (gpuplan.plan.refusals warns of its quality), and a server started at the
        model's context would refuse it (vLLM, SGLang) or cut it (TensorRT-LLM), so the launch files start it long
        enough, with :attr:`long_context_env` (:meth:`long_context`)."""
        return s.max_model_len or self.served_context(m, s.prompt_tokens + s.output_tokens)

    def served_context(self, m: ModelSpec, tokens: int) -> int:
        """The context :meth:`context` starts the engine with for requests of ``tokens`` (prompt + output) when no
        max_model_len is set: the model's as the engine derives it, or the requests' past it (capacity asks it of a
        workload's mean request)."""
        return max(self.model_context(m), tokens)

    def long_context(self, s: Scenario, m: ModelSpec) -> str | None:
        """The environment variable the engine needs set to 1 to start with :meth:`context` (longer than the
        model's: vLLM's ``_get_and_verify_max_len`` raises without VLLM_ALLOW_LONG_MAX_MODEL_LEN, SGLang's
        ``ModelConfig._derive_context_length`` without SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN, TensorRT-LLM's
        ``PyTorchModelEngine._init_max_seq_len`` shortens it to the model's without TLLM_ALLOW_LONG_MAX_MODEL_LEN);
        None when it needs none."""
        derived = self.model_context(m)
        if not self.long_context_env or not derived or self.context(s, m) <= derived:
            return None
        return self.long_context_env

    # ---- its KV cache's layout (the arithmetic of gpuplan.tensors.kv, and the page's formulas) ----------------
    def kv_element_bytes(self, s: Scenario) -> float:
        """Bytes per cached key or value element: the compute dtype unless ``kv_cache_dtype`` names another."""
        return kv_dtype_bytes(s)

    def kv_heads_share(self, s: Scenario, m: ModelSpec) -> float:
        """The share of the KV heads one GPU caches: split over tensor parallelism (replicated beyond them), all
        of them under attention data parallelism."""
        return math.ceil(m.num_kv_heads / s.attention_tp) / m.num_kv_heads

    def caps_windows(self, m: ModelSpec) -> bool:
        """Whether sliding-window layers keep only their window."""
        return True

    def state_element_bytes(self, s: Scenario) -> float:
        """Bytes per element of a linear-attention or Mamba layer's recurrent state."""
        return s.compute_bytes

    @property
    def card_sized(self) -> bool:
        """Whether its memory depends on the card: a budget of the card's memory, or the layers that fit it."""
        return self.preallocates or self.offloads_layers

    def refusal(self, s: Scenario, m: ModelSpec) -> str | None:
        """Why the engine cannot serve ``s`` on model ``m``: weights or a KV-cache dtype it does not load. None: it
        can."""
        return None

    def expert_parallel_refusal(self, s: Scenario) -> str | None:
        """Why the engine cannot split the experts over ``ep`` of the copy's ``tp`` GPUs (asked after the rules
        every engine shares). None: it can."""
        return None

    def prompt_refusal(self, s: Scenario, longest: int) -> str | None:
        """Why the engine would refuse a workload whose prompts run to ``longest`` tokens. None: it takes them."""
        return None

    def chunked_prefill_refusal(self, s: Scenario) -> str | None:
        """Why the engine cannot take the scenario's ``chunked_prefill``: it has no such switch, or gpuplan models it
        in one state only. None: it can (or nothing is asked)."""
        if s.chunked_prefill is None or not self.no_chunked_prefill or s.chunked_prefill == self.chunked_prefill_fixed:
            return None
        return (f"{self.label} takes no chunked_prefill {str(s.chunked_prefill).lower()}: {self.no_chunked_prefill}; "
                "drop chunked_prefill, or serve with engine vllm or sglang")

    def async_scheduling_refusal(self, s: Scenario) -> str | None:
        """Why the engine cannot take the scenario's ``async_scheduling``, vLLM's switch: every other engine overlaps
        its host loop as its own release does (SGLang's overlap scheduler, :class:`~.records.HostLoop`'s
        ``overlapped``)."""
        if s.async_scheduling is None:
            return None
        return (f"{self.label} takes no async_scheduling: it is vLLM's --async-scheduling switch, and gpuplan times "
                f"{self.label}'s host loop as its release runs it; drop async_scheduling, or serve with engine vllm")

    def quantizes_to(self, s: Scenario, m: ModelSpec) -> str | None:
        """The weight format the engine must quantize the checkpoint to on load (its ``--quantization``): the
        scenario's, unless the checkpoint already ships in it (the engines read a shipped format from its
        config.json); None when nothing is asked."""
        q = s.quant
        fmt, _ = m.shipped_format()
        return None if q in (None, "none") or q == (None if fmt.name == "none" else fmt.name) else q

    def card_refusal(self, s: Scenario, gpu: GpuSpec) -> str | None:
        """Why the engine cannot run ``s`` on ``gpu``: a card it does not run on, weights the card has no kernels
        for in it. None: it can. An engine without a Metal backend does not run on Apple silicon."""
        if gpu.vendor == "Apple" and not self.metal:
            return (f"{self.label or self.name} has no Metal backend, so it does not run on {gpu.name}: serve it with "
                    "engine llama.cpp or mlx")
        return None

    def least_capability(self, s: Scenario, fmt: str) -> int | None:
        """The least compute capability (major x 10 + minor) the engine's quantization method for weights stored as
        ``fmt`` starts on (its ``get_min_capability``, checked at start): :attr:`min_capability`'s; None: no floor."""
        return self.min_capability.get(fmt)

    def weights_refusal(self, s: Scenario, fmt: str, gpu: GpuSpec) -> str | None:
        """Why the engine has no kernel on ``gpu`` for weights stored as ``fmt`` (a weight format's name: the
        scenario's quant, or the checkpoint's own): the card is below the method's :meth:`least_capability`, and the
        engine stops at start ("The quantization method mxfp4 is not supported for the current GPU. Minimum
        capability: 80. Current capability: 75.", vLLM's ``VllmConfig`` and SGLang's ``model_loader/loader.py``
        ``_get_quantization_config`` alike). The sentence names the 4-bit formats that do start there
        (:meth:`four_bit_on`). None: it has one."""
        least, has = self.least_capability(s, fmt), gpu.capability
        if least is None or has is None or has >= least:
            return None
        runs = " or ".join(self.four_bit_on(s, gpu, besides=fmt))
        return (f"{self.label} has no {fmt} kernel for {gpu.name} ({gpu.architecture}, compute capability "
                f"{gpu.compute_capability}): its {fmt} method needs {least // 10}.{least % 10} or newer and "
                f"{self.label} refuses to start; choose {runs + ' weights, ' if runs else ''}engine llama.cpp (GGUF), "
                "or a newer card")

    def four_bit_on(self, s: Scenario, gpu: GpuSpec, besides: str = "") -> list[str]:
        """The 4-bit weight formats of :data:`FOUR_BIT` the engine starts on ``gpu`` with (its
        :meth:`least_capability` at or below the card's), but ``besides``."""
        has = gpu.capability
        return [f for f in FOUR_BIT if f != besides and (has is None or (self.least_capability(s, f) or 0) <= has)]

    def card_warning(self, s: Scenario, gpu: GpuSpec) -> str | None:
        """What is doubtful of the engine on ``gpu`` though it runs there (a card its makers do not test on); None:
        nothing."""
        return None

    def attention_notes(self, s: Scenario, m: ModelSpec) -> list[str]:
        """What the plan's assumptions say of the attention kernel the engine runs for ``m`` (none: its own)."""
        return []

    def memory(self, s: Scenario, m: ModelSpec, e: Estimate, fmt: Format, gpu: GpuSpec | None,
               capacity_gib: float | None) -> Estimate:
        """The inference memory ``e`` (weights split over the GPUs already set) completed by the engine's own
        allocation: its working set, KV cache and what it preallocates."""
        raise NotImplementedError

    def scheduler_settings(self, s: Scenario, startup: Any, pool: KvPool, longest: int) -> dict[str, Any] | None:
        """The settings its scheduler runs with over its start-up memory and KV pool (the fields of
        :class:`gpuplan.serving.simulate.Scheduler`, which simulates it); None when its scheduler is not simulated
        (:data:`gpuplan.engines.SIMULATED` names those that are), or one request of ``longest`` tokens does not fit
        the pool."""
        return None

    def fits(self, s: Scenario, report: MemoryReport, capacity_gib: float) -> bool:
        """Whether the job fits: by the device peak, for an engine that allocates what the job needs; an engine
        that preallocates its budget also needs its pool to hold the requests ("fits" never with a negative
        headroom). Under a load the pool must hold one request (:attr:`Scenario.held_at_once`), as ``capacity``
        holds a setup whose pool takes one: the engine queues the others."""
        pooled = not self.preallocates or (report.max_concurrency or 0) >= s.held_at_once
        return pooled and report.device_peak_gib <= capacity_gib

    def cached_prefix_tokens(self, s: Scenario, m: ModelSpec | None = None) -> int:
        """Tokens of ``s.shared_prefix_tokens`` a request after the first finds cached (no prefill compute, KV
        held once). transformers' ``generate`` and llama.cpp share nothing across the requests of a batch
        (llama-server's ``cache_prompt`` reuses a slot's own previous prompt, not another slot's)."""
        return 0

    def uncached_prefix_why(self, s: Scenario) -> str:
        """Why a shared prefix is prefilled by every request."""
        return f"{self.name} shares no KV across the requests of a batch"

    def timing(self, s: Scenario, m: ModelSpec, gpu: GpuSpec) -> Timing:
        """How the speed model times this engine's steps on ``gpu``."""
        raise NotImplementedError

    def packages(self, s: Scenario, version: str | None) -> list[str]:
        """What ``pip install`` needs to serve ``s`` with it (``version``: the release whose memory rules the
        estimate followed, as its memory report's engine says); none where gpuplan's launch files install it no
        other way than its own (llama.cpp's binary, TensorRT-LLM's container)."""
        return []
