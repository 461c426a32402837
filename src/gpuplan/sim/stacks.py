"""The other training stacks on fake tensors: their own code where it is plain PyTorch, their kernels emulated
with the bytes they allocate and save where it is not.

- torchtune (extra ``stacks``): its Llama model and LoRA/QLoRA builders (``torchtune.models.llama3``,
  ``llama3_2``; QLoRA's NF4 is torchao's ``NF4Tensor`` run for real on fake tensors), ``CEWithChunkedOutputLoss``
  with ``set_num_output_chunks`` or the full-logit ``CrossEntropyLoss``, activation checkpointing as
  ``training.set_activation_checkpointing`` applies it (torch's ``apply_activation_checkpointing`` with the
  non-reentrant ``checkpoint_wrapper`` on each ``TransformerSelfAttentionLayer``), the step with ``del logits``
  before the backward.
- torchtitan (extra ``stacks``): its ``Transformer`` and ``apply_ac`` (per-op selective, full, or every N-th
  layer) and ``components.loss.cross_entropy_loss``; on one GPU torchtitan runs autocast over fp32 weights
  (``maybe_enable_amp``). On the CPU, SDPA dispatches to ``_scaled_dot_product_flash_attention_for_cpu``, which the
  per-op save list (CUDA kernels) does not name: it is added, as the flash kernel is saved on CUDA.
- Emulated, with the bytes their kernels allocate and save (``FusedRMSNorm``, ``SiLUMul``, ``FusedLinearCE``,
  ``UnslothLoRAMLP`` ...): Liger's RMSNorm, SwiGLU and fused linear cross-entropy (hf with ``loss:
  fused-linear``, axolotl), Unsloth's RMSNorm, fused LoRA MLP / QKV / output kernels and fused cross-entropy.
- Activation offloading (torchtune's ``OffloadActivations``, Unsloth's offloaded checkpoints) through
  ``saved_tensors_hooks``: saved tensors of at least 1 KiB move to "CPU" (they leave the tracker's GPU total)
  but for the stack's last few, which stay; each comes back as a new GPU tensor in the backward.

``torch.compile`` is not simulated: a scenario with ``compile: true`` is refused with a sentence.
"""

from __future__ import annotations

import contextlib
import types
from typing import Any

from ..errors import GpuplanError
from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..stacks import STACKS

LLAMA_LIKE = ("llama", "mistral")
MIN_OFFLOAD_BYTES = 1024  # torchtune OffloadActivations(min_offload_size=1024)


def own_model(s: Scenario) -> bool:
    """Whether a training scenario's stack builds its own decoder, not transformers' modules (its profile's
    :attr:`~gpuplan.stacks.base.Stack.own_model`: torchtune, torchtitan): :func:`build_own` makes it."""
    profile = STACKS.get(s.stack) if s.task == "train" else None
    return profile is not None and profile.own_model


def check(s: Scenario, m: ModelSpec, kinds) -> None:
    """What the stack simulation cannot run raises one sentence."""
    if s.task != "train":
        return
    if s.compile:
        raise GpuplanError("simulate runs eager kernels; torch.compile's fusions are estimated, not simulated: set "
                           "compile false")
    if own_model(s):
        if m.family not in LLAMA_LIKE or len(kinds) > 1 or m.is_moe:
            raise GpuplanError(f"simulate builds {s.stack}'s own Llama; {m.name} ({m.family}) is not one: use "
                               "stack hf, or gpuplan estimate")
        try:
            __import__(s.stack)
        except ImportError:
            raise GpuplanError(f"simulating {s.stack} needs its code: pip install 'gpuplan[stacks]'") from None


# ---- torchtune and torchtitan models --------------------------------------------------------------------------
def build_own(s: Scenario, m: ModelSpec, layers: int, notes: list[str]):
    """The stack's own model with ``layers`` decoder layers, built on fake tensors (call inside FakeTensorMode),
    and the function that runs its forward and loss on token ids."""
    return (_torchtune if s.stack == "torchtune" else _torchtitan)(s, m, layers, notes)


def _rope_theta(m: ModelSpec) -> float:
    cfg = m.config.get("text_config") or m.config
    return float(cfg.get("rope_theta") or (cfg.get("rope_parameters") or {}).get("rope_theta") or 10_000.0)


def _torchtune(s: Scenario, m: ModelSpec, layers: int, notes: list[str]):
    import warnings

    import torch
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
        CheckpointImpl,
        apply_activation_checkpointing,
        checkpoint_wrapper,
    )
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy

    warnings.simplefilter("ignore")
    tied = m.tie_word_embeddings
    if tied:
        from torchtune.models.llama3_2._component_builders import llama3_2 as plain
        from torchtune.models.llama3_2._component_builders import lora_llama3_2 as lora
    else:
        from torchtune.models.llama3._component_builders import llama3 as plain
        from torchtune.models.llama3._component_builders import lora_llama3 as lora
    from torchtune.modules import TransformerSelfAttentionLayer
    from torchtune.modules.loss import CEWithChunkedOutputLoss

    dims = dict(vocab_size=m.vocab_size, num_layers=layers, num_heads=m.num_heads, num_kv_heads=m.num_kv_heads,
                embed_dim=m.hidden_size, max_seq_len=max(s.seq_len, 16), intermediate_dim=m.intermediate_size,
                rope_base=_rope_theta(m), norm_eps=1e-5)
    dtype = torch.float32 if s.precision == "fp32" else torch.bfloat16
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)  # torchtune's training.set_default_dtype
    from torchtune.models.llama3_1._position_embeddings import Llama3ScaledRoPE

    scaling = Llama3ScaledRoPE.apply_scaling  # reads the frequencies' values: the cache's shape does not need them
    Llama3ScaledRoPE.apply_scaling = lambda self, freqs, *args, **kwargs: freqs
    try:
        if s.method == "full":
            model = plain(**dims)
        else:
            targets = _torchtune_targets(s, m)
            model = lora(lora_attn_modules=targets["attn"], apply_lora_to_mlp=targets["mlp"],
                         apply_lora_to_output=False, lora_rank=s.lora_rank, lora_alpha=2 * s.lora_rank,
                         lora_dropout=s.lora_dropout, quantize_base=s.method == "qlora", **dims)
            for name, p in model.named_parameters():
                p.requires_grad_("lora_" in name)
    finally:
        torch.set_default_dtype(previous)
        Llama3ScaledRoPE.apply_scaling = scaling
    if s.method == "qlora":
        notes.append("torchtune QLoRA: torchao NF4Tensor base weights (real torchao code on fake tensors)")
    if s.grad_checkpointing == "full":
        apply_activation_checkpointing(model, checkpoint_wrapper_fn=lambda mod: checkpoint_wrapper(
            mod, checkpoint_impl=CheckpointImpl.NO_REENTRANT), auto_wrap_policy=ModuleWrapPolicy(
            {TransformerSelfAttentionLayer}))
    elif s.grad_checkpointing == "selective":
        raise GpuplanError("simulate runs torchtune with grad_checkpointing none or full")
    model.train()
    if s.train_objective == "dpo":
        return model, _torchtune_dpo(model, notes)
    if s.loss == "chunked":
        model.set_num_output_chunks(s.loss_chunks or 8)
        loss_fn = CEWithChunkedOutputLoss(num_output_chunks=s.loss_chunks or 8)
    else:
        loss_fn = torch.nn.CrossEntropyLoss()

    def forward_loss(ids):
        logits = model(ids)
        if isinstance(logits, list):
            loss = loss_fn(logits, ids)
        else:
            loss = loss_fn(logits.reshape(-1, logits.size(-1)), ids.reshape(-1))
        del logits  # the recipe frees the logits before the backward
        return loss

    return model, forward_loss


def _torchtune_dpo(model, notes: list[str]):
    """One micro-step of torchtune 0.6.1's LoRA DPO recipe (``recipes/lora_dpo_single_device.py`` ``train`` and
    ``concatenated_forward``) on the paired batch ``ids`` (chosen rows, then rejected): the policy's fp32 logits
    through ``rlhf.get_batch_log_probs``, deleted; the reference forward under ``torch.no_grad()`` with
    ``disable_adapter``, its logits kept as the recipe's ``_, _`` keep them (until the next reference forward);
    ``DPOLoss`` (beta 0.1). Real torchtune code on fake tensors."""
    import torch
    from torchtune import rlhf
    from torchtune.modules.peft import disable_adapter
    from torchtune.rlhf.loss import DPOLoss

    loss_fn, kept = DPOLoss(beta=0.1), {}
    notes.append("torchtune DPO: lora_dpo_single_device's step (fp32 logits, get_batch_log_probs, the reference "
                 "with the adapters off, its logits kept in `_` until the next reference forward)")

    def forward_loss(ids):
        half = ids.shape[0] // 2
        logits = model(ids)
        logps = rlhf.get_batch_log_probs(logits, ids)
        del logits  # del policy_chosen_logits, policy_rejected_logits
        with torch.no_grad(), disable_adapter(model):
            ref_logits = model(ids)
            ref = rlhf.get_batch_log_probs(ref_logits, ids)
        kept["_"] = ref_logits
        del ref_logits
        loss, _, _ = loss_fn(logps[:half], logps[half:], ref[:half], ref[half:])
        return loss.mean()

    return forward_loss


def _torchtune_targets(s: Scenario, m: ModelSpec) -> dict[str, Any]:
    from ..tensors.state import lora_targets

    names = lora_targets(s, m)
    attn = [t for hf, t in (("q_proj", "q_proj"), ("k_proj", "k_proj"), ("v_proj", "v_proj"),
                            ("o_proj", "output_proj")) if hf in names]
    mlp = bool(names & {"gate_proj", "up_proj", "down_proj"})
    if mlp and not {"gate_proj", "up_proj", "down_proj"} <= names:
        raise GpuplanError("torchtune adapts the whole MLP or none of it: list gate_proj, up_proj and down_proj "
                           "together")
    return {"attn": attn, "mlp": mlp}


def _torchtitan(s: Scenario, m: ModelSpec, layers: int, notes: list[str]):
    import types as pytypes
    import warnings

    import torch

    warnings.simplefilter("ignore")
    import torchtitan.models.llama3.infra.parallelize as parallelize
    from torchtitan.components.loss import cross_entropy_loss
    from torchtitan.models.llama3.model.args import TransformerModelArgs
    from torchtitan.models.llama3.model.model import Transformer

    args = TransformerModelArgs(dim=m.hidden_size, n_layers=layers, n_heads=m.num_heads, n_kv_heads=m.num_kv_heads,
                                vocab_size=m.vocab_size, multiple_of=m.intermediate_size, ffn_dim_multiplier=None,
                                norm_eps=1e-5, rope_theta=_rope_theta(m), max_seq_len=max(s.seq_len, 16))
    trunc_normal = torch.nn.init.trunc_normal_  # rejection sampling reads values: not on fake tensors
    torch.nn.init.trunc_normal_ = lambda tensor, *a, **k: tensor
    try:
        model = Transformer(args)  # fp32 parameters (torchtitan's master weights)
    finally:
        torch.nn.init.trunc_normal_ = trunc_normal
    assert model.layers["0"].feed_forward.w1.out_features == m.intermediate_size
    if s.grad_checkpointing != "none":
        cpu_sdpa = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default
        parallelize._save_list.add(cpu_sdpa)
        parallelize.ptd_checkpoint_wrapper.__dict__["_count"] = 0  # apply_ac's layer counter is global
        option = "op" if s.grad_checkpointing == "selective" else str(s.checkpoint_every)
        mode = "full" if s.grad_checkpointing == "full" and s.checkpoint_every == 1 else "selective"
        parallelize.apply_ac(model, pytypes.SimpleNamespace(mode=mode, selective_ac_option=option))
        if s.grad_checkpointing == "selective":
            notes.append("torchtitan per-op SAC: the CPU's SDPA op is saved as CUDA's flash SDPA op is (added "
                         "to torchtitan's _save_list)")
    model.train()

    def forward_loss(ids):
        pred = model(ids)
        loss = cross_entropy_loss(pred, ids)
        del pred  # torchtitan's train step deletes pred before the backward
        return loss

    return model, forward_loss


def relabel_parameters(model, tracker) -> None:
    """Count every parameter and buffer as parameters, the inner tensors of tensor subclasses (NF4) too."""
    for tensor in [*model.parameters(), *model.buffers()]:
        inner = getattr(tensor, "__tensor_flatten__", None)
        if inner is not None and type(tensor).__name__ != "Parameter":
            names, _ = tensor.__tensor_flatten__()
            for name in names:
                tracker.relabel(getattr(tensor, name), "parameters")
        else:
            tracker.relabel(tensor, "parameters")


# ---- kernels of other stacks, emulated on a transformers model -----------------------------------------------
def _functions() -> dict[str, Any]:
    """The emulated kernels (:mod:`.kernels`: autograd Functions allocating and saving what the real kernels do)."""
    from .kernels import FUNCTIONS

    return FUNCTIONS


def fused_kernels(s: Scenario) -> bool:
    """Whether the transformers model runs Liger's (its profile says, :meth:`~gpuplan.stacks.base.Stack.liger_kernels`)
    or Unsloth's norm and MLP kernels."""
    stack = STACKS.get(s.stack)  # the diffusion trainers have no profile
    return s.stack == "unsloth" or (stack is not None and stack.liger_kernels(s))


def patch_hf(s: Scenario, m: ModelSpec, model, notes: list[str]) -> None:
    """Swap the kernels of a transformers (+ peft) model for the emulated ones of the scenario's stack."""
    if s.task != "train" or not fused_kernels(s):
        return
    fn = _functions()
    who = "Unsloth" if s.stack == "unsloth" else "Liger"
    for module in model.modules():
        name = type(module).__name__
        if name.endswith("RMSNorm") and hasattr(module, "weight") and module.weight is not None:
            module.forward = types.MethodType(lambda self, x: fn["FusedRMSNorm"].apply(x, self.weight), module)
        elif name.endswith("MLP") and all(hasattr(module, k) for k in ("gate_proj", "up_proj", "down_proj")):
            if s.stack == "unsloth" and _fast_lora(s, module):
                module.forward = types.MethodType(_unsloth_mlp, module)
            else:
                module.forward = types.MethodType(
                    lambda self, x: self.down_proj(fn["SiLUMul"].apply(self.gate_proj(x), self.up_proj(x))), module)
    if s.stack == "unsloth" and s.method != "full" and s.lora_dropout == 0:
        for name, module in model.named_modules():
            if name.rsplit(".", 1)[-1] in ("q_proj", "k_proj", "v_proj", "o_proj") and hasattr(module, "lora_A"):
                module.forward = types.MethodType(_unsloth_proj, module)
        notes.append("Unsloth's fused LoRA kernels emulated (MLP: saves the input and the gate and up outputs; "
                     "q, k, v, o: the input once)")
    notes.append(f"{who}'s RMSNorm and SwiGLU kernels emulated with their saved tensors")


def _fast_lora(s: Scenario, mlp) -> bool:
    return s.method != "full" and s.lora_dropout == 0 and all(
        hasattr(getattr(mlp, k), "lora_A") for k in ("gate_proj", "up_proj", "down_proj"))


def _weight(layer):
    """The weight a peft LoRA layer's base computes with (the 4-bit emulation keeps its shape, not a weight)."""
    import torch

    base = layer.base_layer
    if hasattr(base, "weight_shape"):
        return torch.empty(base.weight_shape, dtype=base.compute_dtype, device=base.weight_packed.device)
    return base.weight


def _adapters(layer):
    name = next(iter(layer.lora_A))
    return layer.lora_A[name].weight, layer.lora_B[name].weight


def _unsloth_mlp(self, x):
    fn = _functions()
    ga, gb = _adapters(self.gate_proj)
    ua, ub = _adapters(self.up_proj)
    da, db = _adapters(self.down_proj)
    return fn["LoRAMLP"].apply(x, _weight(self.gate_proj), _weight(self.up_proj), _weight(self.down_proj),
                               ga, gb, ua, ub, da, db)


def _unsloth_proj(self, x):
    a, b = _adapters(self)
    return _functions()["LoRAProj"].apply(x, _weight(self), a, b)


def fused_loss(s: Scenario, m: ModelSpec, model, capacity_bytes: float | None = None):
    """``forward_loss(ids)`` for a fused linear cross-entropy (Liger, Unsloth): the decoder's hidden states into the
    fused kernel with the output head's weight; None when the stack computes the loss on full logits."""
    if s.task != "train" or s.loss != "fused-linear":
        return None
    fn = _functions()
    head = model.get_output_embeddings()
    decoder = model.get_base_model().model if hasattr(model, "get_base_model") else model.model
    T, V, h = s.micro_batch_size * s.seq_len, m.vocab_size, m.embedding_dim
    if s.stack == "unsloth":
        target = 4 * 2**30 if capacity_bytes is None else min(4 * 2**30, 0.5 * capacity_bytes)
        chunk, fp32 = max(1, int(min(T * V, target / 4) // V)), True
    else:
        chunk = 1 << max(0, (-(-T // -(-V // h)) - 1).bit_length())
        fp32 = False

    def forward_loss(ids):
        hidden = decoder(input_ids=ids, use_cache=False).last_hidden_state
        return fn["FusedLinearCE"].apply(hidden, head.weight, chunk, fp32)

    return forward_loss


# ---- activation offloading ---------------------------------------------------------------------------------------
@contextlib.contextmanager
def offloading(s: Scenario, model, tracker, resident: int):
    """Saved tensors of the decoder layers (their checkpoint inputs under full checkpointing) to "CPU", but for the
    last ``resident`` (torchtune's stash of five; Unsloth's last layer and reload buffers), as the stacks' saved-
    tensor hooks do; each comes back as a new GPU tensor in the backward."""
    if not s.activation_offload or not hasattr(tracker, "offload"):
        yield
        return
    import torch

    params = {id(p) for p in model.parameters()}
    stash: list[int] = []
    store: dict[int, Any] = {}

    def pack(t):
        if id(t) in params or t.untyped_storage().nbytes() < MIN_OFFLOAD_BYTES:
            return ("keep", t)
        key = len(store)
        store[key] = ("gpu", t)
        stash.append(key)
        if len(stash) > resident:
            old = stash.pop(0)
            _where, tensor = store[old]
            copy = torch.empty_like(tensor)
            tracker.offload(copy)
            store[old] = ("cpu", copy)
        return ("stored", key)

    def unpack(packed):
        kind, value = packed
        if kind == "keep":
            return value
        where, tensor = store[value]
        return tensor if where == "gpu" else torch.empty_like(tensor)

    def hooked(fn):
        def call(*args, **kwargs):
            with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
                return fn(*args, **kwargs)
        return call

    handles, restore = [], []
    for layer in _decoder_layers(model):
        if getattr(layer, "gradient_checkpointing", False):  # transformers: around the checkpoint call itself
            restore.append((layer, layer._gradient_checkpointing_func))
            layer._gradient_checkpointing_func = hooked(layer._gradient_checkpointing_func)
            continue
        ctx = torch.autograd.graph.saved_tensors_hooks(pack, unpack)
        handles.append(layer.register_forward_pre_hook(lambda *_, c=ctx: c.__enter__()))
        handles.append(layer.register_forward_hook(lambda *_, c=ctx: c.__exit__(None, None, None)))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
        for layer, fn in restore:
            layer._gradient_checkpointing_func = fn


def _decoder_layers(model):
    for module in model.modules():
        for name in ("layers", "h"):
            layers = getattr(module, name, None)
            if layers is not None and hasattr(layers, "__len__") and len(layers) and not isinstance(layers, type):
                return list(layers.values()) if hasattr(layers, "values") else list(layers)
    raise GpuplanError("simulate found no decoder layers to offload")


def offload_resident(s: Scenario) -> int:
    from ..stacks import stack_for

    return stack_for(s).offload_resident_layers


__all__ = ["build_own", "check", "fused_loss", "offload_resident", "offloading", "own_model", "patch_hf",
           "relabel_parameters"]
