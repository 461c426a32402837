"""Where gpuplan keeps the user's files: configuration (overrides, discounts) and caches (refreshed prices,
architectures read off transformers).

``GPUPLAN_CONFIG_DIR`` and ``GPUPLAN_CACHE_DIR`` override both (tests point them at temporary folders); otherwise
platformdirs gives the platform's conventional folders (``~/.config/gpuplan``, ``~/.cache/gpuplan`` on Linux).
platformdirs is imported only when a folder is asked for.
"""

from __future__ import annotations

import os
from pathlib import Path


def config_dir() -> Path:
    """The user's configuration folder (``offers.csv``, ``discounts.yaml``)."""
    if os.environ.get("GPUPLAN_CONFIG_DIR"):
        return Path(os.environ["GPUPLAN_CONFIG_DIR"])
    return Path.home() / ".config" / "gpuplan"


def cache_dir() -> Path:
    """The user's cache folder (refreshed offers, cached model structures); created on demand by writers."""
    if os.environ.get("GPUPLAN_CACHE_DIR"):
        return Path(os.environ["GPUPLAN_CACHE_DIR"])
    import platformdirs

    return Path(platformdirs.user_cache_dir("gpuplan", appauthor=False))
