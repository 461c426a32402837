"""The bundled model configs and how a model argument is resolved.

Resolution order for a model argument:
1. a bundled model, by repo id or alias (case, spaces and underscores ignored);
2. an existing local path: a ``config.json`` file or a folder holding one;
3. the instruction-tuned or chat variant of a bundled base model (``meta-llama/Llama-3.1-8B-Instruct``,
   ``qwen2.5-72b-instruct``, ``Llama-2-7b-chat-hf``, ``gemma-2-9b-it``): fine-tuning changes the weights, not
   the shapes, so the base model's bundled config is used, offline, and the model's notes say so;
4. a Hugging Face repo id (``org/name``): only ``config.json`` is fetched, with ``huggingface_hub``, which
   honours its cache and ``HF_HUB_OFFLINE``;
otherwise an error with the closest bundled names that keep the numbers typed (version, size).
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from functools import cache
from importlib import resources
from pathlib import Path

from ..datafiles import read_yaml
from ..errors import GpuplanError, UnknownNameError, did_you_mean, echo, normalize_name, printable
from ..userfiles import load_json, user_path
from . import kinds
from .kinds import NotADecoder
from .spec import ModelSpec

REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def _data_dir() -> Path:
    return Path(str(resources.files("gpuplan") / "data" / "models"))


@cache
def bundled() -> dict[str, Path]:
    """Bundled configs: Hugging Face repo id -> path of its config.json copy."""
    # the names glob's "*__*.json" matches, without compiling its pattern; sorted by name (one folder: Path's order)
    files = sorted((f for f in _data_dir().iterdir() if f.name.endswith(".json") and "__" in f.name[:-5]),
                   key=lambda f: f.name)
    return {f.stem.replace("__", "/", 1): f for f in files}


@cache
def aliases() -> dict[str, str]:
    """Every accepted name, normalized, -> repo id."""
    table: dict[str, str] = {}
    extra = read_yaml("models/aliases.yaml")
    for repo in bundled():
        for name in (repo, repo.split("/", 1)[1], *extra.get(repo, [])):
            table[normalize_name(name)] = repo
    unknown = set(extra) - set(bundled())
    if unknown:  # a packaging error, caught by the tests
        raise RuntimeError(f"aliases.yaml names models that are not bundled: {sorted(unknown)}")
    return table


@cache
def short_names() -> dict[str, list[str]]:
    """Repo id -> the short names people type for it (aliases.yaml), for listings."""
    extra = read_yaml("models/aliases.yaml")
    return {repo: [str(a) for a in extra.get(repo, []) if "/" not in str(a)] for repo in bundled()}


def bundled_repo(name: str) -> str | None:
    """The repo id of a bundled model named ``name``, or None."""
    return aliases().get(normalize_name(name))


# Name parts that mark a fine-tuned variant with its base model's architecture (chat / instruction tuning).
TUNED_PARTS = ("instruct", "chat", "it")


def _untuned(name: str) -> str:
    return "-".join(p for p in normalize_name(name).split("-") if p not in TUNED_PARTS)


@cache
def _base_names() -> dict[str, str]:
    """Every accepted name with its chat/instruct parts removed -> repo id (bundled tuned models included)."""
    table: dict[str, str] = {}
    for name, repo in aliases().items():
        table.setdefault(_untuned(name), repo)
    return table


def base_repo(name: str) -> str | None:
    """The bundled base model of a chat or instruction-tuned variant (``Llama-3.1-8B-Instruct`` ->
    ``meta-llama/Llama-3.1-8B``), or None when ``name`` names no such variant."""
    if _untuned(name) == normalize_name(name):
        return None
    return _base_names().get(_untuned(name))


_NUMBER = r"\d+(?:\.\d+)*"  # compiled when a name is not known (re caches it)


def _numbers(name: str) -> list[str]:
    """The numbers in a model name, dots dropped (``Qwen2.5-7B-Instruct-1M`` -> ``['25', '7', '1']``)."""
    return [n.replace(".", "") for n in re.findall(_NUMBER, name)]


def suggestable(name: str, known: list[str]) -> list[str]:
    """The known model names that may be suggested for ``name``: those whose numbers begin the typed name's
    numbers, so that a variant (``Qwen/Qwen2.5-7B-Instruct-1M``) points at its bundled base (``Qwen/Qwen2.5-7B``)
    and a typo at the model it meant, never at a model of another version or size (``Qwen/Qwen3-VL-8B-Instruct``
    is close to the 1M model in letters, not in what it is). :func:`did_you_mean` then picks by spelling."""
    typed = _numbers(name)
    return [k for k in known if (nums := _numbers(k)) == typed[:len(nums)] and (nums or not typed)]


def load_model(name: str) -> ModelSpec:
    """Resolve a model argument (alias, path or Hugging Face repo id) to a :class:`ModelSpec`."""
    if isinstance(name, Path):
        name = str(name)
    if not isinstance(name, str):
        raise GpuplanError(f"a model is named by text (a bundled name, a repo id or a path), not {echo(name)}")
    if not name or not name.strip():
        raise GpuplanError("no model given: pass a bundled name (see `gpuplan models`), a repo id or a path")
    if name.lower().startswith("synthetic-"):  # model_size: a published shape, gpuplan.model.synthetic
        from .synthetic import synthetic_spec

        return synthetic_spec(name)
    repo = bundled_repo(name)
    if repo:
        return _bundled_spec(repo)
    other = kinds.named(name)
    if other:
        raise NotADecoder(other)
    path = user_path(name)
    try:
        exists = path.exists()
    except OSError:  # a name too long or otherwise impossible as a path is not one
        exists = False
    if exists:
        if path.is_dir() and (path / "model_index.json").is_file():  # a diffusers pipeline's folder
            raise NotADecoder(kinds.pipeline_folder(path))
        return _spec_from_file(path / "config.json" if path.is_dir() else path, None)
    base = base_repo(name)
    if base:
        spec = _bundled_spec(base)
        note = (f"{name} is not bundled: using the config of its base model {base} (instruction and chat tuning "
                "change the weights, not the shapes; pass the tuned model's config.json if it differs)")
        return replace(spec, name=name, notes=(*spec.notes, note))
    if REPO_ID.match(name) and not name.endswith(".json"):
        other = kinds.from_hub(name, _fetch_optional)
        if other:
            raise NotADecoder(other)
        return _spec_from_file(_fetch_config(name), name)
    tagged = _tag_refusal(name)
    if tagged:
        raise GpuplanError(tagged)
    if name.endswith(".json") or "/" in name or "\\" in name:
        raise GpuplanError(f"no such file: {name}")
    raise UnknownNameError("model", name, suggestable(name, [*bundled(), *aliases(), *kinds.names()]),
                           hint="Run `gpuplan models` for the bundled list, or pass a Hugging Face repo id "
                                "(org/name) or a path to a config.json.")


def _tag_refusal(name: str) -> str | None:
    """A name with a tag after a colon, as Ollama names models (``qwen3:8b``, ``openai/gpt-oss-20b:latest``):
    one sentence naming the bundled model it means where there is one (the name before the colon, or it joined to
    the tag), else how to name a model; None for a name without such a tag (a path, a URL)."""
    head, colon, tag = name.rpartition(":")
    if not colon or not head or not tag or "/" in tag or "\\" in tag:
        return None
    meant = next((repo for n in (head, f"{head}-{tag}") if (repo := bundled_repo(n))), None)
    where = f"the bundled {meant!r}" if meant else "a bundled name (`gpuplan models`), a Hugging Face repo id or a path"
    return f"model {name!r}: ':{tag}' is a tag, as Ollama names models, not part of a model name; give {where}"


@cache
def _bundled_spec(repo: str) -> ModelSpec:
    return _spec_from_file(bundled()[repo], repo)


def _spec_from_file(path: Path, name: str | None) -> ModelSpec:
    if not path.is_file():
        raise GpuplanError(f"no config.json at {path}: pass a config.json file or a folder that holds one")
    config = load_json(path, "model config")
    if not isinstance(config, dict):
        raise GpuplanError(f"{path} holds a JSON {type(config).__name__}, not a config.json object")
    if name is None:  # a label from the file or its folder's name, printed as a label (session 20's fuzzing: a
        # folder or _name_or_path holding ESC [ 2 J cleared the terminal of every command that named the model)
        label = config.get("_name_or_path") or (path.parent.name if path.name == "config.json" else path.stem)
        name = printable(label) if isinstance(label, str) else label
    config = _with_modelopt_config(config, path.parent / "hf_quant_config.json")
    other = kinds.of_config(config, str(name))  # a diffusers class, an encoder-decoder, an encoder
    if other:
        raise NotADecoder(other)
    return ModelSpec.from_config(config, name=name)


def _with_modelopt_config(config: dict, beside: Path) -> dict:
    """``config`` with the quantization of an NVIDIA Model Optimizer checkpoint whose config.json does not carry it
    (the early ones, nvidia/DeepSeek-R1-FP4): its ``hf_quant_config.json`` beside it, ``quantization: {quant_algo,
    exclude_modules}``, read as vLLM reads it (``modelopt.py``: the nested form), as ``quant_method: modelopt``."""
    if config.get("quantization_config") or not beside.is_file():
        return config
    quant = load_json(beside, "hf_quant_config.json")
    nested = quant.get("quantization") if isinstance(quant, dict) else None
    if not isinstance(nested, dict):
        raise GpuplanError(f"{beside} has no 'quantization' object, as Model Optimizer writes it")
    return {**config, "quantization_config": {"quant_method": "modelopt", "quantization": nested}}


def _fetch_config(repo_id: str) -> Path:
    """Download (or read from the local cache) only ``config.json`` of a Hugging Face repo."""
    try:
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import (
            EntryNotFoundError,
            GatedRepoError,
            LocalEntryNotFoundError,
            RepositoryNotFoundError,
        )
    except ImportError:
        raise GpuplanError(
            f"{repo_id!r} is not bundled and huggingface_hub is not installed: `pip install 'gpuplan[hub]'`, "
            "or pass the path of its config.json") from None
    close = did_you_mean(repo_id, suggestable(repo_id, list(bundled())), n=1)
    hint = f" (did you mean the bundled {close[0]!r}?)" if close else ""
    offline = (f"cannot fetch config.json of {repo_id!r}: the Hugging Face hub is unreachable or HF_HUB_OFFLINE is "
               f"set, and it is not in the local cache{hint}. Download it where you have network "
               f"(huggingface.co/{repo_id}/blob/main/config.json; a diffusers pipeline has model_index.json and a "
               "config.json in each component's folder instead) and pass its path: gpuplan model ./config.json")
    try:  # the cache first: no network round trip when the config is already here
        return Path(hf_hub_download(repo_id, "config.json", local_files_only=True))
    except LocalEntryNotFoundError:
        pass
    except (OSError, ValueError):
        raise GpuplanError(f"{repo_id!r} is not a valid Hugging Face repo id{hint}") from None
    if not _hub_reachable():  # fail in a second instead of retrying for half a minute
        raise GpuplanError(offline)
    try:
        return _download(repo_id, "config.json")
    except LocalEntryNotFoundError:
        raise GpuplanError(offline) from None
    except GatedRepoError:
        raise GpuplanError(f"{repo_id} is gated: accept its licence on huggingface.co and log in "
                           "(`hf auth login`), or pass the path of its config.json") from None
    except RepositoryNotFoundError:
        raise GpuplanError(f"no Hugging Face repo {repo_id!r}{hint}") from None
    except EntryNotFoundError:
        raise GpuplanError(f"{repo_id} has no config.json (GGUF-only repos need the original model's)") from None
    except OSError as err:
        raise GpuplanError(f"cannot fetch config.json of {repo_id!r} ({err.__class__.__name__}: {err}); "
                           "pass the path of a local config.json instead") from None


def _fetch_optional(repo_id: str, filename: str) -> Path | None:
    """A file of a Hugging Face repo from the cache, or fetched when the hub answers; None when it is not there
    (or cannot be had: the caller then fetches config.json and says why that failed)."""
    try:
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError
    except ImportError:
        return None
    try:
        return Path(hf_hub_download(repo_id, filename, local_files_only=True))
    except LocalEntryNotFoundError:
        pass
    except (OSError, ValueError):
        return None
    if not _hub_reachable():
        return None
    try:
        return _download(repo_id, filename)
    except GpuplanError:  # too large to fetch: said, not taken for a file the repo lacks
        raise
    except (EntryNotFoundError, LocalEntryNotFoundError, OSError, ValueError):
        return None


def _download(repo_id: str, filename: str) -> Path:
    """``filename`` of ``repo_id`` fetched into the Hugging Face cache, once the hub says its size is within the
    bounded reader's (:data:`gpuplan.userfiles.MAX_BYTES`): ``hf_hub_download`` takes no limit, and a repo's
    config.json may be a large file of any size, written whole to disk before the reader would refuse it (session
    18's security audit; the page with ``--hub`` fetches any repo a request names)."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url

    from ..userfiles import MAX_BYTES

    size = get_hf_file_metadata(hf_hub_url(repo_id, filename)).size
    if size is not None and size > MAX_BYTES:
        raise GpuplanError(f"{repo_id}'s {filename} is {size:,} bytes on the hub; a file read whole is at most "
                           f"{MAX_BYTES // 2**20} MiB, so it is not fetched")
    return Path(hf_hub_download(repo_id, filename))


def _hub_reachable(timeout_s: float = 3.0) -> bool:
    """Whether the hub's host answers a TCP connection (``HF_ENDPOINT`` honoured); False when offline mode is
    set, so the caller can say so at once instead of letting the download retry for half a minute."""
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        return False
    from urllib.parse import urlparse

    url = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    import socket  # only when the hub is asked: a model neither bundled nor cached

    try:
        with socket.create_connection((url.hostname or "huggingface.co", url.port or 443), timeout=timeout_s):
            return True
    except OSError:
        return False
