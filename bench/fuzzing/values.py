"""Values to draw for a parameter: valid ones (so that most runs reach deep code), boundary values and hostile
text, from the parameter's kind and range (:mod:`fuzzing.tree`), the examples its ``--help`` gives, and, for the
parameters whose name says what they hold (a model, a GPU, a file of some kind, an output folder), from the
package's catalogs and the fixture files (``tests/data/fuzz``).

A parameter with no role of its own still gets values of its kind: an option added tomorrow is drawn from the
day it lands, with no edit here.
"""

from __future__ import annotations

import math
import random
import re
from pathlib import Path

from .tree import BOOL_TEXT, CHOICE, FLOAT, INT, Param

# ---- hostile and boundary values ---------------------------------------------------------------------------
HOSTILE_TEXT = [
    "", " ", "\t", "a\nb", "x\r\ny", "\x1b[31mred\x1b[0m", "'", '"', "`id`", "$(touch PWNED)", "; rm -rf ~",
    "a'b\"c", "../../etc/passwd", "/etc/passwd", "/dev/zero", "/proc/self/environ", "http://127.0.0.1:1/x",
    "https://huggingface.co/org/model", "hf://org/model", "file:///etc/passwd", "[red]x[/]", "[bold]",
    "ünï", "\u202eevil", "\u200bzero-width", "-", "--", "--json", "~", "*", "%s%n", "{0}", "${HOME}", "C:\\x",
    "nul", "a" * 300, "b" * 5000, "x,y,,z", " , ", "=", "a=b=c", "0x10", "None", "null", "true",
]
HOSTILE_INT = ["0", "-1", "-0", "2147483648", "9223372036854775808", "1" + "0" * 40, "1e3", "1.5", "nan", "inf",
               "", " ", "0x10", "1_000", "１２", "+3", "x"]
HOSTILE_FLOAT = ["0", "-0", "-1", "1e308", "1e309", "-1e308", "nan", "NaN", "inf", "-inf", "1e-320", "5e-324",
                 "", "x", "1,5", "0x1p3", "1_0", "５", "1" + "0" * 400]
HOSTILE_BOOL = ["maybe", "", "2", "TRUE ", "yes please", "-1"]


def text_nul_free(value: str) -> str:
    """A command line cannot carry NUL (execve refuses it): the CLI half draws NUL only inside files."""
    return value.replace("\x00", "")


# ---- names the package knows -------------------------------------------------------------------------------
def bundled_models() -> list[str]:
    try:
        from gpuplan.model.catalog import short_names

        return sorted(short_names())
    except Exception:
        return ["gpt2", "qwen2.5-0.5b", "llama-3.2-1b", "llama-3.1-8b"]


def gpu_names() -> list[str]:
    try:
        from gpuplan.hardware import gpus, short_id

        return sorted(short_id(g) for g in gpus())
    except Exception:
        return ["rtx-4090", "l40s", "h100-sxm", "a100-sxm4-80gb"]


SMALL_MODELS = ["qwen2.5-0.5b", "llama-3.2-1b", "gpt2", "gemma-3-1b", "qwen3-0.6b", "ernie-4.5-0.3b",
                "falcon-h1-0.5b"]
MID_MODELS = ["llama-3.1-8b", "qwen2.5-7b", "mistral-7b", "gemma-2-9b", "phi-3-mini", "qwen3-4b", "llama-3.2-3b"]
# MoE models read by exact readers, then ones whose structure is traced off transformers (bundled structures): a
# trace that left Gemma 4's experts per token at 0 broke every serving estimate of gemma-4-26b (session 7's walk)
MOE_MODELS = ["mixtral-8x7b", "gpt-oss-20b", "qwen3-30b-a3b", "ernie-4.5-21b", "Qwen/Qwen3-VL-2B-Instruct",
              "gemma-4-26b", "qwen3.5-35b", "nemotron-3-nano", "qwen3-next"]
ENCODER_DECODERS = ["whisper-large-v3", "flan-t5-base", "bart-large"]
BIG_MODELS = ["llama-3.1-70b", "qwen2.5-72b", "deepseek-r1", "llama-3.1-405b"]
MODEL_SPELLINGS = ["meta-llama/Llama-3.1-8B-Instruct", "Llama 3 70B", "BLOOM", "Qwen/Qwen2.5-0.5B",
                   "LLAMA-3.2-1B"]
BAD_MODELS = ["", " ", "lama-3.1-8b", "None", "nosuch/model", "org/name/extra", "x.json", "./missing/config.json",
              "a" * 300, "../", "hf://meta-llama/Llama-3.1-8B", "https://huggingface.co/gpt2", "[red]x[/]"]
CARDS = ["rtx-4090", "rtx-3090", "l40s", "h100-sxm", "a100-sxm4-80gb", "h200-sxm", "l4", "t4", "a10g", "mi300x",
         "b200", "rtx-a6000", "apple-m4-max", "v100-sxm2-32gb", "rtx-5090"]
CARD_SPELLINGS = ["4090", "h100", "H100 SXM", "a100", "rtx 6000 ada", "NVIDIA L40S"]
BAD_CARDS = ["", "rtx-9090", "H100 SXM 80 GB extra", "0x3090", "2x", "x3090", "-1x3090", "9x4090", "1e3x4090"]
PROVIDERS = ["runpod", "vast", "lambda", "aws", "gcp", "azure", "mycloud", "nobody", "../evil", "a/b", "RunPod"]
VERSIONS = ["4.46.0", "4.40", "2.5.1", "0.6.0", "1.0", "99.0", "0", "latest", "", "v4", "4.46.0.dev0", "nightly"]
SIZES = ["7B", "1.5b", "70M", "0.5B", "405B", "1T", "0B", "-7B", "7", "7GB", "nanB", "1e30B"]
HOSTS = ["127.0.0.1", "localhost", "::1", "0.0.0.0", "::", "192.0.2.1", "not a host", "", "[::1]"]
DISCOUNTS = ["runpod=0.85", "vast=0.5", "aws=1", "runpod=0", "runpod=-1", "runpod=nan", "runpod=2", "nobody=0.9",
             "=0.5", "runpod", "runpod=", "a=b=c"]
LORA = ["all-linear", "q_proj,v_proj", "q_proj,k_proj,v_proj,o_proj", "gate_proj,up_proj,down_proj", ",",
        "q_proj,[x]", "nosuch_proj"]
HEADROOM = ["10%", "0%", "5 GiB", "2GiB", "0.1", "100%", "150%", "-5%", "lots", "nan%"]
DEVICES = ["0", "0,1", "0,2,3", "1,1", "-1", "a,b", "99"]
PRICES = ["3000", "700", "3090=700", "4090=1700", "=5", "4090=5", "3090=nan", "0", "-1", "1e300", "3090=1=2", "x=y"]

# option names -> what they hold (a role); every other option is drawn from its kind alone
ROLES = {
    "model": "model", "name": "model", "gpu": "gpu", "names": "gpu", "gpus": "gpu-list", "have": "gpu-count",
    "scenario": "file:scenarios", "records": "file:records", "results": "file:results",
    "workload": "file:workloads", "trace": "file:traces", "calibration": "file:calibrations",
    "catalog": "file:offers", "file": "file:offers", "dataset": "file:datasets", "tokenizer": "file:tokenizers",
    "output": "out:folder", "out_dir": "out:folder", "launch_dir": "out:folder", "save": "out:yaml",
    "plot": "out:png", "provider": "provider", "providers": "provider-list", "discount": "discount",
    "lora_targets": "lora", "model_size": "size", "host": "host", "min_headroom": "headroom",
    "visible_devices": "devices", "transformers_version": "version", "torch_version": "version",
    "torchtune_version": "version", "engine_version": "version",
    # buy's: the build and the rentals are COUNTxCARD, the work a workloads file (session 18: the build was drawn as
    # plain text and the file never, so buy was seldom run past its arguments), a price USD or CARD=USD
    "build": "gpu-count", "rent": "gpu-count", "workloads": "file:owning", "price": "price",
}


def role(p: Param) -> str:
    return ROLES.get(p.name, "")


# ---- examples from --help ------------------------------------------------------------------------------------
_SPLIT = re.compile(r",\s*|\s+or\s+|\s*\|\s*")


def help_examples(text: str | None) -> list[str]:
    """The values an option's help names (``Lengths: chat, summarize, generate``, ``Rank by cost, time or
    balanced``, ``comma-separated: h100-sxm,l40s``): the list after the first colon (or the whole line), split on
    commas, "or" and "|"; items with spaces are kept only when quoted."""
    if not text:
        return []
    text = re.sub(r"\([^)]*\)|\[[^\]]*\]|`[^`]*`", "", text)
    head, colon, tail = text.partition(":")
    part = re.split(r"[;.](?:\s|$)", tail if colon else head)[0].strip()
    found = [q for q in re.findall(r"'([^']{1,40})'", part)]
    pieces = [part, *_SPLIT.split(part)] if " " not in part else _SPLIT.split(part)
    for item in pieces:
        item = item.strip().strip(".'\"").removesuffix("...").strip()
        if item and " " not in item and len(item) <= 40:
            found.append(item)
    return list(dict.fromkeys(found))


# ---- numbers -------------------------------------------------------------------------------------------------
def _log_uniform(r: random.Random, low: float, high: float) -> float:
    low, high = max(low, 1e-3), max(high, low)
    return math.exp(r.uniform(math.log(low), math.log(high)))


def valid_int(r: random.Random, p: Param) -> str:
    low = int(p.low) if p.low is not None else 1
    high = int(p.high) if p.high is not None else 8192
    high = min(high, max(low, 8192))
    if r.random() < 0.5:
        small = [v for v in (1, 2, 4, 8, 16, 64, 128, 512, 1024, 2048, 4096) if low <= v <= high]
        if small:
            return str(r.choice(small[:6] if r.random() < 0.6 else small))
    return str(round(_log_uniform(r, max(low, 1), high)) if high >= 1 else low)


def valid_float(r: random.Random, p: Param) -> str:
    low = float(p.low) if p.low is not None else 0.0
    high = float(p.high) if p.high is not None else 1e4
    if high <= 1.0:  # a share: uniform inside (low, high]
        return f"{r.uniform(max(low, 0.01), high):.3g}"
    high = min(high, 1e10)
    return f"{_log_uniform(r, max(low, 0.01), high):.4g}"


def boundary_number(r: random.Random, p: Param) -> str:
    """A value at or just past an edge of the range: low, high, one beyond, a hair inside."""
    edges = []
    for v in (p.low, p.high):
        if v is not None:
            edges += [v, v - 1, v + 1, v * 10, v - 1e-9] if p.kind == FLOAT else [v, v - 1, v + 1, v * 10]
    if not edges:
        return r.choice(HOSTILE_INT if p.kind == INT else HOSTILE_FLOAT)
    v = r.choice(edges)
    return str(int(v)) if p.kind == INT and float(v).is_integer() else repr(float(v))


def number(r: random.Random, p: Param, hostile: bool) -> str:
    if not hostile:
        return valid_int(r, p) if p.kind == INT else valid_float(r, p)
    pick = r.random()
    if pick < 0.35:
        return boundary_number(r, p)
    if pick < 0.85:
        return r.choice(HOSTILE_INT if p.kind == INT else HOSTILE_FLOAT)
    return r.choice(HOSTILE_TEXT)


# ---- choices, text -------------------------------------------------------------------------------------------
def near_miss(r: random.Random, word: str) -> str:
    word = str(word)
    if not word:
        return "x"
    i = r.randrange(len(word))
    return r.choice([word.upper(), word + " ", " " + word, word[:i] + word[i + 1:], word + word[-1], word.title()])


def choice(r: random.Random, p: Param, hostile: bool) -> str:
    if not hostile and p.choices:
        return str(r.choice(p.choices))
    if p.choices and r.random() < 0.6:
        return near_miss(r, str(r.choice(p.choices)))
    return r.choice(HOSTILE_TEXT)


def hostile_text(r: random.Random) -> str:
    if r.random() < 0.15:  # built: a hostile piece inside an ordinary word
        return r.choice(["gpt2", "model", "x"]) + r.choice(HOSTILE_TEXT) + r.choice(["", ".json", ".yaml"])
    return r.choice(HOSTILE_TEXT)


def named(r: random.Random, kind: str, hostile: bool) -> str:
    """A value for a role that names something (model, card, provider...)."""
    if kind == "model":
        pool = r.choice([SMALL_MODELS, SMALL_MODELS, MID_MODELS, MOE_MODELS, BIG_MODELS, MODEL_SPELLINGS,
                         bundled_models()]) if not hostile else BAD_MODELS + HOSTILE_TEXT
        return r.choice(pool)
    if kind == "gpu":
        if hostile:
            return r.choice(BAD_CARDS + HOSTILE_TEXT)
        return r.choice(CARDS + CARD_SPELLINGS if r.random() < 0.8 else gpu_names())
    if kind == "gpu-list":
        return ",".join(r.sample(CARDS, r.randint(1, 3))) if not hostile else r.choice(
            [*BAD_CARDS, "h100,,l40s", ",", "h100," * 50, *HOSTILE_TEXT])
    if kind == "gpu-count":
        return f"{r.choice([1, 2, 2, 4, 8])}x{r.choice(['3090', '4090', 'a6000', 'l40s', 'h100'])}" if not hostile \
            else r.choice([*BAD_CARDS, "0x3090", "100x4090", "2x3090x2", "nanx4090"])
    if kind in ("provider", "provider-list"):
        if hostile:
            return r.choice(PROVIDERS[6:] + HOSTILE_TEXT)
        return ",".join(r.sample(PROVIDERS[:6], r.randint(1, 2))) if kind == "provider-list" else r.choice(
            PROVIDERS[:6])
    pools = {"discount": (DISCOUNTS[:3], DISCOUNTS[3:]), "lora": (LORA[:4], LORA[4:]), "size": (SIZES[:5], SIZES[5:]),
             "host": (HOSTS[:5], HOSTS[5:]), "headroom": (HEADROOM[:5], HEADROOM[5:]),
             "devices": (DEVICES[:3], DEVICES[3:]), "version": (VERSIONS[:6], VERSIONS[6:]),
             "price": (PRICES[:4], PRICES[4:])}
    good, bad = pools.get(kind, ([], []))
    return r.choice(good if not hostile and good else bad + HOSTILE_TEXT)


def bool_text(r: random.Random, hostile: bool) -> str:
    return r.choice(["true", "false", "1", "0", "yes", "no", "on", "off"]) if not hostile else r.choice(HOSTILE_BOOL)


def scalar(r: random.Random, p: Param, hostile: bool, examples: list[str]) -> str:
    """A value of ``p``'s kind with no role: a number, a choice, true/false, or text (its help's examples
    when valid)."""
    if p.kind in (INT, FLOAT):
        return number(r, p, hostile)
    if p.kind == CHOICE or (p.choices and p.kind != BOOL_TEXT):
        return choice(r, p, hostile)
    if p.kind == BOOL_TEXT:
        return bool_text(r, hostile)
    if not hostile and examples:
        return r.choice(examples)
    if not hostile:
        return r.choice(["x", "default", "1", "auto", "a-b"])
    return hostile_text(r)


def fixture_files(root: Path, kind: str) -> tuple[list[Path], list[Path]]:
    """(valid, other) fixture files of a kind under ``root`` (a folder of kind subfolders): valid ones are
    named ``ok*``; each subfolder holding a ``tokenizer.json`` or ``config.json`` is one fixture."""
    folder = root / kind
    if not folder.is_dir():
        return [], []
    items = []
    for p in sorted(folder.iterdir()):
        items.append(p)
    valid = [p for p in items if p.name.startswith("ok")]
    return valid, [p for p in items if not p.name.startswith("ok")]
