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


def test_no_merge_conflict_markers_in_tracked_files():
    """A merge's conflict left in a committed file (session 20: docs/serve.md carried both sides of the spot example
    under ``<<<<<<<`` and ``>>>>>>>`` markers for an hour, and the page rendered them). Every tracked text file is
    read; a line that starts a conflict marker fails."""
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if files.returncode != 0:
        pytest.skip("not a git checkout")
    found = []
    for name in files.stdout.splitlines():
        path = ROOT / name
        if not path.is_file() or path.suffix in (".png", ".parquet", ".gguf", ".safetensors"):
            continue
        text = path.read_bytes()
        if b"\0" in text[:4096]:
            continue
        found += [f"{name}:{i}" for i, line in enumerate(text.decode("utf-8", "replace").splitlines(), 1)
                  if line.startswith(("<<<<<<< ", ">>>>>>> ")) or line == "======="]
    assert not found, found
