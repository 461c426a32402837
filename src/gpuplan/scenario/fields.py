"""The scenario: the one input every estimate takes (fields as in design.md).

A scenario comes from a YAML/JSON file, CLI flags (``--micro-batch-size`` for ``micro_batch_size``) or a
dict; flags override the file. Field-level checks (types, ranges, unknown fields) live in the scenario's stored
schema, which pydantic-core validates (:class:`gpuplan.stored.StoredModel`); checks that need the model or the GPU
(TP vs heads, bf16 on a V100) are in :func:`gpuplan.plan.refusals.check`. Every error names the field and the
fix, as one sentence.
"""

# No `from __future__ import annotations` here: the ~100 field annotations are read as objects when the class is made
# (FieldInfo.annotation: the command line's flags, the form), and pydantic would compile each from its text when it
# builds the twin; evaluated on import, they come compiled in the bytecode (bench/startup_parts.py).
import functools
import os
import re
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic_core import ValidationError
from pydantic_core.core_schema import ValidationInfo

from .. import overheads as oh
from ..datafiles import made
from ..errors import RENAMED_FIELDS, GpuplanError, did_you_mean, echo_value, renamed, spelled_choice, yes_for_a_number
from ..hardware import counted_card
from ..model.quant import QUANT_FORMATS
from ..stored import (
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    StoredModel,
    field_validator,
    model_serializer,
    model_validator,
)
from ..userfiles import read_mapping
from . import stacks

Precision = Literal["bf16-mixed", "fp16-mixed", "bf16-true", "fp16-true", "fp32", "fp8-mixed", "fp4-mixed"]
Optimizer = Literal["adamw", "adamw-8bit", "paged-adamw-8bit", "sgd", "sgd-momentum", "adafactor", "lion"]


PRICINGS = ("on_demand", "spot", "any", "owned")


def pricing_of(value: Any) -> Any:
    """The pricing a user typed, as the scenario holds it: ``on-demand`` (the flag's and the docs' spelling) and
    ``on_demand`` alike are ``on_demand``. Anything else is refused naming what the user can type (pydantic's own
    sentence would list the held ``'on_demand'``, which no flag's help shows)."""
    held = value.replace("-", "_") if isinstance(value, str) else value
    if held not in PRICINGS:
        raise ValueError("Input should be 'on-demand', 'spot', 'any' or 'owned'")
    return held


Pricing = Annotated[Literal["on_demand", "spot", "any", "owned"], BeforeValidator(pricing_of)]


# The shortest max_model_len a scenario takes; a length derived from a workload (its longest request) is raised to
# it, so that a trace of two-token chats does not fail on a field the user never set.
MIN_MODEL_LEN = 16
# The longest (a derived length past it is refused in a sentence of its own: capacity's longest request)
MAX_MODEL_LEN = 10_000_000


def release_numbers(text: str | None) -> tuple[int, int, int] | None:
    """A release's numbers, for torch, transformers and the like: ``2.5.1+cu124`` -> (2, 5, 1), ``4.32`` -> (4, 32,
    0); None stays None (the current release)."""
    if text is None:
        return None
    major, minor, patch = ([int(x) for x in re.findall(r"\d+", text.split("+")[0])[:3]] + [0, 0, 0])[:3]
    return major, minor, patch

class Scenario(StoredModel):
    """What the user wants to run, on what. Defaults follow the training stack named by ``stack`` (the Hugging
    Face Trainer unless set; :mod:`gpuplan.scenario.stacks`) and vLLM. A technique field left unset (``None``) takes the
    stack's default when the scenario is built; ``model_fields_set`` keeps what was given explicitly."""

    # validated and dumped by pydantic-core from the stored schema (gpuplan.datafiles); pydantic builds none
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    model: str = Field(min_length=1, description="catalog alias, HF repo id, or path to a config.json")
    task: Literal["train", "infer"]
    # the training stack and its techniques (None: the stack's default)
    stack: Literal["hf", "torchtune", "torchtitan", "unsloth", "axolotl", "pytorch", "megatron", "diffusers", "kohya",
                   "simpletuner", "ai-toolkit"] = Field(
        default="hf", description="training stack; its recipes set the defaults below (hf: the Hugging Face Trainer "
        "with peft, as TRL's SFTTrainer runs it; pytorch: your own loop "
        "over a transformers model, e.g. Answer.AI fsdp_qlora; megatron: Megatron-Core with NeMo's recipes; "
        "diffusers, kohya, simpletuner, ai-toolkit: diffusion trainers, diffusers' scripts by default)")
    loss: Literal["full", "chunked", "fused-linear"] | None = Field(
        default=None, description="full: fp32 logits as transformers computes them; chunked: torchtune/torchtitan/"
        "axolotl chunked cross-entropy; fused-linear: Liger, Unsloth or Cut Cross-Entropy (no logits) "
        "(default: the stack's: full; torchtune chunked; unsloth, axolotl fused-linear)")
    loss_chunks: int | None = Field(default=None, ge=1, le=4096, description="chunks of loss chunked "
                                    "(default: torchtune's 8)")
    activation_offload: bool | None = Field(
        default=None, description="saved activations / checkpoints to pinned CPU memory (torchtune "
        "enable_activation_offloading, Unsloth's 'unsloth' checkpointing) (default: unsloth true, others false)")
    compile: bool | None = Field(default=None, description="torch.compile of the layers and the loss "
                                 "(default: false)")
    optimizer_in_backward: bool | None = Field(
        default=None, description="step each parameter as its gradient is ready (torchtune optimizer_in_bwd); "
        "needs grad_accum_steps 1 (default: false)")
    adapter_dtype: Literal["auto", "bf16", "fp16", "fp32"] = Field(
        default="auto", description="LoRA adapter dtype (the optimizer's states take it); auto: peft's "
        "autocast_adapter_dtype (fp32) for hf, axolotl, unsloth and pytorch, the model dtype for torchtune and "
        "SimpleTuner, fp32 for kohya (bf16 under bf16-true: --full_bf16) and ai-toolkit, and for diffusers under "
        "fp16-mixed only")
    checkpoint_every: int = Field(default=1, ge=1, le=1000, description="with grad_checkpointing full: "
                                  "checkpoint one decoder layer in N (torchtitan's layer-selective AC)")
    transformers_version: str | None = Field(
        default=None, description="the transformers release running the model (hf, axolotl, pytorch): before "
        "4.46 the model returns fp32 logits and the loss shifts a copy of them; a Whisper transcription before 4.37 "
        "builds its log-mel features with numpy's per-frame loop, and before 5.20 its timestamp processor loops "
        "over the windows (default: the current release)")
    torch_version: str | None = Field(
        default=None, description="the PyTorch release under the stack: which kernel SDPA runs on Hopper and newer "
        "(cuDNN's in 2.5.0, 2.9 and from 2.11, FlashAttention-2 otherwise) (default: the current release)")
    torchtune_version: str | None = Field(
        default=None, description="the torchtune release whose recipes run (stack torchtune): 0.1 pinned "
        "torchao 0.1, which quantized each NF4 weight in one piece at model init; before 0.3 the distributed recipes "
        "wrapped the model in FSDP1 (default: the current release)")
    # training
    method: Literal["full", "lora", "qlora"] = "full"
    train_objective: Literal["sft", "dpo"] = Field(
        default="sft", exclude_if=lambda v: v == "sft",  # said when set: other scenarios read as they did
        description="sft: next-token loss on each sequence (SFT, pre-training); dpo: preference pairs as TRL's "
        "DPOTrainer (stacks hf, axolotl, unsloth) or torchtune's DPO recipes run them: chosen and rejected as one "
        "batch of twice the micro-batch, plus a reference forward without gradients (a frozen copy of the model "
        "under method full; the base with the adapters off under lora and qlora) (default: dpo for a dataset of "
        "chosen/rejected pairs, else sft)")
    precompute_ref_log_probs: bool = Field(
        default=False, exclude_if=lambda v: not v, description="with train_objective dpo: TRL's "
        "precompute_ref_log_probs: the reference's log-probabilities computed in one pass before training, so no "
        "reference model or reference forward in the step")
    precision: Precision | None = Field(
        default=None, description="-mixed: fp32 master weights + autocast; -true: one dtype throughout; "
        "fp4-mixed: NVFP4 linears (Transformer Engine, Blackwell, stack megatron) "
        "(default: bf16-mixed; torchtune and pytorch bf16-true)")
    tf32: bool = Field(default=False, description="with precision fp32: matmuls on TF32 tensor cores "
                       "(torch.backends.cuda.matmul.allow_tf32, off by default since PyTorch 1.12), timed at the TF32 "
                       "rate; off: at the fp32 rate")
    quant: str | None = Field(default=None, description="default: the checkpoint's own quantization_config")
    optimizer: Optimizer = "adamw"
    optimizer_impl: Literal["fused", "foreach", "for-loop"] = Field(
        default="fused", description="AdamW implementation: fused (torch's one kernel; the HF Trainer's since torch "
        "2.8), foreach (one kernel per op over all tensors), for-loop (a Python loop over the tensors, one kernel "
        "per op per tensor: transformers' own AdamW, the Trainer's adamw_hf before transformers 4.32, the default "
        "of a text encoder or Whisper plan given an older transformers_version; planned for those models only)")
    lora_rank: int = Field(default=16, ge=1, le=4096)
    lora_targets: Literal["all-linear"] | list[str] = "all-linear"
    lora_dropout: float = Field(default=0.0, ge=0.0, lt=1.0)
    qlora_fp32_upcast: bool | None = Field(
        default=None, description="peft prepare_model_for_kbit_training casts non-4-bit weights to fp32 "
        "(default: true for hf and axolotl; false for unsloth, torchtune and pytorch)")
    micro_batch_size: int = Field(default=1, ge=1, le=65_536)
    seq_len: int = Field(default=2048, ge=1, le=10_000_000)
    grad_accum_steps: int = Field(default=1, ge=1, le=1_000_000)
    grad_checkpointing: Literal["none", "selective", "full"] | None = Field(
        default=None, description="selective: the stack's per-op policy (torchtitan, torchtune) "
        "(default: none; full for torchtune, unsloth, axolotl and hf QLoRA (prepare_model_for_kbit_training); "
        "selective for torchtitan)")
    attention: Literal["eager", "sdpa", "flash"] = "sdpa"
    train_tokens: float | None = Field(default=None, gt=0, le=1e16, allow_inf_nan=False)
    # whole jobs: evaluation passes and checkpoint saves, priced as their own parts of the time (market/job.py)
    eval_interval: int | None = Field(default=None, ge=1, le=10**9, description="optimizer steps between "
                                      "evaluation passes, counted in the time and cost (default: none)")
    eval_tokens: float | None = Field(default=None, gt=0, le=1e13, allow_inf_nan=False, description="tokens of "
                                      "one evaluation pass (default with eval_interval, stack megatron: NeMo's "
                                      "limit_val_batches, 32 global batches)")
    save_interval: int | None = Field(default=None, ge=1, le=10**9, description="optimizer steps between "
                                      "checkpoint saves, each a pause of its size / disk_gbs (default: none "
                                      "counted)")
    # the training data (gpuplan.dataset): a file or id, or the shorthand samples x mean_tokens
    dataset: str | None = Field(default=None, min_length=1, description="training data: a .jsonl, .json, "
                                ".parquet or .csv file (chat messages, prompt/completion or text) or a Hugging Face "
                                "dataset id; sets train_tokens, packing and the recipe (records of prompt, chosen "
                                "and rejected: train_objective dpo)")
    tokenizer: str | None = Field(default=None, min_length=1, description="tokenizer.json (or its folder, or a "
                                  "repo in the local Hugging Face cache) that counts the dataset (default: the "
                                  "model's own, from the cache)")
    samples: int | None = Field(default=None, ge=1, le=10**12, description="shorthand without a file: records in "
                                "the data (with mean_tokens)")
    mean_tokens: float | None = Field(default=None, gt=0, le=1e7, allow_inf_nan=False,
                                      description="shorthand: mean tokens per record")
    max_tokens: int | None = Field(default=None, ge=1, le=10_000_000, description="shorthand: longest record")
    epochs: float | None = Field(default=None, gt=0, le=1000, allow_inf_nan=False,
                                 description="passes over the data (default 1): train_tokens = epochs x tokens "
                                 "trained per epoch")
    packing: Literal["none", "bucket", "bfd", "wrapped"] | None = Field(
        default=None, description="none: pad each batch; bucket: group by length; bfd: pack records into full "
        "rows, no attention across them; wrapped: concatenate and cut (default: bfd when records average under "
        "half a sequence, wrapped for torchtitan, else none)")
    model_size: str | None = Field(default=None, description="pretrain a synthetic Llama-style model of this "
                                   "size instead of a named one: 125M, 350M, 760M, 1B, 3B, 7B, 13B, 34B, 70B "
                                   "(another size takes the nearest, said in a note)")
    # inference
    batch_size: int = Field(default=1, ge=1, le=65_536)
    prompt_tokens: int = Field(default=1024, ge=1, le=10_000_000)
    output_tokens: int = Field(default=256, ge=0, le=10_000_000)
    shared_prefix_tokens: int = Field(default=0, ge=0, le=10_000_000, description="tokens every prompt starts with "
                                      "(a system prompt): cached once and reused by the engines that share KV "
                                      "blocks across requests (vLLM V1 in whole blocks, SGLang token by token)")
    # a load on the serving setup: estimate runs the engine's scheduler on it (gpuplan.serving.load)
    users: int | None = Field(default=None, ge=1, le=10_000, description="simulate this many users (closed loop): "
                              "each sends its next request think_time_s after its last reply, as vllm bench serve "
                              "--max-concurrency; the plan gains TTFT, TPOT, ITL and end-to-end percentiles "
                              "(engine vllm, sglang or trtllm; batch_size defaults to it)")
    think_time_s: float = Field(default=0.0, ge=0, le=3600, description="with users: mean seconds a user waits "
                                "between a reply and its next request (0: back to back, as benchmarks run)")
    rate_rps: float | None = Field(default=None, gt=0, le=10_000, description="simulate requests arriving at this "
                                   "rate, requests/s (open loop, Poisson: vllm bench serve --request-rate)")
    length_spread: float = Field(default=oh.SERVING_LENGTH_SPREAD, ge=0, lt=1, description="with users or "
                                 "rate_rps: each request's prompt and output lengths drawn uniformly within (1 +- "
                                 "spread) x prompt_tokens and output_tokens (vllm bench serve --random-range-ratio); "
                                 "0: every request the same length, which keeps a closed loop in lockstep")
    num_requests: int | None = Field(default=None, ge=1, le=100_000, description="with users or rate_rps: "
                                     "requests the simulated run sends (default: 10 per user, or 1,000)")
    preset: Literal["chat", "summarize", "generate", "balanced", "rag", "code"] | None = Field(
        default=None, exclude_if=lambda v: v is None,  # said when set: other scenarios read as they did
        description="the requests' lengths from a named mix, as `gpuplan capacity --preset` draws them (chat: "
        "ShareGPT's long tail, 230 prompt and 203 output tokens on average, at most 1,024 each; the others fixed: "
        "summarize 2048/128, generate 128/2048, balanced 1000/1000, rag 4000/300, code 1500/400): prompt_tokens "
        "and output_tokens become its means")
    kv_cache_dtype: Literal["auto", "fp16", "bf16", "fp8", "int8"] = "auto"
    engine: Literal["transformers", "vllm", "sglang", "llama.cpp", "trtllm", "mlx"] = "transformers"
    gpu_memory_utilization: float = Field(default=0.9, gt=0.0, le=1.0, description="vLLM's share of the card")
    mem_fraction_static: float | None = Field(default=None, gt=0.0, le=1.0,
                                              description="SGLang --mem-fraction-static (weights and KV pool); "
                                              "default: SGLang's own for the card")
    fp8_gemm_backend: Literal["auto", "deep_gemm", "flashinfer_trtllm", "triton"] | None = Field(
        default=None, exclude_if=lambda v: v is None,  # said when set: other scenarios read as they did
        description="SGLang --fp8-gemm-backend, the kernel of a block-scaled fp8 checkpoint's dense linears "
        "(DeepSeek-V3/R1, Kimi K2, the Qwen3 FP8 releases): deep_gemm (DeepGEMM, on Hopper and Blackwell), "
        "flashinfer_trtllm (FlashInfer's groupwise FP8 GEMM, B200/B300 only: about a third of DeepGEMM's speed on "
        "prompt-sized GEMMs) or triton (Triton's, about 0.3 of DeepGEMM's); auto and the default: SGLang's own "
        "pick, DeepGEMM where it runs (a launch with SGL_ENABLE_JIT_DEEPGEMM=false, as InferenceX's DeepSeek "
        "scripts run, picks flashinfer_trtllm on a B200/B300 and triton on a Hopper card)")
    scheduler_recv_interval: int | None = Field(
        default=None, ge=1, le=100_000, exclude_if=lambda v: v is None,  # said when set
        description="SGLang --scheduler-recv-interval: a busy scheduler takes in new requests only every N decode "
        "steps (and right after a prefill batch), so a request waits up to N steps before its prompt runs "
        "(InferenceX's DeepSeek-R1 scripts: 10, and 30 from 16 requests at 8 GPUs); default: SGLang's 1, every step")
    max_num_batched_tokens: int | None = Field(default=None, ge=1, le=10_000_000,
                                               description="vLLM scheduler token budget per step (TensorRT-LLM "
                                               "max_num_tokens); default: the engine's own")
    max_num_seqs: int | None = Field(default=None, ge=1, le=65_536,
                                     description="vLLM's cap on running sequences (TensorRT-LLM max_batch_size); "
                                     "default: the engine's own")
    free_gpu_memory_fraction: float | None = Field(default=None, gt=0.0, le=1.0, description="TensorRT-LLM: the "
                                                   "share of the memory left free after the weights and the "
                                                   "profiling forward that its KV cache takes (default 0.9)")
    tokens_per_block: int | None = Field(default=None, ge=1, le=1024, description="TensorRT-LLM: tokens per KV "
                                         "cache block (default 32)")
    capacity_scheduler_policy: Literal["guaranteed_no_evict", "max_utilization"] | None = Field(
        default=None, description="TensorRT-LLM's scheduler_config.capacity_scheduler_policy: guaranteed_no_evict "
        "(the default) admits a request when blocks for its whole prompt + output are free; max_utilization (MLPerf's "
        "harness) admits while the tokens held now fit, pausing requests when the pool fills")
    trtllm_backend: Literal["pytorch", "tensorrt"] | None = Field(
        default=None, exclude_if=lambda v: v is None,  # said when set: other scenarios read as they did
        description="TensorRT-LLM's runtime, trtllm-serve --backend: pytorch (the default since 1.0) runs a step "
        "that holds a prompt from its Python modules without a CUDA graph; tensorrt runs a built TensorRT engine "
        "from the C++ runtime, as MLPerf's submissions do")
    max_model_len: int | None = Field(default=None, ge=MIN_MODEL_LEN, le=MAX_MODEL_LEN,
                                      description="vLLM --max-model-len; default: the model's context")
    speculative_method: Literal["none", "ngram", "draft", "eagle", "eagle3", "mtp"] = Field(
        default="none", exclude_if=lambda v: v == "none",  # said when set: other scenarios read as they did
        description="speculative decoding (engine vllm, sglang or trtllm): ngram (prompt lookup on the CPU), draft "
        "(a smaller model, draft_model), eagle / eagle3 (an EAGLE head: one decoder layer of the model's shape), mtp "
        "(the checkpoint's MTP layers, DeepSeek-V3/R1); each step drafts speculative_tokens tokens, then the model "
        "verifies them at once and keeps acceptance_length tokens a sequence on average")
    speculative_tokens: int | None = Field(default=None, ge=1, le=16, exclude_if=lambda v: v is None,
                                           description="with speculative_method: tokens drafted per step (vLLM "
                                           "num_speculative_tokens, SGLang --speculative-num-steps, TensorRT-LLM "
                                           "max_draft_len); default 3")
    acceptance_length: float | None = Field(
        default=None, ge=1.0, le=17.0, exclude_if=lambda v: v is None, description="with speculative_method: mean "
        "tokens a verify step yields per sequence, the model's own included (vLLM's 'Mean acceptance length', "
        "SGLang's accept length); default: the published figure for the method and speculative_tokens (mtp: "
        "TensorRT-LLM's DeepSeek-R1 1.92 / 2.58 / 2.82 / 2.99 / 3.01 at 1-5 tokens), else required")
    draft_model: str | None = Field(default=None, exclude_if=lambda v: v is None, description="with "
                                    "speculative_method draft: the draft model (a bundled name, a Hugging Face id "
                                    "or a config.json), sharing the model's vocabulary; with eagle or eagle3: the "
                                    "head's Hugging Face id, which the launch files load (its size is taken from "
                                    "the model's shape)")
    engine_version: str | None = Field(default=None, description="the engine release whose memory, scheduler and "
                                       "timing rules apply (vLLM 0.6.3 ... 0.33.0: V0 before 0.8, async scheduling "
                                       "from 0.14; SGLang 0.3 ... 0.5: the overlap scheduler from 0.4, DeepSeek's "
                                       "fused kernels from 0.5; llama.cpp b1843 ... as its release tag b<N>: "
                                       "quantized prompts through dequantize + cuBLAS before b3121); default: the "
                                       "current release")
    entry_point: Literal["serve", "offline"] = Field(
        default="serve", description="vLLM entry point: `vllm serve` or the offline LLM class (their defaults "
        "differ)")
    enforce_eager: bool = Field(default=False, description="vLLM --enforce-eager: no CUDA graphs")
    chunked_prefill: bool | None = Field(
        default=None, description="split long prompts over several steps: vLLM --enable-chunked-prefill / "
        "--no-enable-chunked-prefill, SGLang --chunked-prefill-size -1 to turn it off; off, a step takes whole "
        "prompts and vLLM's profiling run (so its KV pool) is sized for max_model_len tokens; default: the engine's "
        "own by release (vLLM V1 on, V0 on only past 32,768 tokens of context; SGLang on)")
    async_scheduling: bool | None = Field(
        default=None, description="vLLM --async-scheduling / --no-async-scheduling: the engine core schedules step "
        "N+1 while the GPU runs step N, so the host's work per step hides behind the GPU's up to its length; "
        "default: the release's own (on from 0.14 without pipeline parallelism, off before; the flag came in "
        "0.10)")
    flashinfer_sampler: bool | None = Field(
        default=None, description="vLLM V1's top-k/top-p sampler is FlashInfer's kernel (its log says 'Using "
        "FlashInfer for top-p & top-k sampling': V1 took it whenever FlashInfer was importable from 0.9 to 0.11.0, "
        "and with VLLM_USE_FLASHINFER_SAMPLER=1 after) rather than PyTorch's sort; it sets the profiling run's "
        "sampler peak, so the KV pool; default: the sort")
    ubatch_tokens: int | None = Field(default=None, ge=1, le=1_000_000,
                                      description="llama.cpp --ubatch-size (default 512)")
    flash_attention: Literal["auto", "on", "off"] = Field(
        default="auto", description="llama.cpp --flash-attn (auto: on where the backend supports it)")
    cpu_layers: bool = Field(default=False, description="llama.cpp: count a run with layers left in system RAM "
                             "(on the CPU, slow) as fitting; by default it fits only with every layer on the GPU")
    extra_gpus: list[str] | None = Field(default=None, max_length=7, description="llama.cpp: the cards beside gpu, "
                                         "one per device in device order (rtx-3090): a mixed split of the layers")
    tensor_split: list[float] | None = Field(default=None, max_length=8, description="llama.cpp --tensor-split: "
                                             "each device's share of the layers, gpu first (default: in proportion "
                                             "to each card's memory, as llama.cpp splits by free memory)")
    # llama.cpp split: gpu's place in llama.cpp's device order (0: the first, as tensor_split and extra_gpus list
    # it); not input: the split's plan of each device sets it (gpuplan.plan.split), as llama.cpp places layers by it
    _split_device: int = PrivateAttr(default=0)
    # hardware and parallelism
    gpu: str | None = None
    wired_limit_mb: int | None = Field(
        default=None, ge=1024, le=16_777_216, description="Apple silicon: macOS `sysctl iogpu.wired_limit_mb`, the "
        "unified memory the GPU may wire (default: macOS's share, about 2/3 of RAM up to 36 GB and 3/4 above)")
    num_gpus: int = Field(default=1, ge=1, le=1024)
    num_nodes: int = Field(default=1, ge=1, le=4096)
    sharding: Literal["single", "ddp", "zero1", "zero2", "zero3", "fsdp", "fsdp1", "fsdp2"] | None = Field(
        default=None, description="zero*: DeepSpeed; fsdp: the stack's FSDP (fsdp1 for hf, axolotl and "
        "pytorch, fsdp2 for torchtune and torchtitan) (default: single on one GPU, else ddp)")
    tp: int = Field(default=1, ge=1, le=1024)
    pp: int = Field(default=1, ge=1, le=1024)
    cp: int = Field(default=1, ge=1, le=1024, description="context parallel ranks (stack megatron): each holds "
                    "seq_len / cp tokens of every sequence, ring attention passes keys and values between them")
    ep: int = Field(default=1, ge=1, le=1024, description="expert parallel ranks (MoE models): each holds "
                    "num_experts / ep experts of every MoE layer; training: stack megatron; serving: engine vllm, "
                    "sglang or trtllm, a divisor of tp (SGLang --ep-size, vLLM --enable-expert-parallel, "
                    "TensorRT-LLM moe_expert_parallel_size), tokens sent to their experts by all-to-all")
    attention_dp: bool = Field(
        default=False, exclude_if=lambda v: not v, description="serving an MoE model over tp GPUs: attention data "
        "parallel, each GPU runs attention whole for its own requests and holds their KV cache (SGLang "
        "--enable-dp-attention, vLLM --data-parallel-size, TensorRT-LLM enable_attention_dp)")
    moe_dispatch: Literal["allgather", "deepep"] | None = Field(
        default=None, exclude_if=lambda v: v is None, description="with ep and attention_dp: how tokens reach their "
        "experts: allgather (gather the batch, reduce-scatter the outputs: SGLang's and vLLM's default) or deepep "
        "(DeepEP all-to-all: SGLang --moe-a2a-backend deepep, vLLM --all2all-backend deepep_low_latency); default: "
        "the engine's own")
    vpp: int = Field(default=1, ge=1, le=128, description="virtual pipeline stages per rank (stack megatron, "
                     "interleaved 1F1B): smaller bubble, more micro-batches in flight")
    fp8_recipe: Literal["delayed", "current"] | None = Field(
        default=None, description="Transformer Engine fp8 scaling with precision fp8-mixed (stack megatron): "
        "delayed (amax history) or current (per-tensor, this step's amax) (default: delayed)")
    tp_overlap: Literal["none", "backward", "userbuffers"] | None = Field(
        default=None, exclude_if=lambda v: v is None, description="stack megatron, with tp: what hides tensor "
        "parallelism's collectives: backward (Megatron-Core's and Transformer Engine's linears run the backward's "
        "all-gathers and reduce-scatters behind their gradient GEMMs; the forward's wait), userbuffers "
        "(--tp-comm-overlap, Transformer Engine's userbuffers: the forward's too, pipelined with their GEMMs) or none "
        "(every collective waits: Megatron-LM in 2021) (default: backward)")
    cuda_graphs: bool | None = Field(
        default=None, description="Megatron-Core CUDA graphs (enable_cuda_graph, cuda_graph_scope full_iteration; "
        "stack megatron): each step replays its captured kernels, no per-kernel host launches (default: false)")
    fp8_attention: bool | None = Field(
        default=None, description="Transformer Engine fp8 attention (fp8_dot_product_attention with "
        "NVTE_FP8_DPA_BWD; stack megatron, precision fp8-mixed): attention at the fp8 rate, its q, k, v and "
        "output saved in fp8 (default: false)")
    fp8_activation_store: bool | None = Field(
        default=None, description="Megatron-Core activation_func_fp8_input_store (stack megatron, precision "
        "fp8-mixed): the MLP activation's input (SwiGLU's FC1 output) saved in fp8 for the backward (default: false)")
    fp8_transpose_cache: bool | None = Field(
        default=None, exclude_if=lambda v: v is None, description="stack megatron, precision fp8-mixed: Transformer "
        "Engine keeps each fp8 weight's transposed copy for the backward between steps (false: Megatron-Core's "
        "disable_parameter_transpose_cache, ROCm Transformer Engine's keep_fp8_weight_transpose_cache=False, as "
        "AMD's MLPerf LoRA configs set it: each transpose made for its GEMM and freed) (default: true where the "
        "card's fp8 GEMMs take the TN layout only, Hopper, Ada and AMD's cards)")
    recompute_layers: int | None = Field(
        default=None, ge=1, le=1000, exclude_if=lambda v: v is None, description="stack megatron, with "
        "grad_checkpointing full: Megatron-Core's recompute_method block with recompute_num_layers N: the first N "
        "layers of each pipeline stage re-run their forward, the others keep everything (AMD's MLPerf MI300X LoRA: "
        "21 of 80) (default: every layer)")
    offload: Literal["none", "optimizer", "optimizer+params"] = "none"
    host_ram_gib: float | None = Field(default=None, gt=0, le=1e6, allow_inf_nan=False,
                                       description="RAM of each machine, GiB: offloaded states and llama.cpp's CPU "
                                       "layers must fit in it (default: 64 GiB per GPU; a unified-memory computer: "
                                       "the part of its pool the GPU does not take)")
    display: Literal["none", "linux", "windows"] = Field(
        default="none", exclude_if=lambda v: v == "none",  # said when set: other scenarios read as they did
        description="the card also drives a desktop on this OS: the memory the desktop holds "
        "(ComfyUI's default reserve: 0.4 GiB on Linux, 0.6-0.7 GiB on Windows) is counted on the card beside the job")
    # pricing (speed and cost sections need a gpu)
    provider: str | None = Field(default=None, description="price on this provider's offers only (e.g. runpod; "
                                                           "default: every provider's)")
    pricing: Pricing = Field(
        default="on_demand", description="on-demand, spot or any rented offer; owned: your own cards, priced by "
        "their power only (a card no offer prices is priced so too)")
    # at least 0.01 h (36 s), 70x below the shortest mean of the priors' ranges (0.7 h): 5e-324 overflowed
    # capacity's spot fleet (ceil of infinite replicas) and 1e-300 sized it at 1e299 replicas (fuzz_s31)
    mtbi_hours: float | None = Field(default=None, ge=0.01, le=1e6, allow_inf_nan=False,
                                     description="mean hours between spot interruptions (default: the AWS spot "
                                     "traces' 2 under 8 GPUs, 1 from 8; data/providers.yaml)")
    disk_gbs: float = Field(default=1.0, ge=0.001, le=1000, allow_inf_nan=False,
                            description="checkpoint write speed, GB/s")
    max_price_age_days: int = Field(default=90, ge=0, le=100_000,
                                    description="leave out prices observed longer ago than this")
    include_low_confidence: bool = Field(default=False, description="also rank prices marked low confidence")
    dataset_gb: float | None = Field(default=None, ge=0, le=1e7, allow_inf_nan=False,
                                     description="training data on disk, GB (default: 4 bytes per train token)")

    # models that are not decoder LLMs (gpuplan.plan.modules): diffusion pipelines, encoder-decoders, encoders. Left
    # out of every dump (exclude): a decoder's answers stay as they were; the module plan reports them itself.
    resolution: str | None = Field(
        default=None, exclude=True, description="diffusion: image size in pixels, 1024 or WIDTHxHEIGHT (1216x832), "
        "or aspect buckets separated by commas (1024x1024,1216x832,832x1216): a training step's time averages the "
        "buckets, memory takes the largest (default: the pipeline's, 1024 for SDXL, SD3 and FLUX.1)")
    inference_steps: int | None = Field(
        default=None, ge=1, le=10_000, exclude=True, description="diffusion generation: denoising steps per image "
        "(diffusers' num_inference_steps; default: the pipeline's: 50 SD/SDXL, 28 SD3 and FLUX.1-dev, 4 "
        "FLUX.1-schnell)")
    cfg: bool | None = Field(default=None, exclude=True, description="diffusion generation: classifier-free "
                             "guidance runs the denoiser on the negative prompt too, doubling its batch (default: "
                             "true for SD, SDXL and SD3; false for FLUX.1, guidance-distilled)")
    cpu_offload: Literal["none", "model", "sequential"] = Field(
        default="none", exclude=True, description="diffusion generation: diffusers' enable_model_cpu_offload (one "
        "model of the pipeline on the GPU at a time) or enable_sequential_cpu_offload (one layer at a time)")
    cache_latents: bool | None = Field(default=None, exclude=True, description="diffusion training: the VAE "
                                       "encodes the images once before training and leaves the GPU (default: the "
                                       "trainer's)")
    text_encoders: Literal["cached", "frozen", "trained", "trained-all"] | None = Field(
        default=None, exclude=True, description="diffusion training: cached: prompt embeddings computed once "
        "before training, the text encoders off the GPU; frozen: on the GPU, run every step without gradients; "
        "trained: trained with the denoiser as the trainer's switch does it: with LoRA, adapters on the CLIP "
        "encoders (kohya's default for LoRA, diffusers' --train_text_encoder, ai-toolkit's train_text_encoder); "
        "with full fine-tuning, the encoders whole (diffusers' train_dreambooth*.py --train_text_encoder: T5 too "
        "for SD3; kohya's train_db.py, sdxl_train.py, sd3_train.py); trained-all: T5-XXL too, where the trainer does "
        "(SD3 full fine-tunes: diffusers' train_dreambooth_sd3.py, kohya's sd3_train.py --train_t5xxl; kohya's SD3 and "
        "FLUX LoRA with network_args train_t5xxl=True) (default: the trainer's)")
    set_grads_to_none: bool | None = Field(
        default=None, exclude=True, description="diffusion full fine-tuning: the trainer frees the gradients after "
        "each optimizer step (optimizer.zero_grad(set_to_none=True)), so the step holds them only from its backward "
        "on (default: true, as kohya, SimpleTuner, ai-toolkit and diffusers' scripts run; false for diffusers' "
        "train_dreambooth.py, which frees them only with --set_grads_to_none)")
    blocks_to_swap: int | None = Field(
        default=None, ge=0, le=1_000, exclude=True, description="diffusion training with kohya's sd-scripts on "
        "FLUX.1: --blocks_to_swap, transformer blocks whose weights live in CPU memory and are swapped onto the GPU "
        "in turn during the forward and the backward (N // 2 double blocks and 2 x (N - N // 2) single blocks; at "
        "most 35)")
    prior_preservation: bool = Field(default=False, exclude=True, description="DreamBooth's prior-preservation "
                                     "loss: a class image beside each instance image (twice the batch)")
    train_steps: int | None = Field(default=None, ge=1, le=10**9, exclude=True, description="diffusion and "
                                    "encoder-decoder training: optimizer steps of the job, for hours and cost")
    decoder_tokens: int | None = Field(default=None, ge=1, le=1_000_000, exclude=True, description="encoder-"
                                       "decoders: tokens through the decoder per sample (Whisper: a window's "
                                       "transcript, at most 448, default 128 in training and, for a recording "
                                       "(audio_seconds), a published podcast transcript's 3.37 tokens a second of "
                                       "speech (4.02 with timestamps) plus the forced and end tokens: 105 a window, "
                                       "124 with timestamps); T5/BART: the "
                                       "target, default seq_len / 4); "
                                       "seq_len is the source's tokens (Whisper's encoder always sees 30 s: 1,500 "
                                       "frames)")
    audio_seconds: float | None = Field(default=None, gt=0, le=360_000, exclude=True, description="Whisper: "
                                        "seconds of audio per sample. Inference: the recording to transcribe, cut "
                                        "as transformers' pipeline cuts it (30 s windows overlapping 5 s on each "
                                        "side, 20 s new per window after the first; batch-size windows per pass); "
                                        "training: each clip, at most 30 s. Whisper pads every window to 30 s, so "
                                        "its encoder always runs 1,500 frames (100 log-mel frames a second, halved "
                                        "by its strided convolution)")
    timestamps: bool = Field(default=False, exclude=True, description="Whisper inference: return_timestamps=True "
                             "in transformers' speech-recognition pipeline. Its generate runs "
                             "WhisperTimeStampLogitsProcessor at every decoder step (host work per step and per "
                             "window); the decoder tokens given (output_tokens or decoder_tokens) count the "
                             "timestamp tokens, about 19.5 a 30 s window of conversation (the default counts "
                             "them)")

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

    @field_validator("engine_version", "transformers_version", "torchtune_version", "torch_version")
    @classmethod
    def _version(cls, value: str | None, info) -> str | None:
        if value is None:
            return None
        text = str(value).strip().lstrip("v")
        if info.field_name == "engine_version" and re.fullmatch(r"b\d+", text):  # a llama.cpp release tag: b2413
            if info.data.get("engine") not in (None, "llama.cpp"):
                raise ValueError(f"engine_version {value!r} is a llama.cpp build (b<N>); {info.data['engine']} "
                                 "takes a release number like 0.33.0")
            return text
        # as `vllm --version` / pip print them (PEP 440): 0.10.1.1, 0.11.0rc2, 0.6.5.dev, 0.6.3.post1, +local
        if not re.fullmatch(r"\d+(\.\d+){1,3}((a|b|rc)\d*)?(\.?post\d*)?(\.?dev\d*)?(\+[\w.]+)?", text):
            example = {"transformers_version": "4.38.2 or 4.57", "torchtune_version": "0.1.1 or 0.6",
                       "torch_version": "2.5.1 or 2.11"}.get(
                info.field_name, "0.33.0 or 0.6.3")
            raise ValueError(f"{info.field_name} takes a release number like {example}, not {value!r}")
        return text

    @field_validator("extra_gpus", "tensor_split", mode="before")
    @classmethod
    def _comma_list(cls, value: Any) -> Any:
        """``rtx-3090,rtx-3060`` and ``24,24`` as the command line gives them: lists."""
        return [part.strip() for part in value.split(",") if part.strip()] if isinstance(value, str) else value

    @field_validator("resolution", mode="before")
    @classmethod
    def _side(cls, value: Any) -> Any:
        """``resolution: 1024`` as YAML and JSON give one side unquoted (a number): its text, as the command line
        gives it (session 17's outside fuzzer: refused as "Input should be a valid string", where the field's own
        help says "1024")."""
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @field_validator("tensor_split")
    @classmethod
    def _shares(cls, value: list[float] | None) -> list[float] | None:
        """Shares llama.cpp reads: each from a float's least normal value (llama-server parses ``-ts`` with
        ``std::stof``, common/arg.cpp, which throws out_of_range below it: s22 fuzz's 1e-320) to 1e6."""
        if value is not None and (not value or any(not (FLOAT32_LEAST <= v < 1e6) for v in value)):
            raise ValueError("tensor_split takes one positive share per device, each from 1.2e-38 (the least "
                             "llama.cpp reads) to 1e6, e.g. 24,24 or 3,1")
        return value

    @field_validator("extra_gpus")
    @classmethod
    def _cards(cls, value: list[str] | None) -> list[str] | None:
        """A list naming no card (``--extra-gpus ''`` or ``,,``) is refused as every list option naming nothing is
        (session 15's ``--gpus ,,``); it was planned as no split. A counted card (``2x3090``) is that many cards,
        read by the one parser of ``--gpu`` (:func:`gpuplan.hardware.counted_card`)."""
        if value is not None and not value:
            raise ValueError("extra_gpus names no card: name the cards beside gpu (rtx-3090,rtx-3060) or drop it")
        if value is None:
            return value
        out = [(card, count or 1) for card, count in map(counted_card, value)]
        return [card for card, count in out for _ in range(count)]

    @field_validator("lora_targets", mode="before")
    @classmethod
    def _targets_written(cls, value):
        """Module names written as the command line takes them (``q_proj,v_proj``), in a file or a request too: a
        text other than all-linear was "lora_targets.literal['all-linear']: Input should be 'all-linear'" where
        ``--lora-targets`` named the modules the model lacks (s19-fuzz2); a value of another type in one sentence."""
        if isinstance(value, str) and value.strip() != "all-linear":
            return [name.strip() for name in value.split(",") if name.strip()]
        if isinstance(value, str):
            return "all-linear"
        if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
            raise ValueError("lora_targets takes all-linear or module names like [q_proj, v_proj]")
        return value

    @field_validator("lora_targets")
    @classmethod
    def _targets(cls, value):
        if isinstance(value, list) and not value:
            raise ValueError("lora_targets is empty: use all-linear or name modules like [q_proj, v_proj]")
        return value

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        """``framework`` and ``strategy``, the fields' names before ``stack`` and ``sharding``, still read (said
        once: :func:`gpuplan.errors.renamed`); both names at once is one sentence."""
        if not isinstance(data, Mapping) or not OLD_NAMES.keys() & data.keys():
            return data
        data = dict(data)
        for old in sorted(OLD_NAMES.keys() & data.keys()):
            new = OLD_NAMES[old]
            if new in data and data[new] != data[old]:
                raise ValueError(f"give {new} or its old name {old}, not both")
            data[renamed(old, "scenario field")] = data.pop(old)
        return data

    @model_validator(mode="before")
    @classmethod
    def _choices_as_spelled(cls, data: Any) -> Any:
        """A choice written with other case or punctuation (``engine: vLLM``, ``method: LoRA``, ``sharding:
        ZeRO-3``) is that choice (:func:`gpuplan.errors.spelled_choice`); anything else is left to the field's own
        check, whose sentence suggests the closest choices."""
        if not isinstance(data, Mapping):
            return data
        fixed = {k: spelled_choice(v, _literal_choices()[k]) for k, v in data.items()
                 if isinstance(v, str) and k in _literal_choices()}
        return {**data, **fixed} if any(fixed[k] is not data[k] for k in fixed) else data

    @model_validator(mode="before")
    @classmethod
    def _counted_gpu(cls, data: Any) -> Any:
        """``gpu: 2x3090``, as ``fit --gpu`` and ``--have`` spell cards: the card and ``num_gpus`` 2, read by the
        one parser (:func:`gpuplan.hardware.counted_card`); a ``num_gpus`` that says another count is one sentence."""
        if not isinstance(data, Mapping) or not isinstance(data.get("gpu"), str):
            return data
        if "," in data["gpu"]:
            raise ValueError(_listed_gpu(data["gpu"], data.get("task")))
        if not data["gpu"].strip():  # ``--gpu ''`` was planned as no card without a word (s29 walk)
            raise ValueError("gpu is empty: name a card (rtx-4090, 2x3090, h100-sxm), or leave gpu out to plan "
                             "without one")
        card, count = counted_card(data["gpu"])
        if count is None:
            return data
        given = data.get("num_gpus")
        if given is not None and given != count:
            raise ValueError(f"gpu {data['gpu'].strip()} says {count} cards and num_gpus says {given}: give the "
                             f"count once (--gpu {count}x{card}, or --gpu {card} --num-gpus {given})")
        return {**data, "gpu": card, "num_gpus": count}

    @model_validator(mode="before")
    @classmethod
    def _no_yes_for_a_number(cls, data: Any) -> Any:
        """A yes/no (``true``, YAML's ``yes``) given for a count or an amount: pydantic's lax mode reads it as 1 or
        0, so ``batch_size: true`` planned one request and ``num_gpus: yes`` one GPU without a word."""
        said = yes_for_a_number(cls, data)
        if said:
            raise ValueError(f"scenario field {said}")
        return data

    @model_validator(mode="before")
    @classmethod
    def _synthetic_model(cls, data: Any) -> Any:
        """``model_size`` names a synthetic model (:mod:`gpuplan.model.synthetic`) in place of ``model``."""
        if isinstance(data, dict) and data.get("model_size"):
            if data.get("model") and not str(data["model"]).startswith("synthetic-"):
                raise ValueError("give model or model_size, not both")
            from ..model.synthetic import synthetic_name

            data = {**data, "model": synthetic_name(str(data["model_size"]))}
        return data

    @model_validator(mode="after")
    def _defaults(self, info: ValidationInfo) -> "Scenario":
        """Fill the fields left unset with the defaults the given ones imply, then check the rules across fields.

        The defaults come from pure functions of the validated input: the stack's recipe and the card's
        precision (:func:`gpuplan.scenario.stacks.stack_fills`), then the training data's (:func:`_data_defaults`);
        :func:`_fill` sets them, which leaves ``model_fields_set`` the set given explicitly. They are not passed in
        to a second validation: they are gpuplan's own choices, not input (torchtitan's fp8-mixed resolves
        ``adapter_dtype`` to fp8, outside the field's choices), and validating twice would cost half as much again
        per scenario, on the search's hot path. What the result cannot run is refused when it is resolved
        (:mod:`gpuplan.plan.refusals`), not here: these rules are about the input alone."""
        _fill(self, _pretraining_stack(self))
        _fill(self, stacks.stack_fills(self.__dict__, self.model_fields_set))
        _fill(self, _data_defaults(self, read_back=bool(info.context and info.context.get(READ_BACK))))
        _fill(self, _load_defaults(self))
        _fill(self, _split_defaults(self))
        if self.tf32 and self.precision != "fp32":
            raise ValueError(f"tf32 runs fp32 matmuls on TF32 tensor cores: it goes with precision fp32, not "
                             f"{self.precision} (16-bit precisions already run at the 16-bit rate)")
        if self.shared_prefix_tokens and self.task == "train":
            raise ValueError("shared_prefix_tokens is the start every serving prompt shares: drop it for training")
        _speculation(self)
        if self.shared_prefix_tokens >= self.prompt_tokens:
            raise ValueError(f"shared_prefix_tokens ({self.shared_prefix_tokens:,}) must be below prompt_tokens "
                             f"({self.prompt_tokens:,}): the shared start is part of each prompt, which ends with "
                             "tokens of its own")
        return self

    @model_validator(mode="after")
    def _evaluation(self) -> "Scenario":
        """An evaluation pass needs its size: given, or NeMo's recipe default under stack megatron."""
        if self.eval_tokens is not None and self.eval_interval is None:
            raise ValueError("eval_tokens is the size of one evaluation pass: give eval_interval (steps between "
                             "passes) too")
        if self.eval_interval is not None and self.eval_tokens is None and self.recipe.eval_batches is None:
            raise ValueError(f"give eval_tokens (tokens of one evaluation pass) with eval_interval: {self.stack}"
                             " evaluates whatever eval set it is given")
        return self

    @model_serializer(mode="wrap")
    def _without_idle_load(self, handler) -> dict[str, Any]:
        """Every field, but a serving load's (:data:`LOAD_FIELDS`) when none is asked, and a setting of one kind of
        machine where it is not set (``wired_limit_mb``: Macs): defaults that say nothing (the scenario read back
        from its dump is the same)."""
        data = handler(self)
        if self.users is None and self.rate_rps is None:
            for key in LOAD_FIELDS:
                data.pop(key, None)
        if self.wired_limit_mb is None:
            data.pop("wired_limit_mb", None)
        return data

    def __hash__(self) -> int:
        """A hash over every field, a list field (``lora_targets``, ``extra_gpus``, ``tensor_split``) as the tuple
        of its items: pydantic's frozen hash fails on a list, and the caches keyed by a scenario
        (``engines.vllm.named_version`` and the other ``functools.lru_cache`` users) met one as a TypeError
        traceback (fuzz_s16: ``--extra-gpus ''`` with TensorRT-LLM). Equal scenarios hash alike (pydantic's ``==``
        compares the same fields)."""
        return hash(tuple(tuple(v) if isinstance(v, list) else v for v in self.__dict__.values()))

    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> "Scenario":
        """A copy with ``update`` applied to the fields given explicitly, validated again, so that the stack's
        defaults follow the change (changing ``method`` to qlora turns the HF QLoRA recipe's checkpointing on).
        One scenario is validated once (:func:`_copy`), however it is reached: a search and the advice ask for the
        same changed scenario more than once (a layout tried, then planned; a combination of fixes searched, then
        sized), and ``buy`` places one job's scenario, without its cards, on every build."""
        if not update:
            return StoredModel.model_copy(self, deep=deep)  # (named: the pydantic twin runs these methods too)
        given = {**{k: getattr(self, k) for k in self.model_fields_set}, **update}
        key = frozenset((k, tuple(v) if isinstance(v, list) else v) for k, v in given.items())
        try:
            hash(key)
        except TypeError:  # a mapping among the values: validated without the memo
            return scenario_from(given)
        return _copy(key)

    def on_card(self, gpu: str) -> "Scenario":
        """This scenario, given no card, on card ``gpu`` (a search's placement): validated again only where the card
        changes a default (a card without bf16 takes fp16, :func:`gpuplan.scenario.stacks.card_precision`), else a
        copy with the card set."""
        given = self.precision if "precision" in self.model_fields_set else None
        card = {"precision": given, "task": self.task, "gpu": gpu, "stack": self.stack}
        if self.gpu is None and stacks.card_precision(card, self.precision) == self.precision:
            return self.with_resolved({"gpu": gpu})
        return self.model_copy(update={"gpu": gpu})

    def with_resolved(self, update: dict[str, Any]) -> "Scenario":
        """A copy with the fields the resolver sets (:mod:`gpuplan.plan.resolve`: the card's catalog id, the
        serving split), as given fields, without validating again: they change no default (pydantic's own copy)."""
        return StoredModel.model_copy(self, update=update)

    @property
    def recipe(self) -> stacks.Recipe:
        return stacks.RECIPES[self.stack]

    @property
    def length_field(self) -> str:
        """The field that sets one sequence's length: ``seq_len`` when training, ``prompt_tokens`` when serving."""
        return "seq_len" if self.task == "train" else "prompt_tokens"

    @property
    def world_size(self) -> int:
        return self.num_gpus * self.num_nodes

    @property
    def held_at_once(self) -> int:
        """The requests a serving engine's KV pool must hold together for the job to run: ``batch_size``, or one
        under a load (``users``, ``rate_rps``) whose batch was not given: the engine queues what its pool cannot
        hold, and the simulated run says how many ran at once (``batch_size`` taken from ``users`` times the decode
        step, as vllm bench serve --max-concurrency caps it, and asks nothing of the pool)."""
        load = self.users is not None or self.rate_rps is not None
        return 1 if load and "batch_size" not in self.model_fields_set else self.batch_size

    @property
    def dp(self) -> int:
        """Data-parallel ranks: the GPUs left after tensor, pipeline and context parallelism."""
        return self.world_size // (self.tp * self.pp * self.cp)

    @property
    def resolved_sharding(self) -> str:
        """The sharding stage: ``single`` on one data-parallel rank, else ``ddp``, unless set; FSDP's FULL_SHARD
        (fsdp, fsdp1, fsdp2) shards as ZeRO-3 does. :attr:`sharding` tells the engines apart."""
        if self.sharding is None:
            return "single" if self.dp == 1 else "ddp"
        return "zero3" if self.sharding.startswith("fsdp") else self.sharding

    @property
    def sharded_by(self) -> str:
        """Who shards or replicates: ``single``, ``ddp``, ``deepspeed`` (zero1-3), ``fsdp1`` or ``fsdp2``."""
        resolved = self.resolved_sharding
        if resolved.startswith("zero") and not (self.sharding or "").startswith("fsdp"):
            return "deepspeed"
        if (self.sharding or "").startswith("fsdp"):
            return self.sharding if self.sharding != "fsdp" else (self.recipe.fsdp or "fsdp1")
        return resolved

    @property
    def sharding_name(self) -> str | None:
        """The sharding the plan runs, by its engine's name: FSDP by its version (``fsdp1``, ``fsdp2``), DeepSpeed's
        stage (``zero1``-``zero3``), ``ddp``, ``single`` on one GPU; None when tensor, pipeline or context
        parallelism take every GPU (one data-parallel rank: nothing is replicated or sharded)."""
        name = self.sharded_by if self.sharded_by.startswith("fsdp") else self.resolved_sharding
        return None if name == "single" and self.world_size > 1 else name

    @property
    def layout(self) -> str:
        """The parallel layout in words, as every answer labels it: :attr:`sharding_name` and the tensor, pipeline,
        context and expert parallel degrees (``fsdp2``, ``zero3``, ``tp8 pp2``, ``zero1 tp4 pp2``, ``single``)."""
        split = [f"{name}{n}" for name, n in (("tp", self.tp), ("pp", self.pp), ("cp", self.cp), ("ep", self.ep))
                 if n > 1]
        return " ".join(([self.sharding_name] if self.sharding_name else []) + split) or "single"

    @property
    def attention_tp(self) -> int:
        """GPUs one request's attention is split over: ``tp``, or 1 under attention data parallelism."""
        return 1 if self.attention_dp else self.tp

    @property
    def attention_ranks(self) -> int:
        """Attention data-parallel ranks of one model copy, each with its own requests and KV cache (1: none)."""
        return self.tp if self.attention_dp else 1

    @property
    def compute_bytes(self) -> int:
        return 4 if self.precision == "fp32" else 2

    @property
    def adapter_bytes(self) -> int:
        """Bytes per LoRA adapter parameter (and its gradient and optimizer-state element)."""
        return {"bf16": 2, "fp16": 2, "fp32": 4}.get(self.adapter_dtype, self.compute_bytes)


# What torchtitan runs of the fields a size-only model's training may set (gpuplan.scenario.stacks._refuse_torchtitan)
TORCHTITAN_TAKES = {"optimizer": ("adamw",), "precision": ("bf16-mixed", "fp8-mixed", "fp32"),
                    "loss": ("full", "chunked"), "sharding": ("single", "ddp", "fsdp", "fsdp2"),
                    "activation_offload": (False,), "offload": ("none", "optimizer+params")}


def _listed_gpu(gpu: str, task: Any) -> str:
    """The sentence for a list of cards in ``gpu`` (``--gpu rtx-3090,rtx-2080-ti``, session 22's walk), which was
    "unknown GPU ...; did you mean 'rtx-3090-ti'": a plan runs on one kind of card; llama.cpp alone splits a
    served model's layers over different cards (``extra_gpus``, :mod:`gpuplan.plan.split`)."""
    cards = [c.strip() for c in gpu.split(",") if c.strip()]
    first, rest = (cards[0], ",".join(cards[1:])) if len(cards) > 1 else ("CARD", "OTHER")
    if task == "train":
        return (f"gpu names one kind of card, not a list ({gpu.strip()!r}): training over different cards is not "
                f"planned (DDP and FSDP step at the slower card's pace within the smaller card's memory); plan "
                f"that card as many times, --gpu 2x<smaller card>, or each card alone")
    return (f"gpu names one kind of card, not a list ({gpu.strip()!r}): to split a served model over different "
            f"cards, engine llama.cpp takes --gpu {first} --extra-gpus {rest}")


def _speculation(s: Scenario) -> None:
    """The speculative-decoding fields belong together: tokens, an acceptance length or a draft model only with a
    method, of a serving plan; a draft model for method draft (required) or an EAGLE head (its id, optional); the
    draft tokens default to :data:`~gpuplan.overheads.SPECULATIVE_TOKENS` and the acceptance length to the published
    figure at that depth (:data:`~gpuplan.overheads.ACCEPTANCE_LENGTH`), else must be given. What the model and the
    engine cannot run is refused when it is resolved (:func:`gpuplan.engines.speculative.refusal`)."""
    given = [f for f in ("speculative_tokens", "acceptance_length", "draft_model") if getattr(s, f) is not None]
    if s.speculative_method == "none":
        if given:
            raise ValueError(f"{', '.join(given)} describe speculative decoding: set speculative_method, or drop them")
        return
    if s.task == "train":
        raise ValueError("speculative_method is how a serving engine decodes: drop it for training")
    if s.speculative_method == "draft" and s.draft_model is None:
        raise ValueError("speculative_method draft runs a smaller model as the draft: name it in draft_model")
    if s.speculative_method in ("ngram", "mtp") and s.draft_model is not None:
        how = "with the checkpoint's MTP layers" if s.speculative_method == "mtp" else "by prompt lookup"
        raise ValueError(f"speculative_method {s.speculative_method} drafts {how}, not with a model of its own: drop "
                         "draft_model")
    k = s.speculative_tokens or oh.SPECULATIVE_TOKENS
    published = oh.ACCEPTANCE_LENGTH.get((s.speculative_method, k))
    if s.acceptance_length is None and published is None:
        raise ValueError(f"no published acceptance length for speculative_method {s.speculative_method} with {k} "
                         "speculative tokens: give acceptance_length (the mean tokens a step yields, as the engine's "
                         "spec-decode metrics report it)")
    if s.acceptance_length is not None and s.acceptance_length > k + 1:
        raise ValueError(f"acceptance_length {s.acceptance_length:g} is more than the {k + 1} tokens a step with {k} "
                         "speculative tokens verifies: lower it, or raise speculative_tokens")
    _fill(s, {"speculative_tokens": k, "acceptance_length": s.acceptance_length or published})


def _pretraining_stack(s: Scenario) -> dict[str, Any]:
    """A model that exists only as a size (``model_size``) trains from random weights, which a pretraining stack
    does; an SFT trainer (the default, ``hf``) loads pretrained weights and a chat set. So its full training takes
    torchtitan when no stack is given, nothing given is what torchtitan does not run (ZeRO, 8-bit optimizers,
    Liger's loss name the HF/DeepSpeed stack) and the card has bf16 (torchtitan computes in bf16 or float8, never
    fp16: V100, T4 and Apple silicon keep the HF stack's fp16): ``estimate``, ``recommend`` and the launch files
    plan the run that is launched (review 3, Q3: a pick timed on HF ZeRO-2 was launched on torchtitan)."""
    if not s.model_size or s.task != "train" or s.method != "full" or "stack" in s.model_fields_set:
        return {}
    if any(k in s.model_fields_set and getattr(s, k) not in ok for k, ok in TORCHTITAN_TAKES.items()):
        return {}
    if stacks.card_precision(s.__dict__, "bf16-mixed") != "bf16-mixed":  # no bf16 on the card: torchtitan cannot
        return {}
    return {"stack": "torchtitan"}


def _fill(s: Scenario, values: dict[str, Any]) -> None:
    """Set fields of ``s``, a frozen scenario being validated, to their defaults ``values`` (trusted, not validated).
    Pydantic keeps a model's field values in its instance ``__dict__`` and fills it that way itself for trusted data
    (``model_construct``, ``model_copy(update=...)``); ``model_fields_set`` is not touched. (``object.__setattr__``
    per field, the frozen-dataclass idiom, does the same at ~0.1 us a field: 2% more CPU in ``recommend``.)"""
    s.__dict__.update(values)


def _split_defaults(s: Scenario) -> dict[str, Any]:
    """A served model's devices: with ``extra_gpus`` (mixed cards) or ``tensor_split``, one copy of the model split by
    layers over ``num_gpus`` devices (``pp``); a mismatch is one sentence. Which engines split so is their profile's
    word (``Engine.splits_by_share``), asked where the scenario is resolved (:mod:`gpuplan.plan.refusals`)."""
    if not s.extra_gpus and s.tensor_split is None:
        return {}
    if s.task != "infer":
        raise ValueError("extra_gpus and tensor_split split a served model's layers over devices: drop them for "
                         "training")
    n = 1 + len(s.extra_gpus or [])
    if s.extra_gpus and "num_gpus" in s.model_fields_set and s.num_gpus != n:
        raise ValueError(f"extra_gpus names {n} devices with gpu: drop num_gpus or set it to {n}")
    n = n if s.extra_gpus else s.num_gpus
    if s.tensor_split is not None and len(s.tensor_split) != n:
        raise ValueError(f"tensor_split gives {len(s.tensor_split)} shares for {n} devices: one per device, gpu "
                         "first")
    layers = n if s.tp == n and s.pp == 1 else s.pp  # tp n is the layer split the engine runs (plan.resolve)
    if s.tp not in (1, n) or s.num_nodes != 1 or ("pp" in s.model_fields_set and layers != n) or \
            (s.tp == n > 1 and s.pp != 1):
        raise ValueError(f"a split of the layers over {n} devices (extra_gpus, tensor_split) is pp {n} on one machine "
                         f"(tp 1, or tp {n} taken as that layer split)")
    return {"num_gpus": n, "pp": n, "tp": 1}


LOAD_FIELDS = ("users", "think_time_s", "rate_rps", "length_spread", "num_requests")
# the engine a load (users, rate_rps) runs when none is named: `gpuplan capacity`'s default (its --engine); the
# scenario's own default, transformers' generate, has no scheduler to simulate (gpuplan.engines.SIMULATED)
LOAD_ENGINE = "vllm"
# just above FLT_MIN (1.1754944e-38), the least normal float std::stof reads without out_of_range, so that the
# 6 digits launch writes of a share read too
FLOAT32_LEAST = 1.2e-38


def _load_defaults(s: Scenario) -> dict[str, Any]:
    """A serving load's defaults: ``batch_size`` left unset takes ``users``, ``engine`` left unset
    :data:`LOAD_ENGINE` (said by :func:`gpuplan.plan.resolve.load_note`). A load asked of training is refused
    here; the load's own rules (one load, its engine, its prompts) are the resolver's, in the one module of
    refusals (:func:`gpuplan.plan.refusals.scenario_load`), which ``capacity`` asks of its workload too."""
    given = [k for k in LOAD_FIELDS if getattr(s, k) != Scenario.model_fields[k].default]  # (a dump has them all)
    if not given:
        return {}
    if s.task == "train":
        raise ValueError(f"{', '.join(given)} describe a serving load: drop them for training")
    out: dict[str, Any] = {}
    if (s.users is not None or s.rate_rps is not None) and "engine" not in s.model_fields_set and \
            not _a_module(s):  # a load runs an engine's scheduler: vLLM's, as capacity's default (LOAD_ENGINE)
        out["engine"] = LOAD_ENGINE
    if s.users is not None and "batch_size" not in s.model_fields_set and not _a_module(s):
        out["batch_size"] = s.users
    return out


def _data_defaults(s: Scenario, read_back: bool = False) -> dict[str, Any]:
    """The fields the training data decides when they are unset: ``train_tokens`` (Chinchilla's for a synthetic
    model given no data), or ``train_tokens``, ``packing`` and a padded batch's ``seq_len`` from the data
    (:func:`gpuplan.dataset.fields`). Data fields that do not go together raise ``ValueError``. ``read_back``: a
    scenario an answer carries (:func:`read_back`), whose data decided its fields already; the file is not read."""
    given = {k for k in ("dataset", "samples", "mean_tokens", "max_tokens", "tokenizer", "epochs", "packing")
             if getattr(s, k) is not None}
    out: dict[str, Any] = {}
    if s.model_size and s.task == "train" and s.train_tokens is None and not (s.dataset or s.samples):
        from ..model.synthetic import chinchilla_tokens, nearest_size

        out["train_tokens"] = chinchilla_tokens(nearest_size(s.model_size))
    if not given or _a_module(s):  # a module's data is not text: its resolver refuses these, naming its kind
        return out
    if s.task != "train":
        raise ValueError(f"{', '.join(sorted(given))} describe training data: drop them for serving")
    if s.dataset and s.samples:
        raise ValueError("give dataset (a file) or samples with mean_tokens (a shorthand), not both")
    if (s.samples is None) != (s.mean_tokens is None):
        raise ValueError("the shorthand needs both samples and mean_tokens (e.g. --samples 10000 --mean-tokens "
                         "1000)")
    if s.max_tokens is not None and (s.mean_tokens is None or s.max_tokens < s.mean_tokens):
        raise ValueError("max_tokens goes with the shorthand and must be at least mean_tokens")
    if s.tokenizer and not s.dataset:
        raise ValueError("tokenizer counts a dataset file: give dataset too")
    if (s.dataset or s.samples) and not read_back:
        from ..dataset import fields

        out.update(fields(s.__dict__, set(s.model_fields_set), stacks.RECIPES[s.stack]))
    return out


def _a_module(s: Scenario) -> bool:
    """Whether the scenario's model is one that is not a decoder LLM, known without the hub
    (:func:`gpuplan.model.kinds.known_here`): its plan reads no text data and runs on no serving engine, and
    :func:`gpuplan.plan.refusals.module_refusal` refuses those fields in one sentence naming the model's kind and
    what its plan reads instead."""
    from ..model.kinds import known_here

    return known_here(s.model) is not None


FIELDS = tuple(Scenario.model_fields)
# the fields only a model that is not a decoder LLM reads (gpuplan.scenario.modules; refused on a decoder's plan:
# gpuplan.plan.refusals)
MODULE_FIELDS = ("resolution", "inference_steps", "cfg", "cpu_offload", "cache_latents", "text_encoders",
                 "set_grads_to_none", "blocks_to_swap", "prior_preservation", "train_steps", "decoder_tokens",
                 "audio_seconds", "timestamps")
# Fields that mean something for one task only: the normalized result drops the other task's.
TRAIN_ONLY = frozenset({"method", "train_objective", "precompute_ref_log_probs", "optimizer", "optimizer_impl",
                        "lora_rank", "lora_targets", "lora_dropout",
                        "micro_batch_size", "seq_len", "grad_accum_steps", "grad_checkpointing", "train_tokens",
                        "qlora_fp32_upcast", "loss", "loss_chunks", "activation_offload", "compile",
                        "optimizer_in_backward", "adapter_dtype", "checkpoint_every", "blocks_to_swap",
                        "transformers_version", "torchtune_version", "torch_version",
                        "dataset", "tokenizer", "samples", "mean_tokens", "max_tokens", "epochs", "packing",
                        "cp", "vpp", "fp8_recipe", "tp_overlap", "cuda_graphs", "fp8_attention",
                        "fp8_activation_store", "fp8_transpose_cache", "recompute_layers", "eval_interval",
                        "eval_tokens", "save_interval",
                        # a training run's checkpoints on spot (Daly's interval) and its data on disk: a serving
                        # plan is neither checkpointed nor fed a dataset (market.cost.price_job, dataset_gb)
                        "mtbi_hours", "disk_gbs", "dataset_gb"})
# fields that lay out training over GPUs: the web form and the list of defaults leave them out of serving
READ_BACK = "read_back"  # the validation context of a scenario an answer carries (:func:`read_back`)


def read_back(data: Any) -> Scenario:
    """A scenario an answer carries, read back from the answer's JSON: validated as input is, but its training data
    is not read again (the fields the data decided are in the dump; the file may be gone, or hidden by the page)."""
    return data if isinstance(data, Scenario) else Scenario.model_validate(data, context={READ_BACK: True})


OLD_NAMES = RENAMED_FIELDS  # fields renamed (issue 30): the old names still read
# keys of the trainers' own configs (transformers TrainingArguments, TRL's SFTConfig, Axolotl's YAML, peft's
# LoraConfig) that a user pastes into a scenario: gpuplan's name for each, or "" for a key that moves no number
TRAINER_NAMES = {
    "per_device_train_batch_size": "micro_batch_size",
    "gradient_accumulation_steps": "grad_accum_steps", "max_seq_length": "seq_len", "max_length": "seq_len",
    "sequence_len": "seq_len", "num_train_epochs": "epochs", "num_epochs": "epochs", "lora_r": "lora_rank",
    "r": "lora_rank", "target_modules": "lora_targets", "lora_target_modules": "lora_targets",
    "gradient_checkpointing": "grad_checkpointing", "optim": "optimizer", "base_model": "model",
    "model_name_or_path": "model", "learning_rate": "", "lr": "", "warmup_steps": "", "weight_decay": "",
    "lora_alpha": "", "seed": "", "logging_steps": "", "output_dir": "",
    # TRL's DPOConfig keys that move no byte or second of the step (precompute_ref_log_probs is a field of its own)
    "beta": "", "loss_type": "", "label_smoothing": "", "truncation_mode": "",
}
# how serving lays an MoE model over its GPUs: said only when asked (a dense model's plans read as they did)
MOE_LAYOUT = frozenset({"ep", "attention_dp", "moe_dispatch"})
TRAINING_LAYOUT = frozenset({"num_nodes", "sharding", "pp", "offload", "stack"})
INFER_ONLY = frozenset({"batch_size", "prompt_tokens", "output_tokens", "timestamps", "shared_prefix_tokens",
                        "kv_cache_dtype",
                        "engine", *LOAD_FIELDS, "preset",
                        "mem_fraction_static", "fp8_gemm_backend", "scheduler_recv_interval", "gpu_memory_utilization",
                        "max_num_batched_tokens", "max_num_seqs",
                        "max_model_len", "engine_version", "entry_point", "enforce_eager", "chunked_prefill",
                        "async_scheduling", "flashinfer_sampler", "ubatch_tokens",
                        "free_gpu_memory_fraction", "tokens_per_block", "capacity_scheduler_policy",
                        "trtllm_backend", "flash_attention", "cpu_layers", "extra_gpus", "tensor_split", "attention_dp",
                        "moe_dispatch", "speculative_method", "speculative_tokens", "acceptance_length",
                        "draft_model"})


def scenario_from(data: dict[str, Any] | Scenario) -> Scenario:
    """Validate a dict into a :class:`Scenario`, turning pydantic's report into one clear sentence."""
    if isinstance(data, Scenario):
        return data
    if not isinstance(data, dict):
        raise GpuplanError(f"a scenario must be a mapping of fields, got {type(data).__name__}")
    data = snake_keys(data)
    try:
        return made(Scenario, data)
    except ValidationError as err:
        raise GpuplanError(_one_sentence(err)) from None


def snake_keys(data: dict[Any, Any]) -> dict[str, Any]:
    """The fields under their snake_case names (``batch-size`` is ``batch_size``, as the CLI's flags are). Two
    spellings of one field are refused as a key written twice is: ``batch-size: 8`` then ``batch_size: 4`` planned 4
    without a word (session 18's fuzzing)."""
    out: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    for k, v in data.items():
        key = str(k).replace("-", "_")
        if key in out:
            raise GpuplanError(f"scenario field {key!r} is given twice, as {spelled[key]!r} and {str(k)!r}; keep one")
        out[key], spelled[key] = v, str(k)
    return out


@functools.cache
def _literal_choices() -> dict[str, tuple[str, ...]]:
    """Each scenario field that takes named choices (a ``Literal``, alone or beside None or a list), and those
    choices."""
    out = {}
    for name, info in Scenario.model_fields.items():
        args = typing.get_args(info.annotation) if typing.get_origin(info.annotation) is not Literal else (
            info.annotation,)
        words = [v for a in args if typing.get_origin(a) is Literal for v in typing.get_args(a)]
        if words and all(isinstance(w, str) for w in words):
            out[name] = tuple(words)
    return out


def _one_sentence(err: ValidationError) -> str:
    errors = err.errors()
    nested = [e for e in errors if e["type"] == "extra_forbidden" and isinstance(e.get("input"), dict)]
    first = (nested or errors)[0]
    if not first["loc"]:  # a rule across fields (the stack's refusals): the message is the sentence
        return first["msg"].removeprefix("Value error, ")
    field = ".".join(str(p) for p in first["loc"])
    if first["type"] == "extra_forbidden":
        if isinstance(first.get("input"), dict):
            return (f"scenario fields go at the top level, not under {field!r}: model, task, ... each its own key "
                    "(a line of a YAML file, a key of a JSON body)")
        if field in TRAINER_NAMES:
            ours = TRAINER_NAMES[field]
            return (f"unknown scenario field {field!r}: " + (f"gpuplan calls it {ours!r}" if ours else
                    "it changes neither the memory nor the speed gpuplan plans; leave it out"))
        close = did_you_mean(field, FIELDS)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else \
            "; `gpuplan estimate --help` lists the fields"
        return f"unknown scenario field {field!r}{hint}"
    if first["type"] == "missing":
        return f"scenario field {field!r} is required (e.g. {field}: {'train' if field == 'task' else '...'})"
    value = first.get("input")
    if field == "gpu" and isinstance(value, list):  # several cards: the searches compare them
        return (f"scenario field 'gpu' names one card, not a list (got {echo_value(value)}): `gpuplan recommend "
                "--gpus l4,a10g` compares cards, and extra_gpus splits llama.cpp's layers over mixed cards")
    if field.endswith("_version") and isinstance(value, (int, float)) and not isinstance(value, bool):
        return (f"scenario field {field!r} is a release number, written in quotes ({field}: \"4.46\"): unquoted, "
                "YAML reads it as a number and drops its trailing zeros (4.40 becomes 4.4)")
    msg = first["msg"].removeprefix("Value error, ")
    more = f" (and {len(err.errors()) - 1} more)" if len(err.errors()) > 1 else ""
    close = did_you_mean(value, re.findall(r"'([^']*)'", first.get("ctx", {}).get("expected", ""))) if (
        first["type"] == "literal_error" and isinstance(value, str)) else []
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return f"scenario field {field!r}: {msg} (got {echo_value(value)}){hint}{more}"


def load_scenario(path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> Scenario:
    """Read a scenario file (YAML or JSON) and apply ``overrides`` (CLI flags) on top."""
    if path is not None and (isinstance(path, bytes) or not isinstance(path, (str, os.PathLike))):
        raise GpuplanError(f"a scenario file is a path (text or a Path), not {echo_value(path)}")
    if overrides is not None and not isinstance(overrides, Mapping):
        raise GpuplanError(f"overrides are a mapping of scenario fields to values, not {echo_value(overrides)}")
    data: dict[str, Any] = snake_keys(read_mapping(path, "scenario")) if path is not None else {}
    data.update(snake_keys({k: v for k, v in (overrides or {}).items() if v is not None}))  # flags win
    return scenario_from(data)


@functools.lru_cache(maxsize=1024)
def _copy(given: frozenset) -> Scenario:
    """:meth:`Scenario.model_copy`'s validation of the fields ``given`` (those the scenario sets, the change on top:
    the scenario is a function of them alone), kept for the next ask of the same fields, by whatever copy. A list's
    value is keyed as a tuple and given back as a list. A refusal is not kept: it raises again."""
    return scenario_from({k: list(v) if isinstance(v, tuple) else v for k, v in given})
