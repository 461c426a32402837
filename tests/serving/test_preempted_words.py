"""What a simulated run says of the requests it preempted (issue 34's leftover): since session 19 a preempted
vLLM V1 request resumes from what its prefix cache still holds (serving/simulate.py ``_keep_preempted``), so
"preempted and recomputed" was wrong there; the engines that recompute everything keep those words."""

from __future__ import annotations

import pytest

pytest.importorskip("numpy")

from typer.testing import CliRunner

from gpuplan import estimate
from gpuplan.cli import app as cli_app
from gpuplan.serving.load import preempted_words

LLAMA_BATCH = dict(task="infer", model="llama-3.1-8b", gpu="rtx-4090", batch_size=200, prompt_tokens=1000,
                   output_tokens=200)


def test_vllm_with_its_prefix_cache_says_the_preempted_resume_from_it():
    """Llama-3.1-8B's batch of 200 on one RTX 4090 through vLLM V1 (prefix cache on by default): 27 preempted."""
    off = estimate({**LLAMA_BATCH, "engine": "vllm"}, advise=False).offline
    assert off.preemptions == 27
    assert off.preempted_words == ("27 preempted, each resuming from what the prefix cache still held of it and "
                                   "recomputing the rest")
    result = CliRunner().invoke(cli_app, ["estimate", "--task", "infer", "--model", "llama-3.1-8b", "--gpu",
                                          "rtx-4090", "--batch-size", "200", "--prompt-tokens", "1000",
                                          "--output-tokens", "200", "--engine", "vllm"], env={"COLUMNS": "400"})
    said = " ".join(result.output.split())
    assert "27 preempted, each resuming from what the prefix cache" in said and "recomputed" not in said


@pytest.mark.parametrize(("fields", "n"), [
    # a hybrid model: vLLM leaves its prefix cache off (engines/vllm.py prefix_caching), so all is recomputed
    (dict(task="infer", model="falcon-h1-0.5b", engine="vllm", gpu="t4", batch_size=16, prompt_tokens=2000,
          output_tokens=1000, max_model_len=4096), 7),
    ({**LLAMA_BATCH, "engine": "sglang"}, 5)])  # SGLang's retraction, as simulated: recomputed whole
def test_an_engine_that_recomputes_everything_says_so(fields, n):
    off = estimate(fields, advise=False).offline
    assert off.preemptions == n and off.preempted_words == f"{n} preempted and recomputed"


def test_no_preemption_says_nothing_and_leaves_the_answer_as_it_was():
    assert preempted_words(0, True) == preempted_words(0, False) == ""
    off = estimate({**LLAMA_BATCH, "engine": "vllm", "batch_size": 8}, advise=False).offline
    assert off.preemptions == 0 and "preempted_words" not in off.model_dump()
