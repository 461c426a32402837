"""The model's tokenizer and how a training stack turns one record into tokens.

The tokenizer is the ``tokenizers`` library's (the Rust tokenizer inside transformers' fast tokenizers), read from
a ``tokenizer.json``: a path (``--tokenizer``: the file or the folder holding it), or a Hugging Face repo found
in the local hub cache (``--tokenizer org/name``, else the model's own repo). ``tokenizer_config.json`` beside it
gives the chat template and the EOS token, as transformers reads them.

One record is counted as TRL's ``SFTTrainer`` (trl 1.x ``trainer/sft_trainer.py``) tokenizes it:

- ``text`` (language modelling): the text with the tokenizer's own special tokens (its post-processor's BOS),
  plus EOS appended when the text does not end with it (``add_eos``); the loss is on every token;
- ``prompt`` / ``completion``: the prompt, then the completion, then EOS; the loss on the completion and EOS only
  (``completion_only_loss``, on by default for prompt-completion data);
- ``messages`` (chat): the chat template rendered as transformers' ``apply_chat_template`` does (jinja2,
  ``add_generation_prompt=False``) and tokenized without added special tokens; the loss on every token
  (``assistant_only_loss`` is off by default). Without a template the turns are joined by newlines, plus EOS,
  and the report says so;
- ``prompt`` / ``chosen`` / ``rejected`` (preference pairs, TRL's ``DPOTrainer``: ``train_objective dpo``): two
  rows, the prompt then each reply, each counted as a prompt-completion record; the pair's sequence is the longer
  row (the batch pads both rows to the longer reply), its loss tokens the replies of both.

Each record gives ``(content, special, loss)``: the tokens of its own text (the text fields tokenized alone: the
exact count of the tokenizer), the tokens the stack adds (BOS, EOS, the template's role and turn markers), and the
tokens the loss is computed on.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from ..clock import count_in_time
from ..errors import GpuplanError, echo_value
from ..userfiles import is_file, is_folder, load_json, parse_json, read_text, relative_to_cwd, user_path

EOS_NAMES = ("<|im_end|>", "<|eot_id|>", "<|end_of_text|>", "<|endoftext|>", "</s>", "<eos>", "<|end|>", "[SEP]")


@dataclass(frozen=True, kw_only=True)
class Tokenizer:
    """A loaded tokenizer with what the stacks read beside it."""

    tokenizer: Any  # tokenizers.Tokenizer
    source: str  # where it was read from, in words
    chat_template: str | None
    eos_token: str | None
    special: dict[str, str] = field(default_factory=dict)  # bos_token, eos_token, ... for the template
    template_refused: str | None = None  # why the chat template beside it is not applied, in words

    def count(self, texts: list[str], special: bool = False) -> list[int]:
        try:
            return [len(e.ids) for e in self.tokenizer.encode_batch(texts, add_special_tokens=special)]
        except BaseException as err:  # the library's panics are pyo3's PanicException, a BaseException
            if type(err).__name__ != "PanicException":
                raise
            raise GpuplanError(f"the tokenizers library failed on a text of {self.source} "
                               f"({str(err).splitlines()[0][:120]})") from None


def _token_text(value: Any) -> str | None:
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


def _find(name: str) -> Path | None:
    """``tokenizer.json`` of a path, or of a repo in the local Hugging Face cache (never downloaded)."""
    path = user_path(name)
    if is_file(path):
        return path
    if is_folder(path):
        return path / "tokenizer.json" if is_file(path / "tokenizer.json") else None
    if "/" not in name or name.endswith(".json"):
        return None
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    found = try_to_load_from_cache(name, "tokenizer.json")
    return Path(found) if isinstance(found, str) else None


@cache
def load_tokenizer(name: str) -> Tokenizer:
    """The tokenizer at ``name`` (a tokenizer.json, its folder, or a repo id in the local hub cache)."""
    path = _find(name)
    if path is None:
        where = "no such file" if name.endswith(".json") or ("/" not in name and Path(name).suffix) else \
            "no tokenizer.json there or in the local Hugging Face cache"
        where += relative_to_cwd(name) if where == "no such file" else ""
        raise GpuplanError(f"tokenizer {name!r}: {where}; pass --tokenizer path/to/tokenizer.json (or the folder "
                           "holding it), or describe the data with --samples and --mean-tokens (a decoder LLM's "
                           "training text; diffusion and speech plans are sized by --train-steps)")
    try:
        from tokenizers import Tokenizer as RustTokenizer
    except ImportError:
        raise GpuplanError("counting a dataset's tokens needs the `tokenizers` package (pip install tokenizers), "
                           "or describe the data with --samples and --mean-tokens") from None
    text = read_text(path, "tokenizer")  # bounded and UTF-8 checked, then parsed by the tokenizers library
    try:
        rust = RustTokenizer.from_str(text)
    except Exception as err:
        raise GpuplanError(f"{path} is not a tokenizer.json the tokenizers library reads "
                           f"({str(err).splitlines()[0][:120]})") from None
    _check_normalizer(path, parse_json(text, str(path)))
    rust.no_padding()  # as transformers' fast tokenizer sets them per call (set_truncation_and_padding): a record is
    rust.no_truncation()  # counted whole, and padded per batch by the collator (batching.py), not to the file's length
    _check_added(path, rust)
    config = _settings(path, name)
    template, refused = _template(path, config)
    special = {k: token for k, v in config.items() if k.endswith("_token") and (token := _token_text(v))}
    eos = special.get("eos_token")
    if eos is None:  # a bare tokenizer.json: its special token that ends a sequence
        data = parse_json(text, str(path))
        added = data.get("added_tokens") if isinstance(data, dict) else None
        names = {t.get("content") for t in added or [] if isinstance(t, dict) and t.get("special")}
        eos = next((n for n in EOS_NAMES if n in names), None)
    tok = Tokenizer(tokenizer=rust, source=str(path), chat_template=template, eos_token=eos, special=special,
                    template_refused=refused)
    return _tried(tok)


# Characters a normalizer may write in place of what it reads: real ones write one or two ("▁" for " ", SentencePiece's
# Metaspace), a Replace of 4,000,000 turned a 24 kB record into 96 GB (s25-sec).
MAX_NORMALIZER_TEXT = 64


def _check_normalizer(path: Path, data: Any) -> None:
    """One sentence when the tokenizer's normalizer (a ``Sequence`` of them, read whole) replaces or prepends
    more than :data:`MAX_NORMALIZER_TEXT` characters: it grows every record by that factor before it is tokenized."""
    stack, longest = [data.get("normalizer") if isinstance(data, dict) else None], 0
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            text = node.get("content") if node.get("type") == "Replace" else node.get("prepend")
            longest = max(longest, len(text) if isinstance(text, str) else 0)
            stack.extend(node.get("normalizers") or [] if isinstance(node.get("normalizers"), list) else [])
    if longest > MAX_NORMALIZER_TEXT:
        raise GpuplanError(f"{path.name}'s normalizer writes {longest:,} characters in place of what it reads (real "
                           f"ones write a few, at most {MAX_NORMALIZER_TEXT}): every record would grow that much "
                           "before it is tokenized; pass the model's own tokenizer.json")


# Tokens a post-processor may add to a text: real ones add one to three (BOS; BOS and EOS; [CLS] and [SEP]); a
# template of 300,000 added tokens (14 MB) took 3.2 s a record, a week for 200,000 records (s25-sec).
MAX_ADDED_TOKENS = 64


def _check_added(path: Path, rust: Any) -> None:
    """One sentence when the tokenizer's post-processor adds more than :data:`MAX_ADDED_TOKENS` tokens to an empty
    text (its template, counted once: every ``text`` record would carry them)."""
    try:
        added = len(rust.encode("", add_special_tokens=True).ids)
    except BaseException as err:  # the library's panics are pyo3's PanicException, a BaseException
        if type(err).__name__ != "PanicException":
            raise
        raise GpuplanError(f"the tokenizers library failed on an empty text of {path} "
                           f"({str(err).splitlines()[0][:120]})") from None
    if added > MAX_ADDED_TOKENS:
        raise GpuplanError(f"{path.name}'s post-processor adds {added:,} tokens to every text (real ones add a few, "
                           f"at most {MAX_ADDED_TOKENS}): pass the model's own tokenizer.json")


def tokenizer_files(name: str) -> list[Path] | None:
    """The files :func:`load_tokenizer` reads for ``name``, unread: its ``tokenizer.json``, and the
    ``tokenizer_config.json`` and ``chat_template.jinja`` where there are (what a record's tokens depend on: the
    dataset cache keys on their bytes); None without a tokenizer.json (loading it says why)."""
    path = _find(name)
    if path is None:
        return None
    jinja = path.with_name("chat_template.jinja")
    return [p for p in (path, _config_path(path, name), jinja if is_file(jinja) else None) if p is not None]


def _config_path(path: Path, name: str) -> Path | None:
    """``tokenizer_config.json`` beside the tokenizer, or in the hub cache for a repo id; None when there is none."""
    beside = path.with_name("tokenizer_config.json")
    if is_file(beside):
        return beside
    if "/" in name and not is_file(name) and not is_folder(name):
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(name, "tokenizer_config.json")
        return Path(found) if isinstance(found, str) else None
    return None


def _settings(path: Path, name: str) -> dict[str, Any]:
    """``tokenizer_config.json`` beside the tokenizer (or in the hub cache for a repo id): an object, or one
    sentence naming the file."""
    cfg_path = _config_path(path, name)
    if cfg_path is None:
        return {}
    config = load_json(cfg_path, "tokenizer config")
    if not isinstance(config, dict):
        raise GpuplanError(f"{cfg_path} holds a JSON {type(config).__name__}, not the tokenizer's settings (an "
                           "object with chat_template, eos_token...); fix it or pass the tokenizer.json alone")
    return config


def _template(path: Path, config: dict[str, Any]) -> tuple[str | None, str | None]:
    """The chat template (``tokenizer_config.json``'s, else ``chat_template.jinja``'s) and, where it is not text,
    why it is left out."""
    template = config.get("chat_template")
    if isinstance(template, list):  # [{"name": "default", "template": ...}, ...]
        template = next((t.get("template") for t in template if isinstance(t, dict) and t.get("name") == "default"),
                        None)
    jinja = path.with_name("chat_template.jinja")
    if template is None and is_file(jinja):
        template = read_text(jinja, "chat template")
    if template is not None and not isinstance(template, str):
        return None, f"its chat_template is a {type(template).__name__}, not text"
    return template, None


# A short conversation every chat template renders: one that breaks the render limits on it is left out.
TRIAL = [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "Hello!"},
         {"role": "assistant", "content": "Hi! How can I help?"}, {"role": "user", "content": "Thanks."},
         {"role": "assistant", "content": "You're welcome."}]


def _tried(tok: Tokenizer) -> Tokenizer:
    """``tok``, or ``tok`` without its chat template when the template goes past the render limits on
    :data:`TRIAL` (:mod:`.template`): the records are then counted without it, and the report says so."""
    if not tok.chat_template:
        return tok
    from .template import TemplateLimit, render

    try:
        render(tok.chat_template, sum(len(m["content"]) for m in TRIAL), messages=TRIAL,
               add_generation_prompt=False, **tok.special)
    except TemplateLimit as limit:
        return replace(tok, chat_template=None, template_refused=f"its chat template went past {limit} on a "
                       "five-turn conversation")
    except Exception:  # a template that refuses a system turn, or is broken: the records say so, one by one
        pass
    return tok


def render_chat(tok: Tokenizer, messages: list[dict[str, Any]]) -> str:
    """The chat template applied as transformers' ``apply_chat_template`` does (sandboxed jinja2, trim_blocks,
    lstrip_blocks, ``raise_exception``), without the generation prompt, within the limits of :mod:`.template`."""
    from .template import TemplateLimit, render

    text = sum(len(_content(m)) for m in messages)
    try:
        return render(tok.chat_template, text, messages=messages, add_generation_prompt=False, **tok.special)
    except TemplateLimit as limit:
        raise GpuplanError(f"the chat template of {tok.source} went past {limit}; pass --tokenizer with a "
                           "tokenizer.json alone to count without the template") from None
    except Exception as err:
        raise GpuplanError(f"the chat template of {tok.source} fails on it ({type(err).__name__}: "
                           f"{str(err)[:120]})") from None


def chatml(messages: list[Any]) -> list[Any]:
    """ShareGPT turns (``{"from": ..., "value": ...}``) as ``{"role": ..., "content": ...}``, the role kept as
    written, as TRL's SFTTrainer converts them before the template (``trl.data_utils.maybe_convert_to_chatml``);
    other turns unchanged."""
    out = []
    for m in messages:
        if isinstance(m, dict) and ("from" in m or "value" in m):
            m = {**{k: v for k, v in m.items() if k not in ("from", "value")},
                 **({"role": m["from"]} if "from" in m else {}), **({"content": m["value"]} if "value" in m else {})}
        out.append(m)
    return out


# the roles a chat record's reply is written with: Axolotl's default role mapping (``assistant: ["gpt", "model",
# "assistant"]``, src/axolotl/prompt_strategies/chat_template.py), which torchtune's sharegpt style shares for "gpt"
REPLY_ROLES = frozenset({"assistant", "gpt", "model"})


def has_reply(record: dict[str, Any]) -> bool:
    """Whether a chat record (``messages`` or ShareGPT ``conversations``) holds a reply turn (:data:`REPLY_ROLES`):
    the only tokens a loss on the assistant turns trains on. Without one, TRL's SFTTrainer with
    ``assistant_only_loss`` stops ("at least one example has no assistant tokens", trl 1.x
    ``trainer/sft_trainer.py`` ``tokenize_fn``), and the other stacks mask the whole record."""
    turns = chatml(record["messages"] if isinstance(record.get("messages"), list) else record["conversations"])
    return any(isinstance(m, dict) and str(m.get("role", "")).lower() in REPLY_ROLES for m in turns)


def _content(message: Any) -> str:
    if not isinstance(message, dict):
        raise GpuplanError("a chat record's messages must be objects with role and content")
    content = message.get("content", "")
    if isinstance(content, list):  # [{"type": "text", "text": ...}]
        return "".join(str(part.get("text") or "") for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


def record_kind(record: dict[str, Any]) -> str:
    """``messages``, ``prompt-completion`` or ``text``: the dataset types TRL's SFTTrainer takes."""
    for key in ("messages", "conversations"):
        if isinstance(record.get(key), list):
            if not record[key]:  # TRL would render it as no tokens at all, a row with nothing to train on
                raise GpuplanError(f"its {key} list is empty: a chat record needs its turns; drop the record")
            _check_turns(record, key)
            return "messages"
    if "prompt" in record and "completion" in record:
        _check_text(record, "prompt", "completion", turns=True)
        return "prompt-completion"
    if "text" in record:
        _check_text(record, "text")
        return "text"
    if "chosen" in record and "rejected" in record:  # TRL's preference pairs: DPO (train_objective dpo)
        _check_text(record, "chosen", "rejected", *(("prompt",) if "prompt" in record else ()), turns=True)
        return "preference"
    for key in ("messages", "conversations"):
        if isinstance(record.get(key), str):  # a chat stored as JSON text (a string column)
            raise GpuplanError(f"its {key} is text, not a list of turns: a chat is read as a list of "
                               "{role, content} objects (a JSON array, or a Parquet list of structs); decode the "
                               "column first")
    raise GpuplanError(f"its fields {sorted(record)[:6]} are none of the forms SFT trainers read: "
                       "messages (chat), prompt and completion, or text" + _renaming(record))


# well-known record shapes and the SFT form each maps onto (TRL's SFTTrainer reads neither as they are)
SHAPES = (
    ({"instruction", "output"},
     "Alpaca's instruction, input and output: write prompt (the instruction, then the input) and completion "
     "(the output)"),
    ({"question", "answer"}, "question and answer: rename them prompt and completion"),
)


def _renaming(record: dict[str, Any]) -> str:
    """How a record of a known shape becomes one of the SFT forms, or ""."""
    return next((f"; {how}" for keys, how in SHAPES if keys <= set(record)), "")


def _check_turns(record: dict[str, Any], *fields: str) -> None:
    """One sentence when a list of chat turns holds something other than an object, or a turn whose role is not
    text or whose content is neither text, a list of parts (``[{"type": "text", "text": ...}]``) nor null (a tool
    call's turn): a chat template reads each turn's ``role`` and ``content`` (transformers' ``apply_chat_template``),
    so a text or a number is no turn, Llama 3's template adds the role to a string (a number stops it), and a
    content of ``5`` or ``{"a": 1}`` was counted as its ``str()`` (fuzz_s31), where a text field of the same value
    is refused (:func:`_check_text`). ShareGPT's ``from``/``value`` are read as role and content (:func:`chatml`).
    Asked here, per record, so that the sentence names the file and the record (:func:`gpuplan.dataset._tokenized`)."""
    for name in fields:
        for i, turn in enumerate(record[name]):
            if not isinstance(turn, dict):
                raise GpuplanError(f"turn {i + 1} of its {name} is {echo_value(turn)}, not an object: "
                                   "chat turns are objects with role and content")
            role, content = chatml([turn])[0].get("role"), chatml([turn])[0].get("content")
            if not isinstance(role, str):
                shown = "missing" if role is None else f"{echo_value(role)}, not text"
                raise GpuplanError(f"the role of turn {i + 1} of its {name} is {shown}: chat turns name their "
                                   "role as text (user, assistant, system)")
            if not (content is None or isinstance(content, (str, list))):
                raise GpuplanError(f"the content of turn {i + 1} of its {name} is {echo_value(content)}, not text: "
                                   "a turn's content is text or a list of parts ({type: text, text: ...})")


def _check_text(record: dict[str, Any], *fields: str, turns: bool = False) -> None:
    """One sentence when a field TRL's SFTTrainer tokenizes is not text (``null``, a number): the trainer's
    tokenizer refuses it, so counting ``str(value)`` would plan a run that fails (``turns``: a list of chat turns
    is also taken, TRL's conversational prompt-completion)."""
    for name in fields:
        value = record[name]
        if not (isinstance(value, str) or (turns and isinstance(value, list))):
            shown = "null" if value is None else echo_value(value)
            raise GpuplanError(f"its {name} is {shown}, not text: SFT trainers tokenize strings")
        if isinstance(value, list):  # TRL's conversational prompt-completion: chat turns
            _check_turns(record, name)


def _pair(tok: Tokenizer, record: dict[str, Any]) -> tuple[int, int, int]:
    """A preference pair (``prompt``, ``chosen``, ``rejected``) as TRL's DPOTrainer batches it: two rows, the prompt
    then each reply (``DataCollatorForPreference``), each counted as a prompt-completion record is (a missing prompt
    is empty: TRL's implicit prompt, the replies whole). ``(content, special)`` of the longer row, the row every
    pair of the batch is padded to; ``loss``: the reply tokens of both rows (what the log-probabilities sum over)."""
    prompt = record.get("prompt", [] if isinstance(record["chosen"], list) else "")
    rows = count_records(tok, [{"prompt": prompt, "completion": record[k]} for k in ("chosen", "rejected")])
    content, special, _ = max(rows, key=lambda row: row[0] + row[1])
    return content, special, rows[0][2] + rows[1][2]


def count_records(tok: Tokenizer, batch: list[dict[str, Any]], deadline: float | None = None
                  ) -> list[tuple[int, int, int]]:
    """``(content, special, loss)`` tokens of each record (module docstring; a preference pair: :func:`_pair`);
    :class:`gpuplan.clock.CountOverdue` once ``time.monotonic()`` passes ``deadline``, read before each record."""
    out = []
    for record in batch:
        count_in_time(deadline)
        kind = record_kind(record)
        if kind == "preference":
            out.append(_pair(tok, record))
            continue
        eos = 1 if tok.eos_token else 0
        if kind == "text":
            text = str(record["text"])
            plain, added = tok.count([text]), tok.count([text], special=True)
            extra = 0 if tok.eos_token and text.endswith(tok.eos_token) else eos
            out.append((plain[0], added[0] - plain[0] + extra, added[0] + extra))
        elif kind == "prompt-completion" and not isinstance(record["prompt"], list):
            prompt, completion = tok.count([str(record["prompt"]), str(record["completion"])])
            out.append((prompt + completion, eos, completion + eos))
        else:
            if kind == "messages":
                messages = chatml(record["messages"] if isinstance(record.get("messages"), list)
                                  else record["conversations"])
            else:  # conversational prompt-completion: the turns of both
                messages = chatml([*record["prompt"], *record["completion"]])
            contents = [_content(m) for m in messages]
            content = sum(tok.count(contents)) if contents else 0
            if tok.chat_template:
                total = tok.count([render_chat(tok, messages)])[0]
            else:
                total = tok.count(["\n".join(contents)])[0] + eos
            special = max(total - content, 0)
            out.append((content, special, content + special))
    return out
