"""The optimizer's states and step temporaries for Adafactor and Lion, LoRA and full, against the real optimizer
code: transformers' ``Adafactor.step`` run on the meta device under the simulator's allocation tracker, the
fake-tensor simulation of a whole step, and bitsandbytes' 32-bit Lion read off its source (its CUDA kernel cannot
run here: one fp32 state, updated in place)."""

from __future__ import annotations

import pytest

from gpuplan import estimate
from gpuplan.model.catalog import load_model
from gpuplan.scenario import scenario_from
from gpuplan.tensors.state import optimizer_step_temporaries, stepped_tensors

GIB = 2**30
QWEN_05B = dict(model="qwen2.5-0.5b", task="train", micro_batch_size=1, seq_len=256, gpu="h100-sxm")


def _adafactor_second_step(shapes, dtype) -> int:
    """Bytes transformers' Adafactor (the Trainer's settings) allocates beyond the parameters, gradients and its
    states during its second step over ``shapes``, in order, on the meta device."""
    torch = pytest.importorskip("torch")
    optimization = pytest.importorskip("transformers.optimization")
    from gpuplan.sim.tracker import MemoryTracker

    with torch.device("meta"):
        params = [torch.nn.Parameter(torch.empty(shape, dtype=dtype)) for shape in shapes]
    for p in params:
        p.grad = torch.empty_like(p)
    opt = optimization.Adafactor(params, lr=1e-3, scale_parameter=False, relative_step=False)
    tracker = MemoryTracker()
    with tracker:
        opt.step()
        for p in params:
            tracker.relabel(p, "parameters")
        for state in opt.state.values():
            for value in state.values():
                if isinstance(value, torch.Tensor):
                    tracker.relabel(value, "optimizer")
        start = tracker.current
        tracker.phase = "second"
        opt.step()
    return tracker.peaks["second"].bytes - start


@pytest.mark.parametrize(("dtype", "k"), [("float32", 2), ("bfloat16", 4)])
def test_adafactor_steps_one_tensor_at_a_time_as_its_code_allocates(dtype, k):
    """Qwen2.5-0.5B's MLP adapters at rank 16, in peft's order (up's lora_A 16 x 896, lora_B 4,864 x 16, down's
    lora_A 16 x 4,864, lora_B 896 x 16): the peak is at down's lora_A, two (fp32) or four (bf16: the fp32 copies
    of the gradient and the parameter) of its 77,824 elements and up's lora_B's ``update`` still bound, 4 B each:
    4 x (2 x 77,824 + 77,824) = 933,888 bytes, 4 x (4 x 77,824 + 77,824) = 1,556,480. The model counted two (or
    four) of the base model's largest linear, 4,358,144 elements: 34.9 MB for these 0.9 MB."""
    torch = pytest.importorskip("torch")
    shapes = [(16, 896), (4864, 16), (16, 4864), (896, 16)]
    sizes = [a * b for a, b in shapes]
    stepped = [(n, sizes[i - 1] if i else 0) for i, n in enumerate(sizes)]
    s = scenario_from(dict(QWEN_05B, method="lora", optimizer="adafactor"))
    counted = optimizer_step_temporaries(s, sum(sizes), 4 if k == 2 else 2, stepped)
    assert counted == 4 * (k * 77_824 + 77_824) == {2: 933_888, 4: 1_556_480}[k]
    measured = _adafactor_second_step(shapes, getattr(torch, dtype))
    # beyond the full-size tensors: the row and column means and factors, the norms' 0-d results (512-byte blocks)
    assert counted <= measured <= counted + 4 * 4864 + 8 * 512


def test_the_lora_step_counts_the_adapters_not_the_base_weights():
    """Qwen2.5-0.5B LoRA (rank 16, all-linear, fp32 adapters): the largest stepped tensors are the MLP's
    16 x 4,864 and 4,864 x 16 (77,824 elements); down's lora_A follows up's lora_B, so 2 x 77,824 + 77,824 =
    233,472 elements, 933,888 bytes (0.0009 GiB, the simulation's 0.0009 GiB of step temporaries). It was
    2 x 4 B x 4,358,144 (896 x 4,864, a frozen base weight) = 34.9 MB."""
    s = scenario_from(dict(QWEN_05B, method="lora", optimizer="adafactor"))
    m = load_model(s.model)
    stepped = stepped_tensors(s, m)
    assert max(n for n, _ in stepped) == 16 * 4864
    assert optimizer_step_temporaries(s, 0, 4, stepped) == 933_888


def test_a_full_adafactor_step_is_the_peak_where_the_embedding_is_stepped():
    """Full bf16-true Adafactor of Qwen2.5-0.5B: the step's largest tensor is the tied embedding, 151,936 x 896 =
    136,134,656 elements, stepped first: four fp32 copies of it, 4 x 4 B x 136,134,656 = 2.029 GiB, what the
    fake-tensor simulation allocates (2.0291 GiB). The step, 0.92 GiB of weights and as much of gradients
    beside it, is the peak: 3.93 GiB, the simulation's 3.87 + 0.0625 of cuBLAS workspace (which it does not
    allocate). The model took the largest linear (4,358,144 elements) and put the peak at the backward, 2.41."""
    fields = dict(QWEN_05B, method="full", optimizer="adafactor", precision="bf16-true")
    s = scenario_from(fields)
    assert stepped_tensors(s, load_model(s.model))[0] == (151_936 * 896, 0)
    mem = estimate(fields, advise=False).memory
    assert mem.peak_phase == "optimizer_step"
    assert mem.other["optimizer step temporaries"] == pytest.approx(16 * 136_134_656 / GIB, rel=1e-3)
    assert mem.phases_gib["optimizer_step"] == pytest.approx(3.8726 + 0.0625, rel=0.005)


@pytest.mark.parametrize(("fields", "trainable_bytes"), [
    (dict(method="lora", adapter_dtype="bf16"), 2), (dict(method="full", precision="bf16-true"), 2)])
def test_lion_keeps_one_fp32_state_and_no_step_temporary(fields, trainable_bytes):
    """The Trainer's ``lion_32bit`` is bitsandbytes' Lion with ``optim_bits`` 32: ``init_state`` makes ``state1``
    float32 whatever the parameter's dtype, ``update_step`` one in-place CUDA kernel. So 4 B a trained parameter
    (2 B were counted for bf16 adapters or a bf16-true fine-tune) and nothing more in the step (three of the
    base model's largest linear, 2 x 4,358,144 x 3 bytes and more, were counted)."""
    est = estimate(dict(QWEN_05B, optimizer="lion", **fields), advise=False)
    trained = est.memory.gradients_gib * GIB / trainable_bytes
    assert est.memory.optimizer_gib * GIB == pytest.approx(4 * trained, rel=1e-3)
    s = scenario_from(dict(QWEN_05B, optimizer="lion", **fields))
    assert optimizer_step_temporaries(s, int(trained), 2, stepped_tensors(s, load_model(s.model))) == 0.0


def test_zero_hands_adafactor_flat_partitions_so_it_keeps_the_whole_second_moment():
    """DeepSpeed ZeRO gives the client optimizer one flat fp32 tensor a parameter group (``stage_1_and_2.py``:
    ``param_group['params'] = [single_partition_of_fp32_groups[i]]``, each group its own ``step()``; stage 3 its
    sub-groups'), so transformers' Adafactor sees 1-D tensors (``factored = len(shape) >= 2`` is False) and keeps
    ``exp_avg_sq`` whole. By hand, Qwen2.5-0.5B full under ZeRO-2 on 2 GPUs: 494,032,768 parameters, of them
    71,552 norms and biases (24 x (2 x 896 norms + 896 + 128 + 128 q/k/v biases) + 896), so the Trainer's two
    groups are 493,961,216 and 71,552 elements; a rank holds half of each. States: 4 B x 494,032,768 / 2 =
    988,065,536 bytes (1,548,544 were counted, rows and columns of matrices the optimizer never sees). Step: two
    fp32 tensors of the larger partition, 4 x 2 x 246,980,608 = 1,975,844,864 bytes, beside the fp32 gradient
    partition (4 x 247,016,384), what the real optimizer allocates for a 1-D fp32 tensor on the meta device."""
    torch = pytest.importorskip("torch")
    fields = dict(QWEN_05B, method="full", optimizer="adafactor", sharding="zero2", num_gpus=2)
    s = scenario_from(fields)
    assert stepped_tensors(s, load_model(s.model)) == [(493_961_216, 0), (71_552, 0)]
    mem = estimate(fields, advise=False).memory
    assert mem.optimizer_gib * GIB == pytest.approx(4 * 494_032_768 / 2, rel=1e-6)
    assert mem.other["optimizer step temporaries"] * GIB == pytest.approx(
        4 * 2 * 246_980_608 + 4 * 247_016_384, rel=1e-6)
    measured = _adafactor_second_step([(246_980_608,)], torch.float32)
    assert 8 * 246_980_608 <= measured <= 8 * 246_980_608 + 8 * 512
    lora = estimate(dict(fields, method="lora"), advise=False).memory  # 8,798,208 adapter elements, flat too
    assert lora.optimizer_gib * GIB == pytest.approx(4 * 8_798_208 / 2, rel=1e-6)
    three = scenario_from(dict(fields, sharding="zero3"))  # stage 3 steps sub-groups of 1e9 of the rank's elements
    assert optimizer_step_temporaries(three, 0, 4, [(3_000_000_000, 0)]) == 4 * 2 * 1e9


def test_transformers_5_fused_experts_are_stepped_and_factored_whole():
    """transformers 5 holds Qwen3-30B-A3B's experts as two 3-D parameters a layer (``Qwen3MoeExperts``:
    ``gate_up_proj`` (128, 1,536, 2,048), ``down_proj`` (128, 2,048, 768)). A full fine-tune's Adafactor steps each
    whole: two fp32 tensors of 128 x 1,536 x 2,048 = 402,653,184 elements with the router's 2,048 x 128 update
    still bound, 4 x (2 x 402,653,184 + 262,144) bytes, what the real optimizer allocates for that tensor on the
    meta device (one expert's 1,572,864 elements were counted). Its factors: rows E x 2i and columns E x h of the
    fused tensor (``_get_options`` factors the last two dimensions), 128 x (1,536 + 2,048) + 128 x (768 + 2,048) =
    819,200 elements a layer, what the optimizer makes; 128 x 2,048 a layer fewer than per-expert gate and up.
    The fake-tensor simulation of the whole step (bf16-true, micro-batch 1, 256 tokens, extrapolated from 1 and 2
    layers) peaks at the step, 119.8949 GiB (+ 0.0625 of cuBLAS workspace it does not allocate), with 6.0017 GiB
    of temporaries and 0.1522 of states; the estimate was 118.64 (4.64 and 0.199: one expert's matrix as the
    largest tensor, the embedding's 311,164,928 elements stepped first), and is 119.96 (6.00, 0.152)."""
    torch = pytest.importorskip("torch")
    optimization = pytest.importorskip("transformers.optimization")
    import dataclasses

    from gpuplan.tensors.state import adafactor_state_bytes

    s = scenario_from(dict(QWEN_05B, model="qwen3-30b-a3b", method="full", optimizer="adafactor"))
    m = load_model(s.model)
    stepped = stepped_tensors(s, m)
    assert (402_653_184, 2048 * 128) in stepped and (128 * 2048 * 768, 402_653_184) in stepped
    assert max(n for n, _ in stepped) == 402_653_184
    counted = optimizer_step_temporaries(s, 0, 4, [(402_653_184, 0)])
    measured = _adafactor_second_step([(128, 1536, 2048)], torch.float32)
    assert counted == 8 * 402_653_184 and counted <= measured <= counted + 4 * 2 * 128 * (1536 + 2048) + 8 * 512
    with torch.device("meta"):
        params = [torch.nn.Parameter(torch.empty(shape)) for shape in ((128, 1536, 2048), (128, 2048, 768))]
    for p in params:
        p.grad = torch.empty_like(p)
    opt = optimization.Adafactor(params, lr=1e-3, scale_parameter=False, relative_step=False)
    opt.step()
    made = sum(v.numel() for state in opt.state.values() for v in state.values() if isinstance(v, torch.Tensor)
               and v.dim() > 0)
    assert made == 819_200
    per_expert = adafactor_state_bytes(s, dataclasses.replace(m, family="per-expert"), m.params_total)
    assert per_expert - adafactor_state_bytes(s, m, m.params_total) == 4 * 48 * 128 * 2048
    mem = estimate(dict(QWEN_05B, model="qwen3-30b-a3b", method="full", optimizer="adafactor", precision="bf16-true",
                        gpu="h200"), advise=False).memory
    assert mem.phases_gib["optimizer_step"] == pytest.approx(119.8949 + 0.0625, rel=1e-3)
    assert mem.optimizer_gib == pytest.approx(0.1522, rel=0.01)
