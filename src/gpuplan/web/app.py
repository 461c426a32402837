"""The application: the page, the README it links to, the API, the offline API docs, and the error replies.

Bad input of any kind answers 422 with ``{"detail": sentence}``, the sentence the CLI prints after "error:";
an oversized body or file 413; a body or file too slow to arrive 408; too many uploads from one address 429; a
request past its deadline, or a server too busy to start it, 503 (:mod:`.lanes`). A dataset the page uploads
(``/api/upload``, :mod:`.uploads`) is read by the CLI's own reader. The uploads' folder and the reader process
go when the server stops (the app's lifespan: uvicorn runs it on SIGINT and SIGTERM). The page and its scripts
are files of this package: nothing is fetched from elsewhere at run time (``/docs`` serves Swagger UI from the
``fastapi-offline`` package).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline

from .. import api as gpuplan_api
from .._version import __version__
from ..errors import GpuplanError, did_you_mean
from . import api
from .guard import BoundedBody, LocalHosts
from .lanes import Pools
from .uploads import Store

STATIC = Path(str(resources.files("gpuplan") / "web" / "static"))
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
PAGE_HEADERS = {"Content-Security-Policy": "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' "
                "data:; connect-src 'self'; frame-ancestors 'none'", "X-Content-Type-Options": "nosniff",
                "Referrer-Policy": "no-referrer"}


def create_app(*, hub: bool = False, host: str = "127.0.0.1") -> FastAPI:
    """The gpuplan web app. ``hub``: resolve Hugging Face repo ids (their config.json only); ``host``: the
    address the server binds, which Host headers must name (a DNS-rebinding guard) unless it is a wildcard."""
    uploads, pools = Store(), Pools()

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:  # on SIGINT and SIGTERM too: uvicorn shuts the app down before it lets the signal end the process
            pools.close()
            uploads.close()

    app = FastAPIOffline(
        title="gpuplan", version=__version__, redoc_url=None, lifespan=lifespan,
        description="Which GPUs an LLM job needs and what it will cost. Each endpoint takes and returns what the "
                    "Python API and `--json` do. Bad input: 422 with one sentence in `detail`.")
    app.state.hub, app.state.uploads, app.state.pools = hub, uploads, pools
    app.include_router(api.router)
    app.openapi = lambda: _with_scenario(app)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.add_exception_handler(GpuplanError, _bad_input)
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_middleware(BoundedBody)
    if host not in ("0.0.0.0", "::", ""):
        app.add_middleware(LocalHosts, hosts=(*LOCAL_HOSTS, host.strip("[]")))

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers=PAGE_HEADERS)

    @app.get("/readme", include_in_schema=False)
    async def readme(request: Request) -> HTMLResponse:
        return _document("README", await api.in_thread(request, gpuplan_api.readme_html))

    @app.get("/accuracy", include_in_schema=False)
    async def accuracy(request: Request) -> HTMLResponse:
        return _document("accuracy", await api.in_thread(request, gpuplan_api.accuracy_html))

    return app


def _document(title: str, body: str) -> HTMLResponse:
    """A Markdown document the server renders (the README, the accuracy tables) as a page of its own."""
    return HTMLResponse(f"<!doctype html><html lang=en><head><meta charset=utf-8><title>gpuplan {title}</title>"
                        "<link rel=stylesheet href=/static/style.css></head><body class=readme><main>"
                        f"<p><a href=/>back to the calculator</a></p>{body}</main></body></html>",
                        headers=PAGE_HEADERS)


async def _bad_input(request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse({"detail": request.app.state.uploads.hide(str(exc))}, status_code=422)


async def _invalid_request(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    body = getattr(getattr(request.scope.get("route"), "body_field", None), "field_info", None)
    fields = getattr(getattr(body, "annotation", None), "model_fields", {})
    return JSONResponse({"detail": validation_sentence(exc, tuple(fields))}, status_code=422)


def validation_sentence(exc: RequestValidationError, fields: tuple[str, ...] = ()) -> str:
    """One sentence for a request FastAPI could not validate (a scenario is validated by its job, :mod:`.api`);
    ``fields``: the body's own, for a "did you mean" beside an unknown one (the CLI's --ttft is ``ttft_s`` here)."""
    errors = exc.errors()
    first = errors[0]
    loc = [str(p) for p in first.get("loc", ())]
    if loc[:1] == ["body"] and (exc.body is None or (first.get("type") == "missing" and len(loc) == 1)):
        return "the request has no JSON body: send a scenario such as {\"model\": \"llama-3.1-8b\", \"task\": " \
               "\"train\"}"
    field = ".".join(loc[1:]) or loc[0] if loc else "request"
    msg = first["msg"].removeprefix("Value error, ")
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    if first.get("type") == "extra_forbidden":
        unknown = [".".join(str(p) for p in e.get("loc", ())[1:]) for e in errors if e.get("type") == "extra_forbidden"]
        close = [c for name in unknown for c in did_you_mean(name, fields, n=1)]
        hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
        others = f" (and {len(errors) - len(unknown)} more)" if len(errors) > len(unknown) else ""
        return f"unknown field{'s' * (len(unknown) > 1)} {', '.join(map(repr, unknown))}{hint}{others}"
    if first.get("type") == "missing":
        return f"field {field!r} is required{more}"
    return f"field {field!r}: {msg} (got {repr(first.get('input'))[:100]}){more}"


def _with_scenario(app: FastAPI) -> dict:
    """The OpenAPI document with the scenario every POST takes named as its body: the route reads it unvalidated
    (api.RawScenario, checked by gpuplan.api's own arguments), so FastAPI would document an empty object."""
    if app.openapi_schema:
        return app.openapi_schema
    schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
    scenario = gpuplan_api.Scenario.model_json_schema(ref_template="#/components/schemas/{model}")
    schemas = schema.setdefault("components", {}).setdefault("schemas", {})
    schemas.update(scenario.pop("$defs", {}))
    schemas["Scenario"] = scenario
    body = schema["paths"]["/api/estimate"]["post"].get("requestBody", {}).get("content", {}).get("application/json")
    if body is not None:
        body["schema"] = {"$ref": "#/components/schemas/Scenario"}
    app.openapi_schema = schema
    return schema
