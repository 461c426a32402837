"""Silent fields (s27): a flag the plan does not read must be named in its warnings, never left out without a word.

A case is a valid ``estimate`` of a decoder LLM (the CLI's own recipe: training, or serving on any engine) or of a
module (a diffusion pipeline, Whisper, T5, BERT, either task), with one to three more scenario options drawn from
the CLI's definition with values of their kind. It runs through the CLI with ``--json``. A refusal (exit 2, one
sentence) passes; an answer must name in a warning each field given that its plan does not read:

- a decoder LLM's plan: the other task's fields (``gpuplan.scenario.TRAIN_ONLY`` / ``INFER_ONLY``), and, serving,
  an engine's setting given another value than its default to an engine that does not read it
  (``gpuplan.engines.readers``);
- a module's plan: every field outside what it reads for its task (``gpuplan.scenario.modules.reads``).

Those lists are the package's, so a second run checks what the warning claims: the same command without the fields
warned of must plan the same memory and the same speed (a list that names a field some plan reads fails here, as
TensorRT-LLM's plans read vLLM's entry_point did).
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

from . import values as V
from .inprocess import cli_in_process
from .oracle import NONSENSE, OK, Verdict
from .recipes import FAST_CARDS, job
from .tree import FLAG, Param

MODULE_JOBS = [("sdxl", "infer"), ("sdxl", "train"), ("flux-dev", "infer"), ("whisper-large-v3", "infer"),
               ("whisper-large-v3", "train"), ("flan-t5-base", "infer"), ("flan-t5-base", "train"),
               ("bert-base-uncased", "infer"), ("bert-base-uncased", "train")]
# fields a random value of cannot be drawn for without a file, or that choose the job itself
LEFT_OUT = {"model", "task", "gpu", "dataset", "tokenizer", "draft_model", "model_size"}
# the numbers a warned field must leave as they are
NUMBERS = ("memory", "speed", "work")


def silent_case(r: random.Random) -> dict[str, Any]:
    """A valid job and 1-3 more options (field name -> the text given), each drawn from the CLI's definition."""
    from .tree import commands

    cmd = next(c for c in commands() if c.name == "estimate")
    if r.random() < 0.6:
        base = job(r, cmd)
        base.pop("train_tokens", None)
    else:
        model, task = r.choice(MODULE_JOBS)
        base = {"model": model, "task": task, "gpu": r.choice(FAST_CARDS)}
        if task == "train":
            base["method"] = r.choice(["lora", "full"])
    names = [p for p in cmd.params if p.field and p.name not in base and p.name not in LEFT_OUT
             and not V.role(p).startswith(("file:", "out:", "model"))]
    aimed = _aimed(base)  # most draws aim at the fields a plan of this kind is said not to read
    pool = [p for p in names if p.name in aimed] if r.random() < 0.7 else names
    extra: dict[str, list[str]] = {}
    for p in r.sample(pool or names, min(len(pool or names), r.randint(1, 3))):
        extra[p.name] = _tokens(r, p, at_default=p.name in aimed and r.random() < (0.8 if aimed[p.name] else 0.4))
    return {"silent": {"base": {k: [f"--{k.replace('_', '-')}", v] for k, v in base.items()}, "extra": extra}}


def _aimed(base: dict[str, str]) -> dict[str, bool]:
    """The fields a plan of ``base``'s kind is said not to read (the package's lists), each True where only its
    default passes (another kind of model's field on a module: a value is refused)."""
    import gpuplan
    from gpuplan.engines import OWN_SETTINGS, REFUSES_FOREIGN, SHARED_SETTINGS
    from gpuplan.model.kinds import NotADecoder
    from gpuplan.scenario import INFER_ONLY, TRAIN_ONLY, Scenario
    from gpuplan.scenario.modules import reads

    try:
        gpuplan.load_model(base["model"])
    except NotADecoder as module:
        either, own = set(reads(module.spec)), set(reads(module.spec, base["task"]))
        return {name: name not in either for name in Scenario.model_fields if name not in own}
    if base["task"] == "train":
        return dict.fromkeys(INFER_ONLY, False)
    settings = [f for name, own in OWN_SETTINGS.items() if name not in REFUSES_FOREIGN for f in own]
    return dict.fromkeys([*TRAIN_ONLY, *settings, *SHARED_SETTINGS], False)


def _tokens(r: random.Random, p: Param, *, at_default: bool) -> list[str]:
    """The tokens that give option ``p`` a value of its kind (its default's, ``at_default``, where it has one)."""
    from gpuplan.scenario import Scenario

    default = Scenario.model_fields[p.name].default
    if p.kind == FLAG:  # --x or --no-x
        return [p.secondary[0] if at_default and default is False and p.secondary else r.choice([*p.opts,
                                                                                               *p.secondary])]
    if at_default and isinstance(default, (bool, int, float, str)):
        return [p.flag, str(default).lower() if isinstance(default, bool) else str(default)]
    role = V.role(p)
    return [p.flag, V.named(r, role, False) if role else V.scalar(r, p, False, V.help_examples(p.help))]


def argv_of(fields: dict[str, list[str]]) -> list[str]:
    return ["estimate", *(token for tokens in fields.values() for token in tokens), "--json"]


def shown(fields: dict[str, list[str]]) -> str:
    import shlex

    return "gpuplan " + shlex.join(argv_of(fields))


def unread(fields: dict[str, list[str]], answer: dict[str, Any], given: list[str]) -> list[str]:
    """The fields among ``given`` that the plan ``answer`` does not read, by the package's own lists."""
    import gpuplan
    from gpuplan.engines import readers
    from gpuplan.model.kinds import NotADecoder
    from gpuplan.scenario import INFER_ONLY, TRAIN_ONLY, Scenario
    from gpuplan.scenario.modules import reads

    task = answer["scenario"]["task"]
    try:
        gpuplan.load_model(fields["model"][-1])
    except NotADecoder as module:
        read = set(reads(module.spec, task))
        return [f for f in given if f not in read]
    other = INFER_ONLY if task == "train" else TRAIN_ONLY
    engine = answer["scenario"].get("engine")
    return [f for f in given if f in other or (
        task == "infer" and readers(f) and engine not in readers(f)
        and answer["scenario"].get(f) != Scenario.model_fields[f].default)]


def judge_silent(case: dict[str, Any]) -> Verdict:
    """Refused in a sentence, or every field given that the plan does not read named in a warning, with the plan's
    numbers those of the same command without them."""
    fields = {**case["base"], **case["extra"]}
    code, out, _, exc = cli_in_process(argv_of(fields))
    if exc is not None or code != 0:
        return Verdict(OK, detail="refused")  # the CLI row judges refusals and crashes
    answer = json.loads(out)
    warned = " ".join(answer.get("warnings", []))
    left = unread(fields, answer, list(case["extra"]))
    silent = [f for f in left if not re.search(rf"(?<![\w]){re.escape(f)}(?![\w])", warned)]
    if silent:
        return Verdict(NONSENSE, "a field the plan does not read is not named in a warning",
                       f"{shown(fields)} -> {silent} not in {answer.get('warnings')}")
    if not left:
        return Verdict(OK)
    code, out, _, exc = cli_in_process(argv_of({k: v for k, v in fields.items() if k not in left}))
    if exc is not None or code != 0:
        return Verdict(NONSENSE, "dropping the fields warned of turns an answer into a refusal",
                       f"{shown(fields)} without {left}")
    without = json.loads(out)
    moved = [k for k in NUMBERS if answer.get(k) != without.get(k)]
    if moved:
        return Verdict(NONSENSE, "a field warned of as left out moves the plan's numbers",
                       f"{shown(fields)}: {left} move {moved}")
    return Verdict(OK)
