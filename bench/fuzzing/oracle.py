"""What a run must do, and its class when it does not.

- **OK**: exit 0 (or a documented code: 3 from ``estimate --check`` when the job does not fit, 1 from ``prices
  update`` when its source cannot be reached) with sane output: strict JSON where ``--json`` or ``--format json``
  asked for it, no NaN or Infinity anywhere, no negative memory, time, money or rate, no ``fits: true`` above the
  capacity it is measured against, no model FLOPs utilization above 1 (no speed above the card's peak), a speed's
  low and high bounds around it; no list option that names nothing (``--gpus ,,``, ``-t ,``) taken as not given
  (the filter silently gone: :data:`NAME_LISTS`).
- **CLEAN-ERROR**: exit 2 with exactly one line on stderr (``error: ...``; a slow step's progress line before it,
  ``gpuplan: reading ...``, is not counted), nothing on stdout, and no file left behind outside the user's cache.
- **Files** (:func:`judge_files`, every run): no file that was there changed or removed, no temporary file left
  anywhere (the cache included), nothing written outside the current folder, the cache and the paths the run
  named (a path that climbs out of the cache), and every file written parses in its format (JSON, YAML, TOML,
  ``bash -n``, Python, CSV, PNG): nothing half-written.
- **TRACEBACK**: an exception escaped (in process), or a traceback was printed.
- **NONSENSE**: any other exit code, more than one line on exit 2, output that breaks a rule above.
- **HANG**: the run passed its time limit (set by the runner).

The Python API has the same classes: a returned answer whose ``to_dict()`` passes ``json.dumps(allow_nan=False)``
and the checks above is OK, a :class:`~gpuplan.errors.GpuplanError` of one line is CLEAN-ERROR, any other
exception is TRACEBACK.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

OK, CLEAN, TRACEBACK, NONSENSE, HANG = "OK", "CLEAN-ERROR", "TRACEBACK", "NONSENSE", "HANG"
CLASSES = (OK, CLEAN, TRACEBACK, NONSENSE, HANG)
FAILURES = (TRACEBACK, NONSENSE, HANG)

# keys holding amounts that are never negative (headroom, differences and errors may be)
AMOUNT = re.compile(r"(_gib|_gb|_usd|^usd.*|_days|hours|_h|_s|_ms|tokens_per_s.*|_rps|_tflops|_tbs|_tokens|"
                    r"concurrency|batch_size|seq_len)$")
SIGNED = ("headroom", "difference", "error", "delta", "change", "saving", "slack", "margin", "vs_", "offset")
PROGRESS = "gpuplan: "  # a slow step says what it does on stderr (model/reading.py)
# a value printed as NaN or infinity; not the name of AMD's Infinity Fabric (the interconnect of MI300X and its kin)
NAN_WORD = re.compile(r"(?<![\w.-])[-+]?(nan|inf|infinity)(?![\w-])(?!\s+fabric)", re.IGNORECASE)


@dataclass
class Verdict:
    klass: str
    signature: str = ""  # what deduplicates failures: a cause, not a run
    detail: str = ""


def strict_json(text: str) -> Any:
    def refuse(token: str):
        raise ValueError(f"{token} in JSON")

    return json.loads(text, parse_constant=refuse)


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _below_zero(v: Any) -> bool:
    """An amount below zero, or a part of one (``parts_s``: the seconds of a step by part, each an amount; s19: a
    Whisper call's "decoder steps" at -0.031 s)."""
    if isinstance(v, dict):
        return any(_number(x) and x < 0 for x in v.values())
    return _number(v) and v < 0


def json_problems(data: Any, path: str = "") -> list[tuple[str, str]]:
    """(check, where) for every rule the data breaks."""
    found: list[tuple[str, str]] = []
    if isinstance(data, dict):
        for k, v in data.items():
            where = f"{path}.{k}"
            found += json_problems(v, where)
            key = str(k)
            if AMOUNT.search(key) and not any(s in key for s in SIGNED) and _below_zero(v):
                found.append(("negative amount", where))
        found += _dict_rules(data, path)
    elif isinstance(data, list):
        for i, v in enumerate(data):
            found += json_problems(v, f"{path}[{i}]")
    elif isinstance(data, float) and not math.isfinite(data):
        found.append(("not finite", path))
    return found


def _dict_rules(d: dict, path: str) -> list[tuple[str, str]]:
    found = []
    peak = next((d[k] for k in ("device_peak_gib", "device_peak_gib_per_gpu") if _number(d.get(k))), None)
    cap = next((d[k] for k in ("capacity_gib", "capacity_gib_per_gpu") if _number(d.get(k))), None)
    if d.get("fits") is True and peak is not None and cap is not None and peak > cap * (1 + 1e-9) + 1e-6:
        found.append(("fits above capacity", path))
    if _number(d.get("mfu")) and d["mfu"] > 1 + 1e-9:
        found.append(("speed above the card's peak (mfu > 1)", path))
    low, mid, high = (d.get(k) for k in ("tokens_per_s_low", "tokens_per_s", "tokens_per_s_high"))
    if all(_number(x) for x in (low, mid, high)) and not low * (1 - 1e-9) <= mid <= high * (1 + 1e-9):
        found.append(("speed outside its own bounds", path))
    return found


def _norm(where: str) -> str:
    """A key path without list indices: one signature for every row."""
    return re.sub(r"\[\d+\]", "[]", where)


def _output(out: str, wants_json: bool) -> Verdict | None:
    if wants_json:
        try:
            data = strict_json(out)
        except ValueError as e:
            return Verdict(NONSENSE, "--json output is not strict JSON", f"{e}: {out[:200]!r}")
        problems = json_problems(data)
        if problems:
            check, where = problems[0]
            return Verdict(NONSENSE, f"{check} at {_norm(where)}", f"{len(problems)} problems, first {where}")
        return None
    m = NAN_WORD.search(out)
    if m:
        return Verdict(NONSENSE, "NaN or infinity printed", out[max(0, m.start() - 80):m.end() + 40])
    return None


# Options that take a list of names, comma-separated (s15 rewalk: `capacity --gpus ,,` searched every GPU type)
NAME_LISTS = ("--gpus", "--providers", "--target", "-t", "--rent", "--have", "--lora-targets")


def empty_list_option(argv: list[str]) -> str | None:
    """The first list option of ``argv`` (:data:`NAME_LISTS`) given a value that names nothing, or None."""
    for flag, value in itertools.pairwise(argv):
        if flag in NAME_LISTS and value and not any(n.strip() for n in value.split(",")):
            return f"{flag} {value!r}"
    return None


def judge_cli(command: str, argv: list[str], code: int | None, out: str, err: str, wants_json: bool) -> Verdict:
    """The class of one finished command line (in process or not)."""
    if "Traceback (most recent call last)" in out + err:
        return Verdict(TRACEBACK, _printed_cause(out + err), (out + err)[-600:])
    documented = documented_exit_codes(command, argv)
    if code == 2:  # one error line (after the progress lines of slow steps: "gpuplan: reading ...")
        lines = [line for line in err.splitlines() if line.strip() and not line.startswith(PROGRESS)]
        if len(lines) != 1 or not lines[0].startswith("error: ") or out.strip():
            return Verdict(NONSENSE, f"{command}: exit 2 without exactly one error line",
                           f"stdout {out[:200]!r} stderr {err[:400]!r}")
        return Verdict(CLEAN, detail=lines[0][:300])
    if code not in documented:
        return Verdict(NONSENSE, f"{command}: exit code {code}", f"stderr {err[-400:]!r}")
    if code == 1 and not err.strip():
        return Verdict(NONSENSE, f"{command}: exit 1 without a word", "")
    if code == 0 and (empty := empty_list_option(argv)):
        return Verdict(NONSENSE, f"{command}: a list option that names nothing was taken as not given", empty)
    return _output(out, wants_json) or Verdict(OK)


def documented_exit_codes(command: str, argv: list[str]) -> set[int]:
    """0, and 3 from ``estimate --check`` (the job does not fit), 1 from ``prices update`` (the source could not
    be reached: the prices in force stay)."""
    return {0} | ({3} if command == "estimate" and "--check" in argv else set()) | (
        {1} if command == "prices update" else set())


def _printed_cause(text: str) -> str:
    last = [line for line in text.splitlines() if line.strip()][-1:]
    frames = re.findall(r'File "([^"]*gpuplan/[^"]+)", line \d+, in (\w+)', text)
    where = f"{frames[-1][0].split('gpuplan/')[-1]}:{frames[-1][1]}" if frames else "?"
    return f"{(last[0] if last else '?').split(':')[0]} at {where}"


def cause(exc: BaseException) -> str:
    """An exception's signature: its type and the innermost frame inside gpuplan (else the innermost)."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "/gpuplan/" in f.filename.replace("\\", "/")]
    frame = (ours or frames or [None])[-1]
    where = f"{frame.filename.replace(chr(92), '/').split('/gpuplan/')[-1]}:{frame.name}" if frame else "?"
    return f"{type(exc).__name__} at {where}"


def judge_api(result: Any, exc: BaseException | None) -> Verdict:
    """The class of one Python API call."""
    from gpuplan.errors import GpuplanError

    if exc is not None:
        if isinstance(exc, GpuplanError):
            text = str(exc)
            if not text.strip() or "\n" in text.strip():
                return Verdict(NONSENSE, "GpuplanError that is not one line", repr(text[:300]))
            return Verdict(CLEAN, detail=text[:300])
        return Verdict(TRACEBACK, cause(exc), "".join(traceback.format_exception(exc))[-800:])
    return _answer(result)


def _answer(result: Any) -> Verdict:
    if hasattr(result, "to_dict"):
        try:
            data = result.to_dict()
            json.dumps(data, allow_nan=False)
        except (TypeError, ValueError) as e:
            return Verdict(NONSENSE, f"to_dict() of {type(result).__name__} is not strict JSON", str(e)[:300])
        problems = json_problems(data)
        if problems:
            check, where = problems[0]
            return Verdict(NONSENSE, f"{check} at {_norm(where)} ({type(result).__name__})", where)
        plan_problem = _plan_rules(result)
        if plan_problem:
            return Verdict(NONSENSE, plan_problem, "")
    return Verdict(OK)


def _plan_rules(plan: Any) -> str:
    """A Plan's memory adds up: parts not negative, allocated <= reserved <= device, not priced if it does not
    fit; a serving plan's quantized weights hold no more than its bf16 checkpoint would (session 9's walk:
    Gemma-4-E2B Q4_K_M on llama.cpp held 10.98 GiB, its bf16 checkpoint 9.51)."""
    mem = getattr(plan, "memory", None)
    if mem is None or not hasattr(mem, "allocated_peak_gib"):
        return ""
    s, model = getattr(plan, "scenario", None), getattr(plan, "model", None)
    if isinstance(s, dict) and s.get("task") == "infer" and (s.get("quant") or "none") != "none" and model:
        layers = (s.get("tp") or 1) * (s.get("pp") or 1)
        if mem.weights_gib * layers > 1.02 * model.params_total * 2 / 2**30 + 0.25:
            return "quantized weights above the bf16 checkpoint"
    if min(mem.weights_gib, mem.gradients_gib, mem.optimizer_gib, mem.activations_gib, mem.kv_cache_gib) < 0:
        return "a memory part below zero"
    if mem.allocated_peak_gib > mem.reserved_peak_gib * (1 + 1e-9) + 1e-9:
        return "allocated above reserved"
    if mem.reserved_peak_gib > mem.device_peak_gib * (1 + 1e-9) + 1e-9:
        return "reserved above the device peak"
    if mem.fits is False and getattr(plan, "cost", None) is not None:
        return "a plan that does not fit is priced"
    return ""


def judge_web(status: int, body: bytes, model: Any, hidden: tuple[str, ...] = ()) -> Verdict:
    """The class of one answer of the page: 200 with strict JSON its response model accepts, or a 4xx whose body
    is ``{"detail": one sentence}`` naming none of the server's own paths (``hidden``); a 503 is a request past
    its deadline (HANG), any other 5xx NONSENSE."""
    text = body.decode("utf-8", "replace")
    if status >= 500:
        klass = HANG if status == 503 else NONSENSE
        return Verdict(klass, f"HTTP {status}", text[:300])
    try:
        data = strict_json(text)
    except ValueError as e:
        return Verdict(NONSENSE, f"HTTP {status} whose body is not strict JSON", f"{e}: {text[:200]!r}")
    if status >= 400:
        detail = data.get("detail") if isinstance(data, dict) else None
        if not isinstance(detail, str) or not detail.strip() or "\n" in detail.strip():
            return Verdict(NONSENSE, f"HTTP {status} without one sentence in detail", text[:300])
        leaked = next((h for h in hidden if h and h in detail), None)
        if leaked:
            return Verdict(NONSENSE, "an error shows a path of the server", detail[:300])
        return Verdict(CLEAN, detail=f"{status}: {detail[:300]}")
    if status != 200:
        return Verdict(NONSENSE, f"HTTP {status}", text[:300])
    problems = json_problems(data)
    if problems:
        check, where = problems[0]
        return Verdict(NONSENSE, f"{check} at {_norm(where)}", f"{len(problems)} problems, first {where}")
    if model is not None:
        wrong = _off_schema(data, model)
        if wrong:
            name = getattr(model, "__name__", str(model))
            return Verdict(NONSENSE, f"the answer does not match its response model {name}", wrong[:300])
    return Verdict(OK)


def _off_schema(data: Any, model: Any) -> str | None:
    """Where ``data`` leaves the JSON schema of its response model (validation mode: the types, ranges and
    choices of every field, the answer read back as its model), or None. The schema, not the model's validators:
    those read the files a scenario names, which live on the server under names the answer hides (an uploaded
    dataset is answered as 'data.csv'); the serialization schema would leave a scenario an open object."""
    import jsonschema
    from pydantic import TypeAdapter

    schema = TypeAdapter(model).json_schema(mode="validation")
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(data))
    return None if error is None else f"{'/'.join(map(str, error.absolute_path)) or '(root)'}: {error.message}"


def judge_page(status: int, body: bytes, path: str) -> Verdict:
    """A page, a static file or a path beside them: any answer under 500, and never a file from outside the
    package's static folder (a path that climbs out: /etc/passwd's ``root:`` line)."""
    if status >= 500:
        shown = body[:300].decode("utf-8", "replace")
        return Verdict(HANG if status == 503 else NONSENSE, f"HTTP {status} for a page", shown)
    if status == 200 and b"root:" in body and b":0:0:" in body:
        return Verdict(NONSENSE, "a file outside the static folder was served", path[:200])
    return Verdict(OK if status < 400 else CLEAN, detail=f"{status} {path[:100]}")


TEMP_NAME = re.compile(r"^\.gpuplan-|^\..*\.tmp(\.\w+)?$|\.tmp$")


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def judge_files(before: dict[str, Any], after: dict[str, Any], mine: list[str], allowed: list[str],
                refused: bool, read: Any) -> Verdict | None:
    """The files of one run (paths relative to its box: ``before`` and ``after`` it, each with its size and time):
    ``mine`` are the user's cache, configuration and temporary folders, ``allowed`` the current folder and the
    paths the run named; ``read(path)`` parses a written file by its suffix (an error: it is half-written)."""
    touched = sorted(p for p in before if after.get(p) != before[p])
    if touched:
        return Verdict(NONSENSE, "a file that was there was changed or removed", ", ".join(touched[:5]))
    temps = sorted(p for p in after if any(TEMP_NAME.search(part) for part in p.split("/")))
    if temps:
        return Verdict(NONSENSE, "a temporary file left behind", ", ".join(temps[:5]))
    written = sorted(p for p in set(after) - set(before) if not any(_inside(p, m) for m in mine))
    if refused and written:
        return Verdict(NONSENSE, "files left behind by a refused run", ", ".join(written[:5]))
    outside = [p for p in written if not any(_inside(p, a) for a in allowed)]
    if outside:
        return Verdict(NONSENSE, "a file written outside its folder", ", ".join(outside[:5]))
    for p in written:
        try:
            read(p)
        except Exception as e:
            return Verdict(NONSENSE, f"a written {p.rsplit('.', 1)[-1]} file does not parse",
                           f"{p}: {type(e).__name__}: {str(e)[:200]}")
    return None


def parse_written(path: Path) -> None:
    """Read a file a run wrote in its format (by suffix; others are not checked); raises when it does not parse."""
    import ast
    import csv
    import io
    import subprocess

    import tomllib
    import yaml

    suffix = path.suffix.lower()
    if path.is_symlink() or suffix not in (".json", ".yaml", ".yml", ".toml", ".sh", ".py", ".csv", ".png"):
        return
    data = path.read_bytes()
    if suffix == ".png":
        if not data.startswith(b"\x89PNG\r\n\x1a\n") or not data.rstrip().endswith(b"IEND\xaeB`\x82"):
            raise ValueError("not a whole PNG")
        return
    text = data.decode("utf-8")
    if suffix == ".json":
        strict_json(text)
    elif suffix in (".yaml", ".yml"):
        list(yaml.safe_load_all(text))
    elif suffix == ".toml":
        tomllib.loads(text)
    elif suffix == ".py":
        ast.parse(text)
    elif suffix == ".csv":
        list(csv.reader(io.StringIO(text)))
    else:
        done = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True, timeout=30)
        if done.returncode:
            raise ValueError(done.stderr.strip()[:200])
