"""``gpuplan serve``: the calculator page and JSON API on a local port."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.text import Text

from ..errors import GpuplanError, echo
from .app import app
from .render import err, out

LOCAL = ("127.0.0.1", "localhost", "::1")
CONNECTIONS = 256  # connections and requests at once; beyond them uvicorn answers 503 (the work itself: web/lanes.py)


@app.command("serve")
def serve_cmd(
    host: Annotated[str, typer.Option(help="Address to bind. Anything but 127.0.0.1 exposes the page to your "
                                      "network (there is no login).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.", min=1, max=65535)] = 8000,
    open_browser: Annotated[bool, typer.Option("--open", help="Open the page in a web browser.")] = False,
    hub: Annotated[bool, typer.Option("--hub", help="Resolve Hugging Face repo ids the page is given (fetches "
                                      "their config.json only; no code from a repo is ever run).")] = False,
) -> None:
    """A local web page to size a job as you type: the verdict and the memory as a bar against the card, the
    fixes, speed and cost, the ranked setups with their cost-vs-speed front, the fit on every card, every
    number as its formula, a permalink and exports (scenario.yaml, the command, Markdown). The JSON API is at
    /api (POST /api/estimate, /api/recommend; GET /api/models, /api/gpus) with its docs at /docs. Each request
    has 10 s; uploaded files (16 MiB each, 16 files and 64 MiB kept) live in one temporary folder removed when the
    server stops. What it reads, writes and refuses: docs/security.md.

    Examples:

    \b
      gpuplan serve --open
      gpuplan serve --port 9000 --hub
    """
    try:
        import uvicorn

        from ..web.app import create_app
        from ..web.connections import TimedHeads
    except ImportError as e:
        raise GpuplanError(f"gpuplan serve needs the web extra ({e.name} is missing): pip install 'gpuplan[web]'") \
            from None
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host  # [::1] as URLs write it
    listenable(host, port)
    if host not in LOCAL:
        err.print(Text("warning:", style="yellow") + f" binding {host} exposes gpuplan to your network: anyone who "
                  f"reaches port {port} can use it (there is no login); bind 127.0.0.1 to keep it on this machine",
                  highlight=False, soft_wrap=True)
    # the address this machine reaches the page at: "::" listens on IPv6 only (asyncio sets IPV6_V6ONLY)
    shown = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    url = f"http://{'[' + shown + ']' if ':' in shown else shown}:{port}/"
    out.print(f"gpuplan serving {url} (API docs: {url}docs); Ctrl+C stops it", highlight=False)
    if open_browser:
        import threading
        import webbrowser

        threading.Timer(1.0, webbrowser.open, args=(url,)).start()
    uvicorn.run(create_app(hub=hub, host=host), host=host, port=port, log_level="warning",
                timeout_graceful_shutdown=2, limit_concurrency=CONNECTIONS, http=TimedHeads)


def listenable(host: str, port: int) -> None:
    """One sentence unless this machine can listen on ``host:port`` now (checked as uvicorn binds: the first
    address ``host`` resolves to, ``SO_REUSEADDR``): a port in use or privileged, an address not of this machine,
    a name that does not resolve; uvicorn itself would print its own error and exit 3 after "serving" was said."""
    import socket

    if not host.strip():
        raise GpuplanError("--host is blank: give the address to listen on (127.0.0.1 keeps the page on this "
                           "machine, 0.0.0.0 opens it to your network)")
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port,
                                                             type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except (OSError, UnicodeError) as e:
        raise GpuplanError(f"--host {echo(host)} is not an address this machine can listen on "
                           f"({getattr(e, 'strerror', None) or e})") from None
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as e:
            raise GpuplanError(f"cannot listen on {echo(host)} port {port}: {e.strerror or e}; choose another "
                               "--port (or --host)") from None
