"""The model table of a Spanish-language GPU guide ("Requisitos de GPU para Despliegue Local", a buying guide this
project started from; not shipped), recomputed: memory to serve each model at bf16 / 8-bit / 4-bit with a 4k
context, to fine-tune it with LoRA and QLoRA, and the cheapest setup that fits, each from ``estimate`` and
``recommend``; with footnotes where the guide's figures are off.

Settings (stated in the table's caption, so that every number can be re-run with ``gpuplan estimate``):
inference is one sequence of 4,096 tokens (3,584 prompt + 512 output) in transformers; 8-bit is LLM.int8
(bitsandbytes), 4-bit is AWQ (group 128); fine-tuning is rank-16 adapters on all linear layers, micro-batch 1
x 4,096 tokens, full gradient checkpointing, AdamW for LoRA (bf16 base) and paged 8-bit AdamW for QLoRA
(NF4 base). Memory is the device peak (what nvidia-smi shows), in GiB.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model.catalog import load_model
from ..model.report import inexact_warning
from ..scenario import Scenario
from .estimate import estimate
from .plan import probe
from .recommend import Constraints, Recommendation, recommend

PROMPT, OUTPUT = 3584, 512
INFER = {"task": "infer", "batch_size": 1, "prompt_tokens": PROMPT, "output_tokens": OUTPUT}
TRAIN = {"task": "train", "micro_batch_size": 1, "seq_len": PROMPT + OUTPUT, "grad_checkpointing": "full",
         "lora_rank": 16, "lora_targets": "all-linear"}
QUANTS = {"bf16": "none", "8-bit": "int8", "4-bit": "awq-int4"}
METHODS = {"LoRA": {"method": "lora", "optimizer": "adamw"},
           "QLoRA": {"method": "qlora", "quant": "nf4", "optimizer": "paged-adamw-8bit"}}


@dataclass(frozen=True, kw_only=True)
class GuideRow:
    """One row of the guide's table as printed there (Spanish kept), and the bundled model it names."""

    model: str
    guide_name: str
    guide_params: str
    guide_vram: str
    guide_gpu: str

    @property
    def said(self) -> str:
        """The guide's VRAM figure in English (the guide is in Spanish)."""
        return ENGLISH.get(self.guide_vram, self.guide_vram)


ENGLISH = {"~140GB (estimado)": "~140GB (estimated)", "Al menos 12GB / 24GB VRAM": "at least 12GB / 24GB VRAM",
           "40GB+ VRAM para entrenamiento": "40GB+ VRAM for training"}

GUIDE = tuple(GuideRow(model=model, guide_name=name, guide_params=params, guide_vram=vram, guide_gpu=gpu)
              for model, name, params, vram, gpu in (
    ("deepseek-r1", "DeepSeek R1", "671B", "~1,342GB", "NVIDIA A100 80GB x16"),
    ("r1-distill-qwen-1.5b", "DeepSeek-R1-Distill-Qwen-1.5B", "1.5B", "~0.7GB", "NVIDIA RTX 3060 12GB+"),
    ("r1-distill-qwen-7b", "DeepSeek-R1-Distill-Qwen-7B", "7B", "~3.3GB", "NVIDIA RTX 3070 8GB+"),
    ("r1-distill-llama-8b", "DeepSeek-R1-Distill-Llama-8B", "8B", "~3.7GB", "NVIDIA RTX 3070 8GB+"),
    ("r1-distill-qwen-14b", "DeepSeek-R1-Distill-Qwen-14B", "14B", "~6.5GB", "NVIDIA RTX 3080 10GB+"),
    ("r1-distill-qwen-32b", "DeepSeek-R1-Distill-Qwen-32B", "32B", "~14.9GB", "NVIDIA RTX 4090 24GB"),
    ("r1-distill-llama-70b", "DeepSeek-R1-Distill-Llama-70B", "70B", "~32.7GB", "NVIDIA RTX 4090 24GB x2"),
    ("llama-3-70b", "Llama 3 70B", "70B", "~140GB (estimado)", "NVIDIA 3000 series, 32GB RAM minimo"),
    ("llama-3.3-70b", "Llama 3.3", "Varia", "Al menos 12GB / 24GB VRAM", "NVIDIA RTX 3000 series"),
    ("gpt-neox-20b", "GPT-NeoX", "20B", "48GB+ VRAM total", "Dos NVIDIA RTX 3090 (24GB cada una)"),
    ("bloom", "BLOOM", "176B", "40GB+ VRAM para entrenamiento", "NVIDIA A100 o H100"),
))


@dataclass(kw_only=True)
class TableRow:
    guide: GuideRow
    name: str
    params_total: int
    shipped_dtype: str
    shipped_gib: float  # weights as the checkpoint ships them
    weights_gib: dict[str, float]  # by precision: weights alone
    infer_gib: dict[str, float]  # by precision: device peak for one 4k sequence
    kv_cache_gib: float  # at bf16, for the 4k sequence
    train_gib: dict[str, float]  # LoRA / QLoRA device peak on one GPU
    serve: Recommendation | None = None  # cheapest setup serving at bf16
    qlora: Recommendation | None = None  # cheapest setup for QLoRA
    notes: list[str] = field(default_factory=list)


def guide_table(*, catalogs: tuple[str, ...] = (), cheapest: bool = True) -> list[TableRow]:
    """Recompute every row of the guide's table (``cheapest`` adds the recommendation searches)."""
    rows = []
    for g in GUIDE:
        m = load_model(g.model)
        infer = {label: estimate({"model": g.model, **INFER, "quant": q}, advise=False).memory
                 for label, q in QUANTS.items()}
        train = {label: estimate({"model": g.model, **TRAIN, **fields}, advise=False).memory.device_peak_gib
                 for label, fields in METHODS.items()}
        row = TableRow(guide=g, name=m.name, params_total=m.params_total,
                       shipped_dtype=m.quantization.get("quant_method", m.dtype) if m.quantization else m.dtype,
                       shipped_gib=sum(m.weight_bytes().values()) / 2**30,
                       weights_gib={k: v.weights_gib for k, v in infer.items()},
                       infer_gib={k: v.device_peak_gib for k, v in infer.items()},
                       kv_cache_gib=infer["bf16"].kv_cache_gib, train_gib=train)
        if cheapest:
            c = Constraints(catalogs=catalogs, top=1)
            serve = Scenario.model_validate({"model": g.model, **INFER, "quant": "none"})
            tune = Scenario.model_validate({"model": g.model, **TRAIN, **METHODS["QLoRA"]})
            row.serve, row.qlora = recommend(serve, m, c, explain=False), recommend(tune, m, c, explain=False)
        row.notes = footnotes(row)
        rows.append(row)
    return rows


def fits_on(model: str, gpu: str, n: int, fields: dict) -> bool:
    """Whether ``model`` fits ``n`` x ``gpu`` (tensor parallel for inference) with these scenario fields."""
    layout = {"num_gpus": n, "tp": n} if fields["task"] == "infer" else {"num_gpus": n}
    s = Scenario.model_validate({"model": model, "gpu": gpu, **fields, **layout})
    return probe(s, load_model(model))[0]


def footnotes(r: TableRow) -> list[str]:
    """Where the guide's figure or GPU is off, say how, with the recomputed numbers."""
    gb = 1.073741824  # GB per GiB: the guide writes GB
    w, peak = r.weights_gib, r.infer_gib
    notes = []
    inexact = inexact_warning(load_model(r.guide.model))
    if inexact:
        notes.append(inexact)
    if r.guide.model == "deepseek-r1":
        notes.append(f"~1,342 GB is {r.params_total / 1e9:,.0f}B parameters x 2 bytes (bf16), more than the 16 x 80 "
                     f"GB = 1,280 GB it recommends. DeepSeek ships R1 in FP8 (128x128 block scales): "
                     f"{r.shipped_gib * gb:,.0f} GB of weights as shipped ({peak['8-bit'] * gb:,.0f} GB with a 4k "
                     f"sequence at 8-bit), which 8 x 141 GB H200 hold; A100s have no FP8 tensor cores. Its multi-head "
                     f"latent attention caches {r.kv_cache_gib * gb:.2f} GB per 4k sequence (transformers 5 and vLLM "
                     "both keep the compressed latent).")
    elif r.guide.model.startswith("r1-distill") or r.guide.model == "llama-3-70b":
        figure = float(r.guide.guide_vram.strip("~GB (estimado)").replace(",", ""))
        precision = "bf16" if r.guide.model == "llama-3-70b" else "4-bit"
        bits = 16 if precision == "bf16" else 4
        nominal = figure / (r.params_total / 1e9) * 8
        kept = "" if precision == "bf16" else ", embeddings kept in bf16"
        notes.append(f"{r.guide.said} is about {bits}-bit weights alone ({nominal:.1f} bits per parameter): "
                     f"with the {precision} weights ({w[precision] * gb:.1f} GB{kept}), a 4k KV cache and the CUDA "
                     f"context the GPU holds {peak[precision] * gb:.1f} GB"
                     + ("" if precision == "bf16" else f"; at bf16, {peak['bf16'] * gb:.1f} GB") + ".")
        if r.guide.model == "llama-3-70b":
            notes.append(f"an RTX 3000 card (24 GB at most) and 32 GB of system RAM cannot even hold the "
                         f"{w['bf16'] * gb:.0f} GB of bf16 weights; at 4-bit it takes {peak['4-bit'] * gb:.0f} GB, "
                         "two 24 GB cards")
    elif r.guide.model == "llama-3.3-70b":
        notes.append(f"Llama 3.3 comes in one size, 70B: {peak['bf16'] * gb:.0f} GB at bf16 and "
                     f"{peak['4-bit'] * gb:.0f} GB at 4-bit, so neither 12 GB nor 24 GB holds it (the smaller "
                     "Llama 3.x models are 3.1 8B and 3.2 1B/3B)")
    elif r.guide.model == "gpt-neox-20b":
        pair = {label: fits_on(r.guide.model, "rtx-3090", 2, {**INFER, "quant": q}) for label, q in QUANTS.items()}
        holds = [label for label, ok in pair.items() if ok]
        notes.append(f"two RTX 3090 (tensor parallel) hold inference at {', '.join(holds) or 'no precision'} but "
                     f"not at {', '.join(k for k in pair if k not in holds) or '-'} ({peak['bf16'] * gb:.0f} GB at "
                     f"bf16 is more than 2 x 24 GB once each card keeps its CUDA context); QLoRA takes "
                     f"{r.train_gib['QLoRA'] * gb:.0f} GB on one card; full fine-tuning holds ~"
                     f"{r.params_total * 16 / 1e9:,.0f} GB of weights, gradients and AdamW states")
    elif r.guide.model == "bloom":
        notes.append(f"40 GB is far from training BLOOM: full training holds ~{r.params_total * 16 / 1e12:.1f} TB "
                     f"of weights, gradients and AdamW states; even QLoRA needs {r.train_gib['QLoRA'] * gb:.0f} GB "
                     f"and serving at bf16 {peak['bf16'] * gb:.0f} GB")
    return notes
