"""The GPU catalog: names, ambiguity, precision support and usable memory."""

import pytest

from gpuplan import GpuplanError
from gpuplan.errors import UnknownNameError
from gpuplan.hardware import gpus, load_gpu, resolve_gpu


def test_catalog_loads_every_entry():
    assert len(gpus()) == 52  # GB300 and MI355X added (issue 24), Grand Teton's 96GB HBM2e H100 (issue 20)


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


def test_a_count_and_a_card_in_one_gpu_name_says_how_to_split_them():
    """`fit --gpu 2x3090` takes a count; estimate's --gpu takes one card, and "2xh100" there got "did you mean
    'h100'?" (dropping the count). It now says the two flags; a count of 0 or an unknown card stays unknown."""
    with pytest.raises(GpuplanError, match=r"--gpu h100 --num-gpus 2\)$"):
        resolve_gpu("2xh100")
    with pytest.raises(GpuplanError, match="--gpu rtx-4090 --num-gpus 4"):
        resolve_gpu("4 x rtx-4090")
    for name in ("0x3090", "2xnosuch"):
        with pytest.raises(GpuplanError, match="unknown GPU"):
            resolve_gpu(name)
