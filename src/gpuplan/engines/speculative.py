"""Speculative decoding: the draft a serving engine runs beside the model it serves, and what it proposes.

A step with speculation drafts ``k`` tokens per sequence (``speculative_tokens``), then runs the target once over the
``k + 1`` positions of each sequence (the last accepted token and the ``k`` drafts: the verify step) and keeps the
drafts up to the first one the target rejects, plus the target's own next token: on average the *acceptance
length* ``a`` tokens per sequence and step (``1 <= a <= k + 1``). What each engine runs (read from their code):

- vLLM V1 (``--speculative-config '{"method": ..., "num_speculative_tokens": k}'``; ``vllm/config/speculative.py``
  ``SpeculativeConfig``, ``vllm/v1/spec_decode/``): ``eagle`` / ``eagle3`` heads and ``mtp`` layers run in the
  engine step after the verify (``EagleProposer.propose``: a first pass over the step's tokens, then ``k - 1``
  passes of one token per sequence, each replaying a CUDA graph); the draft's attention layers take their pages from
  the one KV pool the target's layers share (the KV cache spec lists every attention layer of the forward context,
  the draft's among them); the draft shares the target's embeddings and lm_head unless it owns its own
  (``vllm/v1/worker/gpu/spec_decode/eagle/utils.py`` ``load_eagle_model``: shared when the draft has none or an
  equal copy; MTP's ``shared_head.head`` too). ``ngram`` proposes on the CPU from the prompt (no draft weights, no
  draft KV); ``draft_model`` runs a second, smaller model the same way as a head. The verify batch of ``k + 1``
  tokens per sequence replays the full CUDA graphs captured for uniform decode batches of that query length.
- SGLang (``--speculative-algorithm EAGLE | EAGLE3 | NEXTN | STANDALONE | NGRAM``, ``--speculative-num-steps k``,
  ``--speculative-eagle-topk 1``, ``--speculative-num-draft-tokens k + 1``: a chain; gpuplan models chains, not
  trees): a draft worker with its own weights and token pool, of the target's tokens plus a headroom for the
  draft and verify tokens in flight (``ModelRunner.init_memory_pool``: ``draft_runner_cache_size``, which the
  target's pool takes too), allocated after the target's out of the reserve, which ``ServerArgs`` grows by 2 GiB
  for EAGLE and MTP and 6 GiB for a draft model (:func:`gpuplan.engines.sglang.draft_bytes`); its draft steps and
  the verify run under CUDA graphs (``EAGLEDraftCudaGraphRunner``, the target's runner at ``num_draft_tokens``
  tokens per sequence).
- TensorRT-LLM (``speculative_config: {decoding_type: MTP, num_nextn_predict_layers: k}`` in the options file;
  ``Eagle3``, ``NGram``, ``DraftTarget``): DeepSeek's MTP layers drafted autoregressively (tech blog 2, "MTP
  Eagle"), their KV in the same paged pool (the MTP layers count among the pool's layers).

So for every engine: the draft's decoder layers add their weights and their KV cache per token to the model the
engine holds (:func:`served_model`: in vLLM's and TensorRT-LLM's one pool; SGLang's beside it), and a step's time
is ``k`` draft passes plus one verify pass of ``k + 1`` query tokens per sequence, both priced by the roofline the
plain decode step uses (:meth:`gpuplan.speed.inference.StepTimer.step_parts`; the scheduler's step model samples the
same, :func:`gpuplan.serving.steptime.with_draft`), the draft's in the format the checkpoint serves it in
(:func:`draft_quant`), with the host work the engine's proposer runs around its passes (:func:`proposer`: vLLM's, by
release) and, for SGLang, its host loop out of the overlap scheduler under speculation
(:func:`gpuplan.engines.sglang.overlap_schedule`).
No published speed-up multiplies anything: the acceptance length is the only input, and a speed-up is a check
(``bench/serving/speculative.py``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .. import overheads as oh
from ..errors import GpuplanError
from ..model.layers import Layer, Linear
from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..tensors.state import weight_format
from .base import Engine

# The engines that run speculative decoding as gpuplan models it (their launch files write it), by method
ENGINE_METHODS = {"vllm": ("ngram", "draft", "eagle", "eagle3", "mtp"), "sglang": ("ngram", "draft", "eagle", "eagle3",
                  "mtp"), "trtllm": ("ngram", "draft", "eagle3", "mtp")}
# EAGLE-3's own lm_head over a reduced vocabulary: the reference heads' draft_vocab_size (SafeAILab/EAGLE
# eagle/traineagle3/config.json "draft_vocab_size": 32000; yuhuili/EAGLE3-LLaMA3.1-Instruct-8B config.json)
EAGLE3_DRAFT_VOCAB = 32_000
# vLLM's EAGLE proposer by the first release of each of its forms: whether the draft's passes run without CUDA graphs,
# and the PyTorch ops it runs on the host a step (between the syncs that drain the GPU) and a pass after the first,
# counted in its code. Before 0.9.0 (April 2025: v1/worker/gpu_model_runner.py's EAGLE branch and
# v1/spec_decode/eagle.py EagleProposer): the head a plain module ("the eagle head does not use cuda graph"); a step's
# 30 ops between the verify's sampled-token .tolist() and the drafts' .tolist(), three .item() syncs among them (two
# torch.tensor uploads of the next and rejected tokens; prepare_inputs' two subtractions, empty_like, cumsum, store,
# .item(), empty and Triton kernel; four gathers by token_indices; propose's subtraction, empty_like, two stores,
# gather and add, two max().item(), a subtraction with max().item(), the gathers of the last hidden state and
# position, torch.stack and .tolist()); 11 a pass (positions += 1, seq_lens += 1, //, view, gather, view, *, %, +,
# the logits' lm_head and argmax). From 0.9.0 (vllm-project/vllm pull request #17211, "Apply torch.compile &
# cudagraph to EAGLE", and #17504 for EAGLE-3): the head replays piecewise CUDA graphs; the July 2025 proposer adds
# the int32 cast, the clamp to max_model_len (>=, torch.where, two masked_fill_), the three copies into the graph's
# input buffers and two slices, 21 ops a pass, and the step 32 (the uploads, prepare_inputs' five ops and kernel,
# the four gathers, propose's eight ops and three syncs, two buffer copies, the first pass's lm_head, argmax and
# three gathers, torch.stack and .tolist()). From 0.11.0 (pull request #24539, "Efficient padded speculation", the
# default: "free of GPU->CPU sync during the EAGLE drafting phase") the proposer's ops queue behind the GPU's work and
# are not charged (an optimistic end: a step whose host work outlasts its GPU's is not seen).
PROPOSER_FORMS = (((0, 9, 0), True, (30, 11)), ((0, 11, 0), False, (32, 21)))


@dataclass(frozen=True, kw_only=True)
class Draft:
    """What a plan's speculative decoding runs: ``method``, ``tokens`` drafted per step, ``acceptance`` tokens yielded
    per verify step, the draft's decoder ``layers`` (their weights and KV cache join the target's,
    :func:`served_model`), ``own_params`` the draft holds beyond them (an EAGLE-3 head's lm_head, a draft model's
    embeddings and head) and ``model``, whose decode step times one draft pass (None: drafted on the CPU)."""

    method: str
    tokens: int
    acceptance: float
    acceptance_source: str
    layers: tuple[Layer, ...] = ()
    own_params: int = 0
    model: ModelSpec | None = None
    quant: str | None = None  # the format the draft's weights are served in, where not the target's (draft_quant)
    eager: bool = False  # its passes launch their kernels from Python, no CUDA graph (proposer)
    # the proposer's own PyTorch ops beside the draft's layers, a step (between syncs) and a pass (PROPOSER_FORMS)
    proposer_ops: tuple[int, int] = (0, 0)

    @property
    def queries(self) -> int:
        """Query tokens per sequence in the verify step: the last accepted token and the ``tokens`` drafts."""
        return self.tokens + 1


def draft_of(s: Scenario, m: ModelSpec, engine: Engine) -> Draft | None:
    """The draft of ``s`` on target ``m`` served by ``engine`` (the scenario's profile; None without speculation),
    refused in one sentence (:class:`GpuplanError`) where it cannot run: see :func:`refusal`. The profile is given,
    not looked up: the engines' registry loads the profiles that call this (SGLang's draft worker)."""
    if s.speculative_method == "none":
        return None
    why = refusal(s, m)
    if why:
        raise GpuplanError(why)
    k, a, method = s.speculative_tokens, s.acceptance_length, s.speculative_method  # filled by the scenario
    published = oh.ACCEPTANCE_LENGTH.get((method, k))
    source = oh.ACCEPTANCE_SOURCE[method] if a == published else "acceptance_length as given"
    if method == "ngram":
        return Draft(method=method, tokens=k, acceptance=a, acceptance_source=source)
    if method == "draft":
        return _draft_model(s, m, k, a, source, engine)
    layers, own = (_mtp_layers(m), 0) if method == "mtp" else _eagle_layer(m, method)
    head = dataclasses.replace(m, layers=layers, vision_params=0, other_params=0,
                               vocab_size=EAGLE3_DRAFT_VOCAB if method == "eagle3" else m.vocab_size)
    return Draft(method=method, tokens=k, acceptance=a, acceptance_source=source, layers=layers, own_params=own,
                 model=head, quant=draft_quant(s, m, layers, method, engine), **proposer(s))


def draft_quant(s: Scenario, m: ModelSpec, layers: tuple[Layer, ...], method: str, engine: Engine) -> str | None:
    """The format the draft's ``layers`` are served in where not the target's (None: the target's). An EAGLE head
    is a checkpoint of its own (:func:`own_quant`). MTP layers are the target checkpoint's: ``"none"`` where it
    leaves them unquantized, every group of each draft layer kept at 16 bits in the served model's format
    (:func:`gpuplan.tensors.state.weight_format` of :func:`served_model`). DeepSeek stores its MTP module as the
    decoder layer after the last (``model.layers.61`` in DeepSeek-R1), and NVIDIA's NVFP4 checkpoints list it among
    ``exclude_modules`` (``model.layers.61*``: Model Optimizer ``examples/deepseek/ptq.py`` appends it,
    :mod:`gpuplan.model.checkpoints`), so TensorRT-LLM runs it in bf16 beside the NVFP4 decoder (tech blog 1,
    "Precision Strategy": "3x MTP Layers | bf16")."""
    if method in ("eagle", "eagle3"):
        return own_quant(s, m, "none", engine)
    served = dataclasses.replace(m, layers=(*m.layers, *layers))
    fmt, skip = weight_format(s, served)
    whole = {entry for entry in skip if "@" not in entry}
    kept = all(lin.group in whole or f"{lin.group}@{len(m.layers) + i}" in skip
               for i, layer in enumerate(layers) for lin in layer.linears)
    return "none" if layers and fmt.name != "none" and kept else None


def own_quant(s: Scenario, m: ModelSpec, shipped: str, engine: Engine) -> str | None:
    """The format a draft checkpoint of its own is served in beside target ``m``, where not the target's (None: the
    target's): an EAGLE head or a draft model, ``shipped`` in the format its own config names (``"none"``: 16 bits).
    The heads are published in 16 bits with no quantization config (SafeAILab/EAGLE's and SpecForge's EAGLE-3
    configs: ``"torch_dtype": "float16"`` / ``"bfloat16"``); a draft model ships as its catalog entry says
    (Llama-3.2-1B in bf16 beside an FP8 Llama-3.1-70B). Each engine loads the draft in its own checkpoint's format:
    vLLM builds an EAGLE head's layers with the draft's quantization config, not the verifier's
    (``vllm/model_executor/models/utils.py`` ``get_draft_quant_config``, pull requests #25883 and #26590; the
    target's ``--quantization`` is not passed on: #40849 open) and a draft model's ``draft_model_config`` with the
    speculative config's own ``quantization`` (``vllm/config/speculative.py`` ``SpeculativeConfig.__post_init__``:
    None, so its config.json's); TensorRT-LLM reads the draft's ``ModelConfig.from_pretrained(speculative_model)``
    and takes only the KV cache's format from the target (``modeling_speculative.py``:
    ``draft_config.quant_config.kv_cache_quant_algo``). SGLang's ``--speculative-draft-model-quantization``
    defaults to the target's ``--quantization`` (``ServerArgs``), which it applies to a 16-bit draft where it
    quantizes on load (:attr:`~gpuplan.engines.base.Engine.draft_inherits`: fp8). So an FP8 checkpoint's head or
    16-bit draft model runs in bf16 everywhere."""
    asked = engine.quantizes_to(s, m)
    own = asked if shipped == "none" and asked in engine.draft_inherits else shipped
    return None if own == weight_format(s, m)[0].name else own


def proposer(s: Scenario) -> dict:
    """How the engine runs the draft's passes: ``eager`` (no CUDA graphs) and the ``proposer_ops`` it runs on the host
    a step and a pass (:data:`PROPOSER_FORMS`: vLLM by release). SGLang replays its draft steps as one CUDA graph
    (``EAGLEDraftCudaGraphRunner`` captures the loop of ``draft_forward`` with its top-k selection) and TensorRT-LLM its
    MTP layers inside the target's graph (``MTPWorker`` runs in the model's forward, its input updates on the
    device): no host ops a pass."""
    if s.engine != "vllm":
        return {}
    from .vllm import version_tuple  # loaded for vLLM's plans only (tests/test_import.py)

    version = version_tuple(s.engine_version)
    form = next((f for f in PROPOSER_FORMS if version < f[0]), None)
    return {"eager": form[1], "proposer_ops": form[2]} if form else {}


def refusal(s: Scenario, m: ModelSpec) -> str | None:
    """Why speculation ``s`` cannot run on ``m``: an engine that does not run the method, MTP on a model whose
    config has no MTP layers, an EAGLE head on a model with no dense layer to shape it by, a draft model that is
    no decoder LLM or has another vocabulary (:func:`_draft_refusal`); the scenario's own rules,
    :func:`gpuplan.scenario.fields._speculation`, come first. No card changes any of these, so the searches ask
    it once before they search (:func:`gpuplan.plan.refusals.engine_refusal`)."""
    method = s.speculative_method
    if s.engine not in ENGINE_METHODS:
        return ("speculative decoding is modelled on engines vllm, sglang and trtllm: set engine vllm, sglang or "
                "trtllm, or drop speculative_method")
    if method not in ENGINE_METHODS[s.engine]:
        return f"{s.engine} does not run speculative_method {method}: use one of {', '.join(ENGINE_METHODS[s.engine])}"
    if s.pp > 1:
        return "speculative decoding is modelled on one pipeline stage: set pp 1 (tensor parallelism instead)"
    if method == "mtp" and not mtp_layers(m):
        return (f"{m.name}'s config has no MTP layers (num_nextn_predict_layers): use speculative_method eagle3 "
                "with a head trained for it, ngram or draft")
    if method in ("eagle", "eagle3") and _dense_layer(m) is None:
        return (f"an EAGLE head is modelled as one dense decoder layer of {m.name}'s shape, and {m.name} has none: "
                "use speculative_method mtp, ngram or draft")
    return _draft_refusal(s, m) if method == "draft" else None


def _draft_refusal(s: Scenario, m: ModelSpec) -> str | None:
    """Why the draft model cannot draft for ``m``: it is no decoder LLM gpuplan reads, or it proposes token ids of
    another vocabulary than the target verifies."""
    from ..model import load_model

    try:
        d = load_model(s.draft_model)
    except GpuplanError as err:
        return f"draft_model {s.draft_model}: {err}"
    if d.vocab_size != m.vocab_size:
        return (f"draft_model {s.draft_model} has a vocabulary of {d.vocab_size:,} tokens and {m.name} "
                f"{m.vocab_size:,}: the draft proposes the target's token ids, so pick a draft of the same tokenizer")
    return None


def mtp_layers(m: ModelSpec) -> int:
    """The MTP layers ``m``'s checkpoint holds beside its decoder (``num_nextn_predict_layers``: DeepSeek-V3/R1,
    GLM-4.5, MiMo), which transformers does not build (so ``other_params`` does not count them)."""
    text = m.config.get("text_config") or m.config
    n = text.get("num_nextn_predict_layers") or m.config.get("num_nextn_predict_layers") or 0
    return int(n) if isinstance(n, int) else 0


def _mtp_layers(m: ModelSpec) -> tuple[Layer, ...]:
    """DeepSeek's MTP module (DeepSeek-V3 report, section 2.2; vLLM ``deepseek_mtp.py``
    ``DeepSeekMultiTokenPredictorLayer``): a decoder layer of the last layer's kind (MoE in DeepSeek-V3), plus
    ``eh_proj`` ``[2h -> h]`` over the concatenated embedding and hidden state and its two norms (enorm, hnorm);
    the embeddings and head are the target's (shared, :mod:`module docstring <.speculative>`)."""
    h = m.hidden_size
    last = m.layers[-1]
    layer = dataclasses.replace(last, linears=(*last.linears, Linear(name="eh_proj", in_features=2 * h,
                                                                      out_features=h, group="attention")),
                                norm_params=last.norm_params + 2 * h)
    return (layer,) * mtp_layers(m)


def _dense_layer(m: ModelSpec) -> Layer | None:
    """The first dense attention layer of ``m`` (the shape an EAGLE head's one layer takes)."""
    return next((layer for layer in m.layers if not layer.moe and layer.kv_dims), None)


def _eagle_layer(m: ModelSpec, method: str) -> tuple[tuple[Layer, ...], int]:
    """An EAGLE head: one decoder layer of the target's dense shape and ``fc`` fusing features into the hidden size
    (EAGLE-1/2: ``[2h -> h]`` over the token embedding and the target's last hidden state, SafeAILab/EAGLE
    ``eagle/model/cnets1.py``; EAGLE-3: ``[3h -> h]`` over three of the target's layers' hidden states, and its
    attention's q, k, v read ``2h`` (the embedding beside the fused state), ``eagle/model/cnets.py``
    ``LlamaDecoderLayeremb``), with EAGLE-3's own lm_head of :data:`EAGLE3_DRAFT_VOCAB` rows."""
    h, base = m.hidden_size, _dense_layer(m)
    widen = method == "eagle3"
    linears = tuple(dataclasses.replace(lin, in_features=2 * h) if widen and lin.name in ("q_proj", "k_proj",
                                                                                          "v_proj") else lin
                    for lin in base.linears)
    fc = Linear(name="fc", in_features=(3 if widen else 2) * h, out_features=h, group="attention")
    layer = dataclasses.replace(base, linears=(*linears, fc))
    return (layer,), EAGLE3_DRAFT_VOCAB * h if widen else 0


def _draft_model(s: Scenario, m: ModelSpec, k: int, a: float, source: str, engine: Engine) -> Draft:
    """A second, smaller model as the draft (vLLM ``method: draft_model``, SGLang ``STANDALONE``, TensorRT-LLM
    ``DraftTarget``): its layers, and its embeddings, final norm and head beside them. It proposes token ids the
    target verifies, so the two must share a vocabulary."""
    from ..model import load_model

    d = load_model(s.draft_model)  # checked by refusal(), which draft_of asks first
    parts = d.params_breakdown()
    own = parts["embeddings"] + parts["lm_head"] + d.final_norm_params
    return Draft(method="draft", tokens=k, acceptance=a, acceptance_source=source, layers=d.layers, own_params=own,
                 model=d, quant=own_quant(s, m, d.shipped_format()[0].name, engine))


def served_model(m: ModelSpec, draft: Draft | None) -> ModelSpec:
    """The model an engine holds with ``draft`` beside ``m``: the draft's layers after the target's (their weights,
    and their keys and values per token: in vLLM's and TensorRT-LLM's one pool; SGLang takes the difference for its
    draft worker, :func:`gpuplan.engines.sglang.draft_bytes`) and its own parameters as ``other_params``. Without a
    draft, ``m``. A draft served in 16 bits beside a quantized target (:attr:`Draft.quant` ``"none"``) keeps its
    layers' linears at 16 bits (:attr:`~gpuplan.model.spec.ModelSpec.kept_layers`); a draft quantized in a format
    the target's is not (an FP8 draft model beside a bf16 target) is held in the target's, its passes timed in its
    own (:func:`gpuplan.speed.inference.draft_scenario`). A draft model's layers split
    their KV heads over TP as the target's do (:func:`gpuplan.tensors.kv.layer_cache_bytes` reads the target's head
    count): exact at one GPU, approximate where the two models' KV heads differ."""
    if draft is None or not (draft.layers or draft.own_params):
        return m
    kept = tuple(dict.fromkeys(f"{lin.group}@{len(m.layers) + i}" for i, layer in enumerate(draft.layers)
                               for lin in layer.linears)) if draft.quant == "none" else ()
    return dataclasses.replace(m, layers=(*m.layers, *draft.layers), other_params=m.other_params + draft.own_params,
                               kept_layers=(*m.kept_layers, *kept))
