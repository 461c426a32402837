"""The simulator as the estimator's oracle: a matrix of scenarios on narrowed copies of real configs, each
simulated on fake tensors and estimated analytically; tests/sim/test_simulate.py asserts every row within 5 %.

    python bench/oracle.py [hf|stacks]   # prints the tables (markdown) for the README and the issue note

Narrowed: the real config (vocabulary, head layout, norms, MLP kind, sliding windows, experts) with a smaller
width and 4 layers, so a row takes about a second on two CPU cores. The logits keep their real vocabulary:
at these widths they are much of the memory, as they are for small models.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from gpuplan import estimate
from gpuplan.model.catalog import bundled, bundled_repo, load_model

NARROW = {"hidden_size": 512, "intermediate_size": 1536, "num_attention_heads": 8, "num_hidden_layers": 4}


def narrowed(model: str, folder: Path, real_width: bool = False, **overrides) -> str:
    """Write a narrowed copy of a bundled config to ``folder`` and return its path (``real_width``: only the
    depth is cut to 4 layers)."""
    repo = bundled_repo(model)  # None: a published shape planned by size (synthetic-1b is --model-size 1B)
    config = json.loads(bundled()[repo].read_text()) if repo else dict(load_model(model).config)
    config = {k: v for k, v in config.items() if not k.startswith("_transcription")}
    if real_width:
        config.update(num_hidden_layers=4, **overrides)
        path = folder / f"{model}-4-layers.json"
        path.write_text(json.dumps(config))
        return str(path)
    kv = max(1, config.get("num_key_value_heads", config["num_attention_heads"]) * 8
             // config["num_attention_heads"])
    config.update(NARROW, num_key_value_heads=kv, head_dim=64)
    if config.get("moe_intermediate_size"):
        config.update(moe_intermediate_size=256, num_experts=16, num_experts_per_tok=4)
    if config.get("num_local_experts"):
        config.update(num_local_experts=4, num_experts_per_tok=2)
    if config.get("sliding_window") and config.get("sliding_window") < 100_000:
        config["sliding_window"] = 256  # shorter than the sequences below, so the window matters
    config.update(overrides)
    path = folder / f"{model}-narrow.json"
    path.write_text(json.dumps(config))
    return str(path)


INFER, TRAIN = "infer", "train"
# (model, fields): the matrix. Families x tasks x checkpointing x attention x shapes.
CASES = [
    ("llama-3.1-8b", dict(task=INFER, batch_size=1, prompt_tokens=512, output_tokens=16)),
    ("llama-3.1-8b", dict(task=INFER, batch_size=4, prompt_tokens=256, output_tokens=8, attention="eager")),
    ("llama-3.1-8b", dict(task=TRAIN, method="full", micro_batch_size=2, seq_len=512)),
    ("llama-3.1-8b", dict(task=TRAIN, method="full", seq_len=1024, grad_checkpointing="full")),
    ("llama-3.1-8b", dict(task=TRAIN, method="full", seq_len=512, precision="bf16-true", optimizer_impl="foreach")),
    ("llama-3.1-8b", dict(task=TRAIN, method="full", seq_len=512, optimizer="sgd-momentum")),
    ("llama-3.1-8b", dict(task=TRAIN, method="full", seq_len=512, optimizer="adafactor", grad_accum_steps=4)),
    ("llama-3.1-8b", dict(task=TRAIN, method="lora", micro_batch_size=2, seq_len=512)),
    ("llama-3.1-8b", dict(task=TRAIN, method="lora", seq_len=512, attention="eager", lora_dropout=0.05)),
    ("llama-3.1-8b", dict(task=TRAIN, method="qlora", seq_len=1024, grad_checkpointing="full")),
    ("llama-3.1-8b", dict(task=TRAIN, method="qlora", seq_len=1024, optimizer="paged-adamw-8bit",
                          qlora_fp32_upcast=False)),
    ("qwen2.5-7b", dict(task=INFER, batch_size=2, prompt_tokens=512, output_tokens=8)),
    ("qwen2.5-7b", dict(task=TRAIN, method="full", seq_len=512)),
    ("qwen2.5-7b", dict(task=TRAIN, method="lora", micro_batch_size=2, seq_len=512, grad_checkpointing="full")),
    ("qwen2.5-7b", dict(task=TRAIN, method="qlora", seq_len=512)),
    ("qwen3-8b", dict(task=INFER, batch_size=1, prompt_tokens=1024, output_tokens=8)),
    ("qwen3-8b", dict(task=TRAIN, method="full", micro_batch_size=2, seq_len=512, grad_checkpointing="full")),
    ("qwen3-8b", dict(task=TRAIN, method="lora", micro_batch_size=2, seq_len=256, attention="eager")),
    ("qwen3-8b", dict(task=TRAIN, method="qlora", seq_len=512)),
    ("mistral-7b-v0.1", dict(task=INFER, batch_size=2, prompt_tokens=512, output_tokens=8)),
    ("mistral-7b-v0.1", dict(task=TRAIN, method="lora", seq_len=512)),
    ("mistral-7b-v0.1", dict(task=TRAIN, method="full", seq_len=512, grad_checkpointing="full")),
    ("gemma-2-9b", dict(task=INFER, batch_size=1, prompt_tokens=512, output_tokens=8)),
    ("gemma-2-9b", dict(task=TRAIN, method="lora", seq_len=512)),
    ("gemma-2-9b", dict(task=TRAIN, method="full", seq_len=256, attention="eager")),
    ("gemma-2-9b", dict(task=TRAIN, method="qlora", seq_len=512, grad_checkpointing="full")),
    ("mixtral-8x7b", dict(task=INFER, batch_size=2, prompt_tokens=256, output_tokens=8)),
    ("mixtral-8x7b", dict(task=TRAIN, method="lora", seq_len=256)),
    ("mixtral-8x7b", dict(task=TRAIN, method="full", seq_len=256, grad_checkpointing="full", precision="bf16-true")),
    ("qwen3-30b-a3b", dict(task=INFER, batch_size=1, prompt_tokens=512, output_tokens=8)),
    ("qwen3-30b-a3b", dict(task=TRAIN, method="lora", seq_len=512)),
    # real widths (4 layers): the per-layer activations outweigh the logits here
    ("llama-3.1-8b", dict(task=TRAIN, method="qlora", seq_len=1024), True),
    ("qwen3-8b", dict(task=TRAIN, method="qlora", seq_len=1024, qlora_fp32_upcast=False), True),
    ("mistral-7b-v0.1", dict(task=TRAIN, method="lora", micro_batch_size=2, seq_len=1024), True),
    ("qwen2.5-7b", dict(task=TRAIN, method="full", seq_len=1024, precision="bf16-true"), True),
    ("llama-3.1-70b", dict(task=TRAIN, method="qlora", seq_len=1024, grad_checkpointing="full"), True),
]


# The training stacks (stack field): their own code where it is plain PyTorch (torchtune's Llama and
# losses, torchtitan's Transformer and apply_ac, torchao's NF4), their kernels emulated with the bytes they save
# (Liger, Unsloth). tests/sim/test_simulate.py holds each within 3 %.
TT, TI, US, AX = "torchtune", "torchtitan", "unsloth", "axolotl"
STACK_CASES = [
    ("llama-3.1-8b", dict(task=TRAIN, stack=TT, method="full", seq_len=512)),
    ("llama-3.1-8b", dict(task=TRAIN, stack=TT, method="full", seq_len=512, loss="full",
                          grad_checkpointing="none")),
    ("llama-3.2-1b", dict(task=TRAIN, stack=TT, method="full", seq_len=512)),
    ("llama-3.1-8b", dict(task=TRAIN, stack=TT, method="lora", seq_len=512, micro_batch_size=2)),
    ("llama-3.1-8b", dict(task=TRAIN, stack=TT, method="qlora", seq_len=512)),
    ("llama-3.2-3b", dict(task=TRAIN, stack=TT, method="full", seq_len=1024, optimizer_in_backward=True), True),
    ("llama-3.1-8b", dict(task=TRAIN, stack=TT, method="lora", seq_len=1024, activation_offload=True), True),
    ("llama-3.1-8b", dict(task=TRAIN, stack=TI, method="full", seq_len=512)),
    ("llama-3.1-8b", dict(task=TRAIN, stack=TI, method="full", seq_len=512, grad_checkpointing="none")),
    ("llama-3.1-8b", dict(task=TRAIN, stack=TI, method="full", seq_len=512, grad_checkpointing="full",
                          checkpoint_every=2)),
    ("llama-3.1-8b", dict(task=TRAIN, stack=TI, method="full", seq_len=1024), True),
    # a pretrain's micro-batch (8 x 2,048 tokens, 32k vocabulary): autocast's cached weight copies and the fp32
    # block inputs weigh here, next to the loss's fp32 logits
    ("synthetic-1b", dict(task=TRAIN, stack=TI, method="full", seq_len=2048, micro_batch_size=8,
                          grad_accum_steps=8), True),
    ("llama-3.1-8b", dict(task=TRAIN, stack=US, method="qlora", seq_len=1024)),
    ("llama-3.1-8b", dict(task=TRAIN, stack=US, method="lora", seq_len=1024), True),
    ("llama-3.1-8b", dict(task=TRAIN, stack=AX, method="qlora", seq_len=1024), True),
    ("llama-3.1-8b", dict(task=TRAIN, stack=AX, method="full", seq_len=512, micro_batch_size=2)),
    ("llama-3.1-8b", dict(task=TRAIN, stack="hf", method="full", seq_len=512, loss="fused-linear")),
    ("llama-3.1-8b", dict(task=TRAIN, stack="hf", method="lora", seq_len=512, precision="bf16-true")),
    ("llama-3.1-8b", dict(task=TRAIN, stack="hf", method="lora", seq_len=512, precision="bf16-true",
                          adapter_dtype="bf16", lora_dropout=0.1)),
    ("llama-3.1-8b", dict(task=TRAIN, stack="pytorch", method="lora", seq_len=512)),
    ("llama-3.1-8b", dict(task=TRAIN, stack="pytorch", method="qlora", seq_len=1024, grad_checkpointing="full",
                          activation_offload=True), True),
]


def case_id(model: str, fields: dict, real_width: bool = False) -> str:
    extra = ",".join(f"{k}={v}" for k, v in fields.items() if k not in ("task", "method"))
    return f"{model}{'(real width)' if real_width else ''}:{fields['task']}:{fields.get('method', '')}:{extra}"


def compare(model: str, fields: dict, folder: Path, real_width: bool = False) -> dict:
    """Simulated and estimated allocated peak (GiB) of one case. The estimate's cuBLAS workspace is left out:
    it is a CUDA allocation that has no counterpart on the CPU."""
    from gpuplan.sim.simulate import simulate

    scenario = {"model": narrowed(model, folder, real_width), **fields}
    started = time.perf_counter()
    sim = simulate(scenario)
    seconds = time.perf_counter() - started
    mem = estimate(scenario, advise=False).memory
    analytic = mem.allocated_peak_gib - mem.other.get("cuBLAS workspace", 0.0)
    return {"case": case_id(model, fields, real_width), "simulated_gib": sim.allocated_peak_gib,
            "estimated_gib": analytic, "error_pct": 100 * (analytic / sim.allocated_peak_gib - 1),
            "sim_phase": sim.peak_phase, "estimate_phase": mem.peak_phase, "seconds": seconds}


def table(cases: list, folder: Path) -> list[str]:
    rows = []
    for model, fields, *real in cases:
        rows.append(compare(model, fields, folder, *real))
        r = rows[-1]
        print(f"{r['case']:90s} sim {r['simulated_gib']:7.3f} est {r['estimated_gib']:7.3f} "
              f"{r['error_pct']:+6.1f}% {r['sim_phase']:>14s}/{r['estimate_phase']:<14s} {r['seconds']:.1f}s",
              file=sys.stderr)
    lines = ["| case | simulated GiB | estimated GiB | error % | peak phase (sim / estimate) |",
             "|---|---:|---:|---:|---|"]
    lines += [f"| {r['case']} | {r['simulated_gib']:.3f} | {r['estimated_gib']:.3f} | {r['error_pct']:+.1f} | "
              f"{r['sim_phase']} / {r['estimate_phase']} |" for r in rows]
    errors = sorted(abs(r["error_pct"]) for r in rows)
    lines.append(f"\n{len(rows)} cases; median |error| {errors[len(errors) // 2]:.1f} %, worst {errors[-1]:.1f} %; "
                 f"{sum(r['seconds'] for r in rows):.0f} s of simulation")
    return lines


def main() -> None:
    which = sys.argv[1] if len(sys.argv) > 1 else "all"
    with tempfile.TemporaryDirectory() as tmp:
        if which in ("all", "hf"):
            print("\n".join(table(CASES, Path(tmp))))
        if which in ("all", "stacks"):
            print("\n## Training stacks\n")
            print("\n".join(table(STACK_CASES, Path(tmp))))


if __name__ == "__main__":
    main()
