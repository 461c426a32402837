"""The ``gpuplan`` command line (typer + rich). Bad input prints one red line and exits with code 2.

One module per group of commands; importing them registers their commands on :data:`app`.
"""

from __future__ import annotations

import sys

from ..errors import GpuplanError
from . import check, estimate, market, models, plan, serve  # noqa: F401  (registers the commands)
from .app import app, err


def main() -> None:
    """Entry point: bad input (a :class:`GpuplanError`) prints one red line and exits with code 2;
    usage errors are click's, also exit code 2."""
    try:
        app()
    except GpuplanError as e:
        err.print(f"[red]error:[/] {e}", highlight=False, soft_wrap=True)
        sys.exit(2)
