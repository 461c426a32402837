"""What a training-stack profile answers, with the Hugging Face stack's answers as the defaults.

A :class:`Stack` is one stack's code (transformers + peft, torchtune's modules, torchtitan's model, Unsloth's and
Liger's kernels): what each decoder layer saves for backward, what its selective checkpointing keeps, what the loss
materializes, what stays on the GPU when activations are offloaded, and which buffers it adds. A sharding
(:class:`gpuplan.sharding.base.Sharding`) is who holds the model state (one GPU, DDP, DeepSpeed ZeRO, FSDP1,
FSDP2): what it stores and shards, the buffers it gathers, and how far the caching allocator's reserved memory runs
above the allocated peak.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import overheads as oh
from ..model.layers import Layer
from ..model.quant import Format, make_format
from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..scenario.stacks import EVERY_SHARDING, RECIPES
from ..tensors import activations as act
from ..tensors.state import adapts_experts, attention_kernel, lora_targets, weight_format
from .releases import TESTED


@dataclass(frozen=True, kw_only=True)
class LossBytes:
    """Bytes of the output projection and loss: kept from the loss's forward to its backward (``saved``), alive
    only at the end of the forward (``forward``) or at the start of the backward (``backward``), and the model
    output the training loop keeps from the forward to the end of the optimizer step (``held``); ``note``: how a
    loss sized from the free memory chose its size, in words (an assumption of the plan)."""

    saved: float
    forward: float
    backward: float
    held: float = 0.0
    note: str = ""


@dataclass(frozen=True, kw_only=True)
class Recompute:
    """What a checkpointing policy runs again in the backward (the speed model's extra forward work): the share of
    the decoder layers whose whole forward is re-run (full checkpointing of one layer in N: ``(L // N) / L``), or,
    under a selective policy, the linears each layer kind re-runs (``linears``); a selective policy keeps the
    attention kernel's output and re-runs every element-wise op."""

    layers: float = 0.0
    linears: Mapping[Layer, frozenset[str]] | None = None
    attention: bool = False  # the attention kernel's forward is re-run too (Megatron's selective: core_attn)

    @property
    def selective(self) -> bool:
        return self.linears is not None


@dataclass(kw_only=True)
class State:
    """Model state per GPU: weights, gradients and optimizer states, and what the optimizer step adds."""

    weights: float = 0.0
    gradients: float = 0.0
    optimizer: float = 0.0
    step_extra: float = 0.0  # e.g. DeepSpeed's fp32 gradient partition made at the step
    master: float = 0.0  # of the weights, DeepSpeed's fp32 master partition (offloaded with the optimizer)
    cpu: float = 0.0
    trainable: int = 0
    state_bytes: int = 4  # bytes per optimizer-state element
    assumptions: list[str] = field(default_factory=list)


class Stack:
    """The Hugging Face stack (transformers modules, peft adapters, the Trainer's autocast): the baseline every
    other profile changes. Byte rules of the layers are in :mod:`gpuplan.tensors.activations`."""

    name = "hf"
    # layers whose checkpoints stay on the GPU under activation offloading (the rest go to pinned CPU memory):
    # axolotl's port of torchtune's OffloadActivations keeps a stash of five (max_fwd_stash_size)
    offload_resident_layers = 5
    # the 4-bit base saves each layer input for the backward (bitsandbytes MatMul4Bit); torchao's NF4 does not
    saves_4bit_inputs = True
    # whether the training loop keeps the model's output (the logits) alive through the backward and the optimizer
    # step: the HF Trainer's compute_loss returns the loss alone, so its outputs die before the backward
    holds_output = False
    # whether a buffer is sized from the memory the card has free (so the peak depends on the card's capacity)
    sizes_from_free_memory = False
    # the model-parallel splits the stack runs itself and its launch files set ("tp", "pp"): the Trainer has none
    model_parallel: tuple[str, ...] = ()
    # what recommend searches over several GPUs where the stack's recipe runs every sharding (Recipe.shardings):
    # the Trainer's DDP or DeepSpeed ZeRO (fsdp is the same state as zero3)
    searched_shardings: tuple[str, ...] = ("ddp", "zero2", "zero3")
    # under FSDP, the last decoder block stays unsharded after the forward (torchtitan's apply_fsdp sets
    # reshard_after_forward False for it: the backward starts there)
    keeps_last_unit = False
    # it can add activation offloading to its defaults (a variant recommend tries)
    offloads_activations = False
    # its own switches recommend tries beside the common variants, as (words, change) pairs
    switches: tuple[tuple[tuple[str, ...], Mapping[str, Any]], ...] = ()
    # its memory is its own model of each rank's buffers (gpuplan.memory.megatron), not the sharding's
    own_memory = False
    # MoE experts run as transformers' Python loop over the experts a batch hits (the speed model's host time)
    experts_loop = True
    # under TP, MLA's whole down-projections (tensors/layout.replicated) multiply every token of the step
    # (torchtitan's NoParallel on the gathered input), not the rank's 1/tp of them under sequence parallelism
    replicated_on_all_tokens = False
    # under TP, the gradients of those whole weights are summed over the TP group once a step (Megatron-Core's
    # finalize_model_grads)
    sums_replicated_grads = False
    # fp8-mixed runs torchao's compiled Float8Linear (its casts priced by gpuplan.speed.float8), and FSDP2 gathers
    # the decoder's linear weights in float8 (torchtitan's enable_fsdp_float8_all_gather)
    torchao_float8 = False
    fp8_all_gather = False
    # Liger's Triton kernels (linkedin/Liger-Kernel), the one fact the memory, the speed, the fake-tensor emulation
    # and the probe read (liger_loss, liger_kernels): "loss" where loss fused-linear switches them all on (the
    # Trainer's use_liger_kernel, _apply_liger_kernel_to_instance: fused linear cross-entropy, RMSNorm, SwiGLU,
    # RoPE), "plugin" where the recipe runs the norm, SwiGLU and RoPE kernels whatever the loss and the fused linear
    # cross-entropy with loss fused-linear (axolotl's Liger plugin); None: it runs none
    liger: str | None = None
    # the launch targets that write its files (each target's applies() reads this, and a target
    # named without --stack plans the stack that lists it); none: gpuplan launch writes no files for it
    launch_targets: tuple[str, ...] = ()
    # it builds its own decoder (torchtune's modules, torchtitan's model), not transformers' modules: the fake-tensor
    # simulation and the probe build that model (gpuplan.sim.stacks.build_own), and its selective checkpointing runs
    own_model = False
    # under -mixed precision it keeps a 16-bit working copy of the weights beside the optimizer's fp32 master copy,
    # not fp32 weights under autocast (as a sharding does: gpuplan.sharding.base.Sharding.master_partition): what a
    # checkpoint saves (gpuplan.market.cost.checkpoint_bytes)
    master_partition = False
    # its LoRA checkpoints save the model with the adapters merged in beside the adapters (torchtune's recipes:
    # gpuplan.market.cost.merged_model_bytes, with the code it reads); the others save the adapters alone
    saves_merged_model = False
    # where its launch files run when no pip line installs it (a checkout in a container), in words; None: the
    # packages pip installs (packages)
    container: str | None = None
    # under -mixed precision its FSDP policy reduce-scatters the gradients in the 16-bit compute dtype, not fp32:
    # accelerate's FSDP plugin sets MixedPrecision(param_dtype=dtype, reduce_dtype=dtype)
    # (utils/dataclasses.py FullyShardedDataParallelPlugin.set_mixed_precision), which the Trainer and axolotl run;
    # torchtitan's reduce_dtype is float32 and fsdp_qlora's bf16_autocast policy keeps fp32 params and reduce
    fsdp_reduces_compute_dtype = False
    # under DPO with method full it loads the reference model itself, in the compute dtype, and hands it to TRL's
    # DPOTrainer, which then keeps it even with precompute_ref_log_probs (gpuplan.memory.dpo.reference_model);
    # False: TRL loads it in the policy's dtype and drops it when the log-probabilities are precomputed
    dpo_loads_reference = False
    # under DPO it scores the pairs from the model's fp32 logits (torchtune's recipes: gpuplan.memory.dpo.logits_head),
    # not with TRL's fused log-prob head
    dpo_logits_head = False

    def packages(self, s: Scenario, deepspeed: Callable[[], bool]) -> list[str]:
        """What ``pip install`` needs for its launch files, pinned to the releases gpuplan's rules follow and its
        launch tests read the files with (:data:`.releases.TESTED`), a lower bound where no test reads it;
        ``deepspeed()``: whether the files run DeepSpeed (the launch settings' ``backend``, which refuses some
        layouts: asked only where the packages depend on it). The Trainer's: TRL, transformers, accelerate, datasets,
        peft for adapters."""
        pin = [f"{name}=={TESTED[name]}" for name in ("torch", "transformers", "accelerate", "trl", "datasets")]
        packages = pin + ([f"peft=={TESTED['peft']}"] if s.method != "full" else [])
        if s.method == "qlora" or s.quant in ("int8", "nf4", "fp4") or "8bit" in s.optimizer:
            packages.append("bitsandbytes>=0.45")  # needs a GPU to import: not read by the tests, a lower bound
        if deepspeed():
            packages.append(f"deepspeed=={TESTED['deepspeed']}")
        if s.loss == "fused-linear":
            packages.append("liger-kernel")
        return packages

    @property
    def shardings(self) -> tuple[str, ...]:
        """What it shards with over several GPUs, as recommend searches it: the shardings its recipe runs
        (:attr:`gpuplan.scenario.stacks.Recipe.shardings`, which its refusal reads; FSDP by the word ``fsdp``, which
        the recipe resolves to its version), or :attr:`searched_shardings` where the recipe runs every one."""
        recipe = RECIPES[self.name]
        if recipe.shardings == EVERY_SHARDING:
            return self.searched_shardings
        return tuple("fsdp" if name == recipe.fsdp else name for name in recipe.shardings)

    # -- what it stores ----------------------------------------------------------------------------------
    def base_format(self, s: Scenario, m: ModelSpec) -> tuple[Format, tuple[str, ...]]:
        """The frozen base's storage under LoRA / QLoRA and the groups left in 16 bits: LoRA over a quant named
        (LLM.int8 ``load_in_8bit``, a GPTQ/AWQ or fp8 checkpoint) holds it so; without one, a 16-bit base (a
        quantized checkpoint is dequantized to train on, as gpt-oss's MXFP4 is)."""
        if s.method == "qlora" or (s.method == "lora" and s.quant not in (None, "none")):
            return weight_format(s, m)
        return make_format("none", high_bytes=s.compute_bytes), ("router",)

    def seq_len_step(self, s: Scenario) -> int:
        """The sequence lengths the stack runs are multiples of this (1: any)."""
        return 1

    def check_layout(self, s: Scenario, m: ModelSpec) -> list[str]:
        """The stack's own rules for a training plan's parallel sizes on model ``m``: raises
        :class:`~gpuplan.errors.GpuplanError` with one sentence on what it rejects, returns warnings for what it
        runs unevenly (none of its own here: the rules every stack shares are :mod:`gpuplan.plan.refusals`')."""
        return []

    def fp32_upcast(self, s: Scenario) -> bool:
        """peft's prepare_model_for_kbit_training: the non-4-bit parameters of a bitsandbytes model become fp32."""
        return s.method == "qlora" and (s.quant or "nf4") in ("nf4", "fp4") and bool(s.qlora_fp32_upcast)

    def head_upcast(self, s: Scenario) -> bool:
        """Whether the output head is fp32 in QLoRA, so that autocast saves a 16-bit copy of it: after
        prepare_model_for_kbit_training on any 4-bit base (peft before 0.6 cast a GPTQ model's fp16 parameters
        too; the Qwen-1 QLoRA rows measure it)."""
        return s.method == "qlora" and bool(s.qlora_fp32_upcast)

    def replayed_reserved(self, s: Scenario, m: ModelSpec) -> tuple[float, float]:
        """Bytes the caching allocator reserves through model init and a training step, and after init alone,
        where the stack's allocations are replayed on it (0, 0: they are not). The allocator gives none back
        (no ``empty_cache`` in between), so init's blocks stay under the training's reserved level."""
        return 0.0, 0.0

    # -- what it saves for backward ------------------------------------------------------------------------
    def fused(self, s: Scenario) -> bool:
        """Whether norms and the gated MLP run as fused kernels (saving inputs and rstd, not fp32 copies): compiled,
        or Liger's."""
        return bool(s.compile) or self.liger_kernels(s)

    def liger_loss(self, s: Scenario) -> bool:
        """Whether the loss is Liger's fused linear cross-entropy, applied with its other kernels
        (``_apply_liger_kernel_to_instance``: what the probe runs, :mod:`gpuplan.sim.real`)."""
        return self.liger is not None and s.loss == "fused-linear"

    def liger_kernels(self, s: Scenario) -> bool:
        """Whether Liger's RMSNorm, SwiGLU and RoPE kernels run (:attr:`liger`)."""
        return self.liger == "plugin" or self.liger_loss(s)

    def setup(self, s: Scenario, m: ModelSpec, autocast_fp32: bool) -> act.ActivationSetup:
        mixed = s.precision.endswith("-mixed")
        c = s.compute_bytes
        lora = s.method != "full"
        fp32_adapters = lora and s.adapter_bytes == 4 and c < 4
        bnb_4bit = s.method == "qlora" and (s.quant or "nf4") in ("nf4", "fp4")
        cast = (c if mixed else 4) if fp32_adapters else 0
        return act.ActivationSetup(
            tokens=s.micro_batch_size * s.seq_len, batch=s.micro_batch_size, seq=s.seq_len, compute_bytes=c,
            autocast_fp32_weights=autocast_fp32, base_trainable=not lora,
            lora_targets=lora_targets(s, m) if lora else frozenset(), attention=attention_kernel(s, m), tp=s.tp,
            lora_rank=s.lora_rank if lora else 0, lora_dropout=s.lora_dropout, lora_cast_bytes=cast,
            lora_inner_bytes=4 if fp32_adapters and not mixed else 0, lora_experts=adapts_experts(s, m),
            base_4bit=bnb_4bit and self.saves_4bit_inputs,
            fp32_residual_4bit=bnb_4bit and mixed and self.fp32_upcast(s),
            fused_norm=self.fused(s), fused_mlp=self.fused(s))

    def saved(self, layer, m: ModelSpec, setup: act.ActivationSetup) -> float:
        """Bytes one decoder layer keeps for its backward without checkpointing."""
        return act.saved_bytes(layer, m, setup)

    def backward_transient(self, layer, m: ModelSpec, setup: act.ActivationSetup) -> float:
        """Gradients of activations alive while one layer runs its backward
        (:func:`~gpuplan.tensors.activations.backward_transient`)."""
        return act.backward_transient(layer, m, setup)

    def selective(self, layer, m: ModelSpec, setup: act.ActivationSetup) -> float:
        """Bytes one layer keeps under the stack's own selective checkpointing (stacks without one refuse it)."""
        raise NotImplementedError(f"{self.name} has no selective checkpointing")

    def selective_recomputed(self, layer) -> frozenset[str]:
        """The linears of ``layer`` the stack's selective checkpointing runs again in the backward."""
        raise NotImplementedError(f"{self.name} has no selective checkpointing")

    def recompute(self, s: Scenario, m: ModelSpec) -> Recompute:
        """What the scenario's checkpointing runs again in the backward: every layer's forward under ``full``
        (one layer in ``checkpoint_every``: the memory model checkpoints layers N, 2N, ..., as torchtitan's
        ``selective_ac_option = 'N'`` wraps every N-th block), the stack's own choice under ``selective``."""
        if s.grad_checkpointing == "full":
            return Recompute(layers=(m.num_layers // s.checkpoint_every) / m.num_layers)
        if s.grad_checkpointing == "selective":
            return Recompute(linears={layer: self.selective_recomputed(layer) for layer, _ in m.layer_kinds()})
        return Recompute()

    # -- what it materializes in the loss --------------------------------------------------------------
    def loss(self, s: Scenario, m: ModelSpec, setup: act.ActivationSetup, lm_head_cast: bool,
             free: float | None) -> LossBytes:
        """transformers' causal-LM loss on the full logits, as the release in ``transformers_version`` computes it
        (:func:`transformers_logits`); ``free`` is what the card has free when the loss first runs (None without a
        card), for a loss that sizes its chunks from it; compiled (``Trainer(torch_compile=True)`` compiles the
        forward with its loss), inductor fuses the fp32 upcast into the cross-entropy kernels: the 16-bit logits
        are saved and the backward makes one 16-bit gradient."""
        if s.loss == "fused-linear":
            return liger_fused_linear(s, m, setup, lm_head_cast)
        if s.compile:
            saved, _, _ = act.logits_bytes(m, setup, lm_head_cast)
            TV = setup.tokens * m.vocab_size / setup.tp
            c = setup.compute_bytes
            return LossBytes(saved=saved - 4 * TV + c * TV, forward=0.0, backward=c * TV)
        return transformers_logits(m, setup, lm_head_cast, release(s.transformers_version), self.holds_output)

    # -- buffers, speed, what it reports -------------------------------------------------------------------
    def extras(self, s: Scenario, m: ModelSpec, shard: float, cuda: bool = True) -> dict[str, float]:
        """Buffers the stack keeps besides tensors of the model: the dequantized 4-bit weight of the matmul that
        runs (bitsandbytes dequantizes per call) and, on CUDA (``cuda``; not Apple silicon's Metal), cuBLAS's
        workspace."""
        out: dict[str, float] = {}
        if s.method == "qlora":
            largest = max(lin.weight_params / lin.count for layer, _ in m.layer_kinds() for lin in layer.linears)
            out["dequantized 4-bit weight"] = s.compute_bytes * largest * shard
        if cuda:
            out["cuBLAS workspace"] = oh.CUBLAS_WORKSPACE_GIB * oh.GIB
        return out

    def layer_buffers(self, extras: dict[str, float]) -> dict[str, float]:
        """Those of ``extras`` that exist only while a decoder layer runs: the 4-bit weight dequantized for the
        matmul that runs (the output head is not 4-bit, so none at the loss)."""
        return {k: v for k, v in extras.items() if k == "dequantized 4-bit weight"}

    def kernels(self, s: Scenario):
        """The kernels this stack runs for the parts of a step it changes (:mod:`.speedups`)."""
        from .speedups import kernels

        return kernels(self.name, s, liger=self.liger_kernels(s),
                       fused_stack=s.tp > 1 or s.precision.startswith(("fp8", "fp4")))

    def tp_overlap(self, s: Scenario) -> str | None:
        """What hides this stack's tensor-parallel collectives (``none``, ``backward``, ``userbuffers``: the
        scenario field ``tp_overlap``); None: not modelled by setting, a fixed share of them hidden
        (:data:`~gpuplan.overheads.TP_OVERLAP`)."""
        return None

    def memory_reads_card(self, s: Scenario) -> bool:
        """Whether the memory of ``s`` depends on its card beyond the card's capacity, so that a search estimates it
        on each card rather than once for all (:func:`gpuplan.plan.plan.card_memory`): a buffer sized from the
        memory the card has free (:attr:`sizes_from_free_memory`)."""
        return self.sizes_from_free_memory

    def notes(self, s: Scenario) -> list[str]:
        return []


def release(text: str | None) -> tuple[int, int]:
    """``"4.38.2"`` -> ``(4, 38)``; None (the current release) sorts after every numbered one."""
    if text is None:
        return (10**6, 0)
    major, minor = ([int(p) for p in text.split(".")[:2] if p.isdigit()] + [0, 0])[:2]
    return major, minor


def transformers_logits(m: ModelSpec, setup: act.ActivationSetup, lm_head_cast: bool, version: tuple[int, int],
                        held: bool) -> LossBytes:
    """The logits and loss of a transformers causal LM, release by release (``LlamaForCausalLM.forward`` and
    ``loss/loss_utils.py`` ``ForCausalLMLoss`` of each):

    - before 4.46 the model upcasts its logits (``logits = logits.float()``; 4.37.2-4.44.2 always, 4.45 when labels
      are given) and returns them in fp32; the loss makes a shifted contiguous fp32 copy
      (``shift_logits = logits[..., :-1, :].contiguous()``) before ``CrossEntropyLoss``;
    - 4.46-4.48: the model returns compute-dtype logits; ``ForCausalLMLoss`` upcasts them and still shifts a copy;
    - from 4.49 on, ``ForCausalLMLoss`` pads the labels instead of shifting the logits
      (:func:`~gpuplan.tensors.activations.logits_bytes`).

    The shifted copy lives until the loss returns (log-softmax's backward needs only its output). The model's
    output logits live while the output object does: to the end of the loss in the HF Trainer, whose
    ``compute_loss`` returns the loss alone, and to the end of the optimizer step in a loop that keeps ``output``
    (``held``; Answer.AI fsdp_qlora ``train.py``: ``output = model(...)`` ... ``optimizer.step()`` ...
    ``output = None``)."""
    saved, _, bwd = act.logits_bytes(m, setup, lm_head_cast)  # from 4.49: bf16 output + its fp32 copy
    TV = setup.tokens * m.vocab_size / setup.tp
    c = setup.compute_bytes
    out = 4 if version < (4, 46) and c < 4 else c  # the output logits' bytes per element
    shift = 4 * TV if version < (4, 49) else 0.0
    loss_copy = 0.0 if version < (4, 46) or c == 4 else 4 * TV  # the fp32 copy made inside the loss
    if held:
        return LossBytes(saved=saved, forward=loss_copy + shift, backward=bwd, held=out * TV)
    return LossBytes(saved=saved, forward=out * TV + loss_copy + shift, backward=bwd)


def head_inputs(s: Scenario, m: ModelSpec, setup: act.ActivationSetup) -> float:
    """What the final norm and the output head keep for the backward: the norm's fp32 upcast input (a fused norm
    keeps its input and an fp32 rstd per row instead), its normalized output when its weight trains, and the head's
    input when the head trains (whole sequence under TP: the column-parallel head all-gathers it); a fused linear
    cross-entropy computes the head's gradients in the forward and keeps none."""
    T, t, h, c = setup.tokens, setup.tp, m.hidden_size, setup.compute_bytes
    r = residual_bytes(setup)
    if setup.fused_norm:
        norm = r * T / t * h + 4 * T / t
    else:
        norm = 4 * T / t * h + ((setup.norm_out_bytes or r) * T / t * h if setup.base_trainable else 0.0)
    head = c * T * h if setup.base_trainable and s.loss != "fused-linear" else 0.0
    return norm + head


def residual_bytes(setup: act.ActivationSetup) -> int:
    """Bytes per element of the hidden states entering the head: fp32 when autocast runs over fp32 weights or
    after QLoRA's fp32 upcast of the embeddings, else the compute dtype."""
    return 4 if setup.autocast_fp32_weights or setup.fp32_residual_4bit else setup.compute_bytes


def liger_fused_linear(s: Scenario, m: ModelSpec, setup: act.ActivationSetup, lm_head_cast: bool) -> LossBytes:
    """Liger's fused linear cross-entropy (linkedin/Liger-Kernel ``ops/fused_linear_cross_entropy.py``
    ``fused_linear_cross_entropy_forward``): no logits tensor. It allocates ``grad_input`` (``T x h`` like the
    hidden states, kept to the backward, which only rescales it) and, if the head trains, ``grad_weight``; the
    logits exist one chunk at a time, ``chunk = next_power_of_2(ceil(T / ceil(V / h)))`` rows of ``V`` in the
    compute dtype, overwritten by their gradient in place; the per-token loss is fp32. Under autocast an fp32 head
    (QLoRA's upcast) is cast to 16 bits for each chunk's matmul: a transient copy, not saved."""
    T, c, h, V = setup.tokens, setup.compute_bytes, m.embedding_dim, m.vocab_size / setup.tp
    chunk = 1 << max(0, (-(-T // -(-int(V) // h)) - 1).bit_length())
    head_grad = c * V * h if s.method == "full" else 0.0
    cast = c * V * h if lm_head_cast else 0.0
    return LossBytes(saved=residual_bytes(setup) * T * h + 4 * T + head_grad, forward=c * min(chunk, T) * V + cast,
                     backward=0.0)
