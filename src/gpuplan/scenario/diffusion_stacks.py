"""The diffusion trainers a scenario names with ``stack``: one profile each, the facts the resolver
(:mod:`.modules`) and the launch files (the diffusion launch writer) read of it, as :mod:`gpuplan.stacks`
profiles the LLM stacks. Their recipe defaults are :data:`gpuplan.scenario.stacks.RECIPES`' entries.

Read off the trainers' code:

- ``diffusers``: diffusers' ``examples/dreambooth`` scripts. The LoRA scripts (``train_dreambooth_lora_*.py``,
  ``--lora_layers`` unset) adapt the attention projections, and ``--train_text_encoder`` adds LoRA to the CLIP
  encoders only (``text_encoder_one/two``, never T5). ``train_dreambooth.py`` trains the whole CLIP
  (``params_to_optimize = itertools.chain(unet.parameters(), text_encoder.parameters())``) and keeps the gradients
  between steps (``zero_grad(set_to_none=args.set_grads_to_none)``, off by default); ``train_dreambooth_sd3.py``
  trains all three encoders, T5 too (``text_encoder_three.requires_grad_(True)``); ``train_dreambooth_flux.py``
  CLIP-L only (``text_encoder_two.requires_grad_(False)``); there is no SDXL full script.
- ``kohya``: kohya-ss sd-scripts. Its LoRA (``networks.lora``, ``lora_flux``) adapts every linear of the blocks;
  ``--fp8_base`` (``train_network.py``; ``flux_train_network.py`` ``load_target_model``:
  ``model.to(torch.float8_e4m3fn)``) stores every weight in fp8, the norms and modulation too, and it loads no
  4-bit base. ``train_network.py`` / ``sdxl_`` / ``sd3_`` / ``flux_train_network.py`` put LoRA on CLIP unless
  ``--network_train_unet_only`` (T5's LoRA too with ``network_args train_t5xxl=True``: ``networks/lora_sd3.py``,
  ``lora_flux.py`` ``create_network``); ``train_db.py`` trains the CLIP encoder unless
  ``--stop_text_encoder_training -1``; ``sdxl_train.py`` and ``sd3_train.py`` with ``--train_text_encoder``
  (``sd3_train.py``: T5 too with ``--train_t5xxl``); ``flux_train.py`` freezes ``clip_l`` and ``t5xxl``.
  ``sdxl_train.py`` also freezes CLIP-L's last layer and final norm ("freeze last layer and final_layer_norm in te1
  since we use the output of the penultimate layer").
  ``--blocks_to_swap N`` (``flux_train_network.py``, ``library/flux_models.py`` ``enable_block_swap``,
  ``library/custom_offloading_utils.py``): FLUX's ``N // 2`` last double blocks and ``2 (N - N // 2)`` last single
  blocks keep their weights in CPU memory (at most all but two of each kind: 35 for FLUX.1), swapped in place with
  the blocks that have run, during the forward and again the backward.
- ``simpletuner``: SimpleTuner (bghira/SimpleTuner). Its ``"all"`` LoRA target; ``--base_model_precision``
  (``fp8-torchao``, ``nf4-bnb``, ``int8-quanto``); ``--train_text_encoder`` leaves the encoders frozen
  (``freeze_components`` sets ``requires_grad_(False)`` on each, and the step reads cached embeddings).
- ``ai-toolkit``: ostris/ai-toolkit. Its LoRA (``toolkit/lora_special.py`` ``LoRANetwork``) adapts every linear of
  the blocks, and ``train.train_text_encoder`` every linear of ``CLIPAttention`` and ``CLIPMLP``, for SD 1.x/2.x and
  SDXL (its FLUX example says "probably doesn't work for flux"; T5 gets none). ``model.quantize`` runs
  optimum-quanto's ``qfloat8`` on every linear of a transformer denoiser (FLUX, SD3:
  ``toolkit/stable_diffusion_model.py``, without ``exclude``); its SD and SDXL loaders have no quantize call, and its
  UI disables ``model.quantize`` for sdxl and sd15.

Every trainer but diffusers' ``train_dreambooth.py`` frees the gradients after each step: kohya (``train_db.py``,
``sdxl_train.py``, ``sd3_train.py``, ``train_network.py``), SimpleTuner and ai-toolkit call
``optimizer.zero_grad(set_to_none=True)``, diffusers' other scripts ``optimizer.zero_grad()`` through accelerate's
``AcceleratedOptimizer``, which passes ``set_to_none=True``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..model.quant import FP8_ALL, FP8_LINEARS

FAMILIES = ("sd", "sdxl", "sd3", "flux")  # the pipelines' families (gpuplan.scenario.modules.pipeline_family)


@dataclass(frozen=True, kw_only=True)
class DiffusionStack:
    """One diffusion trainer's facts (see the module docstring for where each is read)."""

    name: str
    label: str  # the trainer in a sentence
    lora_preset: str = "all"  # what its LoRA adapts unless lora_targets names it: attention | all (every linear)
    # the quantized bases it loads to train adapters (None: any the plan models); its launch files write them
    bases: tuple[str, ...] | None = None
    # how its fp8 base is stored (gpuplan.model.profile: FP8_ALL every weight, FP8_LINEARS every linear; "fp8":
    # as the plan models fp8) and the plan's words for it
    fp8_storage: str = "fp8"
    fp8_words: str = ""
    # the families whose denoiser its fp8 base quantizes (None: every one), what the plan says of the others and
    # the sentence that refuses quant fp8 given for one
    quantizes: tuple[str, ...] | None = None
    unquantized_words: str = ""
    unquantized_refusal: str = ""
    # the text encoders its switch trains, by (method, family): "clip" the CLIP encoders, "all" T5 too; those where
    # trained-all trains T5-XXL as well; the sentence for the others
    text_trained: Mapping[tuple[str, str], str] = field(default_factory=dict)
    text_t5: frozenset[tuple[str, str]] = frozenset()
    text_refusal: str = "this trainer trains no text encoder"
    # the families whose full fine-tune freezes CLIP-L's last layer and final norm (it reads the penultimate
    # layer), with the words that say why
    clip_last_layer_frozen: Mapping[str, str] = field(default_factory=dict)
    # the families whose full fine-tune keeps the gradients between steps, with the words that say where
    keeps_grads: Mapping[str, str] = field(default_factory=dict)
    # the precisions under which its LoRA adapters are fp32 (its optimizer's states take their width, torch's
    # ``zeros_like(p)``); under the others they take the weights' dtype. "all": every precision
    fp32_adapters_under: frozenset[str] | str = frozenset()
    # AdamW's states a LoRA parameter under 16-bit adapters: two moments (torch's AdamW), three where its default
    # optimizer adds a Kahan-summation buffer (SimpleTuner's adamw_bf16: gpuplan.memory.modules.lora_widths)
    adamw_states_16bit: int = 2
    # the families whose transformer blocks its --blocks_to_swap offloads, and the sentence for the others
    swaps_blocks: tuple[str, ...] = ()
    swap_refusal: str = "this trainer has no block swap"

    def fp32_adapters(self, precision: str) -> bool:
        """Whether this trainer keeps its LoRA adapters in fp32 under ``precision``."""
        return self.fp32_adapters_under == "all" or precision in self.fp32_adapters_under


def _each(method: str, families: tuple[str, ...], which: str = "clip") -> dict[tuple[str, str], str]:
    return {(method, family): which for family in families}


DIFFUSION_STACKS: Mapping[str, DiffusionStack] = {p.name: p for p in (
    DiffusionStack(
        name="diffusers", label="diffusers' scripts", lora_preset="attention",
        swap_refusal="diffusers' scripts have no block swap (kohya's sd-scripts --blocks_to_swap): set stack kohya",
        # train_dreambooth_lora_*.py add peft's adapters in the weights' dtype (add_adapter: peft's
        # inject_adapter_in_model never autocasts, _move_adapter_to_device_of_base_layer takes the base layer's
        # dtype) and cast_training_params(models, dtype=torch.float32) only when mixed_precision == "fp16"
        fp32_adapters_under=frozenset({"fp16-mixed"}),
        text_trained=_each("lora", FAMILIES) | _each("full", ("sd", "flux")) | {("full", "sd3"): "all"},
        text_t5=frozenset({("full", "sd3")}),
        text_refusal="diffusers has no full fine-tuning script for SDXL (examples/dreambooth)",
        keeps_grads={"sd": "diffusers' train_dreambooth.py without --set_grads_to_none"}),
    DiffusionStack(
        name="kohya", label="kohya's sd-scripts", bases=("fp8",), fp8_storage=FP8_ALL,
        # networks/lora.py builds each LoRAModule's lora_down and lora_up as default (fp32) torch.nn.Linear and
        # train_network.py casts the network to the weight dtype only with --full_fp16 or --full_bf16 (the -true
        # precisions here)
        fp32_adapters_under=frozenset({"fp32", "fp16-mixed", "bf16-mixed", "fp8-mixed", "fp4-mixed"}),
        fp8_words="fp8 base: kohya's --fp8_base casts every weight to fp8, the norms and modulation too",
        text_trained=_each("lora", FAMILIES) | _each("full", ("sd", "sdxl", "sd3")),
        text_t5=frozenset({("full", "sd3"), ("lora", "sd3"), ("lora", "flux")}),
        text_refusal="kohya's flux_train.py trains neither CLIP-L nor T5",
        clip_last_layer_frozen={"sdxl": "sdxl_train.py reads the penultimate layer"},
        swaps_blocks=("flux",),
        swap_refusal="kohya's --blocks_to_swap is modelled for FLUX.1 (flux_train_network.py), not this pipeline"),
    DiffusionStack(
        name="simpletuner", label="SimpleTuner", bases=("fp8", "nf4", "int8"), adamw_states_16bit=3,
        swap_refusal="blocks_to_swap is modelled as kohya's sd-scripts runs it, not for SimpleTuner: set stack kohya",
        text_refusal="SimpleTuner's --train_text_encoder leaves them frozen (freeze_components sets "
                     "requires_grad_(False) on each, and the step reads cached embeddings)"),
    DiffusionStack(
        name="ai-toolkit", label="ai-toolkit", bases=("fp8",), fp8_storage=FP8_LINEARS,
        swap_refusal="blocks_to_swap is modelled as kohya's sd-scripts runs it, not for ai-toolkit: set stack kohya",
        # BaseSDTrainProcess: self.network.force_to(self.device_torch, dtype=torch.float32)
        fp32_adapters_under="all",
        fp8_words="fp8 base: ai-toolkit's quantize (optimum-quanto qfloat8) stores every linear in fp8, the "
                  "adaptive norms' modulation linears too; norms, biases and embeddings stay 16-bit",
        quantizes=("flux", "sd3"), unquantized_words="16-bit base: ai-toolkit does not quantize a UNet",
        unquantized_refusal="ai-toolkit quantizes transformer denoisers (FLUX, SD3), not a UNet (its UI disables "
                            "model.quantize for sdxl and sd15): set quant none, or stack kohya for --fp8_base",
        text_trained=_each("lora", ("sd", "sdxl")),
        text_refusal="ai-toolkit trains the CLIP encoders' LoRA (train_text_encoder) for SD 1.x/2.x and SDXL only, "
                     "not FLUX ('probably doesn't work for flux'), SD3, T5 or a full fine-tune"),
)}


def diffusion_stack_for(name: str) -> DiffusionStack:
    """The profile of diffusion trainer ``name`` (a scenario's ``stack``)."""
    return DIFFUSION_STACKS[name]
