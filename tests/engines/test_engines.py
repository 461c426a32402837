"""The engine profiles (gpuplan/engines): one per engine a scenario can name, each answering the same questions,
and the launch targets and refusals reading them rather than the engine's name."""

from __future__ import annotations

import typing

import pytest

from gpuplan import GpuplanError, estimate
from gpuplan.engines import ENGINES, HOMES, OWN_SETTINGS, REFUSES_FOREIGN, SHARED_SETTINGS, engine_for, readers
from gpuplan.engines import sglang as sglang_engine
from gpuplan.engines import vllm as vllm_engine
from gpuplan.launchers import TARGETS
from gpuplan.launchers import sglang as sglang_target
from gpuplan.launchers import vllm as vllm_target
from gpuplan.scenario import Scenario, scenario_from


def test_every_engine_a_scenario_names_has_a_profile():
    names = typing.get_args(Scenario.model_fields["engine"].annotation)
    assert set(ENGINES) == set(names) and len(names) == 6
    assert {e.label for e in ENGINES.values()} == {"transformers", "vLLM", "SGLang", "llama.cpp", "TensorRT-LLM",
                                                   "MLX (mlx-lm)"}
    s = scenario_from({"model": "llama-3.1-8b", "task": "infer", "engine": "sglang"})
    assert engine_for(s) is ENGINES["sglang"]
    assert all(ENGINES[name].name == name for name in HOMES)  # each profile sits under its own name


def test_each_engines_own_settings_are_scenario_fields_that_default_to_unset():
    """The settings one engine alone reads (kept beside the engines' modules, so that refusals need not load every
    profile) are scenario fields; a refused one defaults to None (given at all is given to the wrong engine)."""
    assert set(HOMES) >= set(OWN_SETTINGS) >= REFUSES_FOREIGN
    fields = [field for names in OWN_SETTINGS.values() for field in names]
    assert len(fields) == len(set(fields)) == 14 and set(fields) <= set(Scenario.model_fields)
    assert all(Scenario.model_fields[f].default is None for name in REFUSES_FOREIGN for f in OWN_SETTINGS[name])
    # the settings a few engines read: scenario fields, none of them one engine's own, read by engines that exist
    assert set(SHARED_SETTINGS) <= set(Scenario.model_fields) and not set(SHARED_SETTINGS) & set(fields)
    assert all(1 < len(names) < len(HOMES) and set(names) <= set(HOMES) for names in SHARED_SETTINGS.values())
    assert readers("max_num_seqs") == ("vllm", "trtllm") and readers("cpu_layers") == ("llama.cpp",)
    assert readers("batch_size") == ()


# a value other than its default for each engine setting another engine may be given (TensorRT-LLM's are refused)
SETTING_VALUES = {"gpu_memory_utilization": 0.8, "enforce_eager": True, "flashinfer_sampler": True,
                  "entry_point": "offline", "mem_fraction_static": 0.8, "fp8_gemm_backend": "auto",
                  "scheduler_recv_interval": 30,
                  "ubatch_tokens": 256, "flash_attention": "off", "cpu_layers": True, "max_num_seqs": 4,
                  "max_num_batched_tokens": 512, "max_model_len": 2048, "engine_version": "0.8.5", "attention": "eager"}


def _numbers(plan) -> tuple:
    answer = plan.to_dict()
    return answer["memory"], answer["speed"], answer["cost"]


@pytest.mark.parametrize("field", sorted(SETTING_VALUES))
def test_an_engine_setting_given_to_an_engine_that_does_not_read_it_is_said_and_changes_nothing(field):
    """s27: vLLM's max_num_seqs given with engine llama.cpp or sglang, SGLang's mem_fraction_static with vLLM, a
    max_model_len under transformers, eager attention under vLLM planned without a word. Each engine that does not
    read a setting (by engines.readers) plans the same numbers with it as without it, and its plan names it in a
    warning; each engine that reads it says nothing of it."""
    assert set(SETTING_VALUES) == {f for name, own in OWN_SETTINGS.items() if name not in REFUSES_FOREIGN
                                   for f in own} | set(SHARED_SETTINGS)
    job = {"model": "qwen2.5-0.5b", "task": "infer", "gpu": "l40s", "batch_size": 8, "prompt_tokens": 512,
           "output_tokens": 128}
    for engine in ("transformers", "vllm", "sglang", "llama.cpp", "trtllm"):
        given = estimate({**job, "engine": engine, field: SETTING_VALUES[field]}, advise=False)
        said = [w for w in given.warnings if w.startswith(f"{field} is ")]
        if engine in readers(field):
            assert not said, (engine, said)
            continue
        assert len(said) == 1 and f"changes nothing when serving with {engine}" in said[0], (engine, said)
        assert _numbers(given) == _numbers(estimate({**job, "engine": engine}, advise=False)), engine


def test_the_serving_engines_are_launched_by_their_own_target():
    targets = {e.name: e.launch_target for e in ENGINES.values()}
    assert targets == {"transformers": None, "vllm": "vllm", "sglang": "sglang", "llama.cpp": "llama.cpp",
                       "trtllm": "trtllm", "mlx": None}
    assert {t for t in targets.values() if t} <= set(TARGETS)
    # the engines that preallocate are those whose plan the verdict judges by the pool
    assert {e.name for e in ENGINES.values() if e.preallocates} == {"vllm", "sglang", "trtllm"}
    assert {e.name for e in ENGINES.values() if e.pool_words} == {"vllm", "sglang", "trtllm"}


def test_what_an_engine_loads_is_what_its_launch_file_can_ask_for():
    """The formats the profile lets vLLM and SGLang quantize a plain checkpoint to are the launchers' flags."""
    assert set(vllm_engine.QUANTIZES) == set(vllm_target.QUANTIZATION)
    assert set(sglang_engine.QUANTIZES) == set(sglang_target.QUANTIZATION)


@pytest.mark.parametrize("fields, message", [
    ({"engine": "vllm", "quant": "nf4"}, "vLLM \\(0.32, 0.33\\) cannot load nf4"),
    ({"engine": "sglang", "quant": "int8"}, "SGLang cannot quantize to int8 on load"),
    ({"engine": "sglang", "kv_cache_dtype": "int8"}, "SGLang's KV cache is 16-bit or fp8, not int8"),
    ({"engine": "trtllm", "kv_cache_dtype": "int8"}, "TensorRT-LLM's KV cache is 16-bit or fp8, not int8"),
    ({"engine": "llama.cpp", "kv_cache_dtype": "fp8"}, "llama.cpp caches keys and values"),
    ({"engine": "transformers", "quant": "q4_k_m"}, "transformers dequantizes a GGUF file"),
    ({"engine": "vllm", "tokens_per_block": 64}, "are TensorRT-LLM's settings: set engine trtllm"),
])
def test_an_engine_refuses_what_it_cannot_load(fields, message):
    with pytest.raises(GpuplanError, match=message):
        estimate({"model": "llama-3.1-8b", "task": "infer", **fields}, advise=False)


def test_another_engines_setting_is_said():
    plan = estimate({"model": "llama-3.1-8b", "task": "infer", "engine": "sglang", "gpu_memory_utilization": 0.8},
                    advise=False)
    assert any("gpu_memory_utilization is vllm's setting and changes nothing when serving with sglang" in w
               for w in plan.warnings)


def test_enforce_eager_under_another_engine_is_said():
    """vLLM's --enforce-eager priced on SGLang's plan without a word (s11-fuzz's walk): SGLang's own switch is
    --disable-cuda-graph, which gpuplan does not read, so the flag is said to change nothing."""
    plan = estimate({"model": "llama-3.1-8b", "task": "infer", "engine": "sglang", "enforce_eager": True},
                    advise=False)
    assert any("enforce_eager is vllm's setting and changes nothing when serving with sglang" in w
               for w in plan.warnings)
    vllm = estimate({"model": "llama-3.1-8b", "task": "infer", "engine": "vllm", "enforce_eager": True}, advise=False)
    assert not any("enforce_eager is vllm's setting" in w for w in vllm.warnings)


@pytest.mark.parametrize("gpu", ["gaudi2", "gaudi3"])
def test_llama_cpp_on_gaudi_is_refused_in_one_sentence(gpu):
    """ggml has no Gaudi backend, and its timing reads SM counts Gaudi has none of: estimate --engine llama.cpp --gpu
    gaudi3 was a ZeroDivisionError in speed/ggml.cuda_decode_parts (mmvq_flops 0; s20 fuzz2). vLLM still plans it."""
    with pytest.raises(GpuplanError, match=r"llama\.cpp has no backend for Intel Gaudi.*engine vllm"):
        estimate({"model": "llama-3.1-8b", "task": "infer", "engine": "llama.cpp", "gpu": gpu}, advise=False)
    assert estimate({"model": "llama-3.1-8b", "task": "infer", "engine": "vllm", "gpu": gpu},
                    advise=False).speed.tokens_per_s > 0


def _engines_named(sentence: str) -> list[str]:
    """The engines a refusal's advice names (after "serve it with" or "use engine")."""
    import re

    tail = re.split(r"serve it with|use engine", sentence)[-1] if re.search(r"serve it with|use engine",
                                                                            sentence) else ""
    return [n for n in ENGINES if re.search(rf"(?<![\w.-]){re.escape(n)}(?![\w-])", tail)]


def test_an_engines_card_refusal_advises_only_engines_that_run_on_that_card():
    """s24 fuzz: MLX refused a Gaudi card with "serve it with vllm, sglang or llama.cpp", and llama.cpp then refused
    the same card (no Gaudi backend). Every engine a card refusal names, on every catalog card, must itself plan
    there (the plan's refusals included, not only the engine's own)."""
    from gpuplan.hardware import gpus

    kinds = {}
    for g in gpus().values():  # one card of each vendor and generation
        kinds.setdefault((g.vendor, g.generation), g)
    checked = 0
    for g in kinds.values():
        for name in ENGINES:
            base = {"model": "llama-3.2-1b", "task": "infer", "gpu": g.id}
            try:
                estimate({**base, "engine": name}, advise=False)
                continue
            except GpuplanError as e:
                advised = _engines_named(str(e))
            for other in advised:
                checked += 1
                estimate({**base, "engine": other}, advise=False)  # raises if the advice is refused too
    assert checked > 20
