"""Model state: weight formats, LoRA adapters, optimizer states and the attention kernel transformers runs.

Model-state bytes follow ZeRO (Rajbhandari et al. 2020, section 3) and DeepSpeed's
``estimate_zero*_model_states_mem_needs``; LoRA counts follow peft; optimizer states follow each optimizer's code.
"""

from __future__ import annotations

from .. import overheads as oh
from ..model.checkpoints import excluded_modules
from ..model.quant import Format, excluded_groups, make_format
from ..model.spec import ModelSpec
from ..scenario import Scenario
from . import activations as act


# ---- weights ---------------------------------------------------------------------------------------
def weight_format(s: Scenario, m: ModelSpec) -> tuple[Format, tuple[str, ...]]:
    """The storage of the model's linear weights for this scenario, and the groups left unquantized
    (:func:`derive_weight_format`), derived once per model and the scenario fields it reads (its task, QLoRA or
    not, ``quant`` and the compute dtype's bytes) and held on the model, a plan's input
    (:attr:`~gpuplan.model.spec.ModelSpec.weight_formats`): the resolver's refusal check derives it, the memory,
    the engine's stages and the speed of every plan on that model read it (session 30 counted three derivations
    per plan, ~115 us each)."""
    key = (s.task == "train" and s.method == "qlora", s.task != "train", s.quant, s.compute_bytes)
    held = m.weight_formats
    if key not in held:
        held[key] = derive_weight_format(s, m)
    return held[key]


def derive_weight_format(s: Scenario, m: ModelSpec) -> tuple[Format, tuple[str, ...]]:
    """The storage of the model's linear weights for this scenario, and the groups left unquantized: a checkpoint's
    own (``modules_to_not_convert``, ``ignore``) as shipped, or those of the checkpoint its publishers ship in the
    asked format (``--quant nvfp4``: NVIDIA's Model Optimizer checkpoints, :mod:`gpuplan.model.checkpoints`) when
    serving; the routers always; and the layers the engine holds at 16 bits beside the checkpoint's
    (:attr:`~gpuplan.model.spec.ModelSpec.kept_layers`: a speculative draft's from its own checkpoint). Reads
    ``s.task``, ``s.method`` (QLoRA), ``s.quant`` and ``s.compute_bytes`` only (the key of :func:`weight_format`)."""
    high = s.compute_bytes
    if s.task == "train" and s.method == "qlora":
        return make_format(s.quant or "nf4", high_bytes=high), ("router",)
    if s.quant is None:
        fmt, skip = m.shipped_format()
        return make_format(fmt.name, high_bytes=high, double_quant=fmt.double_quant, group_size=fmt.group_size,
                           fp8_block=fmt.fp8_block), with_kept_layers((*skip, "router"), m)
    kept = served_checkpoint_kept(m, s.quant) if s.task != "train" else None
    return make_format(s.quant, high_bytes=high), with_kept_layers((*(kept or ()), "router"), m)


def with_kept_layers(skip: tuple[str, ...], m: ModelSpec) -> tuple[str, ...]:
    """``skip`` and the ``group@i`` entries of ``m.kept_layers`` it does not hold already (its whole groups cover
    theirs), once each: :meth:`gpuplan.model.spec.ModelSpec.weight_bytes` adds a layer's 16 bits once an entry."""
    whole = {entry for entry in skip if "@" not in entry}
    return tuple(dict.fromkeys((*skip, *(e for e in m.kept_layers if e.split("@")[0] not in whole))))


def served_checkpoint_kept(m: ModelSpec, quant: str) -> tuple[str, ...] | None:
    """The groups the checkpoint served in ``quant`` leaves in 16 bits: the model's own where it is a Model
    Optimizer checkpoint in that format (``quant_method: modelopt``), else those of the checkpoint its publishers
    ship in it (NVIDIA's NVFP4 ones, :mod:`gpuplan.model.checkpoints`); None where neither is known."""
    method = str((m.quantization or {}).get("quant_method", "")).lower()
    if method == "modelopt" and m.shipped_format()[0].name == quant:
        return m.shipped_format()[1]
    published = excluded_modules(m.name, quant)
    if published is None:
        return None
    return excluded_groups(published, m.num_layers, m.linear_names(), m.group_layers())


# peft >= 0.18 on transformers 5 rewrites ``all-linear`` for the MoE families that transformers maps to Mixtral's
# or Qwen2-MoE's v4 layout (transformers conversion_mapping.py ``_MODEL_TO_CONVERSION_PATTERN``; peft
# utils/transformers_weight_conversion.py ``_convert_peft_config_moe``, which adds Mixtral itself): the router
# (``gate.weight``) and the fused 3-D experts get a ``ParamWrapper`` LoRA, and the v4 expert names leave the module
# targets, so in Qwen2-MoE-layout families neither the shared experts nor DeepSeek's dense MLPs (also gate_proj,
# up_proj, down_proj) are adapted. Checked against peft's own count by the fake-tensor simulation.
PEFT_MOE_LAYOUT = {
    **dict.fromkeys(("mixtral", "minimax", "minimax_m2"), "mixtral"),
    **dict.fromkeys(("afmoe", "deepseek_v2", "deepseek_v3", "deepseek_v32", "dots1", "ernie4_5_moe", "glm4_moe",
                     "glm4_moe_lite", "glm_moe_dsa", "glm4v_moe", "longcat_flash", "solar_open", "mellum", "qwen3_moe",
                     "beam", "qwen3_omni_moe", "qwen3_next", "hunyuan_v1_moe", "flex_olmo", "olmoe", "exaone_moe",
                     "cohere2_moe", "sarvam_mla"), "qwen2_moe"),  # sarvam_mla: transformers 5.24
}
PEFT_MOE_RENAMED = {"mixtral": ("w1", "w2", "w3"), "qwen2_moe": ("gate_proj", "up_proj", "down_proj")}
# peft refuses LoRA on these modules of Mamba models (peft tuners_utils.py ``_check_lora_target_modules_mamba``).
PEFT_MAMBA_TYPES = frozenset({"falcon_h1", "mamba", "mamba2", "falcon_mamba", "nemotron_h"})
PEFT_MAMBA_REFUSED = ("out_proj", "conv1d")


def adapts_experts(s: Scenario, m: ModelSpec) -> bool:
    """Whether peft's ``all-linear`` adapts this model's fused expert weights (peft >= 0.18, transformers 5)."""
    return (s.method != "full" and s.lora_targets == "all-linear" and m.is_moe
            and m.family in PEFT_MOE_LAYOUT)


def lora_targets(s: Scenario, m: ModelSpec) -> frozenset[str]:
    """Module names LoRA adapts. ``all-linear`` = every plain ``nn.Linear`` of the decoder layers and of a vision
    tower (``ModelSpec.tower_linears``) except the output head (peft's rule), with peft's MoE rewrite
    (:data:`PEFT_MOE_LAYOUT`: routers in, v4 expert names out) and its Mamba refusals; fused 3-D expert weights are
    counted apart (:func:`adapts_experts`)."""
    if s.lora_targets != "all-linear":
        return frozenset(s.lora_targets)
    layout = PEFT_MOE_LAYOUT.get(m.family)
    renamed = PEFT_MOE_RENAMED.get(layout, ())
    refused = PEFT_MAMBA_REFUSED if m.family in PEFT_MAMBA_TYPES else ()
    names = set()
    for layer, _ in m.layer_kinds():
        for lin in layer.linears:
            if lin.name in refused or lin.name in renamed:
                continue
            if lin.group == "router" and lin.name != "shared_expert_gate":
                if layout:  # routers are custom modules in transformers 5 (Granite's plain router.layer too)
                    names.add(lin.name)
            elif lin.adaptable:
                names.add(lin.name)
    names.update(lin.name for lin in m.tower_linears)  # a vision tower's linears: peft wraps them too
    return frozenset(names)


def lora_params(m: ModelSpec, targets: frozenset[str], rank: int, experts: bool = False) -> int:
    """Trainable LoRA parameters: ``r·(in + out)`` per adapted linear (Hu et al. 2021, section 4), a vision
    tower's included. With
    ``experts`` (``all-linear`` on a mixture of experts), peft's ``ParamWrapper`` adapts the fused 3-D expert
    weights of transformers 5 too: ``r·E`` rows per expert matrix, doubled for the fused gate/up projection
    (peft ``lora.ParamWrapper``: ``lora_A = Linear(in, r·E)``, ``lora_B = Linear(r·E, out)``)."""
    total = sum(count * rank * (lin.in_features + lin.out_features) * lin.count
                for layer, count in m.layer_kinds() for lin in layer.linears
                if lin.name in targets and (lin.adaptable or lin.group == "router"))
    # a tower's linears whose names match (peft matches a target by the module name's end, in every tower)
    total += sum(rank * (lin.in_features + lin.out_features) * lin.count for lin in m.tower_linears
                 if lin.name in targets)
    if experts:
        total += sum(count * expert_lora_params(layer, rank) for layer, count in m.layer_kinds() if layer.moe)
    return total


def expert_lora_params(layer, rank: int) -> int:
    """peft ``ParamWrapper`` parameters of one MoE layer: gate/up fused (``2·r·E·(h + 2i)``), down
    (``r·E·(i + h)``)."""
    experts = [lin for lin in layer.linears if lin.group == "experts"]
    if not experts:
        return 0
    E = experts[0].count
    fused_in = [lin for lin in experts if act.INPUT_OF.get(lin.name) == "mlp_in"]
    down = [lin for lin in experts if act.INPUT_OF.get(lin.name) == "mlp_mid"]
    total = 0
    if fused_in:
        total += 2 * rank * E * (fused_in[0].in_features + sum(lin.out_features for lin in fused_in))
    for lin in down:
        total += rank * E * (lin.in_features + lin.out_features)
    return total


# Families transformers runs only with eager attention when SDPA is asked for (``_supports_sdpa = False``):
# Gemma-2's attention logit soft-capping, BLOOM's ALiBi, gpt-oss's attention sinks. FlashAttention kernels
# (attention flash) cover Gemma-2 and gpt-oss.
EAGER_ONLY = frozenset({"gemma2", "bloom", "gpt_oss"})


def attention_kernel(s: Scenario, m: ModelSpec) -> str:
    """The attention implementation transformers will run for ``s.attention`` on this model."""
    return "eager" if s.attention == "sdpa" and (m.family in EAGER_ONLY or m.eager_only) else s.attention


# ---- optimizer -------------------------------------------------------------------------------------
def optimizer_state_bytes(s: Scenario, m: ModelSpec, trainable: int, state_bytes: int) -> float:
    """Bytes of optimizer state for ``trainable`` parameters whose states are ``state_bytes`` wide.

    AdamW: two moments; SGD with momentum: one; Lion: one, fp32 (:data:`LION_STATE_BYTES`); SGD: none; 8-bit
    AdamW: one byte per moment plus an fp32 absmax per 256-element block (Dettmers et al. 2022); Adafactor:
    :func:`adafactor_state_bytes`.
    """
    opt = s.optimizer
    if opt == "adamw":
        return 2 * state_bytes * trainable
    if opt in ("adamw-8bit", "paged-adamw-8bit"):
        return trainable * (2 + 2 * 4 / oh.BNB_STATE_BLOCK)
    if opt == "lion":
        return LION_STATE_BYTES * trainable
    if opt == "sgd-momentum":
        return state_bytes * trainable
    if opt == "sgd":
        return 0.0
    return adafactor_state_bytes(s, m, trainable)


# transformers' Adafactor holds its states in fp32 whatever the parameters' dtype: step() upcasts a 16-bit gradient
# (``grad = grad.float()``) and makes each state from it (``torch.zeros(grad_shape[:-1]).to(grad)``, and
# ``state[...].to(grad)`` on every later step), transformers/optimization.py ``Adafactor.step`` (5.24)
ADAFACTOR_STATE_BYTES = 4

# DeepSpeed ZeRO gives the client optimizer one flat fp32 tensor a parameter group: stages 1 and 2 set each group's
# ``params`` to ``[single_partition_of_fp32_groups[i]]`` (``stage_1_and_2.py``, a 1-D slice of the flattened
# group) and step the groups one ``optimizer.step()`` each (``_optimizer_step(group_no)``); stage 3 steps each
# sub-group's ``fp32_partitioned_groups_flat[i]`` alone (``stage3.py _optimizer_step``), a sub-group closing once
# it holds ``sub_group_size`` elements of the rank's partition (``_create_fp16_sub_groups``; 1e9, DeepSpeed's
# default). deepspeedai/DeepSpeed deepspeed/runtime/zero/, read at edaa7221.
ZERO3_SUB_GROUP = 1e9


def _vectors(m: ModelSpec, trainable: int) -> int:
    """Parameters of a full fine-tune outside the linears' and the embeddings' matrices: the norms and biases, the
    Trainer's second parameter group (``get_decay_parameter_names`` leaves them out of weight decay)."""
    matrices = sum(count * sum(lin.weight_params for lin in layer.linears) for layer, count in m.layer_kinds())
    return max(trainable - matrices - m.vocab_size * m.embedding_dim * (1 if m.tie_word_embeddings else 2), 0)


def adafactor_state_bytes(s: Scenario, m: ModelSpec, trainable: int) -> float:
    """transformers' Adafactor with the Trainer's settings (``beta1=None``: no first moment): for every parameter of
    two or more dimensions a row and a column of second moments (``_get_options``: ``factored = len(param_shape) >=
    2``; Shazeer & Stern 2018), for the others the full second moment, each element fp32
    (:data:`ADAFACTOR_STATE_BYTES`). A LoRA pair ``A (r x in)``, ``B (out x r)`` is factored too: ``in + out + 2r``
    elements a linear (a fused expert weight's ``r·E``-wide pair counted as ``trainable / r``: its rows and
    columns without the ``2r·E``). Under DeepSpeed ZeRO the optimizer is handed flat partitions, not the model's
    matrices (:data:`ZERO3_SUB_GROUP`): every tensor it steps is 1-D, so it keeps the full second moment, one
    fp32 element a trained parameter."""
    if s.sharded_by == "deepspeed":
        return ADAFACTOR_STATE_BYTES * trainable
    if s.method == "full":
        fused = m.family in FUSED_EXPERTS
        factored = sum(count * (sum((lin.in_features + lin.out_features) * lin.count for lin in layer.linears)
                                - (_fused_columns_saved(layer) if fused else 0)) for layer, count in m.layer_kinds())
        embeddings = (m.vocab_size + m.embedding_dim) * (1 if m.tie_word_embeddings else 2)
        return ADAFACTOR_STATE_BYTES * (factored + _vectors(m, trainable) + embeddings)
    rank = max(s.lora_rank, 1)
    targets = lora_targets(s, m)
    adapted = sum(count * lin.count for layer, count in m.layer_kinds() for lin in layer.linears
                  if lin.name in targets and (lin.adaptable or lin.group == "router"))
    adapted += sum(lin.count for lin in m.tower_linears if lin.name in targets)
    return ADAFACTOR_STATE_BYTES * (trainable / rank + 2 * rank * adapted)


# bitsandbytes' Lion, the Trainer's ``lion_32bit`` (transformers trainer_optimizer.py
# ``_get_bitsandbytes_optimizer``: ``optim_bits`` 32): ``Optimizer1State.init_state`` makes ``state1`` float32
# whatever the parameter's dtype, and ``update_step`` runs one CUDA kernel in place over it, the gradient and the
# parameter (bitsandbytes/optim/optimizer.py; backends/cuda/ops.py ``_optimizer_update_32bit_impl``), no temporary
LION_STATE_BYTES = 4


def stepped_tensors(s: Scenario, m: ModelSpec) -> list[tuple[int, int]]:
    """The tensors ``optimizer.step()`` updates, as (elements, elements of the tensor stepped just before it): a
    per-tensor optimizer frees one tensor's last temporary only when the next tensor reassigns the name, so that
    one lingers beside the next's (see :func:`optimizer_step_temporaries`). The Trainer's first parameter group
    holds the matrices in the model's order (``get_decay_parameter_names`` leaves the norms and biases to the
    second): a full fine-tune's embedding, each layer's linears, an untied output head; LoRA's ``lora_A``
    (``r x in``) and ``lora_B`` (``out x r``) of each adapted linear, in the layer's order (a fused expert weight's
    pair ``r·E`` wide, peft ``ParamWrapper``). Each layer kind's tensors repeat after themselves. Under DeepSpeed
    ZeRO the optimizer steps each group's flat partition in a ``step()`` of its own (:data:`ZERO3_SUB_GROUP`):
    the matrices' group, then the norms and biases, nothing lingering from one to the next."""
    if s.sharded_by == "deepspeed":
        trainable = m.params_total if s.method == "full" else lora_params(m, lora_targets(s, m), s.lora_rank,
                                                                          experts=adapts_experts(s, m))
        vectors = _vectors(m, trainable) if s.method == "full" else 0
        return [(n, 0) for n in (trainable - vectors, vectors) if n]
    if s.method == "full":
        fused = m.family in FUSED_EXPERTS
        seqs = [_full_tensors(layer, fused) for layer, _ in m.layer_kinds()]
        embedding = m.vocab_size * m.embedding_dim
        head = [] if m.tie_word_embeddings else [(embedding, seqs[-1][-1] if seqs and seqs[-1] else 0)]
        return [(embedding, 0), *head] + [pair for seq in seqs for pair in _after_themselves(seq)]
    rank, targets = max(s.lora_rank, 1), lora_targets(s, m)
    seqs = [[n for lin in layer.linears if lin.name in targets and (lin.adaptable or lin.group == "router")
             for _ in range(lin.count) for n in (rank * lin.in_features, rank * lin.out_features)]
            for layer, _ in m.layer_kinds()]
    seqs.append([n for lin in m.tower_linears if lin.name in targets for _ in range(lin.count)
                 for n in (rank * lin.in_features, rank * lin.out_features)])
    if adapts_experts(s, m):
        seqs += [_expert_pairs(layer, rank) for layer, _ in m.layer_kinds() if layer.moe]
    return [pair for seq in seqs for pair in _after_themselves(seq)]


# transformers 5 holds a mixture of experts' weights as 3-D parameters of all E experts at once (the fused gate/up
# ``gate_up_proj`` (E, 2i, h) and ``down_proj`` (E, h, i), e.g. ``Qwen3MoeExperts``, ``MixtralExperts``): the model
# types whose modeling file makes an ``nn.Parameter`` of ``num_experts`` leading, transformers 5.24
FUSED_EXPERTS = frozenset((
    "afmoe", "aria", "beam", "cohere2_moe", "deepseek_v2", "deepseek_v3", "deepseek_v32", "deepseek_v4", "dots1",
    "ernie4_5_moe", "ernie4_5_vl_moe", "exaone_moe", "flex_olmo", "gemma4", "glm4_moe", "glm4_moe_lite", "glm4v_moe",
    "glm_moe_dsa", "gpt_oss", "granitemoe", "granitemoehybrid", "granitemoeshared", "hunyuan_v1_moe", "jamba",
    "jetmoe", "kimi_linear", "lfm2_moe", "llama4", "mellum", "minimax", "minimax_m2", "mixtral", "nemotron_h",
    "olmoe", "phimoe", "qwen2_moe", "qwen3_5_moe", "qwen3_moe", "qwen3_next", "qwen3_omni_moe", "qwen3_vl_moe",
    "solar_open"))


def _full_tensors(layer, fused: bool) -> list[int]:
    """The elements of each tensor a full fine-tune steps in one layer, in the layer's order: a linear per
    instance, or, where ``fused`` (:data:`FUSED_EXPERTS`), the experts' as transformers 5 holds them, one tensor of
    all E experts for the gate/up projections together and one for the down projection."""
    out, experts_done = [], False
    for lin in layer.linears:
        if not (fused and lin.group == "experts"):
            out += [lin.weight_params // lin.count] * lin.count
        elif not experts_done:
            experts_done = True
            experts = [x for x in layer.linears if x.group == "experts"]
            gate_up = sum(x.weight_params for x in experts if act.INPUT_OF.get(x.name) == "mlp_in")
            out += [n for n in (gate_up, *(x.weight_params for x in experts
                                          if act.INPUT_OF.get(x.name) != "mlp_in")) if n]
    return out


def _fused_columns_saved(layer) -> int:
    """Adafactor's factors of a fused (E, 2i, h) gate/up tensor are E·2i rows and E·h columns (``_get_options``
    factors the last two dimensions, the leading ones kept): E·h fewer than two (E, i, h) matrices' columns."""
    fused_in = [lin for lin in layer.linears if lin.group == "experts" and act.INPUT_OF.get(lin.name) == "mlp_in"]
    return sum(lin.in_features * lin.count for lin in fused_in[1:])


def _after_themselves(seq: list[int]) -> list[tuple[int, int]]:
    """Each element with the one before it, the first after the last (the next layer of the same kind)."""
    return [(n, seq[i - 1]) for i, n in enumerate(seq)] if seq else []


def _expert_pairs(layer, rank: int) -> list[int]:
    """peft ``ParamWrapper``'s tensors of one MoE layer's fused expert weights, in order: ``lora_A`` (``r·E x in``)
    and ``lora_B`` (``out x r·E``) of the fused gate/up and of the down projection (:func:`expert_lora_params`)."""
    experts = [lin for lin in layer.linears if lin.group == "experts"]
    if not experts:
        return []
    wide = rank * experts[0].count
    fused_in = [lin for lin in experts if act.INPUT_OF.get(lin.name) == "mlp_in"]
    down = [lin for lin in experts if act.INPUT_OF.get(lin.name) == "mlp_mid"]
    out = [wide * fused_in[0].in_features, wide * sum(lin.out_features for lin in fused_in)] if fused_in else []
    return out + [n for lin in down for n in (wide * lin.in_features, wide * lin.out_features)]


def optimizer_step_temporaries(s: Scenario, trainable: int, state_bytes: int,
                               stepped: list[tuple[int, int]]) -> float:
    """Transient bytes of ``optimizer.step()`` over ``stepped`` (:func:`stepped_tensors`, this rank's share).

    torch's foreach AdamW computes ``sqrt(v)`` for the whole parameter group at once (``torch/optim/adamw.py``
    ``_multi_tensor_adamw``); fused AdamW and the bitsandbytes kernels (8-bit AdamW, 32-bit Lion:
    :data:`LION_STATE_BYTES`) update in place. transformers' Adafactor (``Adafactor.step``, 5.24) steps one tensor
    of ``n`` elements at a time in fp32: ``(grad**2) + eps`` is two n-element tensors at once, as is the factored
    approximation ``_approx_sq_grad`` beside the ``update`` it replaces, and ``-update`` beside ``update``; a 16-bit
    gradient and parameter add their fp32 copies (``grad.float()``, ``p.float()``: 2n more); and the previous
    tensor's ``update`` (``p`` elements) is still bound to the name until the first of these reassigns it. So
    ``4 B x max(k·n + p)``, k = 2 for fp32 parameters, 4 for 16-bit ones: LoRA's fp32 ``lora_B`` of Qwen2.5-0.5B's
    up projection (4,864 x 16) after its ``lora_A`` (16 x 896) is 4 x (2 x 77,824 + 14,336) = 679,936 bytes, what
    the real optimizer allocates on the meta device (tests/memory/test_optimizer_step.py). Under DeepSpeed ZeRO the
    stepped tensors are fp32 partitions (k = 2), stage 3's each at most a sub-group (:data:`ZERO3_SUB_GROUP`)."""
    if s.optimizer == "adamw" and s.optimizer_impl == "foreach":
        return state_bytes * trainable
    if s.optimizer == "adafactor" and stepped:
        if s.sharded_by == "deepspeed":
            cap = ZERO3_SUB_GROUP if s.resolved_sharding == "zero3" else float("inf")
            return ADAFACTOR_STATE_BYTES * max(2 * min(n, cap) + before for n, before in stepped)
        k = 2 + (2 if state_bytes < 4 else 0)
        return ADAFACTOR_STATE_BYTES * max(k * n + before for n, before in stepped)
    return 0.0

