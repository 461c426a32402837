"""Shared fixtures. Tests marked ``sim`` need torch + transformers: on CI (``CI`` set) a missing install is
an error, not a skip, so the oracle tests cannot silently stop running."""

from __future__ import annotations

import importlib
import os

import pytest


def require(module: str):
    """Import ``module`` or skip, except on CI where its absence fails the test."""
    if os.environ.get("CI"):
        return importlib.import_module(module)
    return pytest.importorskip(module)


def pytest_collection_modifyitems(config, items):
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except ImportError:
        has_cuda = False
    for item in items:
        if "gpu" in item.keywords and not has_cuda:
            item.add_marker(pytest.mark.skip(reason="needs a CUDA GPU"))


@pytest.fixture(autouse=True, scope="session")
def _user_cache(tmp_path_factory):
    """Model structures and refreshed catalogs go to a temporary user cache, never the developer's."""
    if not os.environ.get("GPUPLAN_CACHE_DIR"):
        os.environ["GPUPLAN_CACHE_DIR"] = str(tmp_path_factory.mktemp("user-cache"))
