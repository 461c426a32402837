"""The scenario: the one input every estimate takes (fields as in design.md).

A scenario comes from a YAML/JSON file, CLI flags (``--micro-batch-size`` for ``micro_batch_size``) or a
dict; flags override the file. Field-level checks (types, ranges, unknown fields) live in the pydantic
model; checks that need the model or the GPU (TP vs heads, bf16 on a V100) are in :func:`check`.
Every error names the field and the fix, as one sentence.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .errors import GpuplanError, did_you_mean
from .model.quant import QUANT_FORMATS

Precision = Literal["bf16-mixed", "fp16-mixed", "bf16-true", "fp16-true", "fp32", "fp8-mixed"]
Optimizer = Literal["adamw", "adamw-8bit", "paged-adamw-8bit", "sgd", "sgd-momentum", "adafactor", "lion"]


class Scenario(BaseModel):
    """What the user wants to run, on what. Defaults follow the Hugging Face Trainer and vLLM."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    model: str = Field(min_length=1, description="catalog alias, HF repo id, or path to a config.json")
    task: Literal["train", "infer"]
    # training
    method: Literal["full", "lora", "qlora"] = "full"
    precision: Precision = "bf16-mixed"
    quant: str | None = Field(default=None, description="default: the checkpoint's own quantization_config")
    optimizer: Optimizer = "adamw"
    optimizer_impl: Literal["fused", "foreach"] = Field(
        default="fused", description="torch AdamW implementation; the HF Trainer uses fused since torch 2.8")
    lora_rank: int = Field(default=16, ge=1, le=4096)
    lora_targets: Literal["all-linear"] | list[str] = "all-linear"
    lora_dropout: float = Field(default=0.0, ge=0.0, lt=1.0)
    qlora_fp32_upcast: bool = Field(
        default=True, description="peft prepare_model_for_kbit_training casts non-4-bit weights to fp32; false for "
        "Unsloth, torchtune or TRL without it")
    micro_batch_size: int = Field(default=1, ge=1, le=65_536)
    seq_len: int = Field(default=2048, ge=1, le=10_000_000)
    grad_accum_steps: int = Field(default=1, ge=1, le=1_000_000)
    grad_checkpointing: Literal["none", "selective", "full"] = "none"
    attention: Literal["eager", "sdpa", "flash"] = "sdpa"
    train_tokens: float | None = Field(default=None, gt=0, le=1e15)
    # inference
    batch_size: int = Field(default=1, ge=1, le=65_536)
    prompt_tokens: int = Field(default=1024, ge=1, le=10_000_000)
    output_tokens: int = Field(default=256, ge=0, le=10_000_000)
    kv_cache_dtype: Literal["auto", "fp16", "bf16", "fp8", "int8"] = "auto"
    engine: Literal["transformers", "vllm", "llama.cpp"] = "transformers"
    gpu_memory_utilization: float = Field(default=0.9, gt=0.0, le=1.0)
    max_num_batched_tokens: int | None = Field(default=None, ge=1, le=10_000_000)
    # hardware and parallelism
    gpu: str | None = None
    num_gpus: int = Field(default=1, ge=1, le=1024)
    num_nodes: int = Field(default=1, ge=1, le=4096)
    strategy: Literal["single", "ddp", "zero1", "zero2", "zero3", "fsdp"] | None = None
    tp: int = Field(default=1, ge=1, le=1024)
    pp: int = Field(default=1, ge=1, le=1024)
    offload: Literal["none", "optimizer", "optimizer+params"] = "none"
    # pricing (speed and cost sections need a gpu)
    provider: str | None = Field(default=None, description="price on this provider's offers (e.g. runpod)")
    pricing: Literal["on_demand", "spot", "any"] = "on_demand"
    mtbi_hours: float | None = Field(default=None, ge=0.05, le=100_000,
                                     description="mean hours between spot interruptions")
    disk_gbs: float = Field(default=1.0, ge=0.001, le=10_000, description="checkpoint write speed, GB/s")

    @field_validator("quant")
    @classmethod
    def _known_quant(cls, value: str | None) -> str | None:
        if value is None:
            return None
        key = value.strip().lower()
        if key not in QUANT_FORMATS and f"gguf-{key}" in QUANT_FORMATS:
            key = f"gguf-{key}"  # q4_k_m is a GGUF type: llama.cpp's own name for it
        if key not in QUANT_FORMATS:
            close = did_you_mean(key, QUANT_FORMATS)
            raise ValueError(f"unknown quant {value!r}" + (f"; did you mean {' or '.join(close)}?" if close else
                             f"; choose one of {', '.join(QUANT_FORMATS[:9])} or gguf-<type>"))
        return key

    @field_validator("lora_targets")
    @classmethod
    def _targets(cls, value):
        if isinstance(value, list) and not value:
            raise ValueError("lora_targets is empty: use all-linear or name modules like [q_proj, v_proj]")
        return value

    @model_validator(mode="after")
    def _serving_strategy(self) -> Scenario:
        """Serving splits a model with tensor or pipeline parallelism (tp, pp) or replicates it (ddp); ZeRO and
        FSDP shard training states and do not apply."""
        if self.task == "infer" and self.strategy not in (None, "single", "ddp"):
            raise ValueError(f"strategy {self.strategy!r} shards training states and does not apply to serving: "
                             "to split a model over GPUs set tp (vLLM) or pp, or leave strategy unset")
        return self

    @property
    def world_size(self) -> int:
        return self.num_gpus * self.num_nodes

    @property
    def dp(self) -> int:
        """Data-parallel ranks: the GPUs left after tensor and pipeline parallelism."""
        return self.world_size // (self.tp * self.pp)

    @property
    def resolved_strategy(self) -> str:
        """``single`` on one data-parallel rank, else ``ddp``, unless set; ``fsdp`` is ZeRO-3."""
        if self.strategy is None:
            return "single" if self.dp == 1 else "ddp"
        return "zero3" if self.strategy == "fsdp" else self.strategy

    @property
    def compute_bytes(self) -> int:
        return 4 if self.precision == "fp32" else 2


FIELDS = tuple(Scenario.model_fields)


def scenario_from(data: dict[str, Any] | Scenario) -> Scenario:
    """Validate a dict into a :class:`Scenario`, turning pydantic's report into one clear sentence."""
    if isinstance(data, Scenario):
        return data
    if not isinstance(data, dict):
        raise GpuplanError(f"a scenario must be a mapping of fields, got {type(data).__name__}")
    data = {str(k).replace("-", "_"): v for k, v in data.items()}
    if isinstance(data.get("pricing"), str):
        data["pricing"] = data["pricing"].replace("-", "_")  # on-demand and on_demand alike
    try:
        return Scenario(**data)
    except ValidationError as err:
        raise GpuplanError(_one_sentence(err)) from None
    except TypeError as err:  # e.g. non-string keys
        raise GpuplanError(f"bad scenario: {err}") from None


def _one_sentence(err: ValidationError) -> str:
    errors = err.errors()
    nested = [e for e in errors if e["type"] == "extra_forbidden" and isinstance(e.get("input"), dict)]
    first = (nested or errors)[0]
    field = ".".join(str(p) for p in first["loc"]) or "scenario"
    if first["type"] == "extra_forbidden":
        if isinstance(first.get("input"), dict):
            return (f"scenario fields go at the top level of the file, not under {field!r}: (model:, task:, ... "
                    "each on its own line)")
        close = did_you_mean(field, FIELDS)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else \
            "; `gpuplan estimate --help` lists the fields"
        return f"unknown scenario field {field!r}{hint}"
    if first["type"] == "missing":
        return f"scenario field {field!r} is required (e.g. {field}: {'train' if field == 'task' else '...'})"
    value = first.get("input")
    msg = first["msg"].removeprefix("Value error, ")
    if not first["loc"]:  # a check across fields: its message names them
        return msg
    more = f" (and {len(err.errors()) - 1} more)" if len(err.errors()) > 1 else ""
    return f"scenario field {field!r}: {msg} (got {value!r}){more}"


def load_scenario(path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> Scenario:
    """Read a scenario file (YAML or JSON) and apply ``overrides`` (CLI flags) on top."""
    data: dict[str, Any] = {}
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise GpuplanError(f"no scenario file {str(path)!r}")
        try:
            loaded = yaml.safe_load(p.read_text(encoding="utf-8"))
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            where = f" at line {mark.line + 1}" if mark else ""
            raise GpuplanError(f"{path} is not valid YAML{where}: {getattr(err, 'problem', err)}") from None
        except UnicodeDecodeError:
            raise GpuplanError(f"{path} is not a UTF-8 text file") from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise GpuplanError(f"{path} must hold a mapping of scenario fields, not a {type(loaded).__name__}")
        data.update(loaded)
    data.update({k: v for k, v in (overrides or {}).items() if v is not None})
    return scenario_from(data)
