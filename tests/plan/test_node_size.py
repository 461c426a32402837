"""A node of more GPUs than any machine holds is warned (s8-walk's finding: 16 H100 SXM per node over 3 nodes was
planned without a word, timed as if one machine's NVLink joined all 16)."""

import pytest

import gpuplan
from gpuplan.market.offers import NODE_GPUS, largest_node
from gpuplan.market.store import load_offers

TRAIN = dict(model="qwen3-8b", task="train", gpu="h100-sxm", stack="torchtitan", train_tokens=1e8)


def _crowded(plan: gpuplan.Plan) -> list[str]:
    return [w for w in plan.warnings if "in one node" in w]


def test_the_catalog_holds_eight_h100_sxm_a_machine() -> None:
    assert largest_node("nvidia-h100-sxm5-80gb", load_offers()) == NODE_GPUS == 8


def test_sixteen_a_node_over_three_nodes_is_warned() -> None:
    (said,) = _crowded(gpuplan.estimate(dict(TRAIN, num_gpus=16, num_nodes=3)))
    assert said.startswith("16 GPUs in one node: no H100 SXM5 80GB machine in the price catalog holds more than 8")


def test_eight_a_node_and_a_count_placed_on_nodes_are_not() -> None:
    assert _crowded(gpuplan.estimate(dict(TRAIN, num_gpus=8, num_nodes=3))) == []
    placed = gpuplan.estimate(dict(TRAIN, num_gpus=16))  # placed as 2 nodes x 8 before the check
    assert (placed.scenario["num_gpus"], placed.scenario["num_nodes"]) == (8, 2)
    assert _crowded(placed) == []


def test_serving_on_sixteen_in_one_node_is_warned() -> None:
    plan = gpuplan.estimate(dict(model="llama-3.1-70b", task="infer", engine="vllm", gpu="h100-sxm", num_gpus=16,
                                 tp=16))
    assert len(_crowded(plan)) == 1


def test_several_unified_memory_computers_are_nodes_of_one_gpu() -> None:
    """Two M4 Max or two DGX Sparks are two computers: "--num-gpus 2" was planned as one machine of two GPUs joined
    by PCIe gen4 without peer-to-peer. They are two nodes of one GPU each, linked over their own ports (the Sparks'
    ConnectX-7), the plan of --num-nodes 2, whatever the task."""
    serve = dict(model="qwen3-8b", task="infer", engine="vllm", gpu="dgx-spark")
    sparks, nodes = gpuplan.estimate(dict(serve, num_gpus=2)), gpuplan.estimate(dict(serve, num_nodes=2))
    assert (sparks.scenario["num_gpus"], sparks.scenario["num_nodes"], sparks.scenario["tp"]) == (1, 2, 2)
    assert sparks.speed.tokens_per_s == nodes.speed.tokens_per_s
    assert sparks.speed.parts_s == nodes.speed.parts_s


@pytest.mark.parametrize("spread", [dict(num_gpus=2), dict(num_nodes=2), dict(num_gpus=3, sharding="zero3")])
def test_training_over_several_macs_is_refused(spread: dict) -> None:
    """Two Macs were planned as two nodes of one GPU training data parallel (s27's leftover), but MPS tensors have
    no collective backend (NCCL is CUDA-only; gloo lists cpu and cuda, pytorch/pytorch#160732, #189853), so no
    training stack runs it: one sentence, the fix named. One Mac still plans, and two DGX Sparks (CUDA, NCCL over
    ConnectX-7) train over both."""
    job = dict(model="qwen3-8b", task="train", method="lora")
    with pytest.raises(gpuplan.GpuplanError, match=r"^training on [23] Macs: PyTorch's MPS backend has no "
                       r"collective backend .* train on one Mac \(num_gpus 1, num_nodes 1\)$"):
        gpuplan.estimate(dict(job, gpu="apple-m4-max", **spread))
    assert gpuplan.estimate(dict(job, gpu="apple-m4-max")).verdict.fits
    assert gpuplan.estimate(dict(job, gpu="dgx-spark", num_gpus=2)).scenario["num_nodes"] == 2


def test_a_mac_is_not_told_to_split_llama_cpp_over_more_gpus() -> None:
    """s19-rewalk's finding: Qwen3-235B Q4_K_M on one M3 Max (96 GiB of its 128 GB for the GPU) was offered "split
    the layers over 2 GPUs (llama.cpp --split-mode layer): 94.2 -> 69.1 GiB (fits)" and the same with CPU layers,
    though a second M3 Max is a second computer and llama.cpp refuses to serve across machines. No change fits one
    Mac now; an RTX 4090 box, which can hold more cards, keeps the split."""
    serve = dict(model="qwen3-235b", task="infer", engine="llama.cpp", quant="q4_k_m")
    mac = gpuplan.estimate(dict(serve, gpu="apple-m3-max"))
    assert not mac.verdict.fits and round(mac.memory.device_peak_gib, 1) == 94.2
    assert [f.change for f in mac.suggestions if "GPUs" in f.change] == []
    try:
        gpuplan.estimate(dict(serve, gpu="apple-m3-max", num_gpus=2))
    except gpuplan.GpuplanError as e:  # what the old fix led to
        assert "llama.cpp serves on one machine" in str(e)
    else:
        raise AssertionError("2 x M3 Max with llama.cpp was planned")
    box = gpuplan.estimate(dict(serve, gpu="rtx-4090"))
    split = "split the layers over 8 GPUs (llama.cpp --split-mode layer)"
    assert any(f.change.startswith(split) for f in box.suggestions)


def test_not_priced_points_at_changes_only_where_some_are_listed(capsys) -> None:
    """The Mac above lists no change, so its "not priced" line does not send the user to "a change above"."""
    from gpuplan.cli import run

    args = ["estimate", "--model", "qwen3-235b", "--task", "infer", "--engine", "llama.cpp", "--quant", "q4_k_m"]
    assert run([*args, "--gpu", "apple-m3-max"]) == 0
    mac = " ".join(capsys.readouterr().out.split())
    assert "not priced: the job does not fit on this GPU (ask `gpuplan recommend`)" in mac
    assert "changes that would make it fit" not in mac
    assert run([*args, "--gpu", "rtx-4090"]) == 0
    box = " ".join(capsys.readouterr().out.split())
    assert "not priced: the job does not fit on this GPU (apply a change above, or ask `gpuplan recommend`)" in box


def test_fit_names_the_ram_a_model_needs_past_the_mac_s_gpu() -> None:
    """s19-rewalk's finding: `fit --gpu apple-m3-max --engine llama.cpp --quant q4_k_m` said of Qwen3-235B "no:
    needs 94 GiB per card as asked" on a card of 96 usable: 94 GiB is the GPU's share of llama.cpp's split, and
    the 30 layers past it need 42 GiB of RAM, more than the 32 GiB the Mac's one pool leaves the CPU."""
    report = gpuplan.fit("apple-m3-max", {"engine": "llama.cpp", "quant": "q4_k_m"}, models=["qwen3-235b"])
    (row,) = report.rows
    assert not row.fits
    assert row.reason == ("needs 94 GiB per card and 42 GiB of RAM for the 30 layers past them as asked, and no "
                          "change on these cards fits")
