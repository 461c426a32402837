"""Who holds the model state: one GPU or DDP replicas (this module), DeepSpeed ZeRO (:mod:`.deepspeed`), FSDP1
(:mod:`.fsdp1`) and FSDP2 (:mod:`.fsdp2`).

Model-state bytes follow ZeRO (Rajbhandari et al. 2020, section 3): with AdamW, ``-mixed`` precision holds fp32
weights, gradients and two moments (16 bytes/parameter) and computes under torch autocast; ``-true`` holds all of
them in the compute dtype (8 bytes/parameter with bf16). LoRA trains adapters in ``adapter_dtype`` over a frozen
base in its storage format.
"""

from __future__ import annotations

from .. import overheads as oh
from ..model.spec import ModelSpec
from ..scenario import Scenario
from ..stacks.base import Stack, State
from ..tensors.breakdown import Estimate
from ..tensors.layout import training_extra_params
from ..tensors.state import adapts_experts, lora_params, lora_targets, optimizer_state_bytes


class Sharding:
    """One GPU, or DDP: every rank holds the whole state; DDP adds flat bucket copies of the gradients."""

    name = "single"
    # torch autocast over fp32 weights in -mixed full fine-tuning (the shardings cast the gathered weights)
    autocasts_fp32_weights = True
    slack = oh.ALLOCATOR_SLACK_TRAIN
    # the share of a pass that hides ZeRO-3's weight gathers (and parameter offload's copies)
    gather_overlap = oh.DP_OVERLAP
    # under pipeline parallelism, a stage's weights are gathered and its gradients reduced once a step, not per
    # micro-batch (FSDP2 under torch.distributed.pipelining)
    gathers_once_under_pp = False
    # mixed precision keeps a 16-bit working copy beside an fp32 master partition (DeepSpeed), not fp32 weights
    # under autocast
    master_partition = False

    def reduced_grad_bytes(self, s: Scenario) -> float:
        """Bytes per gradient element the data-parallel reduction moves: fp32 under ``-mixed`` autocast over fp32
        weights, else the compute dtype."""
        return 4.0 if s.precision.endswith("mixed") else 2.0

    def hook_s(self, s: Scenario) -> float:
        """Host seconds the sharding's module hooks add per decoder layer and pass (0: none timed)."""
        return 0.0

    def shards_weights(self, s: Scenario) -> bool:
        """Whether each data-parallel rank holds only its part of the weights, gathered for each pass (ZeRO-3,
        FSDP's FULL_SHARD)."""
        return False

    def shards_gradients(self, s: Scenario) -> bool:
        """Whether each rank keeps only its part of the gradients, reduce-scattered in every micro-step's backward
        (ZeRO-2 and -3, FSDP)."""
        return False

    def shards_optimizer(self, s: Scenario) -> bool:
        """Whether each rank keeps and steps only its part of the optimizer states (every ZeRO stage, FSDP)."""
        return False

    def shards(self, s: Scenario) -> tuple[int, int, int]:
        """How many ways weights, gradients and optimizer states are split across data-parallel ranks."""
        weights, gradients, optimizer = (s.dp if split else 1 for split in (
            self.shards_weights(s), self.shards_gradients(s), self.shards_optimizer(s)))
        return weights, gradients, optimizer

    def step_sync(self, s: Scenario) -> tuple[str | None, bool]:
        """How the data- and context-parallel ranks meet once a step, after the last backward (ZeRO paper section
        5; DeepSpeed ``stage_1_and_2.py``): the collective that brings each rank the gradients its step needs
        (``all-reduce`` of the whole gradients where none is sharded, as DDP; ``reduce-scatter`` where only the
        optimizer states are, ZeRO-1; None where the backward already reduce-scattered them), and whether the
        updated 16-bit weights are all-gathered after the step (the optimizer states sharded, the weights not:
        ZeRO-1 and -2)."""
        if self.shards_gradients(s):
            collective = None
        else:
            collective = "reduce-scatter" if self.shards_optimizer(s) else "all-reduce"
        return collective, self.shards_optimizer(s) and not self.shards_weights(s)

    def state(self, s: Scenario, m: ModelSpec, stack: Stack) -> State:
        tp_pp = 1 / (s.tp * s.pp)  # model state split by TP and PP (vocab-parallel embeddings included)
        w_n, g_n, o_n = self.shards(s)
        mixed = s.precision.endswith("-mixed")
        if s.method == "full":
            P, held = m.params_total, self.held_params(s, m)
            wbytes = 4 if (mixed or s.precision == "fp32") else 2
            st = State(weights=wbytes * held / w_n, gradients=wbytes * held / g_n, trainable=P,
                       state_bytes=wbytes)
            st.optimizer = optimizer_state_bytes(s, m, P, wbytes) * held / P / o_n
            if mixed:
                st.assumptions.append(f"{s.precision}: fp32 weights, gradients and optimizer states"
                                      + (" with torch autocast" if self.autocasts_fp32_weights else "")
                                      + f" (16 bytes/parameter with AdamW){self.sharded_text(s)}")
            return st
        return self.lora_state(s, m, stack, tp_pp, w_n, g_n, o_n)

    def held_params(self, s: Scenario, m: ModelSpec) -> float:
        """Parameters one rank holds before data-parallel sharding, in full training: its ``1/(tp x pp)`` share, and
        MLA's down-projections whole on every tensor-parallel rank (its stage's share of them)."""
        return m.params_total / (s.tp * s.pp) + training_extra_params(s, m.layers) / s.pp

    def lora_state(self, s: Scenario, m: ModelSpec, stack: Stack, tp_pp: float, w_n: int, g_n: int,
                   o_n: int) -> State:
        targets = lora_targets(s, m)
        trainable = lora_params(m, targets, s.lora_rank, experts=adapts_experts(s, m))
        a = s.adapter_bytes
        fmt, skip = stack.base_format(s, m)
        base = sum(m.weight_bytes(fmt, skip=skip).values())
        st = State(trainable=trainable, state_bytes=a)
        if stack.fp32_upcast(s):
            high = m.params_total - sum(count * sum(lin.weight_params for lin in layer.linears
                                                    if not lin.kept(skip)) for layer, count in m.layer_kinds())
            base += high * (4 - s.compute_bytes)
            st.assumptions.append(f"QLoRA: {fmt.name} base (blocksize 64, double quantization), other parameters "
                                  "in fp32 (peft prepare_model_for_kbit_training)")
        elif s.method == "qlora":
            st.assumptions.append(f"QLoRA on a {fmt.name} base; embeddings, lm_head and norms in "
                                  f"{s.compute_bytes}-byte precision")
        st.weights = (base + a * trainable) * tp_pp / w_n
        st.optimizer = optimizer_state_bytes(s, m, trainable, a) * tp_pp / o_n
        st.gradients = a * trainable * tp_pp / g_n
        st.assumptions.append(f"LoRA rank {s.lora_rank} on {len(targets)} module kinds: {trainable:,} trainable "
                              f"parameters in {s.adapter_dtype}")
        return st

    def sharded_text(self, s: Scenario) -> str:
        return ""

    def offload(self, s: Scenario, st: State) -> None:
        """``offload optimizer``: states (and the step) on the CPU; ``optimizer+params``: weights too."""
        if s.offload == "none":
            return
        st.cpu += st.optimizer
        st.optimizer = 0.0
        if s.offload == "optimizer+params":
            st.cpu += st.weights
            st.weights = 0.0
        st.assumptions.append(f"offload {s.offload}: those states live in CPU memory and the step runs there")

    def buffers(self, s: Scenario, m: ModelSpec, stack: Stack, st: State) -> dict[str, float]:
        """Buffers of the sharding alive at the peak: DDP's gradient buckets (PyTorch DDP keeps flat bucket copies of
        the gradients)."""
        return {"DDP gradient buckets": st.gradients} if s.resolved_sharding == "ddp" else {}

    def layer_buffers(self, s: Scenario, stack: Stack, buffers: dict[str, float]) -> dict[str, float]:
        """Those of ``buffers`` that exist only while a decoder layer runs (none here)."""
        return {}

    def fragmentation(self, s: Scenario, m: ModelSpec, stack: Stack, e: Estimate) -> float:
        """Reserved bytes beyond the allocator's slack that the sharding leaves cached (none here)."""
        return 0.0
