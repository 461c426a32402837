"""The page walked as a new user walks it (session 8's page walk, bench/results/page_walk_s8.md), in a real
headless Chromium: every formula opened at a phone's width, numbers typed that the browser cannot read, bad input
in the buy and capacity sections, errors beside their fields. The server and browser are test_web_page.py's
(Debian's chromium; these tests skip without it)."""

from __future__ import annotations

from chats import TOKENIZER
from test_web_page import browser, page, server, settle  # noqa: F401 (fixtures)

import gpuplan

# elements wider than the page that no scrolling box of theirs clips (what makes a phone scroll sideways)
OVERFLOW = """() => { const W = document.documentElement.clientWidth, out = [];
  for (const el of document.querySelectorAll('#results *')) {
    if (!el.offsetParent) continue;
    const r = el.getBoundingClientRect();
    let p = el.parentElement, clipped = false;
    for (; p && !clipped; p = p.parentElement) clipped = /(auto|scroll|hidden)/.test(getComputedStyle(p).overflowX);
    if (!clipped && r.width > 0 && (r.right > W + 1 || r.left < -1)) out.push(el.tagName + '.' + el.className);
  }
  return [document.documentElement.scrollWidth, out]; }"""


def test_open_formulas_stay_inside_a_phone_screen(server, browser):  # noqa: F811
    """Every number's formula opened at 375 px (an iPhone SE) and at 640 px (about 80 columns): nothing is wider than
    the screen. A formula's constants table named ``overheads.VAE_DECODE_WORKING_FACTOR`` as its source, one word
    too long to wrap, and the rows' grid grew to its width: the page scrolled sideways to 589 px."""
    for width in (375, 640):
        context = browser.new_context(viewport={"width": width, "height": 800}, bypass_csp=True)
        tab = context.new_page()
        try:
            for query in ("model=sdxl&task=infer&gpu=rtx-3060", "model=llama-3.1-8b&task=train&method=qlora&"
                          "gpu=rtx-4090&train_tokens=100000000"):
                tab.goto(f"{server}/?{query}")
                settle(tab)
                opened = tab.evaluate("() => { const all = document.querySelectorAll('details');"
                                       " all.forEach((d) => { d.open = true; }); return all.length; }")
                assert opened > 15 and tab.locator("table.constants").count() > 0
                scroll_width, wide = tab.evaluate(OVERFLOW)
                assert scroll_width <= width and not wide, (width, query, scroll_width, wide[:5])
        finally:
            context.close()


def _done(page, button: str, busy: str) -> None:  # noqa: F811 (a tab, not the fixture)
    page.click(button)
    page.wait_for_function(f"() => !document.querySelector('{button}').disabled && "
                           f"!document.querySelector('{busy}').textContent.endsWith('...')", timeout=60_000)


def test_numbers_the_browser_cannot_read_are_refused_not_dropped(server, page):  # noqa: F811
    """A number box holding what the browser cannot read as a number ("1e999", typed as a person types) has the
    value "": the page planned the default instead, without a word. Boxes of the buy and capacity sections took
    ``parseFloat(x) || default`` (0 years priced 1 year) and rounded users (0.4 users: "got 0"). Now each is sent
    as typed and the API's sentence names the field."""
    page.goto(server + "/?model=qwen2.5-7b&task=infer&gpu=l40s")
    settle(page)
    page.click("#f-prompt_tokens")
    page.keyboard.type("1e999")
    settle(page)
    assert page.get_attribute("#verdict", "data-fits") == "error"
    assert page.text_content("#verdict").startswith("scenario field 'prompt_tokens': Input should be a valid integer")
    assert page.locator('.field.invalid[data-field="prompt_tokens"]').count() == 1
    page.fill("#f-prompt_tokens", "")
    settle(page)
    assert page.get_attribute("#verdict", "data-fits") == "true"

    page.select_option("#capacity-kind", "users")
    page.fill("#capacity-load", "0.4")
    _done(page, "#capacity-go", "#capacity-summary")
    assert page.text_content("#capacity-summary") == ("field 'users': Input should be a valid integer, got a number "
                                                      "with a fractional part (got 0.4)")
    page.fill("#capacity-load", "4")
    page.click("#capacity-ttft")
    page.keyboard.press("Control+A")
    page.keyboard.type("1e999")
    _done(page, "#capacity-go", "#capacity-summary")
    assert page.text_content("#capacity-summary").startswith("field 'ttft_s': Input should be a valid number")

    page.fill("#buy-build", "2x3090")
    page.fill("#buy-years", "0")
    _done(page, "#buy-go", "#buy-verdict")
    assert page.text_content("#buy-verdict") == "field 'years': Input should be greater than 0 (got 0)"
    page.fill("#buy-years", "2")
    _done(page, "#buy-go", "#buy-verdict")
    assert "over 2 y" in page.text_content("#buy-verdict")


def test_bad_input_is_said_beside_its_field(server, page, tmp_path):  # noqa: F811
    """An error said only at the top of the page, its field marked only for a few sentences: lora_targets and
    provider errors, and a dataset the reader refused, left no field marked; the field could sit in a closed group;
    and the last plan's warnings ("the price ... is 65 days old") stayed under the error. Now the API's sentence is
    also beside the field it names, its group opened, and the sections still holding the last plan say so."""
    page.goto(server + "/?model=qwen2.5-7b&task=infer&gpu=l40s")
    settle(page)
    assert "days old" in page.text_content("#warnings")  # the plan's own warning (a stale price)
    page.fill("#f-gpu", "rtx-9090")
    settle(page)
    beside = page.locator('.field[data-field="gpu"] + p.field-error')
    assert beside.text_content() == page.text_content("#verdict")
    assert beside.text_content().startswith("unknown GPU 'rtx-9090'; did you mean")
    assert page.get_attribute("#f-gpu", "aria-invalid") == "true"
    assert "days old" not in page.text_content("#warnings")
    assert "last scenario that could be planned" in page.text_content("#warnings")
    assert page.evaluate("document.body.classList.contains('failed')")
    page.fill("#f-gpu", "l40s")
    settle(page)
    assert page.locator("p.field-error").count() == 0
    assert not page.evaluate("document.body.classList.contains('failed')")

    page.goto(server + "/?model=llama-3.2-1b&task=train&method=lora&gpu=h100-sxm")
    settle(page)
    assert not page.is_visible("#f-lora_targets")  # in the closed "Training options" group
    page.evaluate("() => { const el = document.getElementById('f-lora_targets'); el.value = 'q_proj,zzz';"
                  " el.dispatchEvent(new Event('input', {bubbles: true})); }")
    settle(page)
    assert page.is_visible('.field[data-field="lora_targets"] + p.field-error')
    assert page.text_content('.field[data-field="lora_targets"] + p.field-error').startswith("lora_targets ['zzz']")
    page.fill("#f-lora_targets", "")
    settle(page)

    page.set_input_files("#f-tokenizer", str(TOKENIZER))
    page.wait_for_function("() => document.getElementById('f-tokenizer-status').textContent.endsWith('bytes')")
    bad = tmp_path / "latin1.jsonl"
    bad.write_bytes('{"text": "caf\xe9"}\n'.encode("latin-1"))
    page.set_input_files("#f-dataset", str(bad))
    settle(page)
    assert page.get_attribute("#verdict", "data-fits") == "error", page.text_content("#verdict")
    sentence = page.text_content('.field[data-field="dataset"] + p.field-error')
    assert sentence == page.text_content("#verdict") and sentence.startswith("latin1.jsonl, line 1, is not UTF-8")

    # a permalink whose upload the server no longer keeps (it restarted): the sentence beside the dataset field
    page.goto(server + "/?model=llama-3.2-1b&task=train&gpu=h100-sxm&dataset=upload%3A0123456789abcdef%2Fgone.jsonl")
    settle(page)
    sentence = page.text_content('.field[data-field="dataset"] + p.field-error')
    assert sentence.startswith("the uploaded file 'gone.jsonl' is no longer on this server")


def test_the_offer_line_is_the_plans_price_origin(server, page):  # noqa: F811
    """The page wrote "price from ORIGIN, N days old" where the origin already ends "(N days old, medium confidence)":
    the age twice for a decoder LLM, and "0 days old" for a diffusion plan (whose origin lacked its age)."""
    for query, fields in (("model=sdxl&task=infer&gpu=l40s", {"model": "sdxl", "task": "infer", "gpu": "l40s"}),
                          ("model=qwen2.5-7b&task=infer&gpu=l40s", {"model": "qwen2.5-7b", "task": "infer",
                                                                     "gpu": "l40s"})):
        page.goto(f"{server}/?{query}")
        settle(page)
        c = gpuplan.estimate(fields).cost
        line = page.text_content("#speed-rows .offer")
        assert line == f"best offer: {c.offer} ({c.gpu_id}), price from {c.price_origin}" + " (stale)" * c.stale
        assert line.count("days old") == 1 and f"({c.price_age_days} days old" in line and c.price_age_days > 0


def test_buy_takes_the_price_a_card_has_none_of(server, page):  # noqa: F811
    """Buy or rent on a card gpuplan has no street price for (an L40S) answered "give what you would pay with --price
    USD", and the page had no box for it; its break-even cell read "owning pays after not within 10 years; at none".
    Now the page has the price box and the break-even words are the CLI's."""
    page.goto(server + "/?model=qwen2.5-7b&task=infer&gpu=l40s")
    settle(page)
    _done(page, "#buy-go", "#buy-verdict")
    assert page.text_content("#buy-verdict").startswith("no price for L40S in gpuplan's data: give what you would pay")
    page.fill("#buy-price", "7000")
    _done(page, "#buy-go", "#buy-verdict")
    report = gpuplan.buy(build="1xl40s", workloads=[{"name": "this job", "hours_per_day": 8, "scenario": {
        "model": "qwen2.5-7b", "task": "infer"}}], years=1, price=7000)
    assert page.text_content("#buy-verdict") == report.verdict
    v = report.builds[0].versus[0]
    assert v.break_even_months and v.break_even_utilization
    assert page.text_content("#buy-table tr:nth-child(3) td:nth-child(4)") == (
        f"owning pays after {v.break_even_months:,.0f} months; break-even utilization "
        f"{v.break_even_utilization:.1%} of hours")
    page.fill("#buy-price", "")
    page.fill("#buy-build", "1x4090")
    page.fill("#buy-hours", "1")
    _done(page, "#buy-go", "#buy-verdict")
    assert page.text_content("#buy-table tr:nth-child(3) td:nth-child(4)") == (
        "owning does not pay within 10 years; break-even utilization none")


def test_long_work_says_what_it_waits_for(server, page):  # noqa: F811
    """While the server answers 503 with Retry-After (a dataset still being read, a busy server), the page asked
    again and showed the last plan without a word. Now it says the server's sentence until the plan comes; and while
    the setups are ranked, the last scenario's ranking and grid are marked busy (review 2: "HF rows under an
    Unsloth verdict")."""
    page.goto(server + "/?model=llama-3.2-1b&task=train&gpu=h100-sxm")
    settle(page)
    busy = "the uploaded files take longer than 10 s to read; the page asks again in 1 s"
    refused: list[str] = []

    def once_busy(route):
        if refused:
            route.continue_()
        else:
            refused.append(route.request.url)
            route.fulfill(status=503, headers={"Retry-After": "1"}, json={"detail": busy})

    page.route("**/api/estimate", once_busy)
    page.route("**/api/recommend", lambda route: (page.wait_for_timeout(1500), route.continue_()))
    page.fill("#f-seq_len", "1024")
    page.wait_for_function("() => !document.getElementById('progress').hidden")
    assert page.text_content("#progress") == busy and refused
    page.wait_for_function("() => document.getElementById('progress').hidden && "
                           "document.getElementById('setups').getAttribute('aria-busy') === 'true'")
    settle(page)
    assert page.get_attribute("#setups", "aria-busy") == page.get_attribute("#catalog", "aria-busy") == "false"
    assert page.get_attribute("#verdict", "data-fits") == "true"


def test_the_launch_files_download_from_the_page(server, page, tmp_path):  # noqa: F811
    """The page sized a job but gave no files to run it (`gpuplan launch` was the command line's alone). Now it makes
    them (``POST /api/launch``, nothing written on the server): the files `gpuplan launch -o -` makes, each one a
    download; a scenario no launcher takes gets the API's sentence."""
    fields = {"model": "llama-3.1-8b", "task": "train", "method": "qlora", "gpu": "rtx-4090"}
    page.goto(server + "/?" + "&".join(f"{k}={v}" for k, v in fields.items()))
    settle(page)
    page.click("#launch-go")
    page.wait_for_function("() => !document.getElementById('launch-go').disabled")
    report = gpuplan.launch(fields, folder="-", command="the gpuplan web page")
    names = [name for name, _, _ in report.printed]
    assert names[:2] == ["trainer.yaml", "accelerate.yaml"] and "plan.json" in names
    assert page.eval_on_selector_all("#launch-files li", "els => els.map((e) => e.dataset.path)") == names
    assert page.text_content("#launch-summary") == (f"{len(names)} files for {report.setup}; on the command line: "
                                                    f"{report.said['again']} -o DIR")
    with page.expect_download() as got:
        page.click('#launch-files li[data-path="trainer.yaml"] button')
    saved = tmp_path / "trainer.yaml"
    got.value.save_as(saved)
    assert got.value.suggested_filename == "trainer.yaml"
    assert saved.read_text(encoding="utf-8") == dict((n, t) for n, _, t in report.printed)["trainer.yaml"]
    page.fill("#f-seq_len", "1024")  # another scenario: the files made for the last one go
    settle(page)
    assert page.locator("#launch-files li").count() == 0

    page.goto(server + "/?model=qwen2.5-7b&task=infer&gpu=l40s")
    settle(page)
    page.click("#launch-go")
    page.wait_for_function("() => !document.getElementById('launch-go').disabled")
    assert page.text_content("#launch-summary").startswith("no launch target applies to this plan: the plan is for "
                                                           "engine transformers")


def test_a_fix_is_applied_from_the_keyboard_by_its_name(server, page):  # noqa: F811
    """Keyboard only: Tab reaches each fix's button, which a screen reader named only "apply" (16 alike on this
    plan); each is now named for its change, and Enter applies it."""
    base = {"model": "llama-3.1-8b", "task": "train", "method": "lora", "gpu": "rtx-4090"}
    page.goto(server + "/?" + "&".join(f"{k}={v}" for k, v in base.items()))
    settle(page)
    plan = gpuplan.estimate(base)
    names = page.eval_on_selector_all("#fixes-table button", "els => els.map((e) => e.getAttribute('aria-label'))")
    assert len(names) == len(plan.suggestions) > 3 and len(set(names)) == len(names)
    want = "apply: enable gradient checkpointing"
    assert want in names
    for _ in range(200):  # Tab through the page to the button, as a keyboard user does
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.getAttribute('aria-label')") == want:
            break
    else:
        raise AssertionError(f"Tab never reached {want!r}")
    page.keyboard.press("Enter")
    settle(page)
    fixed = gpuplan.estimate({**base, "grad_checkpointing": "full"})
    assert page.input_value("#f-grad_checkpointing") == "full"
    assert float(page.get_attribute("#verdict", "data-peak")) == fixed.memory.device_peak_gib


def test_capacity_searches_on_the_scenarios_engine(server, page):  # noqa: F811
    """A SGLang serving plan's "Serving capacity" search ran on vLLM (the select's first option) unless the user
    changed it; it now starts on the scenario's engine."""
    page.goto(server + "/?model=qwen2.5-7b&task=infer&engine=sglang&gpu=h100")
    settle(page)
    assert page.input_value("#capacity-engine") == "sglang"
    page.select_option("#capacity-kind", "users")
    page.fill("#capacity-load", "4")
    page.fill("#capacity-gpus", "h100")
    _done(page, "#capacity-go", "#capacity-summary")
    assert page.text_content("#capacity-summary").endswith("on sglang, cheapest first")
    page.goto(server + "/?model=qwen2.5-7b&task=infer&engine=llama.cpp&gpu=rtx-3060")
    settle(page)
    assert page.input_value("#capacity-engine") == "vllm"  # llama.cpp is not one capacity simulates


def test_each_group_of_the_form_is_titled_and_holds_its_tasks_fields(server, page):  # noqa: F811
    """A serving scenario showed a "Training options" group holding only `attention` (read by both tasks), and the
    serving load's fields (users, rate) under a bare "load"."""
    page.goto(server + "/?model=qwen2.5-7b&task=infer&engine=vllm&gpu=l40s")
    settle(page)
    shown = page.evaluate("() => [...document.querySelectorAll('details.group:not([hidden])')].map((g) => "
                          "[g.dataset.group, g.querySelector('summary').textContent])")
    groups = dict(shown)
    assert "training" not in groups and groups["load"].startswith("Serving load")
    assert all(title[0].isupper() for _, title in shown), shown
    assert page.locator('details[data-group="more"] .field[data-field="attention"]').count() == 1


def test_the_price_per_token_is_named_as_the_cli_names_it(server, page, capsys):  # noqa: F811
    """The page said "$ per million tokens trained" where the command line says "per million training tokens"."""
    from gpuplan.cli import run

    flags = ["--model", "llama-3.1-8b", "--task", "train", "--method", "qlora", "--gpu", "rtx-4090"]
    assert run(["estimate", *flags]) == 0
    assert "per million training tokens" in " ".join(capsys.readouterr().out.split())
    page.goto(server + "/?model=llama-3.1-8b&task=train&method=qlora&gpu=rtx-4090")
    settle(page)
    label = page.text_content('details[data-key="cost.usd_per_million_tokens"] .label')
    assert label == "$ per million training tokens"
