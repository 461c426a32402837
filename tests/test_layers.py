"""The house's rules, read off the source (docs/design.md, "The house"): no import circle between modules, not even
one closed only by type-only imports (under ``if TYPE_CHECKING:``), by an import of a parent package or by a module
a registry loads by name; no import from a lower layer up to a higher one; no import tucked inside a function to
dodge a circle; and the faces (the command line, the web page) import the Python API, the errors and the result
types, nothing else."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "gpuplan"

# Layers, bottom first (design.md): a module may import its own layer's other rooms only where noted below, and
# any room of a lower layer. The package's __init__ (the Python API) sits above planning, under the interfaces.
LAYERS = [
    ("ground", {"_version", "errors", "overheads", "userdirs", "datafiles"}),  # datafiles: bundled YAML
    ("stored records", {"stored"}),  # the base of the typed records pydantic-core validates from stored schemas
    ("result", {"result"}),  # the answers' shared parts
    ("answer", {"answer"}),  # the base of the answers other than the plan (pydantic models)
    ("user YAML", {"useryaml"}),  # the bounded YAML reader, apart so that PyYAML loads only when a file is read
    ("user files", {"userfiles"}),  # the bounded readers of what a user gives: YAML, JSON, JSON lines, CSV
    ("domain", {"model", "hardware", "clock"}),  # clock: the day answers are made on
    ("data", {"dataset"}),  # the user's dataset: records, tokens, lengths, batching
    ("scenario", {"scenario"}),
    ("tensors", {"tensors"}),
    ("stacks", {"stacks"}),
    ("sharding and engines", {"sharding", "engines"}),
    ("memory", {"memory"}),
    ("speed", {"speed"}),
    ("market", {"market"}),
    ("serving", {"serving"}),
    ("planning", {"plan"}),
    ("owning", {"owning"}),  # owning GPUs: reads Plans (estimate, recommend) and prices ownership
    ("checking and launch files", {"sim", "launchers"}),
    ("explaining", {"explain"}),  # a plan in words for the page: formulas, the catalog grid, exports, the form
    ("api", {"api"}),  # the Python API: a function per question
    ("package face", {"(api)"}),  # gpuplan/__init__.py: the API's names, loaded on first use
    ("web page", {"web"}),
    ("command line", {"cli"}),  # `gpuplan serve` starts the web page
    ("entry point", {"__main__"}),
]
RANK = {room: i for i, (_, rooms) in enumerate(LAYERS) for room in rooms}


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = modules()


def room(module: str) -> str:
    parts = module.split(".")
    return "(api)" if len(parts) == 1 else parts[1]


def _type_only(tree: ast.AST) -> set[int]:
    inside = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            inside |= {id(child) for stmt in node.body for child in ast.walk(stmt)}
    return inside


def _targets(module: str, node: ast.ImportFrom | ast.Import) -> list[str]:
    """The gpuplan modules an import statement names (a submodule named in ``from package import name`` counts
    as that submodule; a name taken from a package, the module's own parents included, counts as that package's
    ``__init__``: ``from .. import __version__`` in a subpackage is an arrow up to the package's face)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = module.split(".") if MODULES[module].name == "__init__.py" else module.split(".")[:-1]
        if node.level:
            base = base[:len(base) - node.level + 1]
            origin = ".".join(base + ([node.module] if node.module else []))
        else:
            origin = node.module or ""
        subs = [f"{origin}.{a.name}" for a in node.names if f"{origin}.{a.name}" in MODULES]
        names = subs + ([origin] if len(subs) < len(node.names) else [])
    return [n for n in names if n in MODULES and n != module]


def _by_name(module: str, tree: ast.AST) -> set[str]:
    """The gpuplan modules a module loads by name (``importlib.import_module``): a registry's homes, which an
    import statement does not show (the package's and the API's ``_HOMES``, the stacks' and the engines'
    ``HOMES``, the command line's ``COMMANDS``). Every text of such a module that names a module of the package,
    relative (``".planning"``, ``"..plan.plan"``) or as a submodule of its own package (``"vllm"`` in
    ``engines/__init__.py``), is an arrow: a profile that imports the registry loading it closes a circle."""
    if not any(isinstance(n, ast.Call) and ast.unparse(n.func).endswith("import_module") for n in ast.walk(tree)):
        return set()
    package = module.split(".") if MODULES[module].name == "__init__.py" else module.split(".")[:-1]
    found = set()
    for node in ast.walk(tree):
        text = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""
        if text and all(part.isidentifier() for part in text.lstrip(".").split(".")):
            dots = len(text) - len(text.lstrip("."))
            name = ".".join(package[:len(package) - max(dots, 1) + 1] + text.lstrip(".").split("."))
            if name in MODULES and name != module:
                found.add(name)
    return found


def imports() -> tuple[dict[str, set[str]], dict[str, set[str]], list[tuple[str, str, int]]]:
    """Module-level edges, type-only edges (under ``if TYPE_CHECKING:``), and the imports inside functions
    (module, target, line: a module loaded by name, :func:`_by_name`, counts as one at line 0)."""
    edges: dict[str, set[str]] = defaultdict(set)
    typed: dict[str, set[str]] = defaultdict(set)
    local = []
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        local += [(module, target, 0) for target in sorted(_by_name(module, tree))]
        type_only = _type_only(tree)
        in_function = {id(child) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                       for child in ast.walk(f)}
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for target in _targets(module, node):
                if id(node) in type_only:
                    typed[module].add(target)
                elif id(node) in in_function:
                    local.append((module, target, node.lineno))
                else:
                    edges[module].add(target)
    return edges, typed, local


class Graph(NamedTuple):
    edges: dict[str, set[str]]  # module-level imports
    typed: dict[str, set[str]]  # under ``if TYPE_CHECKING:``
    local: list[tuple[str, str, int]]  # inside functions, and modules loaded by name (line 0)
    every: dict[str, set[str]]  # every arrow that names a module, run or not: a circle closed by a type-only
    # import is a circle of the design


@pytest.fixture(scope="module")
def graph() -> Graph:
    """The import graph (:func:`imports`), read once by the worker that runs this module's tests: read at import,
    every worker of a run parsed the whole package while collecting (4 CPU-s each, before any test ran)."""
    edges, typed, local = imports()
    every = {m: edges.get(m, set()) | typed.get(m, set()) | {b for a, b, _ in local if a == m} for m in MODULES}
    return Graph(edges, typed, local, every)


def reaches(start: str, goal: str, edges: dict[str, set[str]]) -> bool:
    seen, todo = set(), [start]
    while todo:
        here = todo.pop()
        if here == goal:
            return True
        if here not in seen:
            seen.add(here)
            todo.extend(edges.get(here, ()))
    return False


def test_every_room_has_a_layer():
    assert len(MODULES) > 100
    assert {room(m) for m in MODULES} <= set(RANK), {room(m) for m in MODULES} - set(RANK)


def test_no_import_circles(graph):
    circles = [(a, b) for a in graph.edges for b in graph.edges[a] if reaches(b, a, graph.edges)]
    assert len(graph.edges) > 100
    assert circles == [], f"modules that import each other, directly or through others: {circles[:10]}"


def test_no_circles_of_any_kind(graph):
    """Counting type-only imports and imports inside functions too, and imports of a module's own parent packages
    (the market/sources plugins took their contract from the package that imports them)."""
    assert graph.typed and graph.local  # the walk sees both kinds
    circles = sorted((a, b) for a in graph.every for b in graph.every[a] if reaches(b, a, graph.every))
    assert circles == [], f"modules that name each other, directly or through others: {circles[:10]}"



def test_modules_loaded_by_name_are_arrows(graph):
    """A registry's homes are arrows (:func:`_by_name`), so that a module it loads cannot import it back unseen: the
    engines' speculative draft once asked the registry for its engine's profile (``from . import engine_for``)
    while the registry loaded SGLang's profile, which imports it; the command line's table of commands sat in
    ``cli/app.py``, which every command imports."""
    by_name = {(a, b) for a, b, line in graph.local if line == 0}
    assert {("gpuplan.engines", "gpuplan.engines.sglang"), ("gpuplan.stacks", "gpuplan.stacks.megatron"),
            ("gpuplan.cli.commands", "gpuplan.cli.estimate"), ("gpuplan.api", "gpuplan.api.planning"),
            ("gpuplan.api", "gpuplan.plan.plan"), ("gpuplan", "gpuplan.api")} <= by_name
    assert reaches("gpuplan.engines", "gpuplan.engines.speculative", graph.every)  # through SGLang's profile
    assert not reaches("gpuplan.engines.speculative", "gpuplan.engines", graph.every)

def test_no_upward_imports(graph):
    upward = []
    for a, targets in graph.every.items():
        for b in targets:
            ra, rb = RANK[room(a)], RANK[room(b)]
            if rb > ra or (rb == ra and room(a) != room(b)):
                upward.append(f"{a} -> {b}")
    assert upward == [], "imports from a lower layer up to a higher one, or across one layer's rooms: " + \
        ", ".join(upward)


def test_function_level_imports_dodge_nothing(graph):
    """An import inside a function is for load time (torch, numpy, the CLI's commands loading what they use);
    one that would close a circle at module level, or reach upward, is a design problem in hiding."""
    dodges = [f"{a}:{line} -> {b}" for a, b, line in graph.local if reaches(b, a, graph.edges)]
    upward = [f"{a}:{line} -> {b}" for a, b, line in graph.local
              if RANK[room(b)] > RANK[room(a)] or (RANK[room(b)] == RANK[room(a)] and room(a) != room(b))]
    assert graph.local, "the walk found no function-level import at all: it is not reading the source"
    assert dodges == [], "function-level imports that would close a circle: " + ", ".join(dodges)
    assert upward == [], "function-level imports reaching up a layer: " + ", ".join(upward)


def test_the_root_holds_only_the_ground_floor():
    """The package root holds the ground floor, the readers of user files and the domain's nouns; every other
    module is in its layer's folder."""
    root = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__", "__main__"}
    assert root == {"_version", "errors", "overheads", "userdirs", "result", "answer", "datafiles", "stored",
                    "useryaml", "userfiles", "clock", "hardware"}, root


FACES = {"cli", "web"}
# what a face may import of the package: the Python API (its functions and the types of their answers), the errors,
# the result types, the version, the checked readers and writers of what a user names (userfiles: an output path
# checked before any work, a file written whole); the command line also starts the web page (``gpuplan serve``)
FACE_MAY = {"gpuplan.api", "gpuplan.errors", "gpuplan.result", "gpuplan._version", "gpuplan.userfiles"}


def test_faces_import_only_the_api(graph):
    reached = [f"{a} -> {b}" for a, targets in graph.every.items() if room(a) in FACES for b in targets
               if b not in FACE_MAY and room(b) != room(a) and not (room(a) == "cli" and room(b) == "web")]
    assert any(room(a) in FACES for a in graph.every)
    assert reached == [], "faces reaching past the Python API: " + ", ".join(reached)


def test_every_command_has_an_api_function():
    """Each command of the command line calls a function of the Python API (``gpuplan serve`` starts the page)."""
    import re

    import gpuplan.api

    commands = {}
    for path in (PACKAGE / "cli").glob("*.py"):
        text = path.read_text(encoding="utf-8")
        for name in re.findall(r'(?:app\.command|scenario_command)\(\s*"([a-z-]+)"', text):
            commands[name] = text
    called = {name for name in dir(gpuplan.api) if not name.startswith("_")}
    assert len(commands) >= 15, sorted(commands)
    missing = [c for c, text in commands.items() if c != "serve" and not set(re.findall(r"api\.(\w+)\(", text))
               & called]
    assert missing == [], f"commands with no API call: {missing}"


def test_the_version_is_the_projects():
    import tomllib

    from gpuplan._version import __version__

    project = tomllib.loads((PACKAGE.parents[1] / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert __version__ == project["version"]
