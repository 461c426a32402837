"""Smoke runs: the plan rewritten onto a tiny model of the same architecture, its launch files written as for the
real run, then run for a few optimizer steps (``gpuplan launch ... --smoke``, ``bench/smoke.py``, and the CI test
``tests/launchers/test_smoke.py``).

The rewrite (:func:`smoke_scenario`) keeps what the files are made of (the stack, the sharding and its engine, the
method, the LoRA targets, checkpointing, the optimizer) and shrinks what costs time: the model becomes its own
config with 2 layers 64 wide (:func:`tiny_config`: same ``model_type``, so the same transformers class), random
weights, a byte-level BPE tokenizer trained on the smoke data with a ChatML template (its assistant turns marked
``{% generation %}`` for assistant-only loss), and 64 short chats; at most 2 GPUs per node (on the CPU: 2
processes), one node. Without CUDA it runs on the CPU: fp32, the files' CPU switches (:class:`LaunchOptions`
``device``), QLoRA as LoRA (bitsandbytes' 4-bit needs a GPU), ZeRO over gloo (DeepSpeed's CPU accelerator,
``DS_ACCELERATOR=cpu``).

Each target runs the command its files name (:data:`COMMANDS`; SkyPilot's is the ``run`` section of sky.yaml, as
SkyPilot runs it on one node, its setup's installs taken as done), with ``max_steps`` optimizer steps logged one by
one; a run passes when it exits 0, its losses are finite, the last is lower than the first, and its checkpoint is
where the plan says (``output_dir``). The smoke data repeats one chat, so every step sees the same tokens and the
loss falls from the first steps at the recipe's own learning rate. A serving plan's smoke run (llama.cpp's
llama-server on the same tiny model as a GGUF file) is :mod:`.smoke_serve`'s.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import GpuplanError, echo
from ..scenario import Scenario
from ..userfiles import load_yaml

INPUTS = "smoke-inputs"  # the tiny model, tokenizer and data, inside the output folder
STEPS = 6
EXAMPLES = 64
# what each target's smoke runs, from the output folder (its files as written; the Trainer's entry point alone for
# the trainer target, the accelerate script for DeepSpeed, torchtune's recipe without the download)
COMMANDS = {
    "trainer": lambda plan, opts, folder: _trainer(plan, opts),
    "accelerate": lambda plan, opts, folder: ["bash", "accelerate-launch.sh"],
    "torchrun": lambda plan, opts, folder: ["bash", "torchrun.sh"],
    "deepspeed": lambda plan, opts, folder: ["bash", "accelerate-launch.sh"],
    "torchtune": lambda plan, opts, folder: _tune(plan),
    "skypilot": lambda plan, opts, folder: ["bash", "-c", _sky_run(folder)],
    "torchtitan": lambda plan, opts, folder: ["bash", "torchtitan-run.sh"],  # CUDA: torchtitan has no CPU path
    "unsloth": lambda plan, opts, folder: ["bash", "unsloth-run.sh"],  # CUDA: Unsloth's kernels are Triton's
}
# what SkyPilot sets on the node it runs ``run`` on (one node here): sky/skylet/constants.py
SKYPILOT_ENV = {"SKYPILOT_NODE_RANK": "0", "SKYPILOT_NODE_IPS": "127.0.0.1", "SKYPILOT_NUM_NODES": "1"}
CPU_TARGETS = ("trainer", "accelerate", "torchrun", "deepspeed", "torchtune", "skypilot")
CHAT = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% if m['role'] == 'assistant' %}{% generation %}"
        "{{ m['content'] }}<|im_end|>{% endgeneration %}{% else %}{{ m['content'] }}<|im_end|>{% endif %}\n"
        "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
SPECIAL = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
LOSS = re.compile(r"['\"]?loss['\"]?\s*[:=]\s*['\"]?(-?[0-9.]+(?:e[-+]?[0-9]+)?|nan|inf)", re.IGNORECASE)
ANSI = re.compile(r"\x1b\[[0-9;]*m")  # torchtitan colours its log


@dataclass(frozen=True, kw_only=True)
class SmokeRun:
    """One target's smoke run: what ran, how it ended, the losses it logged, whether its checkpoint is there."""

    target: str
    command: str
    returncode: int
    seconds: float
    losses: tuple[float, ...]
    checkpoint: bool
    tail: str  # the end of its output, for a failure

    @property
    def passed(self) -> bool:
        first, last = (self.losses[0], self.losses[-1]) if self.losses else (math.nan, math.nan)
        return (self.returncode == 0 and len(self.losses) >= 2 and all(map(math.isfinite, self.losses))
                and last < first and self.checkpoint)


def tiny_config(config: dict, vocab_size: int, head_dim: int = 16) -> dict:
    """``config`` (a model's config.json) at 2 layers, 4 heads of ``head_dim`` (2 KV heads where it groups them;
    64 wide by default), its MLP twice as wide (MoE: 4 experts of half the width, 2 per token), 256 positions: the
    same ``model_type`` and so the same transformers class, small enough to train on a CPU in seconds. The serving
    engines' attention kernels take head sizes of 64, 128 or 256 (vLLM's ``FlashInferBackend``
    ``get_supported_head_sizes``): their smoke runs ask for 64."""
    out = {k: v for k, v in config.items() if k not in ("quantization_config", "auto_map", "torch_dtype", "dtype")}
    grouped = config.get("num_key_value_heads", config.get("num_attention_heads")) != config.get("num_attention_heads")
    width = 4 * head_dim
    out.update({"num_hidden_layers": 2, "hidden_size": width, "intermediate_size": 2 * width,
                "num_attention_heads": 4, "num_key_value_heads": 2 if grouped else 4, "head_dim": head_dim,
                "vocab_size": vocab_size, "max_position_embeddings": 256, "bos_token_id": 0, "eos_token_id": 2,
                "pad_token_id": 0, "use_sliding_window": False, "max_window_layers": 2})
    for key, value in (("num_experts", 4), ("num_local_experts", 4), ("num_experts_per_tok", 2),
                       ("moe_intermediate_size", width // 2)):
        if key in out:
            out[key] = value
    for key in ("layer_types", "rope_scaling", "rope_parameters"):  # sized for the full depth and context
        out.pop(key, None)
    return out


def chats(n: int = EXAMPLES) -> list[dict]:
    """``n`` copies of one short chat (every step sees the same tokens: the loss falls from the first step)."""
    turn = [{"role": "system", "content": "You plan GPU jobs."},
            {"role": "user", "content": "How much memory does the model need for training on one card?"},
            {"role": "assistant", "content": "The weights, the gradients, the optimizer states and the activations "
             "of one micro-batch, plus the allocator's slack."}]
    return [{"messages": turn} for _ in range(n)]


def pairs(n: int = EXAMPLES) -> list[dict]:
    """``n`` copies of one preference pair as whole ``chosen`` and ``rejected`` conversations, the chat of
    :func:`chats` and the same chat with a worse reply, for a DPO plan's smoke run: the form every DPO stack reads
    (TRL's implicit prompt, which its DPOTrainer extracts as the shared turns; axolotl's
    ``chat_template.argilla_chat``; torchtune's ``preference_dataset``), where TRL's DPOTrainer reads no
    ``messages``."""
    system, user, reply = chats(1)[0]["messages"]
    worse = {"role": "assistant", "content": "Only the weights."}
    return [{"chosen": [system, user, reply], "rejected": [system, user, worse]} for _ in range(n)]


def smoke_folder(folder, force: bool = False) -> Path:
    """``folder`` as the place a smoke run writes and runs, or one sentence: a smoke run replaces the launch files
    there, its runs clear the plan's ``output_dir`` (its checkpoints) between targets, and it writes its inputs and
    log beside them, so the folder must be new or empty (a launch's own files, or a real run's checkpoints, are never
    replaced unasked); with ``force`` what it makes there is removed first (:func:`clear`: a link is removed, never
    followed)."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise GpuplanError(f"{echo(str(folder))} is a file, not a folder: --smoke writes and runs files in a new or "
                           "empty folder (-o)")
    held = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
    if held and not force:
        shown = ", ".join(held[:4]) + (f" and {len(held) - 4} more" if len(held) > 4 else "")
        raise GpuplanError(f"--smoke writes and runs files in a new or empty folder, and {echo(str(folder))} holds "
                           f"{shown}: choose another folder with -o, or pass --force to replace its launch files, "
                           "inputs and checkpoints")
    return folder


def clear(path: Path) -> None:
    """``path`` removed: a link or a file unlinked (a link's target untouched), a folder with what it holds."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def write_inputs(folder: Path, config: dict, head_dim: int = 16, dpo: bool = False) -> dict[str, Path]:
    """The tiny model (random weights, safetensors; :func:`tiny_config`), its tokenizer (tokenizer.json, and
    vocab.json + merges.txt for torchtune's Qwen2 tokenizer) and the chats (with ``dpo``, the preference pairs of
    :func:`pairs`), under ``folder``; their paths by role."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import AutoConfig, AutoModelForCausalLM, PreTrainedTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    data = folder / ("pairs.jsonl" if dpo else "chats.jsonl")
    records = pairs() if dpo else chats()
    data.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    texts = [m["content"] for r in chats(1) for m in r["messages"]] + (["Only the weights."] if dpo else [])
    bpe.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=300, special_tokens=list(SPECIAL),
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    model = folder / "model"
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token=SPECIAL[2], pad_token=SPECIAL[0],
                                  bos_token=SPECIAL[0], chat_template=CHAT)
    tok.save_pretrained(model)
    bpe.model.save(str(model))  # vocab.json and merges.txt
    cfg = AutoConfig.for_model(**tiny_config(config, len(tok), head_dim))
    AutoModelForCausalLM.from_config(cfg).save_pretrained(model)
    return {"model": model, "tokenizer": model / "tokenizer.json", "dataset": data}


def smoke_scenario(s: Scenario, inputs: dict[str, Path], cuda: bool) -> Scenario:
    """``s`` on the tiny model and data (module docstring): the same stack, sharding, method and settings, at most
    2 GPUs on one node, and without CUDA the CPU's fp32 and LoRA for QLoRA."""
    keep = {k: getattr(s, k) for k in s.model_fields_set if k not in (
        "model", "model_size", "dataset", "tokenizer", "samples", "mean_tokens", "max_tokens", "train_tokens",
        "seq_len", "micro_batch_size", "grad_accum_steps", "num_gpus", "num_nodes", "epochs", "packing")}
    keep.update({"model": str(inputs["model"]), "dataset": str(inputs["dataset"]),
                 "tokenizer": str(inputs["tokenizer"]), "num_gpus": min(2, s.world_size), "task": "train"})
    if not cuda:
        keep.update({"precision": "fp32", "method": "lora" if s.method == "qlora" else s.method})
        for key in ("quant", "optimizer_impl", "compile", "attention"):
            keep.pop(key, None)
        if s.optimizer not in ("adamw", "sgd", "sgd-momentum"):
            keep.pop("optimizer", None)
    return Scenario.model_validate(keep)


def environment(cuda: bool) -> dict[str, str]:
    """The variables a smoke run needs: SkyPilot's on one node, DeepSpeed's CPU accelerator without CUDA, no
    network, one thread each."""
    env = {**os.environ, **SKYPILOT_ENV, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    if not cuda:
        env.update({"DS_ACCELERATOR": "cpu", "CUDA_VISIBLE_DEVICES": ""})
    return env


def losses_in(text: str) -> tuple[float, ...]:
    """The step losses a run logged: the Trainer's ``{'loss': '2.96', ...}`` lines (not ``train_loss``),
    torchtitan's ``loss: 2.96`` (colours removed), Megatron's ``lm loss: 2.96E+00``, or torchtune's ``loss:2.96`` in
    its metric log (read alone where it exists: its console repeats it)."""
    found = []
    for line in ANSI.sub("", text).splitlines():
        if "train_loss" in line and "'loss'" not in line:
            continue
        match = LOSS.search(line)
        if match:
            found.append(float(match.group(1)))
    return tuple(found)


def run_target(target: str, plan, opts, folder: Path, cuda: bool, timeout_s: float) -> SmokeRun:
    """Run ``target``'s command in ``folder`` and read its losses and checkpoint."""
    argv = COMMANDS[target](plan, opts, folder)
    start = time.monotonic()
    try:
        done = subprocess.run(argv, cwd=folder, env=environment(cuda), capture_output=True, text=True,
                              timeout=timeout_s)
        code, text = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as err:
        code, text = 124, f"{err.stdout or ''}{err.stderr or ''}\ntimed out after {timeout_s:g} s"
    log = "\n".join(p.read_text(errors="replace") for p in (folder / opts.output_dir).glob("logs/*.txt"))
    out = Path(folder / opts.output_dir)
    saved = any(out.glob("checkpoint-*")) or any(out.glob("epoch_*")) or any(out.glob("step_*"))
    return SmokeRun(target=target, command=" ".join(argv), returncode=code, seconds=time.monotonic() - start,
                    losses=losses_in(log or text), checkpoint=saved, tail=text[-2000:])


def _sky_run(folder: Path) -> str:
    """The ``run`` section of the sky.yaml written in ``folder``, read by the bounded reader of files on disk
    (:func:`gpuplan.userfiles.load_yaml`)."""
    return load_yaml(folder / "sky.yaml", "sky.yaml")["run"]


def _tune(plan) -> list[str]:
    from . import torchtune

    return ["tune", "run", torchtune.recipe(plan), "--config", torchtune.FILE]


def model_config(s: Scenario) -> dict:
    """The config.json of the scenario's model (a size-only model's synthetic one)."""
    from ..model.catalog import load_model

    if s.model_size:
        from ..model.synthetic import config, nearest_size

        return config(nearest_size(s.model_size))
    return dict(load_model(s.model).config)


def _trainer(plan, opts) -> list[str]:
    """The Trainer's entry point alone (TRL's SFT or DPO script, :func:`.settings.entry_script`)."""
    from .settings import entry_script

    return [sys.executable, *entry_script(plan.scenario, opts), "--config", "trainer.yaml"]


def prepare(s: Scenario, folder: Path, targets: list[str] | None = None, *, steps: int = STEPS,
            cuda: bool = False, force: bool = False) -> tuple[object, object, list[str]]:
    """The smoke run's files in ``folder`` (module docstring; new or empty unless ``force``: :func:`smoke_folder`):
    its tiny inputs and the launch files of the rewritten plan; the plan, its options and the targets that run here
    (``targets``, default every one of :data:`COMMANDS` that applies)."""
    from . import launch_files, launch_plan, targets_for, write
    from .settings import LaunchOptions

    folder = smoke_folder(folder, force)
    clear(folder / INPUTS)
    inputs = write_inputs(folder / INPUTS, model_config(s), dpo=s.train_objective == "dpo")
    plan = launch_plan(smoke_scenario(s, inputs, cuda), command="gpuplan launch --smoke")
    opts = LaunchOptions(dataset=str(inputs["dataset"]), device="cuda" if cuda else "cpu", max_steps=steps)
    chosen = [t for t in targets_for(plan, targets) if t in (COMMANDS if cuda else CPU_TARGETS)]
    needs = {"deepspeed": ["deepspeed", "accelerate", "trainer"], "torchrun": ["torchrun", "trainer"],
             "accelerate": ["accelerate", "trainer"], "skypilot": ["skypilot", "accelerate", "deepspeed", "trainer",
                                                                   "torchtune", "torchtitan", "axolotl", "unsloth"]}
    able = set(targets_for(plan, None))
    written = sorted({n for t in chosen for n in needs.get(t, [t]) if n in able})
    write(launch_files(plan, written, opts), folder, force=True)
    return plan, opts, chosen


def smoke(s: Scenario, folder: Path, targets: list[str] | None = None, *, steps: int = STEPS,
          cuda: bool | None = None, timeout_s: float = 600.0, force: bool = False) -> tuple[object, list[SmokeRun]]:
    """The smoke run of ``s`` in ``folder`` (:func:`prepare`), one run per target; the plan and the runs."""
    if cuda is None:
        import torch

        cuda = torch.cuda.is_available()
    plan, opts, chosen = prepare(s, folder, targets, steps=steps, cuda=cuda, force=force)
    runs = []
    for target in chosen:
        clear(Path(folder) / opts.output_dir)  # each run starts, not resumes
        runs.append(run_target(target, plan, opts, Path(folder), cuda, timeout_s))
    return plan, runs
