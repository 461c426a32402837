"""What every training file says about the data and the recipe, in each stack's own names: where the data is,
how it is packed, the learning rate, schedule, warm-up, the length of the run (epochs with data, else steps),
checkpoints and resuming.

With a dataset the run length is ``num_train_epochs`` (the stacks count their own packed rows, which may differ a
little from gpuplan's); without one, ``max_steps`` from ``train_tokens``. Local files are loaded with ``datasets``'
builder for their type (``json``, ``parquet``, ``csv``); Hugging Face ids by name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .files import Raw, quote
from .plan import LaunchPlan, local_path
from .settings import LaunchOptions

BUILDERS = {".jsonl": "json", ".ndjson": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}


def local_file(opts: LaunchOptions) -> tuple[str, str] | None:
    """(datasets builder, path) when the dataset is a local file (its absolute path when it is on this machine,
    so the run finds it wherever it starts); None for a Hugging Face id."""
    builder = BUILDERS.get(Path(opts.dataset).suffix.lower())
    path = local_path(opts.dataset)
    return (builder, str(path) if path else opts.dataset) if builder else None


def record_kind(plan: LaunchPlan) -> str:
    """The form of the plan's records as the estimate read them (:func:`gpuplan.dataset.tokenize.record_kind`):
    ``messages``, ``prompt-completion`` or ``text``; ``messages`` when no file was read (TRL's Capybara example,
    or a shorthand)."""
    data = plan.result.dataset or {}
    return data.get("kind") if data.get("kind") in ("prompt-completion", "text") else "messages"


def chat_turns(opts: LaunchOptions) -> tuple[str, bool]:
    """Where a chat file keeps its turns: (the column, whether the turns are ShareGPT's ``from``/``value``), read off
    the first record of a local file (``messages`` of role/content otherwise, and for a Hugging Face id, which is
    not fetched here). The estimate counts both forms, as TRL converts ShareGPT's (``dataset.tokenize.chatml``)."""
    from ..dataset.read import dataset_format, records

    path = local_path(opts.dataset)
    if path is None or not path.is_file():
        return "messages", False
    first = next(records(str(path), dataset_format(str(path))), {})
    column = "messages" if isinstance(first.get("messages"), list) else \
        "conversations" if isinstance(first.get("conversations"), list) else "messages"
    turns = first.get(column) or [{}]
    return column, isinstance(turns[0], dict) and "from" in turns[0] and "value" in turns[0]


def explicit_prompt(opts: LaunchOptions) -> bool:
    """Whether the first record of a local preference file holds a ``prompt`` (TRL's explicit preference form)
    rather than whole ``chosen`` and ``rejected`` conversations (its implicit-prompt form); False for a Hugging Face
    id, which is not fetched here."""
    from ..dataset.read import dataset_format, records

    path = local_path(opts.dataset)
    if path is None or not path.is_file():
        return False
    return "prompt" in next(records(str(path), dataset_format(str(path))), {})


def trl_dataset(opts: LaunchOptions) -> dict[str, Any]:
    """TRL's script arguments for the data: ``dataset_name``, or a ``datasets`` mixture entry for a local file
    (``trl/scripts/utils.py`` ``DatasetConfig``: path, data_files, split)."""
    local = local_file(opts)
    if local is None:
        return {"dataset_name": opts.dataset}
    return {"datasets": [{"path": local[0], "data_files": local[1], "split": "train"}]}


def hf_dataset_call(opts: LaunchOptions, name: str = "DATASET") -> str:
    """The ``load_dataset`` call of a Python script whose variable ``name`` holds the dataset."""
    local = local_file(opts)
    if local is None:
        return f"load_dataset({name}, split=\"train\")"
    return f"load_dataset({local[0]!r}, data_files={name}, split=\"train\")"


DPO_BETA = 0.1  # TRL DPOConfig.beta default (trl 1.16 trainer/dpo_config.py)


def sft_fields(plan: LaunchPlan) -> dict[str, Any]:
    """TRL ``SFTConfig`` / Trainer fields of the recipe: learning rate, schedule, warm-up, clipping, run length,
    checkpoints, and the packing the estimate assumed."""
    s, r = plan.scenario, plan.recipe
    out: dict[str, Any] = {}
    packing = s.packing or "bfd"  # without data, every micro-batch holds seq_len tokens: packed
    out["packing"] = packing in ("bfd", "wrapped")
    if out["packing"]:
        out["packing_strategy"] = packing if packing == "wrapped" else "bfd"
        if packing == "bfd":
            out["padding_free"] = True
    if packing == "bucket":  # transformers 5 (the Trainer's group_by_length before)
        out["train_sampling_strategy"] = "group_by_length"
    if r is None:
        return out
    out.update({"learning_rate": r.learning_rate, "lr_scheduler_type": r.schedule + ("_with_warmup" if
                                                                                       r.schedule == "constant"
                                                                                       else ""),
                "warmup_steps": r.warmup_steps, "max_grad_norm": r.max_grad_norm})
    if in_epochs(plan):
        out["num_train_epochs"] = r.epochs or 1.0
    if r.assistant_only:  # TRL patches the chat templates it knows with {% generation %} markers
        out["assistant_only_loss"] = True
    return out


def dpo_fields(plan: LaunchPlan) -> dict[str, Any]:
    """TRL ``DPOConfig`` fields of a DPO plan (trl 1.16 ``trainer/dpo_config.py``): the recipe's schedule as for
    SFT, no packing (``DPOConfig`` has no ``packing``; its collator pads each pair's prompt+chosen and
    prompt+rejected rows, as the estimate assumes), ``beta`` at TRL's default 0.1, the sigmoid loss the plan costs,
    and ``precompute_ref_log_probs`` from the scenario (no reference forward during training)."""
    dropped = ("packing", "packing_strategy", "padding_free", "train_sampling_strategy", "assistant_only_loss")
    out = {k: v for k, v in sft_fields(plan).items() if k not in dropped}
    out.update({"beta": DPO_BETA, "loss_type": ["sigmoid"],
                "precompute_ref_log_probs": bool(plan.scenario.precompute_ref_log_probs)})
    return out


def in_epochs(plan: LaunchPlan) -> bool:
    """Whether the run is counted in epochs of its data (``num_train_epochs``), not in ``max_steps``."""
    return plan.recipe is not None and bool(plan.scenario.dataset or plan.scenario.samples)


def save_fields(plan: LaunchPlan) -> dict[str, Any]:
    """When the Trainer saves (transformers ``TrainingArguments`` ``save_strategy``/``save_steps``; Axolotl's and
    Unsloth's SFTConfig take the same keys): every ``plan.save_steps`` optimizer steps (the recipe's interval), else
    what the recipe says of a run shorter than its interval, "only the final save (and one per epoch)"
    (:func:`gpuplan.plan.recipe.checkpoint_steps`): ``epoch`` for a run counted in epochs; ``save_steps`` =
    ``max_steps`` for a run of ``max_steps`` (transformers' ``DefaultFlowCallback.on_step_end`` saves at
    ``max_steps`` under ``steps``; left out, the Trainer's default 500 saves a 1,526-step run three more times).
    Without a recipe, the Trainer's defaults."""
    if plan.save_steps is not None:
        return {"save_strategy": "steps", "save_steps": plan.save_steps}
    if in_epochs(plan):
        return {"save_strategy": "epoch"}
    if plan.recipe is not None and plan.max_steps:
        return {"save_strategy": "steps", "save_steps": plan.max_steps}
    return {"save_strategy": "steps"}


def save_note(plan: LaunchPlan) -> list[str]:
    """The files' line on checkpoints when the recipe's interval is longer than the run (:func:`save_fields`)."""
    if plan.save_steps is not None:
        return []
    fields = save_fields(plan)
    when = ("at the end of each epoch" if fields["save_strategy"] == "epoch" else
            "once, at the end of the run (save_steps = max_steps)" if "save_steps" in fields else
            "every 500 steps, the Trainer's default (no recipe)")
    return [f"checkpoints: the Daly interval is longer than the run: saved {when}"]


def resume_token(output_dir: str) -> Raw:
    """A shell word that becomes ``--resume_from_checkpoint <newest checkpoint in output_dir>`` once a checkpoint
    exists (after an interruption) and nothing on the first start: the Trainer resumes from it."""
    return Raw(f"$(ls -d {quote(output_dir)}/checkpoint-* 2>/dev/null | sort -t- -k2 -n | tail -n 1 | "
               "sed 's/^/--resume_from_checkpoint /')")
