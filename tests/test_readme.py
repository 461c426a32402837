"""The README and the documentation pages stay true: every command in their ```bash blocks runs, their ```python
blocks run and print what their comments say, and every output they quote between ``<!-- output of: CMD -->`` and
``<!-- end of output -->`` is what CMD prints today. A fenced block's language is its mark: ``bash`` and ``python``
blocks are runnable examples and run here; ``text`` (or ``console``) blocks are shown only.

The pages are README.md, every ``docs/*.md`` and the accuracy tables ``docs/accuracy.md`` includes
(``src/gpuplan/data/accuracy.md``, shipped with the package: the web page quotes them). Commands are found by parsing
the pages, so a command added to one later is tested without touching this file.
A command that cannot run here (the network, a GPU, hours of CPU) must match an entry of :data:`NOT_RUN`, with
the reason; any other command that is not ``gpuplan ...`` fails the test, so that nothing is skipped silently.
``gpuplan`` commands run in process (:func:`gpuplan.cli.run`) from a folder that holds the repository's
``examples/``, so files they write (``--plot memory.png``) land in a temporary folder.

``python tests/test_readme.py`` rewrites the quoted outputs from the current code.
"""

from __future__ import annotations

import ast
import contextlib
import io
import re
import shlex
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md")), ROOT / "src" / "gpuplan" / "data" / "accuracy.md"]

# command prefix -> why it does not run in the test suite
NOT_RUN = {
    "pip install": "installs packages from the network; CI runs exactly this before the tests (.ci/run)",
    "pytest": "the test suite itself",
    "gpuplan probe": "needs a CUDA GPU (its own test is marked gpu)",
    "gpuplan calibrate probes/": "reads the records gpuplan probe writes on a GPU",
    "gpuplan serve": "starts a web server and waits for requests",
    "python bench/": "a benchmark: a minute or more of CPU, run by hand; its table is quoted below it",
    "cd ": "a shell step into the folder the command before it wrote",
    "sky ": "SkyPilot rents cloud GPUs: it needs credentials and the network",
    "gpuplan prices update": "imports a price catalog downloaded from the network (SkyPilot's vms.csv, gpuhunt)",
}
OUTPUT = re.compile(r"<!-- output of: (?P<cmd>.+?) -->\n(?P<body>.*?)\n<!-- end of output -->", re.S)


def blocks(language: str) -> list[str]:
    return [block for page in PAGES for block in re.findall(rf"```{language}\n(.*?)```",
                                                            page.read_text(encoding="utf-8"), re.S)]


def commands() -> list[str]:
    """Every command of the README's bash blocks: continuation lines joined, ``&&`` chains split, comments and
    leading ``VAR=value`` settings dropped."""
    out: list[str] = []
    for block in blocks("bash"):
        for line in block.replace("\\\n", " ").splitlines():
            for part in line.split("&&"):
                words = shlex.split(part, comments=True)
                while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
                    words = words[1:]
                if words:
                    out.append(shlex.join(words))
    return out


def reason_not_run(command: str) -> str | None:
    plain = " ".join(shlex.split(command))  # unquoted, as the README shows it
    return next((why for prefix, why in NOT_RUN.items() if plain.startswith(prefix)), None)


def run_cli(args: list[str]) -> tuple[int, str, str]:
    from gpuplan.cli import run

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run(args)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def in_a_folder_with_examples(tmp_path, monkeypatch):
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # bundled models only: the README promises offline answers
    return tmp_path


def _params():
    """One case per distinct command: the README and the pages quote some commands twice (``gpuplan buy ...`` in
    README.md and docs/buy-or-rent.md), and the same command in the same folder is the same test."""
    params = []
    for command in dict.fromkeys(commands()):
        marks = []
        if " simulate " in f" {command} ":
            marks = [pytest.mark.sim, pytest.mark.slow]
        params.append(pytest.param(command, id=command[:90], marks=marks))
    return params


@pytest.mark.parametrize("command", _params())
def test_every_readme_command_runs(command, in_a_folder_with_examples):
    why = reason_not_run(command)
    if why is not None:
        return  # listed in NOT_RUN with its reason
    words = shlex.split(command)
    assert words[0] == "gpuplan", (f"the README shows {command!r}, which this test cannot run: make it a gpuplan "
                                   "command, or add its prefix to NOT_RUN with the reason")
    if words[1] == "simulate":
        from conftest import require

        require("transformers")
    code, out, err = run_cli(words[1:])
    allowed = (0, 3) if "--check" in words else (0,)
    assert code in allowed, f"{command} exited {code}: {err.strip()[-400:]}"
    assert out.strip(), f"{command} printed nothing"
    assert "Traceback" not in out + err and "error:" not in err


def test_the_readme_lists_every_command_it_cannot_run():
    cannot = [c for c in commands() if reason_not_run(c)]
    assert cannot, "the README shows install and GPU commands; NOT_RUN should match them"
    for prefix in NOT_RUN:  # an entry no README command uses any more is stale
        assert any(" ".join(shlex.split(c)).startswith(prefix) for c in commands()), \
            f"NOT_RUN entry {prefix!r} matches nothing"


@pytest.mark.parametrize("command, quoted", [(m["cmd"], m["body"]) for page in PAGES for m in OUTPUT.finditer(
    page.read_text(encoding="utf-8"))], ids=lambda x: x[:60] if isinstance(x, str) and x.startswith("gpuplan") else
    "output")
def test_quoted_outputs_are_what_the_commands_print(command, quoted, in_a_folder_with_examples):
    code, out, err = run_cli(shlex.split(command)[1:])
    assert code == 0, err
    assert out.rstrip() == quoted.rstrip(), (f"the README quotes an older output of `{command}`: run "
                                             "`python tests/test_readme.py` to rewrite it, and read the diff")


def test_the_python_block_prints_what_its_comments_say():
    """Each ``expression  # value`` line of the README's Python block evaluates to the value written."""
    for block in blocks("python"):
        namespace: dict = {}
        for line in block.splitlines():
            code, _, comment = line.partition("  #")
            if not code.strip():
                continue
            try:
                expected = ast.literal_eval(comment.strip()) if comment.strip() else None
            except (ValueError, SyntaxError):
                expected = None
            try:
                compile(code, "<README>", "eval")
            except SyntaxError:
                exec(code, namespace)  # a statement
                continue
            value = eval(code, namespace)
            if expected is not None:
                assert value == expected, f"README: {code.strip()} is {value!r}, the comment says {expected!r}"


def rewrite() -> None:
    """Replace every quoted output of the pages with what its command prints now."""

    def fresh(match: re.Match) -> str:
        code, out, err = run_cli(shlex.split(match["cmd"])[1:])
        if code:
            raise SystemExit(f"{match['cmd']} failed: {err}")
        return f"<!-- output of: {match['cmd']} -->\n{out.rstrip()}\n<!-- end of output -->"

    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        if OUTPUT.search(text):
            page.write_text(OUTPUT.sub(fresh, text), encoding="utf-8")
            print(f"rewrote the quoted outputs of {page.relative_to(ROOT)}")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    rewrite()
