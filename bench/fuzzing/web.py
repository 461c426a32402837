"""The web half: every endpoint of ``gpuplan serve``, read off the app's own OpenAPI schema (never listed by hand),
gets requests drawn from its parameters and body schema: valid scenarios (the CLI's recipes, typed), values at and
past each field's bounds, wrong types, unknown fields, bodies that are not JSON, nested 3,000 levels deep, empty, or
sent as the wrong content type, and uploads of the fixture datasets and tokenizers whose references a scenario then
names. An endpoint added tomorrow is fuzzed with no edit here.

The page must answer 200 with strict JSON its response model accepts, or a 4xx whose body is one sentence in
``{"detail": ...}`` that shows no path of the server's; never a 5xx, an exception, or a request past its deadline
(503). The requests run in process through Starlette's test client against one app per worker, its lifespan
entered (the reader process, the uploads' folder), and the uploads' folder must stay within the store's caps. The
machine being shared, the app waits three times its deadline in wall time, and an answer whose work took more CPU
than the deadline is past it (as the CLI's runs are limited in CPU seconds).
"""

from __future__ import annotations

import contextlib
import json
import math
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import values as V
from .fixtures import Fixtures

BASE = "http://127.0.0.1"
DEEP = 3000
JSON_TYPE = "application/json"


@dataclass(frozen=True)
class Endpoint:
    method: str
    path: str
    query: dict[str, dict]  # name -> JSON schema
    required: tuple[str, ...]
    body: dict | None  # JSON schema of the body (``$ref`` resolved lazily), or None
    content_type: str = JSON_TYPE

    @property
    def row(self) -> str:
        return f"web {self.method} {self.path}"


@dataclass
class Call:
    """One HTTP request; ``body`` is JSON data (sent as JSON), ``raw`` bytes (sent as they are)."""

    method: str
    path: str
    query: dict[str, str] = field(default_factory=dict)
    body: Any = None
    raw: bytes | None = None
    content_type: str = JSON_TYPE
    has_body: bool = False


@dataclass
class WebCase:
    row: str
    calls: list[Call]  # uploads first, then the request under test (last)
    mode: str
    optional: list[str] = field(default_factory=list)  # top-level body keys shrinking may drop

    def final(self, drop: tuple[int, ...] = ()) -> Call:
        last = self.calls[-1]
        gone = {self.optional[i] for i in drop if i < len(self.optional)}
        if isinstance(last.body, dict) and gone:
            body = {k: v for k, v in last.body.items() if k not in gone}
            return Call(last.method, last.path, last.query, body, last.raw, last.content_type, last.has_body)
        return last

    def text(self, drop: tuple[int, ...] = (), roots: tuple[str, ...] = ()) -> str:
        """The requests as curl commands against ``gpuplan serve`` (uploads' references as ``$REF0``...)."""
        import shlex
        from urllib.parse import urlencode

        lines = []
        for i, call in enumerate([*self.calls[:-1], self.final(drop)]):
            url = f"{BASE}:8000{call.path}" + (f"?{urlencode(call.query)}" if call.query else "")
            words = ["curl", "-s", "-X", call.method, url]
            if call.has_body:
                data = call.raw if call.raw is not None else json.dumps(call.body, allow_nan=True).encode()
                shown = data[:300].decode("utf-8", "replace") + ("..." if len(data) > 300 else "")
                words += ["-H", f"content-type: {call.content_type}", "--data-binary", shown]
            text = shlex.join(words) + (f"  # -> $REF{i}" if call.path.endswith("/upload") else "")
            for root in roots:
                text = text.replace(root, "$FUZZ")
            lines.append(text)
        return " ; ".join(lines)


# ---- the endpoints -------------------------------------------------------------------------------------------
def app_schema() -> dict:
    from gpuplan.web.app import create_app

    return create_app().openapi()


def endpoints(schema: dict | None = None) -> list[Endpoint]:
    """Every operation of the app's OpenAPI schema."""
    schema = schema or app_schema()
    found = []
    for path, ops in sorted(schema["paths"].items()):
        for method, op in sorted(ops.items()):
            query = {p["name"]: p.get("schema", {}) for p in op.get("parameters", []) if p.get("in") == "query"}
            required = tuple(p["name"] for p in op.get("parameters", []) if p.get("required"))
            content = op.get("requestBody", {}).get("content", {})
            ctype = next(iter(content), JSON_TYPE)
            body = content.get(ctype, {}).get("schema") if content else None
            found.append(Endpoint(method.upper(), path, query, required, body, ctype))
    return [*found, PAGES]


PAGES = Endpoint("GET", "(pages)", {}, (), None)  # the page, the README, the docs and static files: not in the schema
HOSTILE_PAGES = ["/static/../../../../etc/passwd", "/static/..%2f..%2f..%2f..%2fetc%2fpasswd", "/static/%2e%2e/%2e%2e/"
                 "%2e%2e/etc/passwd", "/static/", "/static", "/static/.", "/static/%00", "/static/" + "a" * 5000,
                 "/nonexistent", "/api/nonexistent", "/api", "//etc/passwd", "/readme?x=" + "%ff" * 100,
                 "/static/index.html/..", "/docs/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/static/~root"]


def page_paths() -> list[str]:
    """Every path of the app outside its API: plain routes, and each file of a mounted static folder."""
    out = []
    api = {p for p, r in api_routes() if getattr(r, "include_in_schema", True)}
    for route in app().routes:
        path = getattr(route, "path", None)
        if path is None or path in api:
            continue
        directory = getattr(getattr(route, "app", None), "directory", None)
        if directory:
            out += [f"{path}/{f.relative_to(directory)}" for f in sorted(Path(directory).rglob("*")) if f.is_file()]
        else:
            out.append(path)
    return out


class Schemas:
    """JSON-schema values for one OpenAPI document (``$ref`` resolved against its components)."""

    def __init__(self, schema: dict, estimate_cmd: Any, fixtures: Fixtures):
        self.components = schema.get("components", {}).get("schemas", {})
        self.estimate_cmd, self.fixtures = estimate_cmd, fixtures

    def resolve(self, s: dict) -> dict:
        while "$ref" in s:
            s = self.components[s["$ref"].rsplit("/", 1)[-1]]
        return s

    def value(self, r: random.Random, s: dict, hostile: bool, depth: int = 0) -> Any:
        """A value for schema ``s``: valid, or (``hostile``) at or past its bounds, of a wrong type."""
        s = self.resolve(s)
        if s.get("title") == "Scenario" and not hostile:
            return self.scenario(r)
        if hostile and r.random() < 0.3:
            return r.choice(WRONG)
        if "anyOf" in s:
            return self.value(r, r.choice(s["anyOf"]), hostile, depth)
        if "const" in s:
            return s["const"]
        if "enum" in s:
            return r.choice(s["enum"]) if not hostile else V.near_miss(r, str(r.choice(s["enum"])))
        kind = s.get("type")
        if kind == "object":
            return self.object(r, s, hostile, depth)
        if kind == "array":
            n = r.randint(0, 3) if not hostile else r.choice([0, 1, 60, 500])
            return [self.value(r, s.get("items", {}), hostile and r.random() < 0.3, depth + 1) for _ in range(n)]
        if kind in ("integer", "number"):
            return _number(r, s, hostile)
        if kind == "boolean":
            return r.choice([True, False])
        if kind == "null":
            return None
        if kind == "string":
            return _string(r, s, hostile)
        return r.choice([None, 1, "x", [], {}])

    def object(self, r: random.Random, s: dict, hostile: bool, depth: int) -> dict:
        props = s.get("properties", {})
        required = set(s.get("required", ()))
        out = {}
        for name, sub in props.items():
            if name in required or r.random() < (0.15 if depth else 0.3):
                out[name] = self.value(r, sub, hostile and r.random() < 0.3, depth + 1)
        if hostile and r.random() < 0.3:
            out[r.choice(["nosuch", "__proto__", "Model", "a" * 300])] = 1
        if hostile and required and r.random() < 0.3:
            out.pop(r.choice(sorted(required)), None)
        return out

    def scenario(self, r: random.Random) -> dict:
        from .api import _scenario_fields

        fields = _scenario_fields(r, self.estimate_cmd, False, self.fixtures)
        return {k: v for k, v in fields.items() if k != "scenario"}

    def hostile_scenario(self, r: random.Random, s: dict) -> dict:
        """A valid scenario with one or two fields at or past their bounds, of a wrong type, or unknown."""
        data = self.scenario(r)
        props = self.resolve(s).get("properties", {})
        for name in r.sample(sorted(props), min(len(props), r.randint(1, 2))):
            data[name] = self.value(r, props[name], True, 1)
        return data


WRONG = [None, math.nan, math.inf, -math.inf, -1, 0, 10**30, 1e308, "", "x", " ", [], {}, [1], {"a": None}, True,
         "a\nb", "\u202e", "../../etc/passwd", "/etc/passwd", "<script>alert(1)</script>", 2**63, -(2**63)]


def _number(r: random.Random, s: dict, hostile: bool) -> Any:
    low = s.get("minimum", s.get("exclusiveMinimum"))
    high = s.get("maximum", s.get("exclusiveMaximum"))
    integer = s.get("type") == "integer"
    if hostile:
        edges = [v + d for v in (low, high) if v is not None for d in (-1, 0, 1)]
        pick = r.choice([*edges, math.nan, math.inf, -math.inf, 1e308, -1e308, 10**30, 0, -1, 0.5])
        return int(pick) if integer and isinstance(pick, float) and math.isfinite(pick) and pick.is_integer() \
            else pick
    lo = low if low is not None else 0
    hi = min(high if high is not None else 1e4, max(lo, 1e4))
    if "exclusiveMinimum" in s:
        lo = lo + (1 if integer else 1e-3)
    if "exclusiveMaximum" in s:
        hi = hi - (1 if integer else 1e-3)
    if integer:
        return r.choice([v for v in (int(lo), int(hi), 1, 2, 8, 64) if lo <= v <= hi] or [int(lo)])
    return round(r.uniform(lo, max(lo, hi)), 4)


def _string(r: random.Random, s: dict, hostile: bool) -> str:
    if hostile:
        return r.choice([*V.HOSTILE_TEXT, "x" * (s.get("maxLength", 100) + 1), "\x00"])
    text = r.choice(["x", "llama", "gpt2", "rtx-4090", "runpod", "h100-sxm", "2x3090"])
    return text[: s.get("maxLength", 100)] or "x"


# ---- drawing a case ----------------------------------------------------------------------------------------------
def upload_call(r: random.Random, kind: str, fixtures: Fixtures) -> Call:
    """An upload of a fixture file (a dataset, or a tokenizer.json) under its own name or a hostile one."""
    folder = "datasets" if kind == "dataset" else "tokenizers"
    valid, other = fixtures.files(folder)
    pool = [p for p in (valid if r.random() < 0.7 else other) or valid or other if p.is_file()]
    path = r.choice(pool) if pool else None
    data = path.read_bytes() if path is not None else b'{"text": "hello"}\n'
    if path is not None and r.random() < 0.2:  # a value or two changed
        from .mutate import change

        data = change(r, path) or data
    name = path.name if path is not None and r.random() < 0.8 else r.choice(
        ["../../x.jsonl", "/etc/passwd", "a\x00b.jsonl", "ünï.jsonl", "x" * 200, "con.jsonl", "a b.jsonl"])
    return Call("POST", "/api/upload", {"kind": kind, "name": name}, raw=data,
                content_type="application/octet-stream", has_body=True)


def _upload_kinds(r: random.Random, body: Any) -> list[str]:
    """The uploads a scenario names (sometimes): a dataset, mostly with its tokenizer.json."""
    scenario = body.get("scenario") if isinstance(body, dict) and "scenario" in body else body
    if not isinstance(scenario, dict) or r.random() > (0.3 if scenario.get("task") == "train" else 0.03):
        return []
    return ["dataset", *(["tokenizer"] if r.random() < 0.9 else [])]


def _body(r: random.Random, ep: Endpoint, sch: Schemas, mode: str) -> tuple[Any, bytes | None, str, bool]:
    """(JSON body, raw bytes, content type, has a body) for ``ep``."""
    if ep.body is None:
        return None, None, JSON_TYPE, False
    if ep.content_type != JSON_TYPE:
        data = r.choice([b"", b'{"text": "hi"}\n', b"\xff\xfe\x00", b"x" * 1000]) if mode != "valid" else \
            b'{"text": "hello world"}\n'
        return None, data, ep.content_type, True
    if mode == "wild" and r.random() < 0.4:
        raw = r.choice([b"", b"null", b"[]", b"{", b"not json", b"\xff\xfe", ("[" * DEEP + "]" * DEEP).encode(),
                        b'{"model": NaN, "task": "train"}', b'{"model": "gpt2", "model": "x"}', b"1e999",
                        ('{"a":' * DEEP + "1" + "}" * DEEP).encode()])
        return None, raw, r.choice([JSON_TYPE, JSON_TYPE, "text/plain", "application/x-www-form-urlencoded"]), True
    resolved = sch.resolve(ep.body)
    if mode == "mixed" and resolved.get("title") == "Scenario":
        return sch.hostile_scenario(r, ep.body), None, JSON_TYPE, True
    body = sch.value(r, ep.body, hostile=mode == "wild")
    if mode == "mixed" and isinstance(body, dict):
        props = resolved.get("properties", {})
        for name in r.sample(sorted(props), min(len(props), 1)):
            body[name] = sch.hostile_scenario(r, props[name]) if sch.resolve(props[name]).get(
                "title") == "Scenario" else sch.value(r, props[name], True, 1)
    return body, None, JSON_TYPE, True


def _query(r: random.Random, ep: Endpoint, sch: Schemas, mode: str) -> dict[str, str]:
    out = {}
    for name, s in ep.query.items():
        if name in ep.required or r.random() < 0.5:
            v = sch.value(r, s, hostile=mode != "valid" and r.random() < 0.5)
            out[name] = v if isinstance(v, str) else json.dumps(v) if not isinstance(v, float) else repr(v)
    if mode == "wild" and ep.required and r.random() < 0.3:
        out.pop(r.choice(ep.required), None)
    return out


def draw_page(r: random.Random, mode: str) -> WebCase:
    """A GET (now and then another method) of a page, a static file, or a path that climbs out of them."""
    path = r.choice(page_paths()) if mode == "valid" else r.choice(HOSTILE_PAGES + page_paths()[:3])
    method = "GET" if mode != "wild" else r.choice(["GET", "HEAD", "OPTIONS", "POST", "PUT", "DELETE"])
    return WebCase(row=PAGES.row, calls=[Call(method, path)], mode=mode)


def draw_web(r: random.Random, ep: Endpoint, sch: Schemas) -> WebCase:
    mode = r.choices(["valid", "mixed", "wild"], [0.5, 0.35, 0.15])[0]
    if ep.path == PAGES.path:
        return draw_page(r, mode)
    row = ep.row
    if mode == "wild" and r.random() < 0.1:  # a method the endpoint does not take
        ep = Endpoint(r.choice(["GET", "PUT", "DELETE", "PATCH"] if ep.method == "POST" else ["POST", "PUT"]),
                      ep.path, ep.query, ep.required, ep.body, ep.content_type)
    body, raw, ctype, has_body = _body(r, ep, sch, mode)
    query = _query(r, ep, sch, mode)
    calls = []
    if ep.path.endswith("/upload"):
        kind = query.get("kind") if query.get("kind") in ("dataset", "tokenizer") else "dataset"
        up = upload_call(r, kind, sch.fixtures)
        if mode == "valid" or r.random() < 0.5:
            query, raw = {**up.query, **({"kind": query["kind"]} if mode == "wild" and "kind" in query else {})}, up.raw
    elif has_body and raw is None:
        calls = [upload_call(r, kind, sch.fixtures) for kind in _upload_kinds(r, body)]
        target = body.get("scenario") if isinstance(body, dict) and isinstance(body.get("scenario"), dict) else body
        for i, c in enumerate(calls):
            target[c.query["kind"]] = f"$REF{i}"
    calls.append(Call(ep.method, ep.path, query, body, raw, ctype, has_body))
    optional = sorted(body) if isinstance(body, dict) else []
    return WebCase(row=row, calls=calls, mode=mode, optional=optional)


# ---- running a case ----------------------------------------------------------------------------------------------
_APP: dict[str, Any] = {}
# the page's deadline is wall time; the campaign shares its cores (as the CLI's runs get three times their CPU
# limit in wall time): the app it drives waits this many times the deadline, and an answer whose work took more
# CPU than the deadline itself is past it (:func:`judge`)
WALL_FACTOR = 3.0


def app() -> Any:
    """One app per process (its reader process and uploads' folder go at exit, :func:`close`)."""
    if "app" not in _APP:
        from gpuplan.web.app import create_app

        _APP["app"] = create_app()
    return _APP["app"]


@contextlib.contextmanager
def wall_deadline():
    """The page's deadline :data:`WALL_FACTOR` times over while a case runs, and the page's own again after it: set
    from the app's making on, it held in every test of a process that had only listed the app's routes."""
    from gpuplan.web import lanes

    own = lanes.TIMEOUT_S
    lanes.TIMEOUT_S = own * WALL_FACTOR
    try:
        yield
    finally:
        lanes.TIMEOUT_S = own


def close() -> None:
    """Stop the app's reader process and remove its uploads (what its lifespan does at shutdown)."""
    page = _APP.pop("app", None)
    if page is not None:
        page.state.pools.close()
        page.state.uploads.close()


def _substitute(value: Any, refs: list[str]) -> Any:
    if isinstance(value, str) and value.startswith("$REF") and value[4:].isdigit():
        i = int(value[4:])
        return refs[i] if i < len(refs) else "upload:0000000000000000/missing.jsonl"
    if isinstance(value, dict):
        return {k: _substitute(v, refs) for k, v in value.items()}
    return value


def send(client: Any, call: Call, refs: list[str]) -> Any:
    headers = {"content-type": call.content_type} if call.has_body else {}
    if call.raw is not None:
        data = call.raw
    elif call.has_body:
        data = json.dumps(_substitute(call.body, refs), allow_nan=True).encode()
    else:
        data = None
    return client.request(call.method, call.path, params=call.query or None, content=data, headers=headers)


def api_routes(page: Any = None, prefix: str = "") -> list[Any]:
    """Every route of the app with a response model, through included routers (FastAPI 0.165 keeps an included
    router whole: its routes under ``original_router``)."""
    found = []
    for route in getattr(page if page is not None else app(), "routes", []):
        inner = getattr(route, "original_router", None)
        if inner is not None:
            context = getattr(route, "include_context", None)
            found += api_routes(inner, prefix + (getattr(context, "prefix", "") or ""))
        elif hasattr(route, "response_model") and hasattr(route, "methods"):
            found.append((prefix + route.path, route))
    return found


def response_model(method: str, path: str) -> Any:
    return next((r.response_model for p, r in api_routes() if p == path and method in r.methods), None)


def run(case: WebCase, drop: tuple[int, ...], address: str, patience_s: float = 60.0
        ) -> tuple[Any, Path | None, float]:
    """Send the case's requests from client ``address`` (the page limits uploads per address), asking again as
    the page does when an answer says to (503 with ``Retry-After``: an uploaded file still being read), for at most
    ``patience_s``; the last response, the uploads' folder, and the CPU seconds (this process's, its threads
    included: where the page computes a plan) the last request took."""
    from fastapi.testclient import TestClient

    with wall_deadline():
        return _sent(TestClient(app(), base_url=BASE, raise_server_exceptions=True, client=(address, 50000)), case,
                     drop, patience_s)


def _sent(client: Any, case: WebCase, drop: tuple[int, ...], patience_s: float) -> tuple[Any, Path | None, float]:
    refs: list[str] = []
    for call in case.calls[:-1]:
        answer = send(client, call, refs)
        refs.append(answer.json().get("ref", "") if answer.status_code == 200 else "")
    until = time.monotonic() + patience_s
    cpu = time.process_time()
    last = send(client, case.final(drop), refs)
    while last.status_code == 503 and "retry-after" in last.headers and time.monotonic() < until:
        time.sleep(min(float(last.headers["retry-after"]), max(0.0, until - time.monotonic())))
        cpu = time.process_time()
        last = send(client, case.final(drop), refs)
    return last, app().state.uploads.root, time.process_time() - cpu


def judge(case: WebCase, drop: tuple[int, ...], address: str) -> Any:
    """Run the case and class its last answer (:func:`fuzzing.oracle.judge_web`); the uploads' folder must stay
    within the store's caps whatever was sent."""
    import sys
    import traceback

    from gpuplan.web import uploads

    from . import oracle

    try:
        last, root, cpu_s = run(case, drop, address)
    except Exception as e:
        return oracle.Verdict(oracle.TRACEBACK, oracle.cause(e), "".join(traceback.format_exception(e))[-800:])
    src = str(Path(__file__).resolve().parents[2] / "src")
    call = case.final(drop)
    if case.row == PAGES.row:
        return oracle.judge_page(last.status_code, last.content, call.path)
    verdict = oracle.judge_web(last.status_code, last.content, response_model(call.method, call.path),
                               hidden=(str(root) if root else "", src, sys.prefix))
    from gpuplan.web import lanes

    if verdict.klass == oracle.OK and cpu_s > lanes.TIMEOUT_S:  # the page's own deadline, outside wall_deadline()
        return oracle.Verdict(oracle.HANG, "an answer that took more CPU than the page's deadline",
                              f"{cpu_s:.1f} s of CPU; the deadline is {lanes.TIMEOUT_S:g} s")
    if root is not None and root.is_dir():
        files = [p for p in root.rglob("*") if p.is_file()]
        size = sum(p.stat().st_size for p in files)
        if len(files) > uploads.MAX_UPLOADS or size > uploads.MAX_STORED_BYTES:
            return oracle.Verdict(oracle.NONSENSE, "the uploads' folder holds more than its caps",
                                  f"{len(files)} files, {size:,} bytes")
    return verdict
