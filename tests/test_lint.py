"""The code base stays ruff-clean (configuration in pyproject.toml)."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_clean():
    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff not installed (it is in the test extra)")
    proc = subprocess.run([ruff, "check", "--output-format", "concise", str(ROOT)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


MAX_FUNCTION_LINES = 80


def function_lengths(folder: Path) -> list[tuple[int, str]]:
    """(lines from the first decorator or ``def`` to the end, ``path:name``) of every function and method in the
    Python files under ``folder``, read with ``ast``."""
    import ast

    out = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                out.append((node.end_lineno - start + 1, f"{path.relative_to(folder)}:{node.name}"))
    return out


def test_no_function_over_80_lines():
    """Functions in src/gpuplan stay under 80 lines (a longer one is two ideas, or a table in code)."""
    lengths = function_lengths(ROOT / "src" / "gpuplan")
    assert len(lengths) > 1000 and max(n for n, _ in lengths) > 40  # the walk saw the package
    long = sorted((n, name) for n, name in lengths if n > MAX_FUNCTION_LINES)
    assert long == [], f"functions over {MAX_FUNCTION_LINES} lines: {long}"
