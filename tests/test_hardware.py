"""The GPU catalog: names, ambiguity, precision support and usable memory."""

import json
from importlib import resources

import pytest
import yaml

from conftest import cli_in_process
from gpuplan import GpuplanError
from gpuplan.errors import UnknownNameError
from gpuplan.hardware import gpus, load_gpu, resolve_gpu


def test_catalog_loads_every_entry():
    # GB300 and MI355X added (issue 24), Grand Teton's 96GB HBM2e H100 (issue 20); 2025 local cards and the
    # unified-memory boxes (issue 33); Apple M1 Max/Ultra, M2 Pro/Max, M3 Pro/Max, M4, M4 Pro (issue 31); the RTX 2080
    # Ti (session 22); the laptop GPUs: RTX 4090/4080/4070/4060, 3080 (8 and 16 GB) and 5090 Laptop (session 24); the
    # MI250 beside the MI250X (session 27)
    assert len(gpus()) == 79


@pytest.mark.parametrize("name, gpu_id, others", [
    ("H100", "nvidia-h100-sxm5-80gb", ["h100-pcie-80gb"]),
    ("a100-80gb", "nvidia-a100-sxm4-80gb", ["a100-pcie-80gb"]),
    ("a100-40gb", "nvidia-a100-sxm4-40gb", ["a100-pcie-40gb"]),
    ("A100", "nvidia-a100-sxm4-80gb", ["a100-pcie-40gb", "a100-pcie-80gb", "a100-sxm4-40gb"]),
    ("v100", "nvidia-v100-sxm2-32gb", ["v100-pcie-16gb", "v100-pcie-32gb", "v100-sxm2-16gb"]),
    ("gh200", "nvidia-gh200-96gb", ["gh200-144gb"]),
])
def test_ambiguous_name_takes_the_common_variant_and_says_so(name, gpu_id, others):
    gpu, note = resolve_gpu(name)
    assert gpu.id == gpu_id
    assert note.startswith(f"{name} taken as {gpu.name}") and all(o in note for o in others)
    assert resolve_gpu("h100-sxm")[1] is None  # an exact name needs no note


def test_empty_gpu_name_is_bad_input():
    with pytest.raises(GpuplanError, match="no GPU given"):
        load_gpu("  ")


@pytest.mark.parametrize("name, gpu_id", [
    ("h100-sxm", "nvidia-h100-sxm5-80gb"), ("4090", "nvidia-geforce-rtx-4090"), ("RTX 6000 Ada", "nvidia-rtx-6000-ada"),
    ("A100-SXM4-80GB", "nvidia-a100-sxm4-80gb"), ("a6000", "nvidia-rtx-a6000"), ("L40S", "nvidia-l40s"),
])
def test_aliases(name, gpu_id):
    assert load_gpu(name).id == gpu_id


@pytest.mark.parametrize("name, gpu_id", [
    ("4080", "nvidia-geforce-rtx-4080"), ("3090 Ti", "nvidia-geforce-rtx-3090-ti"),
    ("3090ti", "nvidia-geforce-rtx-3090-ti"), ("4070-ti-super", "nvidia-geforce-rtx-4070-ti-super"),
    ("3060", "nvidia-geforce-rtx-3060-12gb"), ("4060ti", "nvidia-geforce-rtx-4060-ti-16gb"),
    ("3090", "nvidia-geforce-rtx-3090"),
])
def test_a_geforce_model_number_names_its_card(name, gpu_id):
    """Session 8's walk: `--gpu 4090` named the card, `--gpu 4080` and `--have 2x3090-ti` were unknown GPUs, as
    only some numbers were aliases by hand. Every GeForce card's number is a name now, its memory left off."""
    assert resolve_gpu(name) == (gpus()[gpu_id], None)


def test_typo_suggests():
    with pytest.raises(UnknownNameError, match="did you mean"):
        load_gpu("rtx-4909")


def test_geforce_half_rate_trap():
    g = load_gpu("4090")
    assert g.peak_tflops("bf16") == pytest.approx(165.2, abs=0.1)  # not the 330 of FP16-accumulate marketing


def test_precision_support():
    assert load_gpu("a100-sxm4-80gb").supports_dtype("bf16") and not load_gpu("a100-sxm4-80gb").supports_dtype("fp8")
    assert not load_gpu("t4").supports_dtype("bf16")
    assert load_gpu("h100-sxm").supports_dtype("fp8") and load_gpu("b200").supports_dtype("fp4")


def test_apple_unified_memory_is_the_wired_share():
    # macOS wires ~3/4 of unified memory above 36 GB for the GPU (2/3 at or below): 128 GB M4 Max -> 96 GiB
    assert load_gpu("apple-m4-max").usable_gib == pytest.approx(128 * 3 / 4)
    from gpuplan.scenario import Scenario
    from gpuplan.tensors.breakdown import device_overheads

    assert device_overheads(Scenario(model="gpt2", task="infer"), "Apple") == {}  # Metal: no CUDA context


def test_usable_memory():
    for g in gpus().values():
        assert 0 < g.usable_gib < g.memory_gib
    assert load_gpu("l40s").usable_gib == pytest.approx(46068 / 1024)  # reported (GPUS.md section 5)
    assert load_gpu("h100-sxm").usable_gib == pytest.approx(80 * 0.995)
    assert load_gpu("h100-sxm").nvlink_bandwidth_gbs == 900
    # AWS's A10G runs with ECC on, as the A10: nvidia-smi shows 23028 MiB of 24 GiB (NVIDIA/DCGM issue 232); the
    # rewalk found it planned at 23.9 GiB, 1.4 GiB more than a g5 instance has
    for name in ("a10g", "a10"):
        assert load_gpu(name).usable_gib == pytest.approx(23028 / 1024, rel=0.001)


def test_a_count_and_a_card_where_one_card_is_asked_names_the_card():
    """A scenario's ``gpu`` takes ``2xh100`` (the scenario's validator reads the count:
    tests/test_gpu_spelling.py); where one card alone is asked (a list of cards, a card of a split) the sentence
    names the card. A count of 0 is refused; an unknown card stays unknown."""
    with pytest.raises(GpuplanError, match=r"^'2xh100' is a count and a card, where a card alone is asked: name h100$"):
        resolve_gpu("2xh100")
    with pytest.raises(GpuplanError, match=r"name rtx-4090$"):
        resolve_gpu("4 x rtx-4090")
    with pytest.raises(GpuplanError, match=r"^a count of cards starts at 1"):
        resolve_gpu("0x3090")
    with pytest.raises(GpuplanError, match="unknown GPU"):
        resolve_gpu("2xnosuch")


# ---- the 2025 local cards and unified-memory boxes (issue 33) ----------------------------------------------------
# (name a user types, id, GiB, GB/s, bf16 TFLOPS dense, TDP W, MSRP $): each value as the entry's read source states
# it (gpus.yaml sources, GPUS.md section 7); bf16 is derived where the vendor gives only a sparse "AI TOPS" figure
NEW_CARDS = [
    ("RTX 5080", "nvidia-geforce-rtx-5080", 16, 960, 112.6, 360, 999),
    ("rtx-5070-ti", "nvidia-geforce-rtx-5070-ti", 16, 896, 87.9, 300, 749),
    ("RTX 5070", "nvidia-geforce-rtx-5070", 12, 672, 61.7, 250, 549),
    ("5060 Ti", "nvidia-geforce-rtx-5060-ti-16gb", 16, 448, 47.4, 180, 429),
    ("DGX Spark", "nvidia-dgx-spark", 128, 273, 62.5, 140, 3999),
    ("Strix Halo", "amd-ryzen-ai-max-plus-395", 128, 256, 59.4, 120, 1999),
    ("7900 XTX", "amd-radeon-rx-7900-xtx", 24, 960, 122.8, 355, 999),
    ("R9700", "amd-radeon-ai-pro-r9700", 32, 640, 191.4, 300, 1299),
]


@pytest.mark.parametrize("name, gpu_id, gib, gbs, bf16, tdp, msrp", NEW_CARDS)
def test_new_cards_load_with_their_cited_values(name, gpu_id, gib, gbs, bf16, tdp, msrp):
    g = load_gpu(name)
    assert (g.id, g.memory_gib, g.bandwidth_gbs, g.peak_tflops("bf16"), g.tdp_w, g.msrp_usd) == \
        (gpu_id, gib, gbs, bf16, tdp, msrp)


def _entries() -> dict[str, dict]:
    text = (resources.files("gpuplan") / "data" / "gpus.yaml").read_text(encoding="utf-8")
    return {e["id"]: e for e in yaml.safe_load(text)}


@pytest.mark.parametrize("gpu_id, units, clock_ghz, per_unit, published", [
    # NVIDIA's "AI TOPS" are FP4 with sparsity: SMs x boost x 8192 (GeForce Blackwell, GPUS.md derivation table)
    ("nvidia-geforce-rtx-5080", 84, 2.617, 8192, 1801),
    ("nvidia-geforce-rtx-5070-ti", 70, 2.452, 8192, 1406),
    ("nvidia-geforce-rtx-5070", 48, 2.512, 8192, 988),
    ("nvidia-geforce-rtx-5060-ti-16gb", 36, 2.572, 8192, 759),
    # AMD's R9700 "AI TOPS" are INT4 with sparsity: CUs x boost x 8192 (RDNA 4)
    ("amd-radeon-ai-pro-r9700", 64, 2.92, 8192, 1531),
])
def test_derived_rates_reproduce_the_vendors_sparse_ai_tops(gpu_id, units, clock_ghz, per_unit, published):
    """The tensor rates of these entries are derived from units x clock x per-unit rate; the same formula must
    give the one figure the vendor publishes (its sparse 'AI TOPS'), and the entry's dense rate is its share."""
    entry = _entries()[gpu_id]
    assert units * clock_ghz * per_unit / 1000 == pytest.approx(published, abs=1)
    dense = entry["dense_tflops"]
    assert dense["bf16_tensor"] == pytest.approx(published / (16 if "geforce" in gpu_id else 8), rel=0.002)


@pytest.mark.parametrize("gpu_id", [row[1] for row in NEW_CARDS])
def test_new_entries_are_sourced_dated_and_say_their_slots(gpu_id):
    entry = _entries()[gpu_id]
    assert entry["sources"] and any(s["checked"] == "read" for s in entry["sources"])
    assert entry["launch_msrp_date"][:4] == str(entry["release_year"])
    assert "slot_width" in entry and entry["interconnect"]["nvlink"] is False
    assert entry["pcie"]["generation"] in (4, 5, None)


def test_rtx_5060_ti_is_an_x8_card_and_the_boxes_have_no_slot():
    entries = _entries()
    assert entries["nvidia-geforce-rtx-5060-ti-16gb"]["pcie"] == {"generation": 5, "lanes": 8}
    for box in ("nvidia-dgx-spark", "amd-ryzen-ai-max-plus-395"):
        assert entries[box]["memory"]["unified"] is True and entries[box]["pcie"]["generation"] is None


def test_gpus_command_lists_the_new_cards():
    done = cli_in_process("gpus", "--json")
    assert done.returncode == 0, done.stderr
    listed = {row["id"]: row for row in json.loads(done.stdout)}
    for _, gpu_id, gib, gbs, _, _, msrp in NEW_CARDS:
        assert (listed[gpu_id]["memory_gib"], listed[gpu_id]["bandwidth_gbs"], listed[gpu_id]["msrp_usd"]) == \
            (gib, gbs, msrp)


def test_an_mi250x_is_planned_per_gcd_as_rocm_shows_it():
    """An MI250X package is two GCDs, each a GPU to ROCm and PyTorch: 64 GB at 1.6 TB/s and 191.5 dense bf16
    TFLOPS (AMD's 128 GB, 3.2 TB/s and 383 for the package; stas00's MAMF 147 TFLOPS is of one GCD). Before, a
    job 'fit on 127.36 GiB usable per GPU' that no single device holds."""
    g = load_gpu("mi250x")
    assert g.memory_gib == 64 and g.bandwidth_gbs == pytest.approx(3277 / 2)
    assert g.peak_tflops("bf16") == pytest.approx(383.0 / 2) and g.tdp_w == 280
    assert g.usable_gib < 64 and g.name == "Instinct MI250X (one GCD of 2)"
    other = load_gpu("mi300x")  # one device per package: as written
    assert other.memory_gib == 192 and other.name == "Instinct MI300X"


def test_an_mi250_is_the_mi250xs_package_with_fewer_cus_planned_per_gcd():
    """AMD's MI250: 208 CUs (104 per GCD) at 1.7 GHz, 1,024 FP16/BF16 FLOPS per clock per CU = 362.1 TFLOPS for the
    OAM (ROCm docs gpu-arch/mi250.md, its peak table; the MI250X's 220 give 383.0), 128 GB and 3.2 TB/s, 500 W.
    ROCm shows each GCD as one GPU, so the catalog plans 64 GB, 1.6 TB/s and 181.05 TFLOPS per device; its matmul
    share is the MI250X's (the same GCD at the same clock)."""
    from gpuplan.speed.gemm import full_clock_fraction

    entry = _entries()["amd-instinct-mi250"]
    assert entry["compute_units"] * 1.7 * 1024 / 1000 == pytest.approx(entry["dense_tflops"]["bf16_tensor"], abs=0.05)
    assert entry["sources"] and any(s["checked"] == "read" for s in entry["sources"])
    g = load_gpu("mi250")
    assert (g.id, g.name, g.memory_gib, g.bandwidth_gbs, g.tdp_w) == \
        ("amd-instinct-mi250", "Instinct MI250 (one GCD of 2)", 64, pytest.approx(3277 / 2), 250)
    assert g.peak_tflops("bf16") == pytest.approx(362.1 / 2) and not g.supports_dtype("fp8")
    assert full_clock_fraction(g) == full_clock_fraction(load_gpu("mi250x")) == 0.767


def test_only_cards_with_2_4_sparsity_get_the_sparse_marketing_figure():
    """`gpuplan gpus compare mi250x gaudi2 7900xtx` said 'datasheets with 2:4 sparsity say 383 bf16 TFLOPS' for the
    MI250X, 864 for Gaudi 2 and 246 for the RX 7900 XTX, whose matrix units have no structured sparsity (their
    entries' notes); Ampere and later, CDNA 3/4 and RDNA 4 do."""
    from gpuplan.api.catalog import gpus_compare

    rows = {r["id"]: r["marketing_note"] for r in gpus_compare(["mi250x", "gaudi2", "7900xtx", "mi300x", "r9700",
                                                                "rtx-3090", "t4", "apple-m4-max"])}
    assert len(rows) == 8
    for card in ("amd-instinct-mi250x", "intel-gaudi2", "amd-radeon-rx-7900-xtx", "nvidia-t4", "apple-m4-max"):
        assert "sparsity" not in rows[card], (card, rows[card])
    assert rows["amd-instinct-mi300x"] == "datasheets with 2:4 sparsity say 2,615 bf16 and 5,230 fp8 TFLOPS"
    assert rows["amd-radeon-ai-pro-r9700"].startswith("datasheets with 2:4 sparsity say 383 bf16")
    assert rows["nvidia-geforce-rtx-3090"].startswith("datasheets with 2:4 sparsity say 142 bf16 TFLOPS")


def test_the_sparse_fp8_figure_a_guide_quotes_as_speed_is_named_beside_the_dense_one():
    """The Spanish guide the project started from gives the RTX 6000 Ada '~1457 FP8' TFLOPS: twice the dense
    728.5 of its datasheet (2:4 sparsity). `gpus compare` named only the sparse bf16 figure (728), the same number
    as the dense fp8 row, so the guide's figure was said nowhere (docs/buy-or-rent.md says it is)."""
    from gpuplan.api.catalog import gpus_compare

    rows = {r["id"]: r for r in gpus_compare(["rtx 6000 ada", "4090"])}
    ada = rows["nvidia-rtx-6000-ada"]
    assert ada["marketing_note"] == "datasheets with 2:4 sparsity say 728 bf16 and 1,457 fp8 TFLOPS"
    assert rows["nvidia-geforce-rtx-4090"]["marketing_note"].startswith(
        "datasheets with 2:4 sparsity say 330 bf16 and 661 fp8 TFLOPS")  # 2 x 330.3 dense fp8 (fp32 accumulate)


@pytest.mark.parametrize("name, gpu_id, note", [
    ("A100 40GB PCIe", "nvidia-a100-pcie-40gb", "the one card whose name has those words"),
    ("GeForce 4090", "nvidia-geforce-rtx-4090", "the one card whose name has those words"),
    ("Tesla V100", "nvidia-v100-sxm2-32gb", "it could also be"),
])
def test_a_card_named_by_its_words_in_another_order_is_found_and_said(name, gpu_id, note):
    """Session 9's walk: 'Tesla V100' and 'A100 40GB PCIe' (the words of 'Tesla V100 SXM2 32GB' and 'A100 PCIe
    40GB' in another order) were unknown GPUs, while 'V100' resolved. Every word in one card's name (any order)
    names it, with a note; words in several names take the common variant, as 'V100' does."""
    gpu, said = resolve_gpu(name)
    assert gpu.id == gpu_id and note in said


@pytest.mark.parametrize("name", ["rtx-4080 super", "RTX 5060", "geforce 4070 super", "rx 7900"])
def test_a_card_of_another_tier_is_not_taken_for_the_one_asked(name):
    """s13 walk: `--gpu rtx-4070` was taken as the RTX 4070 Ti SUPER ("the one card whose name has those words"),
    16 GB at 672 GB/s where a 4070 has 12 GB at 504 GB/s, and `launch` wrote its files for it without the note.
    A card whose name adds Ti, SUPER, XT or XTX is another card: the name is unknown (exit 2, 'did you mean')."""
    with pytest.raises(UnknownNameError):
        resolve_gpu(name)
    assert resolve_gpu("4070 ti super")[0].id == "nvidia-geforce-rtx-4070-ti-super"
    assert resolve_gpu("7900 xtx")[0].id == "amd-radeon-rx-7900-xtx"


@pytest.mark.parametrize("name", ["nvidia rtx", "M3 Max 30-core", "rtx a6000 ada", "Blackwell"])
def test_words_without_a_model_number_or_in_no_name_stay_unknown(name):
    with pytest.raises(UnknownNameError):
        resolve_gpu(name)


def test_the_rtx_4060_is_its_own_card_not_the_4060_ti():
    """The s19 walk: a hobbyist with an RTX 4060 (8 GB, the commonest Ada desktop card) got "unknown GPU 'rtx-4060';
    did you mean 'rtx-4090'". Its entry, by hand from its spec sheet: 24 SMs x 2.46 GHz x 512 FLOP/clk/SM = 30.2
    dense BF16 TFLOPS (x 4 = 120.9 INT8 TOPS, half NVIDIA's sparse 242 'AI TOPS'); 128-bit GDDR6 at 17 Gbps = 272
    GB/s; 8 GB less the driver's reserve. '4060 Ti' still names the 16 GB Ti."""
    g, said = resolve_gpu("rtx-4060")
    assert g.id == "nvidia-geforce-rtx-4060" and said is None
    assert g.peak_tflops("bf16") == pytest.approx(24 * 2.46 * 512 / 1000, abs=0.05)
    assert g.peak_tflops("int8") == pytest.approx(24 * 2.46 * 2048 / 1000, abs=0.05)
    assert g.bandwidth_gbs == 128 / 8 * 17 == 272 and g.memory_gib == 8 and g.usable_gib < 8
    assert (g.tdp_w, g.msrp_usd, g.compute_capability) == (115, 299, "8.9")
    assert resolve_gpu("4060 ti")[0].id == "nvidia-geforce-rtx-4060-ti-16gb"


def test_the_rtx_4070_is_its_own_card_not_the_ti_super():
    """The s20 walk: an artist with a 12 GB RTX 4070 (since the s13 walk refused as another tier's name) got
    "unknown GPU 'rtx-4070'; did you mean 'rtx-5070'". Its entry, by hand from its spec sheets: 46 SMs x 2.475 GHz
    x 512 FLOP/clk/SM = 58.3 dense BF16 TFLOPS (x 4 = 233.2 INT8 TOPS); FP32 46 x 128 x 2 x 2.475 = 29.1 (club386's
    table); 192-bit GDDR6X at 21 Gbps = 504 GB/s; 12 GB less the driver's reserve; 200 W, $599. '4070 Ti SUPER'
    still names the 16 GB AD103 card, and '4070 super' stays unknown."""
    g, said = resolve_gpu("rtx-4070")
    assert g.id == "nvidia-geforce-rtx-4070" and said is None
    assert g.peak_tflops("bf16") == pytest.approx(46 * 2.475 * 512 / 1000, abs=0.05)
    assert g.peak_tflops("int8") == pytest.approx(46 * 2.475 * 2048 / 1000, abs=0.05)
    assert g.bandwidth_gbs == 192 / 8 * 21 == 504 and g.memory_gib == 12 and g.usable_gib < 12
    assert (g.tdp_w, g.msrp_usd, g.compute_capability) == (200, 599, "8.9")
    assert resolve_gpu("4070 ti super")[0].id == "nvidia-geforce-rtx-4070-ti-super"
    with pytest.raises(UnknownNameError):
        resolve_gpu("rtx 4070 super")


def test_the_rtx_2080_ti_is_turing_as_the_t4_is():
    """Session 22: the RTX 2080 Ti from NVIDIA's Turing whitepaper, checked by hand: 68 SMs x 1.545 GHz x 8 tensor
    cores x 64 FP16 FMA x 2 = 107.6 TFLOPS with FP16 accumulate, half that (53.8) with FP32 accumulate on GeForce
    Turing; FP32 68 x 64 x 2 x 1.545 = 13.4; 352 bits x 14 Gbps / 8 = 616 GB/s; deviceQuery's 11523260416 bytes.
    sm75 like the T4: a bf16 plan is refused with the T4's sentence, and left unset it runs fp16-mixed."""
    import gpuplan

    card = load_gpu("rtx-2080-ti")
    assert card.peak_tflops("fp16") == pytest.approx(68 * 1.545e9 * 8 * 64 * 2 / 2 / 1e12, abs=0.05)
    assert card.peak_tflops("fp32") == pytest.approx(68 * 64 * 2 * 1.545e9 / 1e12, abs=0.06)
    assert card.bandwidth_gbs == 352 * 14 / 8 and card.usable_gib == pytest.approx(10.73, abs=0.005)
    assert card.peak_tflops("bf16") is None and card.compute_capability == load_gpu("t4").compute_capability
    job = {"model": "Qwen/Qwen2.5-0.5B", "task": "train", "method": "full"}
    for name in ("rtx-2080-ti", "t4"):
        with pytest.raises(GpuplanError, match="has no bf16 tensor cores \\(Turing\\): set precision fp16-mixed"):
            gpuplan.estimate({**job, "gpu": name, "precision": "bf16-mixed"})
    assert gpuplan.estimate({**job, "gpu": "rtx-2080-ti"}).scenario["precision"] == "fp16-mixed"


def test_llama_cpp_on_the_rtx_2080_ti_streams_its_weights_at_the_datasheet_bandwidth():
    """Hand check of the decode step of Llama-3.1-8B Q4_K_M under llama.cpp on the 2080 Ti: the weights part is the
    GGUF bytes held on the card (the 4.92 GB file less its token embedding, kept in host memory) over the 616 GB/s
    llama.cpp's CUDA decode reaches (LLAMA_CPP_CUDA_DECODE_BANDWIDTH_FRACTION 1.0): 7.0 to 8.0 ms; memory-bound, and the
    step no faster than that bandwidth floor (kernel launches and the KV cache add to it)."""
    import gpuplan

    plan = gpuplan.estimate({"model": "meta-llama/Llama-3.1-8B-Instruct", "task": "infer", "engine": "llama.cpp",
                             "quant": "gguf-q4_k_m", "gpu": "rtx-2080-ti"})
    assert plan.verdict.fits and plan.speed.bound == "memory"
    on_card = plan.speed.parts_s["weights"] * 616e9
    assert 4.3e9 < on_card < 4.92e9
    assert plan.speed.step_time_s > plan.speed.parts_s["weights"] and plan.speed.tokens_per_s < 616e9 / 4.3e9


def test_every_catalog_card_compares_and_a_card_without_bf16_names_its_fp16_rate():
    """Session 23's fuzz: `gpus compare rtx-2080-ti rtx-3090` crashed (a traceback) on the Turing card, whose FP16
    with FP32 accumulate rate (53.8 TFLOPS, the Turing whitepaper's Table 1) was read as its bf16 rate, which it has
    none of. Every card in the catalog is compared here, so the next card added is too."""
    from gpuplan.api.catalog import gpus, gpus_compare

    ids = [r["id"] for r in gpus()]
    rows = {r["id"]: r["marketing_note"] for r in gpus_compare(ids)}
    assert len(rows) == len(ids) > 40
    assert rows["nvidia-geforce-rtx-2080-ti"] == "FP16 with FP16 accumulate 108, but PyTorch accumulates in FP32: 54"


@pytest.mark.parametrize("gpu_id, number, major", [
    ("v100-sxm2-16gb", 70, 7), ("t4", 75, 7), ("a100-sxm4-80gb", 80, 8), ("rtx-3090", 86, 8), ("rtx-4090", 89, 8),
    ("h100-sxm", 90, 9), ("b200", 100, 10), ("rtx-5090", 120, 12), ("mi300x", None, 0),
])
def test_compute_capability_is_read_in_one_place(gpu_id, number, major):
    """Session 30: the engines parsed ``compute_capability`` five ways (``int(float(...))``, ``startswith("9")``,
    ``split(".")``...); ``GpuSpec.capability`` is the one reading, vLLM's ``DeviceCapability.to_int`` (major x 10 +
    minor), and ``sm_major`` its major (``to_int() // 10``); another maker's card has none."""
    gpu = load_gpu(gpu_id)
    assert (gpu.capability, gpu.sm_major) == (number, major)


@pytest.mark.parametrize("name, gpu_id", [
    ("T4 16GB", "nvidia-t4"), ("L4 24GB", "nvidia-l4"), ("a10g 24gb", "nvidia-a10g"),
    ("RTX 4090 24GB", "nvidia-geforce-rtx-4090"), ("rtx-4090-24gb", "nvidia-geforce-rtx-4090"),
    ("RTX 3090 24 GB", "nvidia-geforce-rtx-3090"), ("rtx 5090 32gb", "nvidia-geforce-rtx-5090"),
    ("MI300X 192GB", "amd-instinct-mi300x"), ("l40s 48gb", "nvidia-l40s"), ("A6000 48GB", "nvidia-rtx-a6000"),
    ("h100-sxm-80gb", "nvidia-h100-sxm5-80gb"), ("A100 80GB SXM", "nvidia-a100-sxm4-80gb"),
])
def test_a_card_named_with_its_memory_beside_it_is_that_card(name, gpu_id):
    """The s30 walk: 'T4 16GB', 'L4 24GB', 'RTX 4090 24GB' (as cloud consoles and shops write cards) were unknown
    GPUs, 'T4 16GB' with "did you mean 'rtx-4080-16gb'", where 'T4' and 'V100 16GB' resolved. A memory size that
    is the card's own (gpus.yaml ``memory.size_gb``) names that card, and picks the variant where sizes differ."""
    assert resolve_gpu(name)[0].id == gpu_id


def test_a_memory_size_the_card_is_not_sold_with_is_one_sentence():
    """'RTX 4090 48GB' (a re-ballasted card the catalog lacks) is not the 24 GB RTX 4090: refused, naming its size."""
    with pytest.raises(GpuplanError, match=r"^'RTX 4090 48GB': the catalog's GeForce RTX 4090 has 24 GB, not 48"):
        resolve_gpu("RTX 4090 48GB")
