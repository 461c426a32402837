"""A llama.cpp run split over mixed cards (issue 33): a 4090 beside a 3090, --tensor-split; each device's plan,
composed (plan/split.py)."""

from __future__ import annotations

import pytest

import gpuplan
from gpuplan.errors import GpuplanError

PAIR = {"model": "llama-3.1-70b", "task": "infer", "engine": "llama.cpp", "quant": "q4_k_m", "gpu": "rtx-4090",
        "extra_gpus": ["rtx-3090"]}


def one(gpu: str):
    return gpuplan.estimate({**{k: v for k, v in PAIR.items() if k != "extra_gpus"}, "gpu": gpu, "num_gpus": 2},
                            advise=False)


def test_a_4090_beside_a_3090_splits_70b_q4_k_m_by_memory():
    p = gpuplan.estimate(PAIR)
    devices = p.memory.engine["devices"]
    assert [d["gpu"] for d in devices] == ["nvidia-geforce-rtx-4090", "nvidia-geforce-rtx-3090"]
    # llama.cpp's load_tensors: 80 layers, act_gpu_layers 81, layer il on device 0 while il / 81 < 0.5 (il <= 40)
    assert [d["layers"] for d in devices] == [41, 39] and sum(d["share"] for d in devices) == pytest.approx(1)
    assert p.memory.fits and all(d["fits"] for d in devices) and p.cost is None
    assert p.scenario["tensor_split"] == pytest.approx([23.88, 23.88], abs=0.01)
    assert "rtx-4090 + rtx-3090" in p.resolved
    # each device holds half the layers: what two 4090s hold each, so the same per-device peak
    assert devices[0]["device_peak_gib"] == pytest.approx(one("rtx-4090").memory.device_peak_gib, rel=0.02)
    # a layer split runs the devices in turn: the step is each card's weighted by the layers it holds
    s4090, s3090 = one("rtx-4090").speed, one("rtx-3090").speed
    assert p.speed.step_time_s == pytest.approx(41 / 80 * s4090.step_time_s + 39 / 80 * s3090.step_time_s)
    assert s3090.tokens_per_s < p.speed.tokens_per_s < s4090.tokens_per_s


def test_a_split_that_fits_says_its_largest_batch_and_prompt():
    """A split that fits printed "largest batch that fits: none; longest prompt: none" (each device was planned
    without the limits search; session 7's walk). The whole holds what its tightest device holds: the least over the
    devices of each one's search, and a split of two equal cards holds within one request of what the even layout
    of two of them holds."""
    from gpuplan.plan.advice import largest_fitting
    from gpuplan.plan.resolve import resolve
    from gpuplan.plan.split import _device_scenario, split_cards
    from gpuplan.scenario import scenario_from

    p = gpuplan.estimate(PAIR)
    s = scenario_from(PAIR)
    cards = split_cards(s)
    found = []
    for i in range(2):
        r = resolve(_device_scenario(s, cards, [c.usable_gib for c in cards], i))
        found.append(largest_fitting(r.scenario, r.model, r.gpu))
    assert p.memory.max_batch_size == min(b for b, _ in found) and p.memory.max_batch_size >= 1
    assert p.memory.max_seq_len == min(n for _, n in found) and p.memory.max_seq_len >= PAIR.get("prompt_tokens", 1024)
    even = gpuplan.estimate({**{k: v for k, v in PAIR.items() if k != "extra_gpus"}, "gpu": "rtx-3090",
                             "num_gpus": 2})
    pair = gpuplan.estimate({**PAIR, "gpu": "rtx-3090"})
    assert abs(pair.memory.max_batch_size - even.memory.max_batch_size) <= 1  # 10 and 11 requests


def test_a_split_that_overfills_one_card_does_not_fit():
    p = gpuplan.estimate({**PAIR, "tensor_split": [3, 1]})
    first, second = p.memory.engine["devices"]
    # il / 81 < 0.75 for il <= 60: llama.cpp's load_tensors puts layers 0-60 on the first card
    assert first["layers"] == 61 and not first["fits"] and second["fits"] and p.memory.fits is False
    assert p.gpu.name == "GeForce RTX 4090" and p.memory.device_peak_gib == first["device_peak_gib"]
    assert any("GeForce RTX 4090 is over by" in w and "tensor_split" in w for w in p.warnings)


def test_the_split_takes_the_command_line_s_words():
    from typer.testing import CliRunner

    from gpuplan.cli import app

    out = CliRunner().invoke(app, ["estimate", "--model", "llama-3.1-70b", "--task", "infer", "--engine", "llama.cpp",
                                   "--quant", "q4_k_m", "--gpu", "rtx-4090", "--extra-gpus", "rtx-3090",
                                   "--tensor-split", "24,24"]).stdout
    assert "llama.cpp --tensor-split 24,24 (as given)" in " ".join(out.split())
    for bad, words in (({"engine": "vllm"}, "engine llama.cpp"), ({"tensor_split": [1, 1, 1]}, "3 shares for 2"),
                       ({"num_gpus": 3}, "drop num_gpus"), ({"tensor_split": [1, -1]}, "positive share")):
        with pytest.raises(GpuplanError, match=words):
            gpuplan.estimate({**PAIR, **bad})


def test_an_uneven_split_over_one_kind_of_card_is_priced_like_the_even_one():
    """s13 walk: Qwen3-30B-A3B at Q4_K_M over two 4090s with --tensor-split 3,1 was not priced, and said "no price
    for GeForce RTX 4090: no on-demand offer in force" (its devices' plans were built without offers) and "no offer
    rents a mixed pair" (the pair is not mixed). Both cards are 4090s: the split is priced on the same 2x offer as
    the even split, at its own speed, so $ per hour is the same and $ per million tokens is hour / tokens."""
    job = {"model": "qwen3-30b-a3b", "task": "infer", "engine": "llama.cpp", "quant": "gguf-q4_k_m",
           "gpu": "rtx-4090", "num_gpus": 2}
    even, uneven = gpuplan.estimate(job, advise=False), gpuplan.estimate({**job, "tensor_split": [3, 1]})
    assert uneven.cost is not None and uneven.cost.offer == even.cost.offer
    assert uneven.cost.usd_per_hour == pytest.approx(even.cost.usd_per_hour)
    assert uneven.cost.usd_per_million_tokens == pytest.approx(
        uneven.cost.usd_per_hour / (3600 * uneven.speed.tokens_per_s) * 1e6, rel=0.01)
    assert not any("no price" in w or "mixed pair" in w for w in uneven.warnings)
    mixed = gpuplan.estimate(PAIR, advise=False)
    assert mixed.cost is None and mixed.warnings.count(
        "no offer rents a mixed pair of cards: not priced (owning them: gpuplan buy)") == 1
    assert not any(w.startswith("no price for") for w in mixed.warnings)


@pytest.mark.parametrize("devices", [dict(gpu="h100-sxm", extra_gpus=["apple-m4-max"]),
                                     dict(gpu="apple-m4-max", num_gpus=2, tensor_split=[3, 1])])
def test_a_split_with_an_apple_silicon_chip_is_refused(devices):
    """A llama.cpp split is one process's devices in one machine. An H100 with an M4 Max was planned as 'fits on
    H100 SXM5 80GB + M4 Max', 38 tokens/s; an Apple silicon Mac is a whole computer that takes no other device
    (Apple: eGPUs only on Intel-based Macs): one sentence, exit 2 on the command line."""
    with pytest.raises(GpuplanError, match=r"^M4 Max .* is a whole computer, and a llama.cpp split runs the devices "
                                           "of one machine"):
        gpuplan.estimate(dict(model="qwen3-8b", task="infer", engine="llama.cpp", **devices))


def test_the_device_sentence_names_its_card_beside_the_fullest_device_s_table():
    """s18 walk: 2x RTX 3090 + an RTX 4060 Ti 16GB serving Qwen3-14B Q4_K_M showed the 4060 Ti's memory (the fullest:
    10 layers, 4.07 of 15.92 GiB) above "this device holds 38% of the layers (15 of 40)", the first 3090's share
    (23.88 / (23.88 + 23.88 + 15.92) = 0.375, 40 x 0.375 = 15 layers). The sentence names the card it is about."""
    p = gpuplan.estimate({"model": "qwen3-14b", "task": "infer", "engine": "llama.cpp", "quant": "q4_k_m",
                          "gpu": "rtx-3090", "extra_gpus": ["rtx-3090", "rtx-4060-ti-16gb"], "batch_size": 4})
    assert p.gpu.id == "nvidia-geforce-rtx-4060-ti-16gb"
    assert [d["layers"] for d in p.memory.engine["devices"]] == [16, 15, 9]  # llama.cpp's rule: the test below
    said = [a for a in p.assumptions if a.startswith("llama.cpp --tensor-split: ")]
    assert said == ["llama.cpp --tensor-split: rtx-3090 holds 16 of 40 layers (40%) and their KV cache, a compute "
                    "buffer of its own, without the output head (src/llama-model.cpp load_tensors)"]


@pytest.mark.parametrize(("split", "n_layer", "layers", "head"), [
    # the s18 walk's Qwen3-14B (40 layers) on 3090 + 3090 + 4060 Ti, split by memory 23.88,23.88,15.92: cumulative
    # 0.375, 0.75, 1; act_gpu_layers 41; il / 41 < 0.375 for il <= 15, < 0.75 for il <= 30: 16/15/9, and the
    # output (il 40: 40 / 41 = 0.976) on the third
    ([23.88, 23.88, 15.92], 40, [16, 15, 9], 2),
    # by hand, 3,1 over 32 layers: cumulative 0.75, 1; il / 33 < 0.75 for il <= 24: 25/7, the output on the second
    ([3, 1], 32, [25, 7], 1),
    # a last share under 1 / (n_layer + 1): 40 / 41 = 0.976 < 0.99, so every layer and the output on the first
    ([99, 1], 40, [40, 0], 0),
])
def test_layers_go_where_llama_cpp_s_load_tensors_puts_them(split, n_layer, layers, head):
    from gpuplan.engines.llama_cpp import split_layers

    assert split_layers(split, n_layer) == (layers, head)


def test_the_walk_s_split_holds_the_head_on_the_last_card_only():
    """The s18 walk's finding 11: gpuplan planned 15/15/10 layers with the output head on every card; llama.cpp
    places 16/15/9 with the head on the 4060 Ti alone. Each device's plan knows its place
    (``Scenario._split_device``)."""
    from gpuplan.model.catalog import load_model
    from gpuplan.model.quant import make_format

    p = gpuplan.estimate({"model": "qwen3-14b", "task": "infer", "engine": "llama.cpp", "quant": "q4_k_m",
                          "gpu": "rtx-3090", "extra_gpus": ["rtx-3090", "rtx-4060-ti-16gb"], "batch_size": 4})
    devices = p.memory.engine["devices"]
    assert [d["layers"] for d in devices] == [16, 15, 9]
    held = [d["model_buffer_gib"] for d in devices]
    parts = load_model("qwen3-14b").weight_bytes(make_format("gguf-q4_k_m"))
    head = (parts["lm_head"] + parts["norms"]) / 2**30
    per_layer = held[0] / 16  # the first 3090 holds 16 layers and no head
    assert held[1] == pytest.approx(15 * per_layer, rel=1e-9)
    assert held[2] == pytest.approx(9 * per_layer + head, rel=1e-9)


def test_a_tensor_parallel_size_given_to_llama_cpp_is_its_layer_split():
    """Walk s20: ``estimate --engine llama.cpp --num-gpus 2 --tp 2`` headed the plan 'tensor parallel 2' and timed it
    at 183 tok/s a user, where ``--pp 2`` (its --split-mode layer) gave 182: llama.cpp splits layers over GPUs (or
    rows), it has no tensor parallelism. The resolver now takes tp as the layer split, says so, and the two plans are
    one."""
    from gpuplan import estimate

    base = {"model": "llama-3.1-8b", "task": "infer", "engine": "llama.cpp", "gpu": "h100-sxm", "num_gpus": 2}
    as_tp, as_pp = estimate({**base, "tp": 2}, advise=False), estimate({**base, "pp": 2}, advise=False)
    assert "tensor parallel" not in as_tp.resolved and "layers split over 2" in as_tp.resolved
    assert any("tp 2 taken as its layer split over 2 GPUs (llama.cpp --split-mode layer)" in n for n in as_tp.defaults)
    assert as_tp.speed.tokens_per_s == as_pp.speed.tokens_per_s
    assert as_tp.memory.device_peak_gib == as_pp.memory.device_peak_gib


def test_tp_beside_a_tensor_split_is_the_layer_split_it_names():
    """s20-fuzz2: since tp on llama.cpp is its layer split (plan.resolve.serving_split), ``--tp 2 --tensor-split 1,1``
    was still refused as 'pp 2 on one machine (tp 1)'; it is the same run as ``--pp 2`` beside the split, and a tp
    that names another count is one sentence."""
    base = {"model": "qwen3-8b", "task": "infer", "engine": "llama.cpp", "gpu": "rtx-3090", "num_gpus": 2,
            "tensor_split": [1, 1]}
    by_tp, by_pp = gpuplan.estimate({**base, "tp": 2}), gpuplan.estimate({**base, "pp": 2})
    assert (by_tp.scenario["tp"], by_tp.scenario["pp"]) == (1, 2)
    assert by_tp.speed.tokens_per_s == pytest.approx(by_pp.speed.tokens_per_s)
    with pytest.raises(GpuplanError, match=r"is pp 2 on one machine \(tp 1, or tp 2 taken as that layer split\)"):
        gpuplan.estimate({**base, "tp": 3})


@pytest.mark.parametrize("share", [1e-320, 1e-39])
def test_a_share_llama_cpp_cannot_read_is_refused(share):
    """s22 fuzz: '--tensor-split 1e-320,1' was planned (1 layer on the first card) and launch wrote
    '-ts 9.99989e-321,1'; llama-server reads each share with std::stof (common/arg.cpp, --tensor-split), which
    throws std::out_of_range below a float's range (FLT_MIN, 1.1754944e-38), so the script stopped at its start.
    A share llama.cpp cannot read is refused in one sentence; the least it reads is planned."""
    with pytest.raises(GpuplanError, match=r"tensor_split takes one positive share per device, each from 1\.2e-38"):
        gpuplan.estimate({**PAIR, "tensor_split": [share, 1]})
    assert gpuplan.estimate({**PAIR, "tensor_split": [1.2e-38, 1]}, advise=False).memory is not None


def test_the_split_line_prints_the_shares_as_the_scenario_holds_them():
    # a 4090 beside a 3080: the 3080's usable memory is no round number, and the line once printed 9.95123 where
    # the scenario (and its --json) holds 9.95
    p = gpuplan.estimate({**PAIR, "extra_gpus": ["rtx-3080"]}, advise=False)
    line = next(c for c in p.setup.chosen if "tensor-split" in c)
    assert p.scenario["tensor_split"] == pytest.approx([23.88, 9.95])
    assert line.startswith("llama.cpp --tensor-split 23.88,9.95 (")


def test_the_split_s_assumptions_say_its_own_decode_step_and_first_token():
    """The split's assumed lines were the first device's: an RTX 4070 beside an RTX 3060 printed "time to first
    token: 0.43 s" in its speed and "assumed: time to first token 0.28 s" (the 4070 alone) below it, and a decode
    step of 9.88 ms of weights where the parts summed 12.95 (session 24's walk). They say the composed figures."""
    p = gpuplan.estimate({"model": "llama-3.1-8b", "task": "infer", "engine": "llama.cpp", "quant": "q4_k_m",
                          "gpu": "rtx-4070", "extra_gpus": ["rtx-3060"], "batch_size": 3})
    first = [a for a in p.assumptions if a.startswith("time to first token")]
    step = [a for a in p.assumptions if a.startswith("decode step of")]
    assert len(first) == 1 and len(step) == 1
    assert f"{p.speed.ttft_s:.2f} s for one" in first[0] and f"{p.speed.ttft_burst_s:.2f} s for the last" in first[0]
    assert f"weights {1e3 * p.speed.parts_s['weights']:.2f} ms" in step[0]
    alone = gpuplan.estimate({"model": "llama-3.1-8b", "task": "infer", "engine": "llama.cpp", "quant": "q4_k_m",
                              "gpu": "rtx-4070", "batch_size": 3}, advise=False)
    assert p.speed.ttft_s > 1.2 * alone.speed.ttft_s  # the 3060's share is slower: not the 4070's own figure


def test_a_split_whose_fastest_card_holds_the_job_alone_says_so():
    """Session 24's walk: Llama-3.1-8B Q4_K_M for 3 users over an RTX 4070 and an RTX 3060 streams 63 tokens/s a
    user, where the 4070 alone holds it (5.7 of 11.9 GiB) and streams 80: a layer split runs the cards in turn, so
    the 3060's share slows every token. The split says so; a split no card holds alone (70B) does not."""
    s = {"model": "llama-3.1-8b", "task": "infer", "engine": "llama.cpp", "quant": "q4_k_m", "gpu": "rtx-4070",
         "extra_gpus": ["rtx-3060"], "batch_size": 3}
    p = gpuplan.estimate(s)
    alone = gpuplan.estimate({**{k: v for k, v in s.items() if k != "extra_gpus"}}, advise=False)
    said = [w for w in p.warnings if "holds this job alone" in w]
    assert len(said) == 1 and said[0].startswith("GeForce RTX 4070 holds this job alone")
    assert f"streams {alone.speed.streaming_tokens_per_s_per_user:,.0f} tokens/s a user there, against " \
           f"{p.speed.streaming_tokens_per_s_per_user:,.0f} split" in said[0]
    assert alone.speed.streaming_tokens_per_s_per_user > 1.2 * p.speed.streaming_tokens_per_s_per_user
    assert not any("holds this job alone" in w for w in gpuplan.estimate(PAIR).warnings)
