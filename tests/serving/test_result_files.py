"""The files capacity and calibrate-serving read (fuzz-report-3 F2, F4, F5, F6, C3, C4): benchmark results of vllm
bench serve, GuideLLM and AIPerf, traces, calibrations and the --plot path. A good file gives its values; every
broken one is one sentence naming the file and the field, before anything is sized or simulated."""

from __future__ import annotations

import json

import pytest

from gpuplan import GpuplanError
from gpuplan.cli import run
from gpuplan.serving.calibrate import load_calibration, read_results, save_calibration
from gpuplan.serving.steptime import Calibration
from gpuplan.serving.workload import read_trace

VLLM_OK = {"mean_ttft_ms": 50, "mean_tpot_ms": 20, "completed": 100, "total_input_tokens": 100000,
           "total_output_tokens": 20000, "request_rate": 2, "output_throughput": 300}
GUIDELLM_OK = {"benchmarks": [{"args": {"strategy": {"rate": 2}}, "request_totals": {"successful": 50, "errored": 0,
                                                                                      "total": 50},
                               "metrics": {"time_to_first_token_ms": {"successful": {"mean": 60}},
                                           "time_per_output_token_ms": {"successful": {"mean": 25}},
                                           "prompt_token_count": {"successful": {"mean": 500}},
                                           "output_token_count": {"successful": {"mean": 100}}}}]}
AIPERF_OK = {"time_to_first_token": {"avg": 70}, "inter_token_latency": {"avg": 22},
             "input_sequence_length": {"avg": 400}, "output_sequence_length": {"avg": 120},
             "request_count": {"avg": 40}, "input_config": {"loadgen": {"request_rate": 1}}}

# the report's broken result files (fuzz-3-inputs/), and the shapes it names in F4 and C3
BROKEN = {
    "vllm_missing.json": ({"mean_ttft_ms": 50}, "without mean_tpot_ms"),
    "vllm_str.json": ({"mean_ttft_ms": "fast", "mean_tpot_ms": "20", "completed": "ten", "total_input_tokens": 10,
                       "total_output_tokens": 10}, "completed must be a whole number from 1 to 1,000,000, got 'ten'"),
    "vllm_zero.json": ({"mean_ttft_ms": 0, "mean_tpot_ms": 0, "completed": 0, "num_prompts": 0,
                        "total_input_tokens": 0, "total_output_tokens": 0}, "completed must be a whole number from 1"),
    "vllm_neg.json": ({"mean_ttft_ms": -50, "mean_tpot_ms": -20, "completed": 10, "total_input_tokens": -1000,
                       "total_output_tokens": -100, "request_rate": -2}, "total_input_tokens must be a number from 0"),
    "vllm_neg_rate.json": ({**VLLM_OK, "request_rate": -2}, "request_rate must be a number above 0 to 100,000, got -2"),
    "vllm_huge_n.json": ({"mean_ttft_ms": 50, "mean_tpot_ms": 20, "completed": 1000000000,
                          "total_input_tokens": 100000000000, "total_output_tokens": 10000000000, "request_rate": 2},
                         "completed must be a whole number from 1 to 1,000,000, got 1,000,000,000"),
    "vllm_huge_len.json": ({**VLLM_OK, "completed": 10, "total_input_tokens": 10**12},
                           "total_input_tokens per request must be a number from 1 to 10,000,000, got 100,000,000,000"),
    "vllm_ttft_zero.json": ({**VLLM_OK, "mean_ttft_ms": 0}, "mean_ttft_ms must be a number above 0"),
    "guidellm_empty.json": ({"benchmarks": []}, "holds no benchmarks: GuideLLM wrote none"),
    "guidellm_totals.json": ({"benchmarks": [{"args": {"strategy": {"rate": 2}}, "metrics": {
        "time_to_first_token_ms": {"successful": {"mean": 60}},
        "time_per_output_token_ms": {"successful": {"mean": 25}}, "request_totals": {"successful": 50}}}]},
        "without metrics.prompt_token_count"),
    "guidellm_ints.json": ({"benchmarks": [1, 2]}, "guidellm_ints.json#0 must be a JSON object, got 1"),
    "guidellm_five.json": ({"benchmarks": 5}, "benchmarks must be a list of GuideLLM benchmarks, got 5"),
    "aiperf_bad.json": ({"time_to_first_token": {"avg": 70}, "inter_token_latency": {"avg": 22}, "input_config": 5},
                        "input_config must be a JSON object, got 5"),
    "aiperf_str.json": ({**AIPERF_OK, "time_to_first_token": "70"}, "time_to_first_token must be a JSON object"),
}


def write(tmp_path, name: str, data) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


def test_good_results_of_the_three_tools_read_their_values(tmp_path):
    (v,) = read_results(write(tmp_path, "v.json", VLLM_OK))
    assert (v.rate_rps, v.num_requests, v.mean_input_tokens, v.mean_output_tokens, v.mean_ttft_s, v.mean_tpot_s,
            v.output_tokens_per_s) == (2, 100, 1000, 200, 0.05, 0.02, 300)
    (g,) = read_results(write(tmp_path, "g.json", GUIDELLM_OK))
    assert (g.rate_rps, g.num_requests, g.mean_input_tokens, g.mean_output_tokens, g.mean_ttft_s, g.mean_tpot_s) == \
        (2, 50, 500, 100, 0.06, 0.025)
    (a,) = read_results(write(tmp_path, "a.json", AIPERF_OK))
    assert (a.rate_rps, a.num_requests, a.mean_input_tokens, a.mean_output_tokens, a.mean_ttft_s, a.mean_tpot_s) == \
        (1, 40, 400, 120, 0.07, 0.022)


def test_a_burst_and_the_newer_guidellm_layout_read(tmp_path):
    """vllm bench serve writes request_rate "inf" for a burst; GuideLLM 0.3+ keeps request_totals in metrics."""
    (v,) = read_results(write(tmp_path, "v.json", {**VLLM_OK, "request_rate": "inf"}))
    assert v.rate_rps is None
    bench = GUIDELLM_OK["benchmarks"][0]
    newer = {"benchmarks": [{"config": bench["args"], "metrics": {**bench["metrics"], "request_totals": {
        "successful": 30, "incomplete": 0, "errored": 1, "total": 31}}}]}
    (g,) = read_results(write(tmp_path, "g.json", newer))
    assert (g.rate_rps, g.num_requests) == (2, 30)


@pytest.mark.parametrize("name", list(BROKEN))
def test_each_broken_result_file_is_one_sentence_naming_the_field(tmp_path, name):
    data, said = BROKEN[name]
    path = write(tmp_path, name, data)
    with pytest.raises(GpuplanError) as err:
        read_results(path)
    assert str(err.value).startswith(path) and said in str(err.value), str(err.value)


@pytest.mark.parametrize("name", ["vllm_huge_n.json", "guidellm_five.json", "aiperf_bad.json", "binary.json",
                                  "deep.json"])
def test_calibrate_serving_refuses_a_broken_file_in_one_line(tmp_path, capsys, name):
    """F2: completed 1e9 allocated 7.45 GiB; now it is refused before any array is sized."""
    if name == "binary.json":
        path = tmp_path / name
        path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
        path = str(path)
    elif name == "deep.json":
        path = str(tmp_path / name)
        (tmp_path / name).write_text("[" * 3000 + "]" * 3000)
    else:
        path = write(tmp_path, name, BROKEN[name][0])
    code = run(["calibrate-serving", path, "--model", "llama-3.2-1b", "--gpu", "h100-sxm"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith(f"error: {path}"), err


@pytest.mark.parametrize("text, said", [
    ('{"input_len": NaN, "output_len": 10}\n', "record 1: input_len must be a whole number from 1 to 10,000,000, "
                                               "got nan"),
    ('{"input_len": "100", "output_len": "x"}\n', "record 1: input_len must be a whole number from 1 to 10,000,000, "
                                                 "got '100'"),
    ('{"input_len": 1e15, "output_len": 1e15}\n', "record 1: input_len must be a whole number from 1 to 10,000,000, "
                                                 "got 1e+15"),
    ('{"input_len": 10, "output_len": 5}\n{"input_len": 10, "output_len": 5, "timestamp": "noon"}\n',
     "record 2: timestamp must be a number"),
    ('[{"conversations": [1, 2]}]', "record 1: conversations must be a list of turns"),
    ('{"input_lens": [1, 2], "output_lens": [3]}', "input_lens and output_lens must be lists of the same length"),
    ('{"input_len": 10}\n{"input_len": 10}\n', "record 1 has no input/output lengths"),
    ("[" * 3000 + "]" * 3000, "lists or mappings nest more than 64 levels deep"),
])
def test_bad_traces_are_one_sentence_naming_the_record(tmp_path, text, said):
    path = tmp_path / "trace.jsonl"
    path.write_text(text)
    with pytest.raises(GpuplanError) as err:
        read_trace(path)
    assert str(err.value).startswith(str(path)) and said in str(err.value), str(err.value)


def test_a_good_trace_reads_lengths_and_arrivals(tmp_path):
    path = tmp_path / "trace.jsonl"
    path.write_text('{"input_length": 100, "output_length": 20, "timestamp": 1000}\n'
                    '{"input_length": 50.0, "output_length": 0, "timestamp": 3500}\n')
    assert read_trace(path) == ([100, 50], [20, 0], [0.0, 2.5], "request records")


def test_a_trace_with_too_many_requests_is_refused(tmp_path, monkeypatch):
    from gpuplan.serving import workload

    monkeypatch.setattr(workload, "MAX_TRACE_REQUESTS", 3)
    path = tmp_path / "t.json"
    path.write_text(json.dumps([{"input_len": 1, "output_len": 1}] * 4))
    with pytest.raises(GpuplanError, match="holds 4 requests; gpuplan reads traces of up to 3"):
        read_trace(path)


@pytest.mark.parametrize("text, said", [
    ("compute: [\n", "cal.yaml is not valid YAML at line 2"),  # the report's cal_bad.yaml
    ("compute: fast\n", "compute correction must be a number from 0.05 to 20, got 'fast'"),
    ("compute: 100\n", "compute correction must be a number from 0.05 to 20, got 100"),
    ("computer: 1.1\n", "unknown field 'computer'; a calibration holds compute, memory, overhead, source"),
    ("source: [1]\n", "source must be text"),
])
def test_a_bad_calibration_file_is_one_sentence(tmp_path, text, said):
    path = tmp_path / "cal.yaml"
    path.write_text(text)
    with pytest.raises(GpuplanError) as err:
        load_calibration(path)
    assert said in str(err.value), str(err.value)


def test_a_saved_calibration_reads_back(tmp_path):
    cal = Calibration(compute=1.2, memory=0.9, overhead=1.0, source="3 runs")
    save_calibration(cal, tmp_path / "cal.yaml")
    assert load_calibration(tmp_path / "cal.yaml") == cal


@pytest.mark.parametrize("plot, said", [
    ("missing_dir/x.png", "no folder 'missing_dir'; create it first"),
    ("x.txt", "--plot writes a picture: name it .png, .svg or .pdf"),
])
def test_a_bad_plot_path_is_refused_before_the_simulation(tmp_path, monkeypatch, capsys, plot, said):
    """F5: both were tracebacks from matplotlib after the whole search; now one line before it."""
    import gpuplan.api

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(gpuplan.api, "capacity", lambda *a, **k: pytest.fail("simulated before the path check"))
    code = run(["capacity", "--model", "llama-3.2-1b", "--preset", "chat", "--rate", "1", "--gpus", "l40s",
                "--plot", plot])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and said in err, err


def test_a_benchmark_and_a_probe_record_each_name_the_command_that_reads_them(tmp_path):
    """Session 9's walk: `gpuplan calibrate run.json` with a vllm bench serve result read 'is not a probe record:
    it lacks estimate, probe, scenario', and calibrate-serving given a probe record named only what it lacks."""
    from gpuplan.sim.probe import read_record

    bench = tmp_path / "run.json"
    bench.write_text(json.dumps({"mean_ttft_ms": 50, "mean_tpot_ms": 20, "completed": 100}))
    with pytest.raises(GpuplanError, match=r"it is a serving benchmark's result, which `gpuplan calibrate-serving "):
        read_record(bench)
    probe = tmp_path / "probe.json"
    probe.write_text(json.dumps({"scenario": {}, "probe": {}, "estimate": {}}))
    with pytest.raises(GpuplanError, match=r"it is a probe record, which `gpuplan calibrate FILE` reads$"):
        read_results(probe)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"x": 1}))
    with pytest.raises(GpuplanError, match=r"time_to_first_token\)$"):
        read_results(other)


def test_a_burst_run_is_said_sent_all_at_once(tmp_path, capsys):
    """A vllm bench serve result without a rate (every request at once) printed its rate as "inf" in calibrate-
    serving's table (the fuzz campaign's seed 1516: 'NaN or infinity printed'); it says "all at once"."""
    path = write(tmp_path, "burst.json", {**VLLM_OK, "request_rate": "inf"})
    assert run(["calibrate-serving", path, "--model", "llama-3.2-1b", "--gpu", "h100-sxm"]) == 0
    table = capsys.readouterr().out
    assert "all at once" in table and " inf " not in table


@pytest.mark.parametrize("gpu, said", [("apple-m4-max", "vLLM has no Metal backend"),
                                       ("rtx-2080-ti", "does not fit GeForce RTX 2080 Ti")])
def test_calibrate_serving_refuses_a_card_vllm_does_not_run_on(tmp_path, capsys, gpu, said):
    """s24 fuzz: a vLLM result calibrated against an Apple M4 Max was fitted (TTFT error before +103,276 %,
    compute x0.05) where estimate refuses vLLM there: calibrate-serving now applies estimate's refusals."""
    path = write(tmp_path, "v.json", VLLM_OK)
    assert run(["calibrate-serving", path, "--model", "llama-3.1-8b", "--gpu", gpu]) == 2
    err = capsys.readouterr().err
    assert said in err and len(err.strip().splitlines()) == 1
    assert run(["calibrate-serving", path, "--model", "llama-3.1-8b", "--gpu", "h100-sxm"]) == 0
