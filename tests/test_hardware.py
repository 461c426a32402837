"""The GPU catalog: names, ambiguity, precision support and usable memory."""

import pytest

from gpuplan import GpuplanError
from gpuplan.errors import UnknownNameError
from gpuplan.hardware import gpus, load_gpu


def test_catalog_loads_every_entry():
    assert len(gpus()) == 49


def test_ambiguous_name_lists_candidates():
    with pytest.raises(GpuplanError) as err:
        load_gpu("H100")
    assert "nvidia-h100-sxm5-80gb" in str(err.value) and "nvidia-h100-pcie-80gb" in str(err.value)


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


def test_usable_memory():
    for g in gpus().values():
        assert 0 < g.usable_gib < g.memory_gib
    assert load_gpu("l40s").usable_gib == pytest.approx(46068 / 1024)  # reported (GPUS.md section 5)
    assert load_gpu("h100-sxm").usable_gib == pytest.approx(80 * 0.995)
    assert load_gpu("h100-sxm").nvlink_bandwidth_gbs == 900
