"""The bundled model configs and how a model argument is resolved.

Resolution order for a model argument:
1. a bundled model, by repo id or alias (case, spaces and underscores ignored);
2. an existing local path: a ``config.json`` file or a folder holding one;
3. a Hugging Face repo id (``org/name``): only ``config.json`` is fetched, with ``huggingface_hub``, which
   honours its cache and ``HF_HUB_OFFLINE``;
otherwise an error with the closest bundled names.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from pathlib import Path

import yaml

from ..errors import GpuplanError, UnknownNameError, did_you_mean, normalize_name
from .spec import ModelSpec

REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def _data_dir() -> Path:
    return Path(str(resources.files("gpuplan") / "data" / "models"))


@cache
def bundled() -> dict[str, Path]:
    """Bundled configs: Hugging Face repo id -> path of its config.json copy."""
    files = sorted(_data_dir().glob("*__*.json"))
    return {f.stem.replace("__", "/", 1): f for f in files}


@cache
def aliases() -> dict[str, str]:
    """Every accepted name, normalized, -> repo id."""
    table: dict[str, str] = {}
    extra = yaml.safe_load((_data_dir() / "aliases.yaml").read_text())
    for repo in bundled():
        for name in (repo, repo.split("/", 1)[1], *extra.get(repo, [])):
            table[normalize_name(name)] = repo
    unknown = set(extra) - set(bundled())
    if unknown:  # a packaging error, caught by the tests
        raise RuntimeError(f"aliases.yaml names models that are not bundled: {sorted(unknown)}")
    return table


def bundled_repo(name: str) -> str | None:
    """The repo id of a bundled model named ``name``, or None."""
    return aliases().get(normalize_name(name))


def load_model(name: str) -> ModelSpec:
    """Resolve a model argument (alias, path or Hugging Face repo id) to a :class:`ModelSpec`."""
    if not name or not name.strip():
        raise GpuplanError("no model given: pass a bundled name (see `gpuplan models`), a repo id or a path")
    repo = bundled_repo(name)
    if repo:
        return _bundled_spec(repo)
    path = Path(name).expanduser()
    if path.exists():
        return _spec_from_file(path / "config.json" if path.is_dir() else path, None)
    if REPO_ID.match(name) and not name.endswith(".json"):
        return _spec_from_file(_fetch_config(name), name)
    if name.endswith(".json") or "/" in name or "\\" in name:
        raise GpuplanError(f"no such file: {name}")
    raise UnknownNameError("model", name, [*bundled(), *aliases()],
                           hint="Run `gpuplan models` for the bundled list, or pass a Hugging Face repo id "
                                "(org/name) or a path to a config.json.")


@cache
def _bundled_spec(repo: str) -> ModelSpec:
    return _spec_from_file(bundled()[repo], repo)


def _spec_from_file(path: Path, name: str | None) -> ModelSpec:
    if not path.is_file():
        raise GpuplanError(f"no config.json at {path}: pass a config.json file or a folder that holds one")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise GpuplanError(f"{path} is not valid JSON (line {err.lineno}, column {err.colno}: {err.msg})") from None
    except UnicodeDecodeError:
        raise GpuplanError(f"{path} is not a UTF-8 text file; pass the model's config.json") from None
    if not isinstance(config, dict):
        raise GpuplanError(f"{path} holds a JSON {type(config).__name__}, not a config.json object")
    if name is None:
        name = config.get("_name_or_path") or (path.parent.name if path.name == "config.json" else path.stem)
    return ModelSpec.from_config(config, name=name)


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
    close = did_you_mean(repo_id, bundled(), n=1)
    hint = f" (did you mean the bundled {close[0]!r}?)" if close else ""
    try:  # the cache first: no network round trip when the config is already here
        return Path(hf_hub_download(repo_id, "config.json", local_files_only=True))
    except LocalEntryNotFoundError:
        pass
    try:
        return Path(hf_hub_download(repo_id, "config.json"))
    except LocalEntryNotFoundError:
        raise GpuplanError(
            f"cannot fetch config.json of {repo_id!r}: the Hugging Face hub is unreachable or HF_HUB_OFFLINE is "
            f"set, and it is not in the local cache{hint}. Download it where you have network "
            f"(huggingface.co/{repo_id}/blob/main/config.json) and pass its path: gpuplan model ./config.json"
        ) from None
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
