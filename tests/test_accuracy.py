"""The estimator against published measurements (bench/accuracy_cases.yaml, made by bench/make_cases.py).

Tolerances: fixed-length rows measured with torch's own counters (allocated) must stay within a 10% median
error, the goal the memory issue sets; every case must be expressible (no scenario rejected); OOM rows must
be predicted not to fit.
"""

from __future__ import annotations

import re
import statistics
import sys
from pathlib import Path

import yaml

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import accuracy  # noqa: E402


def test_cases_file_is_what_make_cases_builds():
    import make_cases

    built = make_cases.build(make_cases.DEFAULT_CSV)
    stored = yaml.safe_load((BENCH / "accuracy_cases.yaml").read_text())
    assert built == stored


def test_measured_memory_within_tolerance():
    cases = yaml.safe_load((BENCH / "accuracy_cases.yaml").read_text())["cases"]
    scored, ooms, rejected = accuracy.run(cases)
    assert not rejected, rejected
    assert ooms and all(o["predicted_fit"] is False for o in ooms)
    allocated = [abs(c["error_pct"]) for c in scored if c["level"] == "allocated" and c["fixed_length"]]
    assert len(allocated) >= 50 and statistics.median(allocated) < 10
    fixed = [abs(c["error_pct"]) for c in scored if c["fixed_length"]]
    assert statistics.median(fixed) < 10


# The training stacks' published rows (issue 10): per stack, the fixed-length rows of its sources.
STACKS = {"torchtune": "torchtune", "torchtitan": "torchtitan", "FSDP1 (Answer.AI fsdp_qlora)": "Answer.AI",
          "Unsloth (longest context)": "(Unsloth column)"}
NOT_HF_CODE = (*STACKS.values(), "llama.cpp")


def test_training_stacks_within_the_issue_goal():
    """Issue 10's goal: per stack, the median |error| on its fixed-length published rows is at most 10 %, and the
    rows of Hugging Face code stay where they were before the stacks came in (median at most 5 %). The shipped page
    (gpuplan/data/accuracy.md) quotes each of these medians and counts, and the rows that cannot be expressed: in
    session 18 it still said torchtitan 6.4 % over 8 rows, 120 rows of Hugging Face code and 31 skipped, from before
    session 16's held-out rows (10 rows at 5.8 %, 125, 32)."""
    loaded = yaml.safe_load((BENCH / "accuracy_cases.yaml").read_text())
    scored, _, rejected = accuracy.run(loaded["cases"])
    assert not rejected
    shipped = " ".join((BENCH.parent / "src" / "gpuplan" / "data" / "accuracy.md").read_text(encoding="utf-8").split())
    counted = [c for c in scored if c["fixed_length"] and not c.get("calibration")]
    for stack, key in STACKS.items():
        errors = [abs(c["error_pct"]) for c in counted if key in c["source"]]
        assert len(errors) >= 3 and statistics.median(errors) <= 10, (stack, sorted(errors))
        said = re.search(rf"{re.escape(stack.split(' (', 1)[0].split(' ', 1)[0])}'?s?[^%]*? ([\d.]+) % \((\d+)",
                         shipped.split("Per stack", 1)[1])
        assert said and (float(said[1]), int(said[2])) == (round(statistics.median(errors), 1), len(errors)), stack
    hf = [abs(c["error_pct"]) for c in counted if not any(key in c["source"] for key in NOT_HF_CODE)]
    assert len(hf) >= 100 and statistics.median(hf) <= 5
    assert f"the {len(hf)} fixed-length rows of Hugging Face code: {statistics.median(hf):.1f} %" in shipped
    assert f"{len(loaded['skipped'])} rows that cannot be expressed" in shipped


def test_throughput_within_the_issue_goal():
    """Speed model vs measured throughput (issue 11): every fixed-shape source's median |error| <= 15 % and the
    median over sources <= 12 %."""
    import throughput

    cases = yaml.safe_load((BENCH / "throughput_cases.yaml").read_text())["cases"]
    scored, _ = throughput.run(cases)
    by_source: dict[str, list[float]] = {}
    for c in scored:
        if c["fixed_length"]:
            by_source.setdefault(c["source"], []).append(abs(c["error_pct"]))
    assert len(scored) >= 150 and len(by_source) >= 6
    medians = {k: statistics.median(v) for k, v in by_source.items()}
    assert max(medians.values()) <= 15, medians
    assert statistics.median(medians.values()) <= 12


def test_shipped_module_accuracy_is_what_the_bench_measures_now():
    """The page quotes a module plan's measured accuracy from gpuplan/data/accuracy.md: its table of held-out rows
    per group must be what bench/modules.py computes on the current estimator (a changed constant must update it)."""
    import modules

    _, totals = modules.run()
    shipped = (BENCH.parent / "src" / "gpuplan" / "data" / "accuracy.md").read_text(encoding="utf-8")
    table = modules.shipped_table(totals)
    assert table.count("\n") >= 5 and table in shipped


def _tables(text: str) -> list[list[dict[str, str]]]:
    tables, block = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            block.append([cell.strip().replace("**", "") for cell in line.strip().strip("|").split("|")])
            continue
        if len(block) > 2:
            tables.append([dict(zip(block[0], row, strict=False)) for row in block[2:]])
        block = []
    return tables


def _numbers(table: list[dict[str, str]], what: str, columns: tuple[str, ...]) -> dict[tuple[str, str], list[str]]:
    """Each row's figures keyed by (source, workload or metric); a source's file suffix (", `bench/...csv`") and a
    worst row's id ("20.8 (M0096)") left out, as the page writes them."""
    return {(re.sub(r",\s*`[^`]*`$", "", r["source"]), r[what]): [r.get(c, r.get(f"{c} (id)", "")).split(" (")[0]
                                                                 for c in columns] for r in table}


def test_the_page_quotes_the_memory_and_throughput_tables_the_bench_wrote():
    """gpuplan/data/accuracy.md (the site's Accuracy page; the calculator page shows its rows and headline beside a
    plan) copies bench/results/accuracy.md's tables by hand: in session 16 seven memory and nine throughput rows
    had drifted from the file (Megatron-LM 14.6 % where the bench gives 9.1 %; three sources missing) and the
    headline read 4.2 % over 165 rows where the file gives 4.1 % over 170. A regenerated file must update them."""
    shipped = (BENCH.parent / "src" / "gpuplan" / "data" / "accuracy.md").read_text(encoding="utf-8")
    bench = (BENCH / "results" / "accuracy.md").read_text(encoding="utf-8")
    page_tables, bench_tables = _tables(shipped), _tables(bench)

    def pick(tables, header):
        return next(t for t in tables if t and header <= set(t[0]))

    memory = ("n", "fixed / variable", "median abs %", "worst abs %", "median signed %")
    assert (_numbers(pick(page_tables, {"workload", "fixed / variable"}), "workload", memory)
            == _numbers(pick(bench_tables, {"workload", "fixed / variable"}), "workload", memory))
    speed = ("n", "held out", "before: median abs % fitted / held out", "median abs %", "fitted", "worst abs %",
             "median signed %")  # the held-out median is the last "held out" column (dict keeps the last)
    page_speed = _numbers(pick(page_tables, {"metric", "fitted"}), "metric", speed)
    assert len(page_speed) >= 10 and page_speed == _numbers(pick(bench_tables, {"metric", "fitted"}), "metric", speed)
    fixed = re.search(r"fixed-length data: (\d+) cases, median abs error ([\d.]+)%", bench)
    assert f"Median error on fixed-length data: **{fixed.group(2)} %** over {fixed.group(1)} rows" in shipped
    # the throughput rows' count and held-out share (session 18: 242 and 79 of them, from before session 16's 9 rows)
    scored = int(re.search(r"- (\d+) cases scored, \d+ not estimable", bench).group(1))
    rows = [line.strip("|").split("|") for line in bench.split("## Throughput", 1)[1].splitlines()
            if line.startswith("| ") and not line.startswith("| source")]
    held = sum(int(cells[3]) for cells in rows if cells[3].strip().isdigit())  # the table's "held out" count
    assert f"`bench/accuracy.py`; {scored} rows of" in shipped and f"{held} of the {scored} scored" in shipped


def test_a_stated_expectation_is_shown_marked_and_a_not_comparable_row_is_in_no_goal_line():
    """Whisper-small's 'approximately 8 hours' is the README's expectation, not a timed run, and was set by December
    2022's libraries, whose feature reading took about ten times today's (issue 34): the bench keeps its row, marks it
    both ways in the table, leaves it out of every goal line and gives its error and reason on a line of its own."""
    import modules

    rows, totals = modules.run()
    apart = [r for r in rows if r["apart"]]
    assert [r["id"] for r in apart] == ["whisper-small-v100"] and apart[0]["stated"]
    text = modules.table(rows, totals)
    assert "it/s (stated, not measured) (not comparable)" in text
    assert "Not comparable (shown above, in no goal line): whisper-small-v100 (" in text
    held = [r for r in rows if r["error"] is not None and not r["fit"] and "GiB" not in r["quantity"]]
    assert totals["speed held-out: all"]["rows"] == len(held) - 1
    encoders = [r for r in held if r["group"] == "encoder-decoders"]  # with the not comparable one
    # A100 FA2, T4 int8 LoRA and insanely-fast-whisper's five T4 calls (session 24)
    assert totals["speed held-out: encoder-decoders"]["rows"] == len(encoders) - 1 == 7
    assert "speed held-out: all, measured figures only" not in totals  # no other stated row is left


def test_a_source_timing_bare_passes_back_to_back_is_compared_at_the_larger_of_host_and_gpu():
    """diffusers' weekly benchmark times SDXL's UNet forward with torch.utils.benchmark's blocked_autorange, in blocks
    of 10 calls with no synchronization between them (issue 34, session 24): one pass then takes the longer of its
    host work (80.7 ms: the profile's ops at a desktop's cost times SERVER_HOST_FACTOR 1.75) and its GPU work (60.8
    ms), 12.39 it/s against 14.93 measured (-17 %), where the plan's pipeline step (their smooth maximum, 101.0 ms,
    and a 0.4 ms scheduler step) gives 9.86 (-34 %)."""
    import modules

    cases = {c["id"]: c for c in yaml.safe_load(modules.CASES.read_text(encoding="utf-8"))["cases"]}
    case = cases["sdxl-l40s-bf16-forward"]
    assert case["timing"] == "back-to-back"
    [(_, _, bare, measured)] = modules.measure(case)
    [(_, _, piped, _)] = modules.measure({k: v for k, v in case.items() if k != "timing"})
    assert round(bare, 2) == 12.39 and round(piped, 2) == 9.86
    assert round(100 * (bare - measured) / measured) == -17
    # a GPU-bound pass moves only by its host work's share of the smooth maximum: FLUX.1 on the same runner
    flux = cases["flux-l40s-bf16-forward"]
    [(_, _, bare, _)] = modules.measure(flux)
    [(_, _, piped, _)] = modules.measure({k: v for k, v in flux.items() if k != "timing"})
    assert 1.005 < bare / piped < 1.02


def test_the_host_of_an_eager_and_compiled_pair_is_the_estimates_overlap_solved_for_it():
    """bench/modules.py host_reading (issue 34, session 10): stable-fast's H100 ran SD 1.5 at batch 1 at 54.5 it/s
    eager and 66.0 compiled with CUDA graphs. Less the scheduler's 0.4 ms, steps of 1,000/54.5 - 0.4 = 17.949 ms and
    1,000/66 - 0.4 = 14.752 ms; taking the compiled step as the GPU time, the estimate's overlap sqrt(host^2 + GPU^2)
    = eager leaves a host of sqrt(17.949^2 - 14.752^2) = 10.224 ms, 0.70 of the 14.644 ms of host work the estimate
    gives a desktop for the UNet's pass (1,617 ops x 7 us + 665 module calls x 5 us). The H100's compiled step is
    1.60 times the estimate's eager GPU time (9.2 ms) where the RTX 4090's is 0.88. Beside that estimated GPU time
    instead (session 11, the last column: what the fitted server factors carry), the host is sqrt(17.949^2 - 9.2^2)
    = 15.41 ms, 1.05 of the desktop's, where alexeigor/sd-benchmarks' A100 SXM's is 2.30."""
    import modules

    rows = [line.split(" | ") for line in modules.host_reading().splitlines()[2:]]
    assert len(rows) == len(modules.HOST_PAIRS) == 15
    h100 = next(r for r in rows if "stable-fast" in r[0] and r[0].endswith(", H100"))
    assert h100[1:4] == ["H100 SXM5 80GB", "sd-1.5", "17.9"]
    assert (h100[4], h100[5], h100[6], h100[7], h100[8], h100[9]) == ("14.8", "9.2", "1.60", "10.2", "0.70", "1.05 |")
    a100 = next(r for r in rows if r[0].endswith(", A100-SXM 40GB"))
    assert a100[9] == "2.30 |"
    rtx4090 = next(r for r in rows if r[0].endswith(", RTX 4090"))
    assert rtx4090[6] == "0.88"


SILU_SM80 = """
        Function : silu
        /*0000*/                   IMAD.MOV.U32 R1, RZ, RZ, c[0x0][0x28] ;
        /*0010*/                   S2R R0, SR_CTAID.X ;
        /*0020*/                   IMAD.MOV.U32 R5, RZ, RZ, 0x2 ;
        /*0030*/                   ULDC.64 UR4, c[0x0][0x118] ;
        /*0040*/                   S2R R3, SR_TID.X ;
        /*0050*/                   IMAD R0, R0, c[0x0][0x0], R3 ;
        /*0060*/                   IMAD.WIDE R2, R0, R5, c[0x0][0x160] ;
        /*0070*/                   LDG.E.U16 R2, [R2.64] ;
        /*0080*/                   IMAD.MOV.U32 R5, RZ, RZ, 0x3bbb989d ;
        /*0090*/                   BSSY B0, 0x200 ;
        /*00a0*/                   IMAD.MOV.U32 R6, RZ, RZ, 0x437c0000 ;
        /*00b0*/                   HADD2.F32 R4, -RZ, R2.H0_H0 ;
        /*00c0*/                   FFMA.SAT R5, -R4, R5, 0.5 ;
        /*00d0*/                   FFMA.RM R5, R5, R6, 12582913 ;
        /*00e0*/                   FADD R7, R5.reuse, -12583039 ;
        /*00f0*/                   IMAD.SHL.U32 R5, R5, 0x800000, RZ ;
        /*0100*/                   FFMA R7, -R4, 1.4426950216293334961, -R7 ;
        /*0110*/                   FFMA R7, -R4, 1.925963033500011079e-08, R7 ;
        /*0120*/                   MUFU.EX2 R6, R7 ;
        /*0130*/                   FFMA R5, R5, R6, 1 ;
        /*0140*/                   MUFU.RCP R2, R5 ;
        /*0150*/                   FCHK P0, R4, R5 ;
        /*0160*/                   FFMA R3, -R5, R2, 1 ;
        /*0170*/                   FFMA R3, R2, R3, R2 ;
        /*0180*/                   FFMA R2, R4, R3, RZ ;
        /*0190*/                   FFMA R6, -R5, R2, R4 ;
        /*01a0*/                   FFMA R2, R3, R6, R2 ;
        /*01b0*/              @!P0 BRA 0x1f0 ;
        /*01c0*/                   MOV R2, 0x1e0 ;
        /*01d0*/                   CALL.REL.NOINC 0x260 ;
        /*01e0*/                   IMAD.MOV.U32 R2, RZ, RZ, R4 ;
        /*01f0*/                   BSYNC B0 ;
        /*0200*/                   F2FP.PACK_AB R2, RZ, R2 ;
        /*0210*/                   IMAD.MOV.U32 R3, RZ, RZ, 0x2 ;
        /*0220*/                   PRMT R4, R2, 0x7610, R4 ;
        /*0230*/                   IMAD.WIDE R2, R0, R3, c[0x0][0x168] ;
        /*0240*/                   STG.E.U16 [R2.64], R4 ;
        /*0250*/                   EXIT ;
        /*0260*/                   SHF.R.U32.HI R6, RZ, 0x17, R5.reuse ;
"""


def test_elementwise_kernels_math_is_counted_from_their_sass_and_binds_no_kernel_on_the_a100():
    """bench/elementwise_math.py (issue 34, session 12). SiLU compiled for sm_80 (nvcc 13.0, cuobjdump 13.2): its
    fast path runs 38 instructions to EXIT less the division's slow-path call (MOV, CALL, IMAD.MOV) = 35; FMA pipe:
    5 IMAD.MOV + IMAD + 2 IMAD.WIDE + IMAD.SHL + HADD2 + FFMA.SAT + FFMA.RM + FADD + 8 FFMA + FCHK + F2FP = 23; XU:
    MUFU.EX2, MUFU.RCP = 2; ALU: PRMT = 1. GroupNorm's Welford step on an A100 40GB: its busiest pipe is the FMA
    pipe, 15 x 2 = 30 cycles per 32 elements per partition: 30 / (4 x 32 x 108 SMs x 1.41 GHz) = 1.539 ps per
    element, against 2 bytes / (1,555 GB/s x 0.80) = 1.608 ps: 0.957, the highest of the kernels, so no kernel is
    math-bound on any of the five cards and max(bytes, math) leaves SD 1.5's UNet at 1.00."""
    import elementwise_math as em

    ops = em._executed(em._instructions(SILU_SM80)["silu"], loop=False)
    assert em._pipes(ops) == (23, 1, 2, 35) == em.RECORDED["sm_80"]["silu"]
    assert abs(em.math_ratio("a100-sxm4-40gb", "sm_80", "group_norm_stats", em.RECORDED) - 0.957) < 0.001
    ratios = [em.math_ratio(c, a, k, em.RECORDED) for c, a in em.CARDS for k in em.BYTES]
    assert max(ratios) == em.math_ratio("a100-sxm4-40gb", "sm_80", "group_norm_stats", em.RECORDED) < 1
    for card, arch in em.CARDS:
        bounded, summed = em.unet_factors(card, arch, em.RECORDED)
        assert abs(bounded - 1) < 1e-12 and 1.1 < summed < 1.42
