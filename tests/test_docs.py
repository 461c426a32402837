"""The documentation site builds without a warning (``mkdocs build --strict``: every page in the navigation, every
link and anchor found, the included accuracy tables there), and the README points at every page; the documents the
code cites (docs/design.md, docs/formulas.md) hold every section the code, the tests and the bench cite by name or
number. The pages' examples run in tests/test_readme.py. The build is skipped only where MkDocs is not installed
(the ``docs`` extra, which ``all`` holds: the README's test command installs it)."""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from conftest import require

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def nav_pages() -> list[str]:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    return [page for item in config["nav"] for page in item.values()]


def test_the_site_builds_strictly(tmp_path):
    require("mkdocs")
    require("material")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "WARNING" not in done.stderr, done.stderr[-3000:]
    for page in nav_pages():
        built = tmp_path / "site" / ("index.html" if page == "index.md" else f"{page[:-3]}/index.html")
        assert built.is_file(), page
    accuracy = (tmp_path / "site" / "accuracy" / "index.html").read_text(encoding="utf-8")
    assert "Accuracy against published measurements" in accuracy and "median abs %" in accuracy  # the snippet


def test_every_page_is_in_the_navigation_and_the_readme():
    pages = sorted(p.name for p in DOCS.glob("*.md"))
    assert len(pages) >= 11
    assert sorted(nav_pages()) == pages
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(docs/([\w-]+\.md)\)", readme))
    # the accuracy page is the shipped tables it includes: the README links that file, which GitHub renders
    assert linked == set(pages) - {"index.md", "accuracy.md"}
    assert "](src/gpuplan/data/accuracy.md)" in readme


def _sources() -> list[tuple[Path, str]]:
    return [(p, p.read_text(encoding="utf-8")) for folder in ("src", "tests", "bench")
            for p in (ROOT / folder).rglob("*.py")]


def test_every_cited_design_section_is_there():
    headings = {m.group(1).strip() for m in re.finditer(r"^## (.+)$", (DOCS / "design.md").read_text(), re.M)}
    cited = {(str(p.relative_to(ROOT)), " ".join(m.group(1).split())) for p, text in _sources()
             if p.name != "test_docs.py"
             for m in re.finditer(r"design\.md[,:]?\s*[\"'“]([^\"'”]{1,60})[\"'”]", text)}
    assert len(cited) >= 5  # the code cites it: stacks, sharding, engines, result, the layers test
    missing = sorted((name, section) for name, section in cited if section.strip() not in headings)
    assert missing == [], f"sections cited but not in docs/design.md: {missing}"


def test_every_cited_formulas_section_is_there():
    numbers = {int(m.group(1)) for m in re.finditer(r"^## (\d+)\. ", (DOCS / "formulas.md").read_text(), re.M)}
    cited = {(str(p.relative_to(ROOT)), int(m.group(1))) for p, text in _sources()
             for m in re.finditer(r"formulas\.md section (\d+)", text)}
    assert len(cited) >= 4
    missing = sorted((name, n) for name, n in cited if n not in numbers)
    assert missing == [], f"sections cited but not in docs/formulas.md: {missing}"


def _layout_rows() -> list[tuple[str, list[str], str]]:
    """The README's drawing of the house (the block under "## Layout"): (indent, the rooms a row names, its words)
    for each row, a row's continuation lines joined to its words."""
    text = (ROOT / "README.md").read_text(encoding="utf-8").split("## Layout", 1)[1]
    block = text.split("```", 2)[1]
    rows: list[tuple[str, list[str], str]] = []
    for line in block.splitlines():
        head = re.match(r"( ?( {2})?)(\S.*?)(\s{3,}|$)(.*)", line)
        if not line.strip():
            continue
        if line.startswith(" " * 17) and rows:  # a continuation of the row above
            rows[-1] = (rows[-1][0], rows[-1][1], rows[-1][2] + " " + line.strip())
            continue
        rows.append((head.group(1), head.group(3).split(), head.group(5)))
    return rows


def test_the_readme_draws_the_house_as_it_is():
    """Every room the README's layout names exists, every room of the layers (tests/test_layers.py) is drawn, the
    rooms go from the top floor down as the layers rank them, and every file a row's words name is in its room
    (the package's root, or data/ beside it)."""
    from test_layers import RANK

    package = ROOT / "src" / "gpuplan"
    rows = _layout_rows()
    inside = [(rooms, words) for indent, rooms, words in rows if indent]
    assert len(inside) >= 20
    drawn: list[set[int]] = []
    for rooms, words in inside:
        for name in rooms:
            assert (package / name).exists(), f"README names src/gpuplan/{name}, which is not there"
        drawn.append({RANK["(api)" if n == "__init__.py" else n.rstrip("/").removesuffix(".py")] for n in rooms})
        homes = [package / n.rstrip("/") for n in rooms if n.endswith("/")] + [package, package / "data"]
        for named in set(re.findall(r"[\w/]+\.(?:py|md|yaml|json)\b", words)) - {"config.json"}:  # (a model's)
            assert any((home / named).exists() for home in homes), f"{rooms}: {named} is not in its room"
    assert all(min(a) >= max(b) for a, b in itertools.pairwise(drawn)), "rows out of the layers' order"
    every = " ".join(" ".join(rooms) + " " + words for rooms, words in inside)
    missing = [r for r in RANK if r not in ("(api)", "__main__") and not re.search(rf"\b{r}(/|\.py)", every)]
    assert missing == [], f"rooms of the layers the README does not draw: {missing}"
    for indent, rooms, _ in rows:
        if not indent and rooms[0] != "src/gpuplan/":
            assert (ROOT / rooms[0]).exists(), rooms[0]


# the rooms whose rows in the README's layout list their modules one by one (the others say what they hold in
# words: one module per command, engine, stack file or target); base.py holds a room's profile class
LISTED_ROOMS = ("plan/", "serving/", "market/", "speed/", "memory/", "stacks/", "tensors/", "scenario/", "dataset/",
                "owning/", "sim/", "explain/")


def test_the_readme_s_listing_rooms_name_every_module():
    """A room whose layout row lists its modules names each of them, so a module moved or added shows in the
    drawing (session 19's market/owned_power.py, stacks/releases.py and scenario/diffusion_stacks.py were missing,
    and the market row still said electricity; session 20's docs audit added explain/, whose row left out megatron,
    module_memory and module_speed)."""
    package = ROOT / "src" / "gpuplan"
    rows = {room: " ".join(rooms) + " " + words for indent, rooms, words in _layout_rows() if indent
            for room in rooms}
    missing = [f"{room}{module.stem}" for room in LISTED_ROOMS for module in sorted((package / room).glob("*.py"))
               if module.stem not in ("__init__", "base") and not re.search(rf"\b{module.stem}\b", rows[room])]
    assert missing == [], f"modules the README's layout leaves out of their room's row: {missing}"


def _page(name: str) -> str:
    """A docs page with its lines joined, so a quoted figure may wrap."""
    return " ".join((DOCS / name).read_text(encoding="utf-8").split())


def test_the_serving_page_s_llama_cpp_table_is_the_bench_s():
    """docs/serve.md's table of llama.cpp and MLX accuracy (backend | test | rows | median) quotes
    bench/results/llama_bench.md's check rows, and the CUDA generation row's cards (#15013's A100, H100, RTX 5090) and
    range are the bench's: session 19's programmatic dependent launch moved the median 13.2 -> 13.1 % and the H100
    +21 -> +40 %."""
    bench = (ROOT / "bench" / "results" / "llama_bench.md").read_text(encoding="utf-8")
    check = {(backend, test): (int(n), med, hi, lo) for backend, test, n, med, hi, lo in re.findall(
        r"^\| (cuda|metal|mlx) (pp|tg) check \| (\d+) \| ([\d.]+)% \| ([+-]\d+)% \| ([+-]\d+)% \|$", bench, re.M)}
    page = (DOCS / "serve.md").read_text(encoding="utf-8")
    backends = {"CUDA": "cuda", "Metal": "metal", "MLX (mlx-lm)": "mlx"}
    said = {(backends[b], "pp" if test.startswith("prompt") else "tg"): (int(n), med) for b, test, n, med in re.findall(
        r"^\| (CUDA|Metal|MLX \(mlx-lm\)) \| (prompt|generation)[^|]* \| (\d+) \| ([\d.]+) % ", page, re.M)}
    assert said == {k: v[:2] for k, v in check.items()}
    rows = {card: sign + pct for card, sign, pct in re.findall(
        r"^\| d15013-(a100|h100|rtx5090)-tg \|.*\| ([+-])(\d+)% \|$", bench, re.M)}
    n, med, hi, lo = check["cuda", "tg"]
    assert (f"| {n} | {med} % (12.7 % at 60 us a layer, was 26 %; A100 {rows['a100']} %, H100 {rows['h100']} %, "
            f"RTX 5090 {rows['rtx5090']} %; 2025-2026 builds and hosts {lo} % to {hi} %;") in page


def test_the_serving_page_quotes_the_capacity_bench():
    """docs/serve.md's capacity sentence (the saturated runs' median, signed median and worst; the runs below the
    knee none of which capacity refuses) is bench/results/capacity_accuracy.md's; held by nothing until session 19's
    docs audit (the page had kept 'worst +60 %' after the file said +53 %)."""
    bench = (ROOT / "bench" / "results" / "capacity_accuracy.md").read_text(encoding="utf-8")
    n, med, signed, worst = re.search(
        r"saturated runs \(highest throughput, no latency target\): n=(\d+), median abs error ([\d.]+)%, median signed "
        r"([+-][\d.]+)%, worst ([+-][\d.]+)%", bench).groups()
    below, refused = re.search(r"runs below the knee .*: n=(\d+), capacity allows less than the run served in (\d+) ",
                               bench).groups()
    page = _page("serve.md")
    assert (f"on the {n} saturated runs the highest steady throughput capacity allows is within {med} % of the "
            f"measured one (median; {signed} % signed; worst {round(float(worst)):+d} %,") in page
    assert refused == "0" and f"on the {below} runs below the knee" in page
    assert "it refuses no rate the server met" in page


def test_the_formulas_page_s_session_19_terms_are_the_code_s():
    """docs/formulas.md's figures for session 19's terms recompute from the code's constants and formulas: the
    llama.cpp kernel cost under programmatic dependent launch (2.55 - 0.59 = 1.96 us, 0.59 from PR #22522's
    332.05 -> 376.31 tokens/s over 600 kernels), torchtune's fp32 norm output (64 MiB a layer at 8,192 x 2,048) and
    Unsloth's repeated keys and values (12 KiB a token for Llama 3.1 8B), and the GPUStack burst of section 13."""
    from gpuplan import overheads as oh
    from gpuplan.tensors.activations import ActivationSetup

    page = _page("formulas.md")
    saved_us = (1 / 332.05 - 1 / 376.31) / 600 * 1e6
    assert round(saved_us, 2) == round(oh.LLAMA_CPP_CUDA_PDL_SAVING_S * 1e6, 2) == 0.59
    assert f"b{oh.LLAMA_CPP_CUDA_PDL_BUILD}, `c_k` = " \
           f"{(oh.LLAMA_CPP_CUDA_KERNEL_S - oh.LLAMA_CPP_CUDA_PDL_SAVING_S) * 1e6:.2f} us" in page
    assert f"`c_k` = {oh.LLAMA_CPP_CUDA_KERNEL_S * 1e6:.2f} us fitted" in page
    assert f"(`LLAMA_CPP_CUDA_DECODE_BANDWIDTH_FRACTION`, {oh.LLAMA_CPP_CUDA_DECODE_BANDWIDTH_FRACTION:.2f})" in page
    assert {"norm_out_bytes", "kv_expanded"} <= set(ActivationSetup.__dataclass_fields__)
    # two norms, fp32 (4 B) in place of bf16 (2 B), T = 8,192 tokens, h = 2,048
    assert 2 * (4 - 2) * 8192 * 2048 == 64 * 2**20 and "64 MiB a layer of two norms" in page
    # keys and values, 2 bytes, 32 - 8 more heads of 128
    assert 2 * 2 * (32 - 8) * 128 == 12 * 2**10 and "12 KiB a token for Llama 3.1 8B (2 x 2 x 24 x 128)" in page
    serving = (ROOT / "bench" / "results" / "serving_s19.md").read_text(encoding="utf-8")
    page_s, before_s, before_p, after_s, after_p = re.search(
        r"^\| page \| ([\d.]+) s .*\n\| gpuplan before \| ([\d.]+) s .*\| (\d+) \|\n"
        r"\| gpuplan after \| ([\d.]+) s .*\| (\d+) \|$", serving, re.M).groups()
    assert (f"took {page_s} s; gpuplan said {round(float(before_s))} s recomputing everything ({before_p} "
            f"preemptions), {round(float(after_s))} s with the cache ({after_p})") in page


def test_the_beyond_llms_accuracy_table_is_the_modules_bench_s():
    """docs/beyond-llms.md's held-out table (memory within 15 %, speed within 25 %, their medians, per group) and its
    totals sentence are bench/results/modules.md's summary (the file bench/modules.py writes; tests/test_accuracy.py
    holds it to the estimator); held by nothing until session 19's docs audit, which found them equal (session 19's
    diffusion notes moved no estimate)."""
    bench = (ROOT / "bench" / "results" / "modules.md").read_text(encoding="utf-8")
    summary = {(kind, grp): (int(n), med, within) for kind, grp, n, med, within in re.findall(
        r"^\| (memory|speed) held-out: ([\w -]+) \| (\d+) \| (\d+)% \| \d+% \| (\d+) of \d+ \(goal", bench, re.M)}
    page = (DOCS / "beyond-llms.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (diffusion training|diffusion generation|encoder-decoders|text encoders) \([^|]*\) \| "
                      r"(\d+) of (\d+) \| (\d+) % \| (\d+) of (\d+) \| (\d+) % \|$", page, re.M)
    assert len(rows) == 4
    for grp, mem_in, mem_n, mem_med, speed_in, speed_n, speed_med in rows:
        assert (int(mem_n), mem_med, mem_in) == summary["memory", grp], grp
        assert (int(speed_n), speed_med, speed_in) == summary["speed", grp], grp
    speed, memory = summary["speed", "all"], summary["memory", "all"]
    assert (f"{speed[2]} of {speed[0]} held-out speed figures are within 25 % and {memory[2]} of {memory[0]} memory "
            "figures within 15 %") in _page("beyond-llms.md")


def _oracle_tables() -> list[list[tuple[str, float]]]:
    """bench/results/oracle.md's two tables (decoder LLMs, then the training stacks): (case, error %) per row."""
    text = (ROOT / "bench" / "results" / "oracle.md").read_text(encoding="utf-8")
    tables = []
    for part in text.split("| case | simulated GiB")[1:]:
        rows = []
        for line in part.splitlines()[2:]:
            row = re.match(r"^\| ([^|]+) \| [\d.]+ \| [\d.]+ \| ([+-]?[\d.]+) \|", line)
            if not row:
                break
            rows.append((row.group(1), float(row.group(2))))
        tables.append(rows)
    return tables


def test_how_numbers_are_made_quotes_the_oracle_tables():
    """docs/how-numbers-are-made.md's oracle sentences (cases, how many at width 512, median and worst |error|, for
    the decoder LLMs' matrix and the training stacks') are bench/results/oracle.md's; session 19's attention output
    counted once moved the medians 0.2 -> 0.0 % and 0.2 -> 0.1 %, with the page (held by nothing before)."""
    import statistics

    llms, stacks = _oracle_tables()
    page = _page("how-numbers-are-made.md")

    def med(rows):
        return f"{statistics.median(abs(e) for _, e in rows):.1f} %"

    real = sum("(real width)" in case for case, _ in llms)
    assert (f"{len(llms)} cases (Llama, Qwen2.5, Qwen3, Mistral, Gemma-2, Mixtral, Qwen3-MoE; inference, full, LoRA, "
            f"QLoRA; {len(llms) - real} at width 512, {real} at real width), median |error| {med(llms)}, worst "
            f"{max(abs(e) for _, e in llms):.1f} %") in page
    assert (f"`python bench/oracle.py stacks`; {len(stacks)} cases, each held within 3 %, median |error| "
            f"{med(stacks)}, worst {max(abs(e) for _, e in stacks):.1f} %") in page


def test_the_launch_page_names_the_releases_the_stacks_pin():
    """docs/launch.md's releases of torchtitan, Axolotl and Unsloth are stacks/releases.py's (session 19 moved the
    pins there from launchers/settings.py); held by nothing before."""
    from gpuplan.stacks import releases

    page = _page("launch.md")
    assert f"torchtitan {releases.TORCHTITAN_VERSION}'s job config" in page
    assert f"Axolotl {releases.AXOLOTL_VERSION} pins older" in page
    assert f"Axolotl {releases.AXOLOTL_VERSION.rsplit('.', 1)[0]}'s keys" in page
    assert f"the source of unsloth {releases.UNSLOTH_VERSION}" in page


def test_the_serving_page_s_offline_and_overload_examples_are_the_plans():
    """docs/serve.md's `capacity --batch 2000` example (one H100: the time, the job's cost, the pool, how many ran at
    once and were preempted; an RTX 4090's time and cost) and its overloaded rate (Qwen3-30B-A3B on one H100 at 12
    requests/s: what the engine completed and the median TTFT) are what gpuplan says: session 19's prefix-cache
    resume moved them (81.4 -> 81.0 s, 238 -> 239 preempted, 518 -> 510 s; 5.67 -> 5.75 requests/s, 42 -> 41 s)
    and nothing held them."""
    require("numpy")  # the serving extra
    import gpuplan

    page = _page("serve.md")
    report = gpuplan.capacity("llama-3.1-8b", batch=2000, prompt_tokens=1000, output_tokens=200,
                              gpus=["h100-sxm", "rtx-4090"])
    rows = {row["gpu_id"]: row for row in report.plans if row["num_gpus"] == 1}
    h100, rtx = rows["nvidia-h100-sxm5-80gb"], rows["nvidia-geforce-rtx-4090"]
    assert (f"puts one H100 first: {h100['job_s']:.1f} s and ${h100['usd_per_job']:.3f}. Its pool holds "
            f"{h100['max_concurrency']} such requests; {h100['job_peak_running']} ran at once and "
            f"{h100['job_preemptions']} were preempted. An RTX 4090 takes {rtx['job_s']:.0f} s for "
            f"${rtx['usd_per_job']:.3f}.") in page
    over = gpuplan.estimate({"model": "qwen3-30b-a3b", "task": "infer", "engine": "vllm", "gpu": "h100",
                             "rate_rps": 12, "prompt_tokens": 2000, "output_tokens": 300}, advise=False).load
    done, ttft = re.search(r"the engine completed ([\d.]+) requests/s .*\(TTFT median ([\d.]+) s",
                           " ".join(over.warnings)).groups()
    assert f"at 12 requests/s: {done} completed, median TTFT {float(ttft):.0f} s)" in page


def test_the_serving_page_s_first_capacity_table_is_what_capacity_prints(monkeypatch):
    """docs/serve.md's first example (capacity at 5 requests/s) shows the command's output at 80 columns down to its
    "not shown at this width" line: its rows had kept an RTX A5000 pair and a 2x RTX 5090 setup that capacity no
    longer ranks there, and the p95 TTFTs of before session 19's merges (held by nothing until its docs audit)."""
    require("numpy")  # the serving extra
    import contextlib
    import io

    from gpuplan.cli import run

    page = (DOCS / "serve.md").read_text(encoding="utf-8")
    command = re.search(r"```\n(gpuplan capacity --model llama-3.1-8b --rate 5 [^\n]*)\n```\n```\n", page).group(1)
    shown = page.split(command + "\n```\n```\n", 1)[1].split("\n...\n```", 1)[0]
    args = [w for w in command.split()[1:] if w not in ("--plot", "knee.png")]
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert run(args) == 0
    printed = out.getvalue().split("\n(not shown at this width", 1)
    assert len(printed) == 2 and shown.startswith(printed[0] + "\n(not shown at this width")


def _cli() -> dict[tuple[str, ...], tuple[set[str], str]]:
    """Every command and group of the CLI by its path (("gpus", "compare")): the options it takes, its --help."""
    import click
    import typer

    from gpuplan.cli import app

    root = typer.main.get_command(app)
    root.list_commands(click.Context(root))  # loads every command's module
    found: dict[tuple[str, ...], tuple[set[str], str]] = {}

    def walk(cmd, path):
        with click.Context(cmd, info_name=" ".join(("gpuplan", *path)), terminal_width=120) as ctx:
            found[path] = ({"--help"} | {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)},
                           cmd.get_help(ctx))
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, (*path, name))

    walk(root, ())
    return found


def _gpuplan_commands(text: str) -> list[str]:
    """The ``gpuplan ...`` commands a page shows: in its inline code, its bash blocks and the lines of its other
    fenced blocks that start with one (serve.md shows slow ones so, which tests/test_readme.py does not run)."""
    spans = re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S))
    for language, block in re.findall(r"```(\w*)\n(.*?)```", text, re.S):
        lines = block.replace("\\\n", " ").splitlines()
        spans += lines if language == "bash" else [line for line in lines if line.startswith("gpuplan ")]
    return [part.split("gpuplan ", 1)[1].split("#", 1)[0] for span in spans for part in span.split("&&")
            if "gpuplan " in part]


def test_every_flag_a_page_gives_a_command_is_the_command_s():
    """Every ``--flag`` written after ``gpuplan COMMAND`` on a page (the README, docs/, the Accuracy page: inline
    code and bash blocks) or in a command's --help examples is an option of that command, so a renamed or removed
    flag cannot stay in the prose (tests/test_readme.py runs the bash blocks, not the inline commands, and session
    16's docs audit checked them once by hand)."""
    cli = _cli()
    pages = [ROOT / "README.md", *sorted(DOCS.glob("*.md")), ROOT / "src" / "gpuplan" / "data" / "accuracy.md"]
    shown = [(p.name, c) for p in pages for c in _gpuplan_commands(p.read_text(encoding="utf-8"))]
    shown += [(f"gpuplan {' '.join(path)} --help", line.split("gpuplan ", 1)[1].split("#", 1)[0])
              for path, (_, text) in cli.items() if "Examples:" in text
              for line in text.split("Examples:", 1)[1].splitlines() if "gpuplan " in line]
    wrong, checked = [], 0
    for where, command in shown:
        words, path = command.split(), ()
        while words and (*path, words[0]) in cli:
            path, words = (*path, words[0]), words[1:]
        if not path:
            continue  # prose about gpuplan, not a command ("gpuplan itself")
        for flag in (w.split("=", 1)[0].rstrip(".,;:)`") for w in words if w.startswith("--") and w != "--"):
            checked += 1
            if flag not in cli[path][0]:
                wrong.append((where, f"gpuplan {' '.join(path)}", flag))
    assert checked >= 400
    assert wrong == [], f"flags the pages give commands that do not take them: {wrong}"


def test_the_pretrain_and_fit_pages_quote_the_mlperf_and_trtllm_benches():
    """docs/pretrain.md's MLPerf Training table (rows, median |error|, within 15 %, memory fits, per benchmark and
    all) is bench/results/mlperf.md's, and docs/fit-a-model.md's trtllm-bench figures (fitted, held out, release
    0.17's table, MoE fitted and held out, the worst MoE group) are bench/results/trtllm.md's; tests/test_mlperf.py
    and tests/speed/test_trtllm_offline.py hold the errors under bounds, nothing held the figures the pages print
    (session 20's docs audit)."""
    mlperf = (ROOT / "bench" / "results" / "mlperf.md").read_text(encoding="utf-8")
    bench = {name: (rows, med, within, fits) for name, rows, med, _, within, fits in re.findall(
        r"^\| (llama2_70b_lora|llama31_405b|llama31_8b|all) \| (\d+) \| ([\d.]+) \| ([\d.]+) \| (\d+) \| (\d+) \|$",
        mlperf, re.M)}
    assert len(bench) == 4
    page = (DOCS / "pretrain.md").read_text(encoding="utf-8")
    names = {"Llama-2-70B LoRA": "llama2_70b_lora", "Llama 3.1 405B pre-training": "llama31_405b",
             "Llama 3.1 8B pre-training": "llama31_8b", "all": "all"}
    said = {names[name]: tuple(rest) for name, *rest in re.findall(
        r"^\| (Llama-2-70B LoRA|Llama 3\.1 405B pre-training|Llama 3\.1 8B pre-training|all)[^|]* \| (\d+) \| "
        r"([\d.]+) \| (\d+) \| (\d+) \|$", page, re.M)}
    assert said == bench
    trtllm = (ROOT / "bench" / "results" / "trtllm.md").read_text(encoding="utf-8")

    def median(label: str) -> tuple[str, str]:
        n, value = re.search(rf"^\| {re.escape(label)} \| (\d+) \| [\d.]+% \| ([\d.]+)% \|$", trtllm, re.M).groups()
        return n, value

    fitted, held, release = median("fitted (H100, B200)"), median("held-out (H200, GB200)"), median(
        "release 0.17's table, held out (H200, H100, GH200; TP 1-8)")
    moe_fitted = median("MoE on one GPU, fitted (B200: Scout, Qwen3-30B-A3B)")
    moe_held = median("MoE on one GPU, held out (GB200: Scout, Qwen3-30B-A3B; Mixtral 8x7B from 0.17)")
    worst = re.search(r"^\| Qwen3-30B-A3B \| GB200 \| 1 \| nvfp4 \| MoE held-out \| \d+ \| [\d.]+% \| ([\d.]+)% \|$",
                      trtllm, re.M)[1]
    fit = _page("fit-a-model.md")
    assert (f"{int(fitted[0]) + int(held[0])} dense Llama 3.1 8B / 3.3 70B / 3.1 405B rows): fitted on the H100 and "
            f"B200 columns, median error {fitted[1]} %; held out, H200 and GB200, {held[1]} %, and release 0.17's "
            f"table ({release[0]} FP8 rows, TP 1 to 8), {release[1]} %") in fit
    assert (f"Llama 4 Scout and Qwen3-30B-A3B, {moe_fitted[1]} %); held out, the GB200 rows and release 0.17's FP8 "
            f"Mixtral 8x7B, {moe_held[1]} % (Qwen3-30B-A3B on GB200 the worst, {float(worst):.0f} %") in fit


def test_the_serving_page_s_spot_example_is_the_plan():
    """docs/serve.md's spot example (Llama-3.1-8B at 20 requests/s on one L40S or H100, `--pricing spot`): the
    restart, the availability, what one L40S serves, the replicas up and run, the fleet's and the offer's $/h, and
    the note that spot is the dearer, are what capacity answers. tests/plan/test_capacity_spot.py redoes the
    arithmetic; nothing held the page's figures, and it said 4.6 req/s where capacity prints 4.69 (session 20's
    docs audit)."""
    require("numpy")  # the serving extra
    import gpuplan

    report = gpuplan.capacity("llama-3.1-8b", rate_rps=20, prompt_tokens=1000, output_tokens=200, ttft_s=1,
                              tpot_s=0.05, gpus=["l40s", "h100"], max_gpus=1, pricing="spot")
    l40s = next(row for row in report.plans if row["setup"] == "1x l40s tp1")
    up, run = l40s["replicas_up_for_target"], l40s["replicas_for_target"]
    page = _page("serve.md")
    assert (f"restart in 16.06 + 20 = {l40s['restart_s']:.1f} s, so a 1-GPU replica is up 7,200 / "
            f"{7200 + l40s['restart_s']:,.1f} = {l40s['availability']:.2%}".replace("%", " %")) in page
    need = l40s["replicas_needed"]
    assert up == 5 and run == 5  # 4.26 replicas' worth: a partly idle fifth replica covers the restarts (s20-walk)
    assert (f"One L40S serves {l40s['max_rate_rps']:.2f} req/s within those SLOs, so 20 / {l40s['max_rate_rps']:.2f} = "
            f"{need:.2f} replicas' worth are needed up and {run} run ({need:.2f} / {l40s['availability']:.3f} = "
            f"{need / l40s['availability']:.2f}): ${l40s['usd_per_hour_for_target']:.2f}/h on the bundled L40S spot "
            f"offer (${l40s['usd_per_hour']:.2f}/h)") in " ".join(page.split())
    dearer = next(n for n in report.notes if n.startswith("spot costs") and "1x l40s" in n)
    assert f'("{dearer.split("; --pricing")[0]}' in page


def test_every_command_a_page_shows_runs_in_a_test():
    """A ``gpuplan`` command in a fenced block that is not ``bash`` runs nowhere (tests/test_readme.py runs the bash
    blocks): serve.md showed three so (the users, the spot and the SGLang load examples), which docs/index.md's
    "every bash and python block runs" let pass. Only the first capacity example is shown so, with its output,
    which test_the_serving_page_s_first_capacity_table_is_what_capacity_prints runs (session 20's docs audit)."""
    pages = [ROOT / "README.md", *sorted(DOCS.glob("*.md")), ROOT / "src" / "gpuplan" / "data" / "accuracy.md"]
    shown = [(page.name, line) for page in pages
             for language, block in re.findall(r"```(\w*)\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
             if language != "bash" for line in block.splitlines() if line.startswith("gpuplan ")]
    assert [(name, line.split(" --")[0:2]) for name, line in shown] == [
        ("serve.md", ["gpuplan capacity", "model llama-3.1-8b"])]
    assert "--rate 5 " in shown[0][1]


def test_the_python_api_page_names_every_function_and_answer():
    """docs/python-api.md's table has a row for every question function `import gpuplan` exports, with the answer
    class it returns (`gpuplan.buy` and `BuyReport` had none until session 20's docs audit); the loaders are shown
    in the page's example, and the count of commands the lazy command line chooses from is the CLI's."""
    import gpuplan

    page = (DOCS / "python-api.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `gpuplan\.(\w+)\(.*\| `(\w+)` \(`gpuplan \w+`\) \|$", page, re.M))
    functions = {name for name in gpuplan.__all__ if name.islower() and not name.startswith(("load_", "_"))}
    assert set(rows) == functions
    for name, answer in rows.items():
        returns = getattr(gpuplan, name).__annotations__["return"]  # 'Recommendation | ModuleChoices'
        assert answer in gpuplan.__all__ and re.search(rf"\b{answer}\b", str(returns)), (name, returns)
    assert "gpuplan.load_model(" in page
    from gpuplan.cli.commands import COMMANDS

    assert f"the command it runs, not all {len(COMMANDS)} (`cli.commands.LazyGroup`)" in " ".join(page.split())


def test_the_launch_page_lists_every_target_and_the_stack_it_plans():
    """docs/launch.md's table has one row per target `gpuplan launch` writes (launchers.TARGETS), and its sentence
    on a stack's own targets names each target with the stack it plans (launchers.stack_of: nemo plans megatron,
    trainer, accelerate, deepspeed and torchrun plan hf, each diffusion trainer itself) and each engine's target
    (launchers.engine_of); held by nothing until session 20's docs audit."""
    from gpuplan.launchers import DIFFUSION_TARGETS, TARGETS, engine_of, stack_of

    text = (DOCS / "launch.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `([\w.-]+)` \|", text, re.M)
    assert sorted(rows) == sorted(TARGETS) and len(rows) == len(set(rows))
    page = " ".join(text.split())
    by_stack: dict[str, set[str]] = {}
    for target, stack in stack_of().items():
        by_stack.setdefault(stack, set()).add(target)
    named = lambda words: set(re.findall(r"`([\w.-]+)`", words))  # noqa: E731
    said = re.search(r"A stack's own target \((.*?)\) plans that stack", page)[1].split("; ")
    megatron, hf, diffusion = said[0].split(" and "), said[1].removesuffix(" for `hf`"), said[2]
    assert said[1].endswith(" for `hf`") and named(hf) == by_stack.pop("hf")
    assert megatron[-1].endswith(" for `megatron`")
    assert named(megatron[-1].removesuffix(" for `megatron`")) == by_stack["megatron"] - {"megatron"}
    own = {stack for stack, targets in by_stack.items() if targets == {stack} and stack not in DIFFUSION_TARGETS}
    assert named(megatron[0]) == own | {"megatron"}
    assert named(diffusion.removeprefix("a diffusion model's ")) == set(DIFFUSION_TARGETS)
    assert own | by_stack["megatron"] | set(DIFFUSION_TARGETS) == set(by_stack) | {"nemo"}
    engines = re.search(r"The serving targets do the same for the engine: (.*?) each plan their engine", page)[1]
    assert named(engines) == set(engine_of())


def test_the_fine_tune_page_s_stack_cards_table_is_the_code_s():
    """docs/fine-tune.md's table of the cards each training stack runs on is gpuplan.scenario.stack_cards.table over
    every stack, in the recipes' order (s22: the stacks had no such table, and no refusal off their cards)."""
    from gpuplan.scenario import stack_cards
    from gpuplan.scenario.stacks import RECIPES

    table = stack_cards.table(RECIPES)
    assert table in (DOCS / "fine-tune.md").read_text(encoding="utf-8")
    assert "| unsloth | NVIDIA (CUDA), AMD (ROCm), Apple silicon (MPS) in part |" in table


def test_the_serving_page_quotes_the_rocm_shares():
    """docs/serve.md's ROCm decode shares are the code's and bench/results/rocm_dense.md's: the MoE figure
    (overheads.ROCM_DECODE_SLOWDOWN), the dense one session 22 fitted (ROCM_DENSE_DECODE_SLOWDOWN, as the bench
    file says it), how many rows it was fitted on and held out, and the held-out median ratio errors with it and
    with the MoE figure (session 22's docs audit: nothing held these)."""
    from gpuplan import overheads as oh

    bench = (ROOT / "bench" / "results" / "rocm_dense.md").read_text(encoding="utf-8")
    fitted = float(re.search(r"Fitted ROCM_DENSE_DECODE_SLOWDOWN = ([\d.]+)", bench)[1])
    fit_rows, check_rows = (len(re.findall(rf"^\| \S+ \| {role} \|", bench, re.M)) for role in ("rocm-fit",
                                                                                                 "rocm-check"))
    dense, moe = re.search(r"Held out \(rocm-check, (\d+) rows\): median \|AMD / NVIDIA ratio error\| ([\d.]+)% "
                           r"with the fitted dense factor, ([\d.]+)% with the MoE factor", bench).groups()[1:]
    assert fitted == oh.ROCM_DENSE_DECODE_SLOWDOWN and (fit_rows, check_rows) == (7, 8)
    page = _page("serve.md")
    assert f"takes {oh.ROCM_DECODE_SLOWDOWN}x what the CUDA-calibrated model gives" in page
    assert (f"{fitted}x, fitted on {fit_rows} batch and prompt shapes, {check_rows} held out within a median {dense} % "
            f"on the AMD / NVIDIA ratio ({moe} % with the MoE figure") in page


def test_the_pretrain_page_quotes_the_amd_mlperf_rows():
    """docs/pretrain.md's sentence on AMD's MLPerf rows is bench/results/mlperf.md's second section: the MI300X rows'
    memory a card and their step errors' range, and the MI325X and MI355X median errors (session 22's docs audit)."""
    mlperf = (ROOT / "bench" / "results" / "mlperf.md").read_text(encoding="utf-8")
    mi300x = re.findall(r"^\| V\d+ \|.*\| 8x amd-instinct-mi300x \|.*\| [\d.]+ / [\d.]+ \(([-+][\d.]+)\) \| yes \| "
                        r"([\d.]+) yes \|", mlperf, re.M)
    assert len(mi300x) == 6 and len({gib for _, gib in mi300x}) == 1
    steps = [abs(float(e)) for e, _ in mi300x]
    median = {card: float(m) for card, m in re.findall(
        r"^\| AMD / amd-instinct-(mi325x|mi355x) \| \d+ \| ([-+][\d.]+) \|", mlperf, re.M)}
    page = _page("pretrain.md")
    assert (f"the MI300X rows come to {float(mi300x[0][1]):.0f} GiB a card (227 GiB without either), and their step "
            f"to {min(steps):.0f}-{max(steps):.0f} % short of the logged one") in page
    assert f"MI325X {median['mi325x']:+.0f} % and MI355X {median['mi355x']:+.0f} % (median)" in page


def test_the_buying_page_s_speed_ranges_are_the_code_s():
    """docs/buy-or-rent.md's ranges (training's spread, vLLM's dense NVIDIA band, the uncalibrated decode spread) and
    serve.md's uncalibrated spread, doubled, are overheads.SPEED_SPREAD's and bench/results/bands.md's: the vLLM band
    read -17 % there after bands.md said -10 % (session 22's docs audit)."""
    from gpuplan import overheads as oh

    def words(low: float, high: float) -> str:
        return f"{-low * 100:.0f} % below to {high * 100:.0f} % above"

    bands = (ROOT / "bench" / "results" / "bands.md").read_text(encoding="utf-8")
    row = r"^\| vllm \| dense \| NVIDIA \| \d+ \| ([-+][\d.]+) \| ([-+][\d.]+) \|"
    low, high = re.search(row, bands, re.M).groups()
    page = _page("buy-or-rent.md")
    assert f"training: the true rate is {words(*oh.SPEED_SPREAD['train'])}" in page
    assert f"vLLM on dense models on NVIDIA cards {words(float(low), float(high))}" in page
    assert f"the held-out decode rows' {words(*oh.SPEED_SPREAD['decode'])}, doubled" in page
    doubled = tuple(2 * x for x in oh.SPEED_SPREAD["decode"])
    assert f"({words(*oh.SPEED_SPREAD['decode'])}, so {words(*doubled)})" in _page("serve.md")
