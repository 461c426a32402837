"""The training data: its token counts, how the stack batches it, and the recipe that trains on it.

A scenario names its data with ``dataset`` (a file or a Hugging Face id, tokenized with the model's tokenizer or
``tokenizer``) or with the shorthand ``samples`` x ``mean_tokens`` (up to ``max_tokens``). :func:`profile` reads
it once (cached) and gives the statistics (:mod:`.lengths`), the batching (:mod:`.batching`) and the epochs;
:func:`fields` turns it into the scenario's defaults: ``train_tokens`` = epochs x tokens trained per epoch, the
packing, and the sequence length of a padded batch. Nothing here is imported by ``import gpuplan``; the
tokenizer, ``pyarrow`` and ``datasets`` load only when a file is read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from .. import clock
from ..errors import GpuplanError
from .batching import PACKING, Batching, batching
from .lengths import Lengths, Statistics, shorthand, statistics

PACK_BELOW = 0.5  # pack when records average less than half a sequence: padding would waste about half


@dataclass(frozen=True, kw_only=True)
class Profile:
    source: str  # the file or id, or "shorthand"
    tokenizer: str | None
    lengths: Lengths
    stats: Statistics
    batching: Batching
    epochs: float
    seq_len: int
    notes: tuple[str, ...]

    @property
    def warnings(self) -> tuple[str, ...]:
        """What the data would do wrong in the run: chat records that train nothing (:func:`reply_warning`)."""
        said = reply_warning(self.lengths)
        return (said,) if said else ()


def describes_data(data: dict[str, Any]) -> bool:
    return bool(data.get("dataset") or data.get("samples"))


def tokenizer_name(data: dict[str, Any]) -> str:
    """``tokenizer`` if given, else the model's repo id (a bundled alias resolved), else the model argument: a
    folder, or the folder of a config.json file (its tokenizer.json sits beside it, as in a checkpoint). Before,
    a model given as ``path/config.json`` was read as the tokenizer itself: "config.json is not a tokenizer.json
    the tokenizers library reads"."""
    if data.get("tokenizer"):
        return str(data["tokenizer"])
    from ..model.catalog import bundled_repo
    from ..userfiles import is_file, user_path

    model = str(data.get("model") or "")
    if model and is_file(user_path(model)):
        return os.path.dirname(model) or "."
    return bundled_repo(model) or model


def _file_key(source: str) -> tuple:
    try:
        st = os.stat(os.path.expanduser(source))
        return (source, st.st_mtime_ns, st.st_size)
    except OSError:
        return (source, 0, 0)


@lru_cache(maxsize=32)
def _read(key: tuple, tokenizer: str) -> Lengths:
    """The token counts of ``key``'s file: kept from an earlier run on the same bytes and tokenizer
    (:mod:`.cache`), else tokenized here and kept."""
    from . import cache
    from .read import dataset_format

    source, deadline, tally = key[0], clock.count_deadline(), _Tally()
    try:  # every pass over the file within the one deadline: its digest, its records counted, its tokens
        kept = cache.name_of(source, tokenizer, deadline) if dataset_format(source) != "hub" else None
        lengths = cache.load(kept) if kept else None
        if lengths is None:
            lengths = _tokenized(source, tokenizer, deadline, tally)
            if kept:
                cache.store(kept, lengths)
    except clock.CountOverdue:
        planned = f" of {-(-tally.total // _stride(tally.total)):,}" if tally.total else ""
        raise GpuplanError(f"counting the tokens of {source} took more than {clock.count_seconds():g} s "
                           f"({len(tally.content):,}{planned} records counted): give --count-timeout more seconds "
                           "(0: no limit), or plan without the file with --samples and --mean-tokens") from None
    return lengths


@dataclass
class _Tally:
    """The token counts of the records read so far, and what they are."""

    content: list[int] = field(default_factory=list)
    special: list[int] = field(default_factory=list)
    loss: list[int] = field(default_factory=list)
    kinds: set[str] = field(default_factory=set)
    total: int | None = None  # records in the file, where its first pass counted them
    seen: int = 0  # records read, counted or not (1 in stride is)
    silent: int = 0  # chat records without a reply


def _stride(total: int | None) -> int:
    """1 in how many records is counted: a regular sample of SAMPLE_RECORDS of a huge file."""
    from .read import SAMPLE_RECORDS

    return max(1, -(-total // SAMPLE_RECORDS)) if total else 1


def _tokenized(source: str, tokenizer: str, deadline: float | None, tally: _Tally) -> Lengths:
    """Tokenize the records of ``source`` (a regular sample of a huge file) into ``tally`` by ``deadline``
    (``time.monotonic()``: :func:`gpuplan.clock.count_deadline`, read in each pass over the file)."""
    from .read import SAMPLE_RECORDS, count_records, dataset_format
    from .tokenize import load_tokenizer

    fmt = dataset_format(source)
    tok = load_tokenizer(tokenizer)
    total = tally.total = count_records(source, fmt, deadline) if fmt != "hub" else None
    stride = _stride(total)
    _count(source, fmt, tok, total, tally, deadline)
    content, seen = tally.content, tally.seen
    if not content:
        raise GpuplanError(f"dataset {source!r} holds no records")
    samples = total or seen
    notes = []
    if stride > 1:
        notes.append(f"{samples:,} records: 1 in {stride} tokenized ({len(content):,}, evenly spaced) and the totals "
                     f"scaled by {samples / len(content):.3g}")
    if fmt == "hub" and seen > SAMPLE_RECORDS:
        notes.append(f"the first {SAMPLE_RECORDS:,} records of {source} tokenized (a streamed dataset does not "
                     "say its size)")
    if "messages" in tally.kinds and tok.chat_template:
        notes.append(f"chat template of {tok.source} applied as transformers' apply_chat_template")
    elif "messages" in tally.kinds:
        why = f"its chat template is left out ({tok.template_refused})" if tok.template_refused else \
            "has no chat template"
        notes.append(f"{tok.source} {why}: turns joined by newlines + EOS (as a plain text)")
    if tok.eos_token is None:
        notes.append(f"{tok.source} names no EOS token: none added")
    scale = samples / len(content)
    return Lengths(content=tuple(content), special=tuple(tally.special), loss=tuple(tally.loss), scale=scale,
                   samples=samples, kind="/".join(sorted(tally.kinds)), notes=tuple(notes),
                   no_reply=round(tally.silent * scale))


def _count(source: str, fmt: str, tok, total: int | None, tally: _Tally, deadline: float | None) -> None:
    """Count a regular sample of the ``total`` records of ``source`` (:func:`_stride`) into ``tally``, 512 at a
    time; :class:`gpuplan.clock.CountOverdue` past ``deadline`` (``time.monotonic()``), checked at each record."""
    from .read import SAMPLE_RECORDS, Progress, records
    from .tokenize import count_records as count_tokens
    from .tokenize import has_reply, record_kind

    stride = _stride(total)
    progress = Progress(source, total)
    batch: list[dict] = []
    numbers: list[int] = []  # each record's number in the file, for a sentence about one

    def one(number: int, record: dict) -> tuple[int, int, int]:
        try:
            return count_tokens(tok, [record], deadline)[0]
        except clock.CountOverdue:
            raise
        except GpuplanError as err:
            raise GpuplanError(f"{source}, record {number:,}: {err}") from None

    def flush() -> None:
        try:
            counted = count_tokens(tok, batch, deadline)
        except clock.CountOverdue:
            raise
        except GpuplanError:  # which record: counted again one by one, up to the one that fails
            counted = [one(n, record) for n, record in zip(numbers, batch, strict=True)]
        for c, s, lo in counted:
            tally.content.append(c)
            tally.special.append(s)
            tally.loss.append(lo)
        batch.clear()
        numbers.clear()

    for i, record in enumerate(records(source, fmt)):
        tally.seen += 1
        if fmt == "hub" and tally.seen > SAMPLE_RECORDS:
            break
        clock.count_in_time(deadline)
        if i % stride:
            continue
        try:
            kind = record_kind(record)
        except GpuplanError as err:  # which record: the readers number lines, this names records
            raise GpuplanError(f"{source}, record {i + 1:,}: {err}") from None
        tally.kinds.add(kind)
        tally.silent += kind == "messages" and not has_reply(record)
        batch.append(record)
        numbers.append(i + 1)
        if len(batch) >= 512:
            flush()
            progress.update(tally.seen)
    flush()
    progress.close()


def reply_warning(lengths: Lengths) -> str | None:
    """One sentence when chat records hold no reply turn (:func:`gpuplan.dataset.tokenize.has_reply`): the recipe
    puts the loss on the assistant turns only, so such a record trains nothing, and TRL's SFTTrainer
    (``assistant_only_loss``) stops on the first one."""
    n, k = lengths.samples, lengths.no_reply
    if not k:
        return None
    head = f"none of the {n:,} chat records has an assistant turn" if k >= n else \
        f"{k:,} of the {n:,} records are chats without an assistant turn"
    return (f"{head}: the loss is on the assistant turns only, so they train nothing and TRL's SFTTrainer "
            "(assistant_only_loss) stops on them; add the replies, drop those records, or give them as text "
            "({\"text\": ...}) to train on all of it")


def lengths_of(data: dict[str, Any]) -> Lengths:
    if data.get("samples"):
        return _shorthand(int(data["samples"]), float(data["mean_tokens"]), data.get("max_tokens"))
    return _read(_file_key(str(data["dataset"])), tokenizer_name(data))


@lru_cache(maxsize=64)
def _shorthand(samples: int, mean: float, max_tokens: int | None) -> Lengths:
    return shorthand(samples, mean, max_tokens)


@lru_cache(maxsize=256)
def _statistics(lengths: Lengths, seq_len: int) -> Statistics:
    return statistics(lengths, seq_len)


@lru_cache(maxsize=256)
def _batching(lengths: Lengths, seq_len: int, micro_batch: int, packing: str, pad_packs: bool) -> Batching:
    return batching(lengths.sequences, lengths.scale, seq_len, micro_batch, packing, pad_packs)


def default_packing(recipe: Any, lengths: Lengths, seq_len: int | None) -> tuple[str, str]:
    """The packing to plan when none is named, and why, by the stack's ``recipe``
    (:class:`gpuplan.scenario.stacks.Recipe`: ``wraps_rows``, ``packs``): the stack's pretraining concatenation
    (torchtitan), best-fit packing where the stack packs without attention across records and records average
    under half of ``seq_len`` as given, else padding per batch (every stack's default; said so where ``seq_len``
    was not given)."""
    if recipe.wraps_rows:
        return "wrapped", f"{recipe.name} concatenates its data into full rows"
    mean = sum(lengths.sequences) / len(lengths.sequences)
    if recipe.packs and seq_len and mean < PACK_BELOW * seq_len:
        return "bfd", (f"records average {mean:,.0f} tokens, under half of {seq_len:,}: packed "
                       f"({recipe.packs}), set packing none to pad instead")
    if recipe.packs and not seq_len:  # rows as long as the longest record: packing would be asked for
        return "none", ("padded per batch, the stacks' default: with no --seq-len, rows are as long as the longest "
                        "record (set --seq-len to pack records averaging under half of it, or packing bfd)")
    return "none", "padded per batch, the stacks' default (packing bfd packs)"


def fields(data: dict[str, Any], explicit: set[str], recipe: Any) -> dict[str, Any]:
    """The scenario fields the data decides when left unset: ``packing`` (by the stack's ``recipe``), ``seq_len``
    (the longest record, when batches are padded: no truncation, and the peak at the longest batch) and
    ``train_tokens`` (epochs x tokens trained per epoch)."""
    lengths = lengths_of(data)
    out: dict[str, Any] = pair_fields(data, explicit, lengths)
    seq_len = data["seq_len"] if "seq_len" in explicit else None
    packing = data.get("packing")
    if packing is None and out.get("train_objective", data.get("train_objective")) == "dpo":
        packing = out["packing"] = "none"  # TRL's DPOTrainer pads each batch of pairs
    if packing is None:
        packing, _ = default_packing(recipe, lengths, seq_len)
        out["packing"] = packing
    context = model_context(data) if seq_len is None else None
    if seq_len is None and packing in ("none", "bucket"):
        out["seq_len"] = min(max(lengths.sequences), context or max(lengths.sequences))
    elif seq_len is None and context and data["seq_len"] > context:  # packed rows no longer than the context
        out["seq_len"] = context
    seq_len = out.get("seq_len", data["seq_len"])
    if "train_tokens" not in explicit:
        epochs = data.get("epochs") or 1.0
        rows = 2 if out.get("train_objective", data.get("train_objective")) == "dpo" else 1  # a pair runs two rows
        out["train_tokens"] = float(epochs * rows * _statistics(lengths, seq_len).tokens_trained)
    return out


def pair_fields(data: dict[str, Any], explicit: set[str], lengths: Lengths) -> dict[str, Any]:
    """``train_objective dpo`` for a file of preference pairs (``chosen`` and ``rejected``: TRL's DPOTrainer) when
    the objective was not given; one sentence when the records and the objective disagree, or pairs are mixed with
    SFT records (no one trainer reads both)."""
    kinds = set(lengths.kind.split("/"))
    if "preference" in kinds and len(kinds) > 1:
        others = "/".join(sorted(kinds - {"preference"}))
        raise GpuplanError(f"the dataset mixes preference pairs (chosen, rejected) with {others} records: DPO and "
                           "SFT trainers each read one form; split the file")
    objective = data.get("train_objective") if "train_objective" in explicit else None
    if "preference" in kinds:
        if objective == "sft":
            raise GpuplanError("the records are preference pairs (chosen and rejected), which TRL's DPOTrainer "
                               "trains: set train_objective dpo (SFT trainers read messages, prompt and completion, "
                               "or text)")
        return {} if objective else {"train_objective": "dpo"}
    if objective == "dpo" and lengths.kind != "shorthand":
        raise GpuplanError(f"train_objective dpo trains on preference pairs (prompt, chosen, rejected), and the "
                           f"dataset holds {lengths.kind} records: give a file of pairs, or train_objective sft")
    return {}


def model_context(data: dict[str, Any]) -> int | None:
    """The context of the scenario's model (``max_position_embeddings``): a padded batch is planned at the
    longest record, but no longer than this, as the trainer truncates there (TRL ``SFTTrainer`` cuts each record
    at ``max_length``). None when the model names none, or cannot be loaded (its own error comes when the plan is
    made)."""
    from ..model.catalog import load_model

    try:
        return load_model(str(data.get("model") or "")).max_context
    except GpuplanError:
        return None


def profile(s) -> Profile | None:
    """The data of scenario ``s`` (None when it names none)."""
    data = s.__dict__
    if s.task != "train" or not describes_data(data):
        return None
    lengths = lengths_of(data)
    stats = _statistics(lengths, s.seq_len)
    b = _batching(lengths, s.seq_len, s.micro_batch_size, s.packing or "none", s.recipe.pads_packs)
    notes = list(lengths.notes)
    if "packing" not in s.model_fields_set:
        notes.append(f"packing {s.packing}: " + default_packing(s.recipe, lengths, s.seq_len if "seq_len" in
                                                                 s.model_fields_set else None)[1])
    if "seq_len" not in s.model_fields_set and s.packing in ("none", "bucket") and stats.max_tokens > s.seq_len:
        notes.append(f"the longest record is {stats.max_tokens:,} tokens, past the model's context of "
                     f"{s.seq_len:,}: planned at seq_len {s.seq_len:,}, where the trainer truncates it (TRL "
                     f"SFTTrainer max_length); {stats.truncated:,} records are cut")
    elif "seq_len" not in s.model_fields_set and s.packing in ("none", "bucket"):
        notes.append(f"seq_len {s.seq_len:,}: the longest record, so none is cut and the peak is the batch that "
                     "holds it")
    elif "seq_len" not in s.model_fields_set and s.seq_len < type(s).model_fields["seq_len"].default:
        notes.append(f"seq_len {s.seq_len:,}: the model's context (the default "
                     f"{type(s).model_fields['seq_len'].default:,} runs past it)")
    elif s.packing in ("none", "bucket") and stats.max_tokens < s.seq_len:
        notes.append(f"the longest record is {stats.max_tokens:,} tokens: memory is planned at seq_len "
                     f"{s.seq_len:,} (an upper bound); leave seq_len unset to plan at the longest batch")
    return Profile(source=str(data.get("dataset") or "shorthand"),
                   tokenizer=tokenizer_name(data) if data.get("dataset") else None, lengths=lengths, stats=stats,
                   batching=b, epochs=float(s.epochs or 1.0), seq_len=s.seq_len, notes=tuple(notes))


__all__ = ["PACKING", "Profile", "describes_data", "fields", "profile", "reply_warning"]
