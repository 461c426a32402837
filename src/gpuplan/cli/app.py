"""The typer app, its consoles and what every command shares: the scenario options, JSON output."""

from __future__ import annotations

import functools
import inspect
import types
import typing
from typing import Annotated, Any

import typer

from .. import api
from .._version import __version__
from ..errors import RENAMED_FIELDS, GpuplanError, renamed
from .render import follow_columns, out, write_json

app = typer.Typer(
    name="gpuplan",
    help="Which GPUs an LLM, diffusion or speech job needs and what it will cost: memory, speed and price, from "
    "the model's own config.json. `gpuplan COMMAND --help` says more.\n\nExamples:\n\n\b\n"
    "  gpuplan estimate --model llama-3.1-8b --task train --method qlora --gpu rtx-4090\n"
    "  gpuplan recommend --model llama-3.1-8b --task train --train-tokens 1e8 --any-method\n"
    "  gpuplan capacity --model llama-3.1-8b --users 20 --preset chat --gpus l4",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # click's help: reflows paragraphs to the terminal, never cuts an option's name
    context_settings={"max_content_width": 120, "help_option_names": ["-h", "--help"]},
)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON instead of a table.")]


def print_json(data: Any) -> None:
    """Strict JSON on stdout (NaN and Infinity never reach it)."""
    write_json(data)


def _version(value: bool) -> None:
    if value:
        out.print(f"gpuplan {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Show the version and exit.")] = False,
) -> None:
    """gpuplan: plan GPU memory, speed and cost for LLM inference and training."""
    follow_columns()


class BoolText:
    """Marker type for a scenario flag that takes true/false as its value (``--qlora-fp32-upcast false``)."""


def boolean(text: str) -> bool:
    key = str(text).strip().lower()
    if key in ("true", "1", "yes", "on"):
        return True
    if key in ("false", "0", "no", "off"):
        return False
    raise typer.BadParameter(f"{text!r} is not true or false")


def _kind(annotation: Any) -> tuple[Any, str | None, dict[str, Any]]:
    """(CLI type, metavar, extra Option arguments) for a scenario field's annotation: int, float, true/false,
    a choice (validated by the scenario, which suggests the closest value), or text."""
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    args = [a for a in typing.get_args(annotation) if a is not type(None)] if union else [annotation]
    literals = [v for a in args for v in (typing.get_args(a) if typing.get_origin(a) is typing.Literal else ())]
    if literals and all(typing.get_origin(a) is typing.Literal for a in args):
        return str, "CHOICE", {"choices": literals}
    if args == [bool]:
        return BoolText, "BOOL", {"parser": boolean}
    if args == [int]:
        return int, "INTEGER", {}
    if args == [float]:
        return float, "FLOAT", {}
    return str, "TEXT", {}


# Fields whose value, left unset, the training recipe chooses (plan/layout.py): their help says so, not the field's 1.
RECIPE_CHOSEN = {"micro_batch_size", "grad_accum_steps"}
# What each scenario field means, for --help where the field carries no description of its own.
FIELD_HELP = {
    "task": "train, or infer to serve", "method": "full fine-tuning, LoRA or QLoRA (train)",
    "optimizer": "optimizer (train)", "lora_rank": "LoRA rank r", "lora_dropout": "LoRA dropout (saves a mask)",
    "micro_batch_size": "sequences per GPU per forward (train); unset: the recipe's, the fastest per sequence that "
                        "fits the named GPU (1 without a GPU; the note says which)",
    "seq_len": "tokens per training sequence (at most the model's context)",
    "grad_accum_steps": "micro-batches per optimizer step; unset: what reaches the recipe's global batch (1 without a "
                        "GPU)",
    "attention": "attention kernel", "train_tokens": "tokens the whole job processes, e.g. 1e8 (for hours and the "
                    "total; unset: set by --dataset or --samples, by --model-size at 20 tokens a parameter, else "
                    "only $/h)",
    "batch_size": "concurrent requests (serve)", "prompt_tokens": "prompt length per request (serve)",
    "output_tokens": "generated tokens per request (serve)", "kv_cache_dtype": "KV cache storage (serve)",
    "engine": "serving engine: its memory policy, scheduler and step times",
    "gpu": "GPU name or id (`gpuplan gpus`), one kind of card; a count and a card (2x3090) sets num_gpus too "
           "(different cards: --extra-gpus, engine llama.cpp)",
    "num_gpus": "GPUs per node", "num_nodes": "nodes",
    "tp": "tensor parallel degree", "pp": "pipeline stages (serve: layers split over GPUs)",
    "offload": "training states kept in CPU memory",
}


# Scenario fields with a second, shorter flag: the names the benchmark clients and `gpuplan capacity` use.
FLAG_ALIASES = {"rate_rps": "--rate", "think_time_s": "--think-time"}


def scenario_options() -> list[inspect.Parameter]:
    """One ``--field-name`` option per scenario field, typed as the field is (int, float, true/false, a choice or
    text), with the scenario's default in the help; ranges and choices are checked by the scenario model, which
    names the field and the fix."""
    from .. import api

    params = []
    for name, info in api.Scenario.model_fields.items():
        kind, metavar, extra = _kind(info.annotation)
        choices = extra.pop("choices", None)
        about = info.description or FIELD_HELP.get(name, "")
        helptext = about + (("; " if about else "") + " | ".join(choices) if choices else "")
        if name == "lora_targets":
            helptext, metavar = "all-linear, or modules separated by commas: q_proj,v_proj", "TEXT"
        if name == "quant":
            helptext = quant_help()
        default = None if info.is_required() else info.default
        if info.is_required():
            helptext += " [required]"
        elif default is not None and name not in RECIPE_CHOSEN:
            shown = str(default).lower() if isinstance(default, bool) else default
            also = {"precision": "; fp16 on cards without bf16",
                    "engine": f"; {api.LOAD_ENGINE} under --users or --rate"}
            helptext += f" [default: {shown}{also.get(name, '')}]"
        params.append(inspect.Parameter(
            name, inspect.Parameter.KEYWORD_ONLY, default=None,
            annotation=Annotated[kind | None, typer.Option(  # type: ignore[operator]
                f"--{name.replace('_', '-')}", *([FLAG_ALIASES[name]] if name in FLAG_ALIASES else []),
                help=helptext.strip(), metavar=metavar, show_default=False,
                rich_help_panel="Scenario fields", **extra)]))
    return params


def quant_help() -> str:
    """``--quant``'s help: the weight formats a scenario's ``quant`` takes (estimate's field, capacity's flag)."""
    from .. import api

    named = [q for q in api.quant_formats() if not q.startswith("gguf-")]
    return (f"weight format: {' | '.join(named)} | a GGUF type (q4_k_m, q8_0...); default: the checkpoint's own "
            "quantization_config")


# flags renamed with their fields (issue 30): still read, hidden from --help, said once on stderr
OLD_FLAGS = RENAMED_FIELDS


def old_flags(skip: tuple[str, ...] = ()) -> list[inspect.Parameter]:
    """Hidden options for the old names of the scenario's renamed fields (``--framework``, ``--strategy``)."""
    return [inspect.Parameter(old, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[
        str | None, typer.Option(f"--{old}", hidden=True, help=f"old name of --{new}")])
        for old, new in OLD_FLAGS.items() if new not in skip]


# `--module` is read by simulate, estimate, recommend and cost (OWN_MODULE); the other scenario commands read it
# hidden, to say which commands plan a module of one's own
MODULE_FLAG = inspect.Parameter("module", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[
    str | None, typer.Option("--module", hidden=True, help="estimate's option (refused here, saying so)")])
OWN_MODULE = inspect.Parameter("module", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[
    str | None, typer.Option("--module", help="Your own PyTorch module instead of --model: package.module:function, "
                             "a callable returning (module, example_input), run once on fake tensors (needs torch); "
                             "imports and runs that code from the current folder, as python -m does: name only your "
                             "own",
                             rich_help_panel="Model", show_default=False)])


def module_of(fields: dict[str, Any]) -> str | None:
    """``--module``'s target, taken out of ``fields`` with the scenario's model set to it (estimate, recommend and
    cost plan your own module on the one road: :func:`gpuplan.api.estimate`'s ``module``)."""
    target = fields.pop("module", None)
    if target is None:
        return None
    if fields.get("model") is not None:
        raise GpuplanError("give --model (a model gpuplan builds from a config) or --module (your own nn.Module), not "
                           "both")
    fields["model"] = target
    return target


def overrides(fields: dict[str, Any]) -> dict[str, Any]:
    fields = dict(fields)
    target = fields.pop("module", None)
    if target is not None:
        task = fields.get("task") or "train"
        raise GpuplanError(f"--module (your own nn.Module) is planned by `gpuplan estimate --module {target[:100]} "
                           f"--task {task} --gpu NAME` on one card, `recommend --module ...` and `cost --module ...` "
                           f"on the cards and offers it fits, and `simulate --module ...`; this command plans models "
                           "gpuplan builds from a config")
    for old, new in OLD_FLAGS.items():
        if fields.get(old) is None:
            fields.pop(old, None)
            continue
        if fields.get(new) is not None and fields[new] != fields[old]:
            raise GpuplanError(f"give --{new} or its old name --{old}, not both")
        renamed(old, "flag")
        fields[new] = fields.pop(old)
    out: dict[str, Any] = {k: v for k, v in fields.items() if v is not None}
    if "lora_targets" in out and out["lora_targets"] != "all-linear":
        out["lora_targets"] = [t.strip() for t in out["lora_targets"].split(",") if t.strip()]
    return out


def short(gpu_id: str) -> str:
    """nvidia-geforce-rtx-4090 -> rtx-4090: table cells stay narrow; the JSON keeps full ids."""
    from .. import api

    return api.short_gpu(gpu_id)


def option(name: str, kind: Any, default: Any, text: str, panel: str | None = None,
           param_decls: tuple[str, ...] | None = None, **extra: Any) -> inspect.Parameter:
    """A keyword-only ``--name`` option for a command whose signature is built at import."""
    decls = param_decls or (f"--{name.replace('_', '-')}",)
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Annotated[
        kind, typer.Option(*decls, help=text, rich_help_panel=panel, **extra)])


def scenario_command(name: str, fn, *extra: inspect.Parameter, skip: tuple[str, ...] = (),
                     extra_words: bool = False) -> None:
    """Register ``fn`` as command ``name`` taking a scenario file, ``--json``, ``extra`` options and one
    option per scenario field (but ``skip``); typer reads the signature set here. ``extra_words``: the words after
    the scenario file reach ``fn`` (as its ``ctx.args``) for it to say what they meant, where click would refuse
    them in words of its own ("Got unexpected extra argument(s)"). Every such command takes ``--count-timeout``
    (:func:`bounded_counting`)."""
    command = bounded_counting(fn)
    command.__signature__ = inspect.Signature([
        inspect.Parameter("scenario", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None,
                          annotation=Annotated[str | None, typer.Argument(
                              help="Scenario YAML/JSON file; flags override it.", show_default=False)]),
        inspect.Parameter("as_json", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=JsonFlag),
        *extra,
        *[p for p in scenario_options() if p.name not in skip],
        *old_flags(skip),
        *([] if any(p.name == "module" for p in extra) else [MODULE_FLAG]),
        *([inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context)] if extra_words else []),
        COUNT_TIMEOUT,
    ])
    app.command(name, context_settings={"allow_extra_args": True} if extra_words else None)(command)


COUNT_TIMEOUT = inspect.Parameter("count_timeout", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[
    float | None, typer.Option(
        "--count-timeout", metavar="SECONDS", show_default=False, rich_help_panel="Scenario fields",
        help=f"Stop counting the dataset's tokens after SECONDS, saying so [default: {api.COUNT_TIMEOUT_S:g}; 0: no "
             "limit]")])


def bounded_counting(fn):
    """``fn`` taking ``count_timeout`` (``--count-timeout``): its dataset's tokens are counted within that many
    seconds (:func:`gpuplan.api.count_timeout`, default :data:`gpuplan.api.COUNT_TIMEOUT_S`): a huge dataset
    or a slow chat template is one sentence, not a command that never ends."""

    @functools.wraps(fn)
    def command(*args, count_timeout: float | None = None, **kwargs):
        seconds = api.COUNT_TIMEOUT_S if count_timeout is None else count_timeout
        if not seconds >= 0:  # NaN or below 0
            raise GpuplanError(f"--count-timeout is a number of seconds, 0 or more (0: no limit), not {seconds}")
        with api.count_timeout(seconds):
            return fn(*args, **kwargs)

    return command
