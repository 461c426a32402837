"""Every example a command's help shows is read by that command (the session-31 walk ran all of them: `capacity
--help`'s spot example, `--rate 20 --ttft 1 --tpot 0.05 --pricing spot --mtbi-hours 2`, gave no lengths and was
refused with "say how long requests are"). Each example's words are parsed by its command's options, and
`capacity`'s build their workload up to the search (which is what the other tests time)."""

import shlex

import pytest

from conftest import cli_in_process


def _examples() -> list[tuple[list[str], list[str]]]:
    import click
    import typer

    from gpuplan.cli import app

    def walk(cmd, path):
        yield path, cmd
        for name, sub in getattr(cmd, "commands", {}).items():
            yield from walk(sub, [*path, name])

    out = []
    for path, cmd in walk(typer.main.get_command(app), []):
        with click.Context(cmd, info_name="gpuplan", terminal_width=200) as ctx:
            text = cmd.get_help(ctx)
        for line in text.split("Examples:", 1)[1].splitlines() if "Examples:" in text else []:
            line = line.split("  #", 1)[0].split("&&", 1)[0].strip()
            if line.startswith("gpuplan "):
                out.append((path, shlex.split(line)[1:]))
    return out


def test_every_help_example_parses_with_its_command_s_options():
    import typer

    from gpuplan.cli import app

    root = typer.main.get_command(app)
    examples = _examples()
    assert len(examples) >= 40
    for path, words in examples:
        cmd = root
        for name in path:
            cmd = cmd.get_command(None, name) if hasattr(cmd, "get_command") else cmd.commands[name]
        assert words[: len(path)] == path, words
        cmd.make_context(" ".join(["gpuplan", *path]), words[len(path):])  # raises on an unknown option or value


@pytest.mark.parametrize("words", [w for p, w in _examples() if p == ["capacity"]])
def test_every_capacity_example_reaches_its_search(words, monkeypatch):
    from gpuplan.errors import GpuplanError
    from gpuplan.plan import capacity as cap

    def reached(*args, **kwargs):
        raise GpuplanError("reached the search")

    monkeypatch.setattr(cap, "capacity", reached)
    r = cli_in_process(*words, cwd=__import__("pathlib").Path(__file__).resolve().parents[2])
    assert (r.returncode, r.stderr.strip()) == (2, "error: reached the search"), words
