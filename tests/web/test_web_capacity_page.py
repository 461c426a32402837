"""The page's "Serving capacity" section in a real browser: the rows it shows are what ``POST /api/capacity`` and
``gpuplan.capacity`` answer for the form's model and lengths."""

from __future__ import annotations

import json

from test_web_page import browser, page, server, settle  # noqa: F401  (the fixtures: gpuplan serve and chromium)

import gpuplan
from gpuplan.web.api import PAGE_SEARCH_EVENTS


def test_capacity_section_shows_the_api_rows(server, page):  # noqa: F811
    fields = {"model": "llama-3.1-8b", "task": "infer", "prompt_tokens": "2000", "output_tokens": "300",
              "gpu": "h100-sxm"}
    page.goto(server + "/?" + "&".join(f"{k}={v}" for k, v in fields.items()))
    settle(page)
    assert page.is_visible("#capacity-go")
    page.select_option("#capacity-engine", "trtllm")
    page.fill("#capacity-load", "5")
    page.fill("#capacity-gpus", "h100-sxm,mi300x")  # an AMD card: no row, a note saying why
    page.fill("#capacity-max-gpus", "2")
    page.click("#capacity-go")
    page.wait_for_function("document.querySelector('#capacity-table').rows.length >= 3", timeout=60_000)
    report = json.loads(gpuplan.capacity("llama-3.1-8b", engine="trtllm", rate_rps=5, prompt_tokens=2000,
                                         output_tokens=300, ttft_s=1, tpot_s=0.05, gpus=["h100-sxm", "mi300x"],
                                         max_gpus=2, top=4, search_events=PAGE_SEARCH_EVENTS).model_dump_json())
    shown = page.eval_on_selector_all("#capacity-table tr", "rows => rows.slice(1).map((r) => [r.cells[0].textContent,"
                                      " parseFloat(r.cells[1].dataset.value)])")
    assert shown == [[("* " if p["pareto"] else "") + p["setup"], p["max_rate_rps"]] for p in report["plans"]]
    assert page.text_content("#capacity-summary") == f"{len(report['plans'])} setups on trtllm, cheapest first"
    amd = [n for n in report["notes"] if n.startswith("Instinct MI300X: not simulated")]
    assert amd != [] and any(n.startswith("$/M out and $/M in price each replica") for n in report["notes"])
    said = page.eval_on_selector_all("#capacity-warnings li", "items => items.map((i) => i.textContent)")
    assert said[-len(report["notes"]):] == ["note: " + n for n in report["notes"]]  # every note, in its order
    # the section is the search's: the rest of the page answered and stays answered
    assert page.text_content("#verdict") != "estimating..."


def test_the_forms_weights_format_is_the_searchs(server, page):  # noqa: F811
    """The form's ``quant`` goes with the section's search (``capacity --quant``), as the plan above it has it:
    Llama-3.1-8B in AWQ int4 on one L4, each row's pool and concurrency the API's for that format."""
    fields = {"model": "llama-3.1-8b", "task": "infer", "prompt_tokens": "1000", "output_tokens": "200",
              "gpu": "l4", "quant": "awq-int4"}
    page.goto(server + "/?" + "&".join(f"{k}={v}" for k, v in fields.items()))
    settle(page)
    page.fill("#capacity-load", "1")
    page.fill("#capacity-gpus", "l4")
    page.fill("#capacity-max-gpus", "1")
    page.click("#capacity-go")
    page.wait_for_function("document.querySelector('#capacity-table').rows.length >= 2", timeout=60_000)
    report = gpuplan.capacity("llama-3.1-8b", quant="awq-int4", rate_rps=1, prompt_tokens=1000, output_tokens=200,
                              ttft_s=1, tpot_s=0.05, gpus=["l4"], max_gpus=1, top=4, search_events=PAGE_SEARCH_EVENTS)
    assert [p["quant"] for p in report.plans] == ["awq-int4"]
    shown = page.eval_on_selector_all("#capacity-table tr", "rows => rows.slice(1).map((r) => [r.cells[0].textContent,"
                                      " parseFloat(r.cells[1].dataset.value)])")
    assert shown == [[("* " if p["pareto"] else "") + p["setup"], p["max_rate_rps"]] for p in report.plans]


def test_the_forms_think_time_is_the_searchs(server, page):  # noqa: F811
    """Users who think between turns on the form think in the section's search too (``capacity --users N
    --think-time T``): the search sent none, so 40 users thinking 20 s were searched as 40 who never pause (the
    page's 1x H200 at $0.302 per 1,000 requests and p95 TPOT 21 ms against the command's $0.682 and 12 ms)."""
    fields = {"model": "qwen3-8b", "task": "infer", "engine": "vllm", "prompt_tokens": "2000",
              "output_tokens": "300", "gpu": "l4", "users": "12", "think_time_s": "10", "length_spread": "0.2"}
    page.goto(server + "/?" + "&".join(f"{k}={v}" for k, v in fields.items()))
    settle(page)
    sent = []
    page.on("request", lambda r: sent.append(r.post_data_json) if r.url.endswith("/api/capacity") else None)
    page.select_option("#capacity-kind", "users")
    page.fill("#capacity-load", "12")
    page.fill("#capacity-ttft", "3")
    page.fill("#capacity-tpot", "0.2")
    page.fill("#capacity-gpus", "l4")
    page.fill("#capacity-max-gpus", "1")
    page.click("#capacity-go")
    page.wait_for_function("document.querySelector('#capacity-table').rows.length >= 2", timeout=60_000)
    assert sent[-1]["think_time_s"] == 10 and sent[-1]["length_spread"] == 0.2 and sent[-1]["users"] == 12
    report = gpuplan.capacity("qwen3-8b", users=12, think_time_s=10, length_spread=0.2, prompt_tokens=2000,
                              output_tokens=300, ttft_s=3, tpot_s=0.2, gpus=["l4"], max_gpus=1, top=4,
                              search_events=PAGE_SEARCH_EVENTS)
    shown = page.eval_on_selector_all("#capacity-table tr", "rows => rows.slice(1).map((r) => [r.cells[0].textContent,"
                                      " parseInt(r.cells[1].dataset.value), parseFloat(r.cells[3].dataset.value)])")
    assert shown == [[("* " if p["pareto"] else "") + p["setup"], p["max_users"], p["tpot_s"]] for p in report.plans]
    never_pause = gpuplan.capacity("qwen3-8b", users=12, length_spread=0.2, prompt_tokens=2000, output_tokens=300,
                                   ttft_s=3, tpot_s=0.2, gpus=["l4"], max_gpus=1, top=4,
                                   search_events=PAGE_SEARCH_EVENTS)
    assert shown[0][1] == 10 and never_pause.plans[0]["max_users"] < 10  # what the page showed before


def test_the_forms_shown_lengths_go_with_the_search(server, page):  # noqa: F811
    """``POST /api/capacity`` without lengths refuses as ``gpuplan.capacity`` does ("say how long requests are"); a
    person who leaves the form's lengths at the values it shows (1,024 + 256) still gets rows: the page sends those
    values, and the rows are the Python API's for them."""
    page.goto(server + "/?model=llama-3.2-1b&task=infer&gpu=l4")
    settle(page)
    boxes = ("#f-prompt_tokens", "#f-output_tokens")  # left empty, each showing its default
    assert [(page.input_value(b), page.get_attribute(b, "placeholder")) for b in boxes] == [("", "1024"), ("", "256")]
    sent = []
    page.on("request", lambda r: sent.append(r.post_data_json) if r.url.endswith("/api/capacity") else None)
    page.fill("#capacity-load", "1")
    page.fill("#capacity-gpus", "l4")
    page.fill("#capacity-max-gpus", "1")
    page.click("#capacity-go")
    page.wait_for_function("document.querySelector('#capacity-table').rows.length >= 2", timeout=60_000)
    assert (sent[-1]["prompt_tokens"], sent[-1]["output_tokens"]) == (1024, 256)
    report = gpuplan.capacity("llama-3.2-1b", rate_rps=1, prompt_tokens=1024, output_tokens=256, ttft_s=1,
                              tpot_s=0.05, gpus=["l4"], max_gpus=1, top=4, search_events=PAGE_SEARCH_EVENTS)
    shown = page.eval_on_selector_all("#capacity-table tr", "rows => rows.slice(1).map((r) => [r.cells[0].textContent,"
                                      " parseFloat(r.cells[1].dataset.value)])")
    assert shown == [[("* " if p["pareto"] else "") + p["setup"], p["max_rate_rps"]] for p in report.plans]
