"""Datasets and tokenizer folders a user may point at (fuzz-report-3 C1, C2, C5, S5, N4 and the encodings): each is
read, or is one sentence naming the file; a chat template that loops or grows its output is left out and said."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from gpuplan import GpuplanError
from gpuplan.cli import run
from gpuplan.dataset import template as tpl
from gpuplan.dataset import tokenize
from gpuplan.scenario import scenario_from

WORDS = ["hello", "world", "user", "assistant", "the", "cat", "a"]
CHAT = {"messages": [{"role": "user", "content": "hello world"}, {"role": "assistant", "content": "the cat"}]}


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory) -> Path:
    """A word-level tokenizer.json with </s>: every count is a count of words."""
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"[UNK]": 0, "</s>": 1, **{w: i + 2 for i, w in enumerate(WORDS)}},
                                     unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.add_special_tokens([AddedToken("</s>", special=True)])
    path = tmp_path_factory.mktemp("tok") / "tokenizer.json"
    tok.save(str(path))
    return path


def folder_with(tmp_path: Path, tokenizer: Path, config: str) -> Path:
    folder = tmp_path / "tok"
    folder.mkdir()
    (folder / "tokenizer.json").write_bytes(tokenizer.read_bytes())
    (folder / "tokenizer_config.json").write_text(config)
    tokenize.load_tokenizer.cache_clear()
    return folder


def plan(dataset: Path, tok: Path, **fields):
    return scenario_from({"model": "llama-3.2-1b", "task": "train", "method": "lora", "dataset": str(dataset),
                          "tokenizer": str(tok), **fields})


def chat_file(tmp_path: Path) -> Path:
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps(CHAT) + "\n")
    return path


def test_a_csv_field_over_128k_characters_is_read(tmp_path, tokenizer):
    """C1: Python's csv stops at 131,072 characters a field; a long document is one field."""
    path = tmp_path / "long.csv"
    path.write_text("text\n" + "hello " * 30_000 + "\n")  # 180,000 characters, 30,000 words
    s = plan(path, tokenizer)
    from gpuplan.dataset import profile

    assert profile(s).stats.tokens_total == 30_000


@pytest.mark.parametrize("name, content, said", [
    ("deep.json", "[" * 3000 + "]" * 3000, "deep.json: lists or mappings nest more than 64 levels deep"),
    ("deep.jsonl", '{"text": ' + "[" * 3000 + "]" * 3000 + "}\n", "deep.jsonl, line 1: lists or mappings nest"),
    ("latin.jsonl", '{"text": "caf\xe9"}\n', "latin.jsonl, line 1, is not UTF-8 text (byte 0xe9 at position 13)"),
    ("binary.csv", "\x89PNG\r\n\x1a\n\x00", "binary.csv, line 1, is not UTF-8 text (byte 0x89 at position 0)"),
    ("nul.jsonl", '{"text": "a\x00"}\n', "nul.jsonl, line 1, is not dataset text: it holds a NUL byte"),
    ("dup.jsonl", '{"text": "a", "text": "b"}\n', "dup.jsonl, line 1: key 'text' appears twice"),
    # the rewalk (bench/results/review_rewalk_s5.md): TRL's tokenizer refuses a text that is not a string, so
    # counting str(None) planned a run that fails; and which record is none of the forms was not said
    ("null.jsonl", '{"text": "a"}\n{"text": null}\n', "null.jsonl, record 2: its text is null, not text"),
    ("num.jsonl", '{"prompt": 3, "completion": "a"}\n', "num.jsonl, record 1: its prompt is 3, not text"),
    ("other.csv", "a,b\n1,2\n", "other.csv, record 1: its fields ['a', 'b'] are none of the forms"),
    # session 7's walk: an empty turn list read "bad scenario: 'NoneType' object is not iterable"
    ("nochat.jsonl", '{"messages": [{"role": "user", "content": "a"}]}\n{"messages": []}\n',
     "nochat.jsonl, record 2: its messages list is empty: a chat record needs its turns; drop the record"),
    ("noshare.jsonl", '{"conversations": []}\n', "noshare.jsonl, record 1: its conversations list is empty"),
    # session 20's fuzzing: a turn that is no object read "a chat record's messages must be objects with role and
    # content", naming neither the file nor the record (the check ran in the batched count, after the numbering)
    ("turns.jsonl", '{"text": "a"}\n{"messages": ["hi", "yo"]}\n',
     "turns.jsonl, record 2: turn 1 of its messages is 'hi', not an object: chat turns are objects with role"),
    ("share.jsonl", '{"conversations": [{"from": "human", "value": "a"}, 5]}\n',
     "share.jsonl, record 1: turn 2 of its conversations is 5, not an object"),
    ("pc.jsonl", '{"prompt": ["a"], "completion": [{"role": "assistant", "content": "b"}]}\n',
     "pc.jsonl, record 1: turn 1 of its prompt is 'a', not an object"),
    # fuzz_s31: a turn's role or content of another kind was counted as its str() (a content of {"a": 1} as 5
    # tokens), where a text field of the same value is refused; null content (a tool call's turn) and a list of
    # parts are read (test_a_turn_s_content_may_be_null_or_a_list_of_parts)
    ("role.jsonl", '{"messages": [{"role": 1, "content": "a"}]}\n',
     "role.jsonl, record 1: the role of turn 1 of its messages is 1, not text: chat turns name their role as text"),
    ("norole.jsonl", '{"messages": [{"role": "user", "content": "a"}, {"content": "b"}]}\n',
     "norole.jsonl, record 1: the role of turn 2 of its messages is missing"),
    ("obj.jsonl", '{"conversations": [{"from": "human", "value": {"a": 1}}]}\n',
     "obj.jsonl, record 1: the content of turn 1 of its conversations is \"{'a': 1}\", not text"),
    ("numc.jsonl", '{"prompt": [{"role": "user", "content": 5}], "completion": "b"}\n',
     "numc.jsonl, record 1: the content of turn 1 of its prompt is 5, not text"),
    # session 9's walk: Alpaca and question/answer files were refused without a word of how to convert them
    ("alpaca.jsonl", '{"instruction": "a", "input": "", "output": "b"}\n',
     "or text; Alpaca's instruction, input and output: write prompt (the instruction, then the input) and "
     "completion (the output)"),
    ("qa.csv", "question,answer\nx,y\n", "or text; question and answer: rename them prompt and completion"),
    # (session 22's DPO file of prompt/chosen/rejected is planned since session 24: test_dataset.py)
    ("dpo.jsonl", '{"prompt": "a", "chosen": null, "rejected": "c"}\n',
     "dpo.jsonl, record 1: its chosen is null, not text"),
])
def test_bad_dataset_files_are_one_sentence_naming_the_file(tmp_path, tokenizer, name, content, said):
    path = tmp_path / name
    path.write_bytes(content.encode("latin-1"))
    with pytest.raises(GpuplanError) as err:
        plan(path, tokenizer)
    assert said in str(err.value), str(err.value)


def test_a_turn_s_content_may_be_null_or_a_list_of_parts(tmp_path, tokenizer):
    """A tool call's turn has no text (``content: null``) and a multimodal one a list of parts; both are chat turns
    transformers' templates render, counted by their text: 'hello world' twice, 'hello' once (word-level)."""
    from gpuplan.dataset import profile

    path = tmp_path / "parts.jsonl"
    turns = [{"role": "user", "content": [{"type": "text", "text": "hello world"}]},
             {"role": "assistant", "content": None, "tool_calls": []}, {"role": "user", "content": "hello"}]
    path.write_text(json.dumps({"messages": turns}) + "\n")
    assert profile(plan(path, tokenizer)).stats.tokens_total == 3


@pytest.mark.parametrize("config", ['{"pad_token": "</s>"}', '{"eos_token": 5}', '{"bos_token": ["<s>"]}'])
def test_a_config_without_a_text_eos_takes_the_tokenizer_s_own(tmp_path, tokenizer, config):
    """A tokenizer_config.json naming no EOS as text (a pad token only; an EOS that is a number; a BOS that is a
    list) read "tokenizer.json is not valid JSON" or a TypeError traceback: the special-token comprehension's walrus
    rebound the tokenizer's text (session 7's walk). The EOS now comes from tokenizer.json's special tokens."""
    folder = folder_with(tmp_path, tokenizer, config)
    assert tokenize.load_tokenizer(str(folder)).eos_token == "</s>"
    from gpuplan.dataset import profile

    data = tmp_path / "t.jsonl"
    data.write_text(json.dumps({"text": "hello world"}) + "\n")
    assert profile(plan(data, folder)).stats.tokens_total == 2


def test_a_byte_order_mark_at_the_start_of_a_jsonl_is_read(tmp_path, tokenizer):
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"text": "hello world"}).encode() + b"\n")
    from gpuplan.dataset import profile

    assert profile(plan(path, tokenizer)).stats.tokens_total == 2


@pytest.mark.parametrize("config, said", [
    ("[1, 2]", "tokenizer_config.json holds a JSON list, not the tokenizer's settings"),  # C5 tok_listcfg
    ("{not json", "tokenizer_config.json is not valid JSON (line 1, column 2"),  # C5 tok_badcfg: names the file
])
def test_a_broken_tokenizer_config_is_one_sentence_naming_it(tmp_path, tokenizer, config, said):
    folder = folder_with(tmp_path, tokenizer, config)
    with pytest.raises(GpuplanError) as err:
        plan(chat_file(tmp_path), folder)
    assert said in str(err.value) and str(folder) in str(err.value)


@pytest.mark.parametrize("template, limit", [
    ("{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}", "characters"),  # tok_loop
    ('{{ "hello " * 100000000 }}', "a value of more than"),  # S5's string growth
    ("{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}", "loop steps"),
])
def test_a_template_that_loops_or_grows_is_left_out_and_said(tmp_path, tokenizer, template, limit):
    """S5: the records are counted without the template (turns joined by newlines + EOS), and the report says
    which limit the template broke."""
    folder = folder_with(tmp_path, tokenizer, json.dumps({"chat_template": template, "eos_token": "</s>"}))
    from gpuplan.dataset import profile

    p = profile(plan(chat_file(tmp_path), folder))
    assert p.lengths.content == (4,) and p.lengths.special == (1,)  # 4 words, one EOS: no template
    note = next(n for n in p.lengths.notes if "chat template is left out" in n)
    assert limit in note and "turns joined by newlines + EOS" in note


def test_a_template_within_its_limits_renders_as_the_plain_sandbox_does():
    """The bounded sandbox changes no output: a template using what released templates use (namespace, loop.last,
    macros, filters, ~, format, tojson, slicing) renders exactly as jinja2's ImmutableSandboxedEnvironment."""
    import jinja2.sandbox

    source = ("{% macro turn(m) %}<|{{ m.role|upper }}|>{{ m.content|trim }}{% endmacro %}"
              "{% set ns = namespace(n=0, last='') %}{{ bos_token }}"
              "{% for m in messages[::-1] if m.role != 'x' %}{% set ns.n = ns.n + 1 %}{% set ns.last = m.role ~ '!' %}"
              "{{ turn(m) }}{% if not loop.last %}\n{% endif %}{% endfor %}"
              "{{ '%s turns, last %s' % (ns.n, ns.last) }} {{ '{} {}'.format(1, 'x') }} {{ messages|tojson }}"
              "{% for k, v in {'a': 1}.items() %}{{ k }}={{ v }}{% endfor %}{{ ' '.join(['p', 'q']) }}")
    messages = [{"role": "system", "content": " be brief "}, {"role": "user", "content": "hi"}]
    plain = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    plain.filters["tojson"] = lambda x, indent=None: json.dumps(x, ensure_ascii=False, indent=indent)
    want = plain.from_string(source).render(messages=messages, bos_token="<s>")
    assert tpl.render(source, 20, messages=messages, bos_token="<s>") == want
    assert want.startswith("<s><|USER|>hi<|SYSTEM|>be brief2 turns, last system! 1 x [{")


@pytest.mark.parametrize("source", [
    "{{ 'x'|center(1000000000) }}", "{{ '%1000000000d' % 1 }}", "{{ '{:>1000000000}'.format(1) }}",
    "{% set a = 'a' * 90000 %}{{ a.replace('a', a) }}", "{% set a = 'a' * 90000 %}{{ range(100000)|join(a) }}",
    "{{ 10 ** 100000000 }}", "{% set ns = namespace(s='x') %}{% for i in range(60) %}{% set ns.s = ns.s ~ ns.s %}"
    "{% endfor %}", "{% set b %}{% for i in range(100000) %}{{ 'y' * 50000 }}{% endfor %}{% endset %}",
])
def test_every_way_to_grow_a_string_stops_at_the_budget(source):
    with pytest.raises(tpl.TemplateLimit):
        tpl.render(source, 10, messages=[])


def test_a_whole_number_squared_again_and_again_stops_at_its_bits():
    """Session 18's security audit: ``*`` of two whole numbers was not checked, and each squaring doubles the
    number: 2**64 squared 25 times took 21.7 s and 858 MB in one step (the time limit is read between steps). Squared
    5 times it is 2**2048 (2,049 bits); the 6th squaring (4,098 bits, past MAX_BITS 4,096) is refused before it runs."""
    squares = lambda n: "{% set a = 2**64 %}" + "{% set a = a*a %}" * n + "{{ a.bit_length() }}"  # noqa: E731
    assert tpl.render(squares(5), 10) == "2049"
    with pytest.raises(tpl.TemplateLimit, match="a product of 4,098 bits"):
        tpl.render(squares(25), 10)


def test_a_template_past_its_limits_on_a_record_is_one_sentence(tmp_path, tokenizer):
    """A template fine on the trial conversation that loops on a record's own data."""
    template = ("{% for m in messages %}{% for i in range(m.content|length) %}{% for j in range(1000) %}{% endfor %}"
                "{% endfor %}{% endfor %}")  # 75,000 steps on the trial conversation, 300,000 on the record
    folder = folder_with(tmp_path, tokenizer, json.dumps({"chat_template": template}))
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps({"messages": [{"role": "user", "content": "hello " * 50}]}) + "\n")
    with pytest.raises(GpuplanError, match=r"chat.jsonl, record 1: the chat template of .* went past more than "
                       r"200,200 loop steps and calls; pass --tokenizer"):  # 200,000 and 200 for its one turn
        plan(path, folder)


def test_a_record_past_the_model_s_context_is_planned_at_the_context(tmp_path, tokenizer):
    """N4: one record of 140,000 tokens on Llama-3.2-1B (context 131,072): the padded batch is planned at the
    context, where TRL's SFTTrainer truncates at max_length, and the report says so."""
    from gpuplan.dataset import profile

    path = tmp_path / "long.jsonl"
    path.write_text(json.dumps({"text": "hello " * 140_000}) + "\n" + json.dumps({"text": "the cat"}) + "\n")
    s = plan(path, tokenizer)
    p = profile(s)
    assert s.seq_len == 131_072 and p.stats.max_tokens == 140_001 and p.stats.truncated == 1
    assert s.train_tokens == 131_072 + 3  # the long record cut at the context, the short one whole (EOS included)
    assert any("the longest record is 140,001 tokens, past the model's context of 131,072: planned at seq_len "
               "131,072, where the trainer truncates it" in n for n in p.notes)


def test_the_estimate_cli_reads_the_report_s_tokenizer_folders(tmp_path, tokenizer, capsys):
    folder = folder_with(tmp_path, tokenizer, "[1, 2]")
    code = run(["estimate", "--model", "llama-3.2-1b", "--task", "train", "--method", "lora", "--gpu", "rtx-4090",
                "--dataset", str(chat_file(tmp_path)), "--tokenizer", str(folder)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "holds a JSON list" in err


def test_generation_markers_render_as_their_body():
    """``{% generation %}`` (transformers' assistant-mask tag, which TRL's training templates add) renders its
    body, so a template made for assistant-only loss counts the same tokens as without the markers."""
    from gpuplan.dataset.template import render

    marked = ("{% for m in messages %}<|{{ m['role'] }}|>{% if m['role'] == 'assistant' %}{% generation %}"
              "{{ m['content'] }}{% endgeneration %}{% else %}{{ m['content'] }}{% endif %}{% endfor %}")
    plain = marked.replace("{% generation %}", "").replace("{% endgeneration %}", "")
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert render(marked, 7, messages=messages) == render(plain, 7, messages=messages) == "<|user|>hi<|assistant|>hello"


def test_a_model_given_as_its_config_file_counts_with_the_tokenizer_beside_it(tmp_path, tokenizer):
    """Session 8's walk: a model given as ``folder/config.json`` with a dataset and no --tokenizer read
    "config.json is not a tokenizer.json the tokenizers library reads": the model's path was taken for the
    tokenizer. Its folder is now, as for a model given as the folder: here the word tokenizer beside it counts the
    chat's 4 words; without one the sentence names the folder."""
    from gpuplan.dataset import profile
    from gpuplan.model.catalog import bundled

    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "config.json").write_bytes(bundled()["meta-llama/Llama-3.2-1B"].read_bytes())
    fields = {"model": str(folder / "config.json"), "task": "train", "method": "lora",
              "dataset": str(chat_file(tmp_path))}
    with pytest.raises(GpuplanError, match=f"tokenizer '{folder}': no tokenizer.json there"):
        scenario_from(fields)
    (folder / "tokenizer.json").write_bytes(tokenizer.read_bytes())
    tokenize.load_tokenizer.cache_clear()
    assert profile(scenario_from(fields)).stats.tokens_total == 4  # hello world, the cat


def test_a_parquet_file_is_read_only_by_a_pyarrow_that_runs_nothing_in_it(tmp_path, tokenizer, monkeypatch):
    """Session 18's security audit: pyarrow 0.14 to 14.0.0 unpickled a Parquet schema's extension type
    (CVE-2023-47248), and gpuplan reads Parquet a user names or the page was sent (the reader process); gpuplan
    pins no pyarrow, so an older one is refused in one sentence before the file is opened."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from gpuplan.dataset import profile

    paths = [tmp_path / "train.parquet", tmp_path / "other.parquet"]  # other bytes: no token counts kept for it
    for path, text in zip(paths, ["hello world", "the cat"], strict=True):
        pq.write_table(pa.table({"text": [text]}), path)
    assert profile(plan(paths[0], tokenizer)).stats.tokens_total == 2
    monkeypatch.setattr(pa, "__version__", "14.0.0")
    with pytest.raises(GpuplanError, match=r"needs pyarrow 14.0.1 or later .*this one is 14.0.0\): older releases "
                                           "run code a Parquet file carries"):
        profile(plan(paths[1], tokenizer))


def test_a_parquet_file_that_decodes_past_its_bound_is_refused(tmp_path, tokenizer, monkeypatch):
    """s19-sec: a Parquet file's dictionary encoding repeats one value without bound (456 bytes, one 256 KiB text
    named by 4,096 rows, took 2.7 GB and more than 300 s of ``gpuplan estimate``); what Arrow decodes is bounded
    by 100 times the file's size, at least 64 MiB. Here: a file of a few KiB naming one 16 KiB text 20,000 times
    (312 MiB decoded); the same rows with 100 distinct short texts pass."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from gpuplan.dataset import profile
    from gpuplan.dataset import read as read_module
    from gpuplan.dataset.read import records

    bomb, fine = tmp_path / "bomb.parquet", tmp_path / "fine.parquet"
    rows = pa.array([0] * 20_000, pa.int32())
    pq.write_table(pa.table({"text": pa.DictionaryArray.from_arrays(rows, pa.array(["hello world " * 1365]))}), bomb)
    assert bomb.stat().st_size < 8_000
    with pytest.raises(GpuplanError, match=r"^bomb.parquet decodes to more than 64 MiB \(Parquet's encodings repeat "
                                           r"values; gpuplan reads at most 100 times the file's size"):
        sum(1 for _ in records(str(bomb), "parquet"))
    pq.write_table(pa.table({"text": [f"hello world {i % 100}" for i in range(20_000)]}), fine)
    assert sum(1 for _ in records(str(fine), "parquet")) == 20_000
    # the plan's road meets the same refusal (the small-file floor lowered to 4 MiB, so that the records tokenized
    # before it, as a real file's would be, take a second rather than half a minute)
    monkeypatch.setattr(read_module, "MAX_LINE_BYTES", 2**22)
    with pytest.raises(GpuplanError, match="decodes to more than 4 MiB"):
        profile(plan(bomb, tokenizer))
    monkeypatch.undo()
    # one 32 MiB text named by every row of the first batch (8 GiB as Python strings): refused before they are made
    big = tmp_path / "big.parquet"
    pq.write_table(pa.table({"text": pa.DictionaryArray.from_arrays(pa.array([0] * 256, pa.int32()),
                                                                     pa.array(["x" * 2**25]))}), big,
                   compression="zstd")
    with pytest.raises(GpuplanError, match=r"^big\.parquet decodes to more than 64 MiB"):
        next(records(str(big), "parquet"))


def tokenizer_with(tmp_path: Path, tokenizer: Path, **settings) -> Path:
    """The word-level tokenizer.json with ``settings`` (padding, truncation, normalizer, pre_tokenizer) set in it."""
    data = json.loads(tokenizer.read_text())
    data.update(settings)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data))
    tokenize.load_tokenizer.cache_clear()
    return path


PAD = {"direction": "Right", "pad_to_multiple_of": None, "pad_id": 0, "pad_type_id": 0, "pad_token": "[UNK]"}


@pytest.mark.parametrize("settings", [
    {"padding": {"strategy": {"Fixed": 5000}, **PAD}},  # s25-sec: 2e8 here aborted the process (signal 6) at 1.7 GB
    {"padding": {"strategy": "BatchLongest", **PAD}},
    {"truncation": {"direction": "Right", "max_length": 1, "strategy": "LongestFirst", "stride": 0}},
])
def test_padding_and_truncation_saved_in_a_tokenizer_json_do_not_count(tmp_path, tokenizer, settings):
    """A tokenizer.json saved after enable_padding / enable_truncation carries them; transformers' fast tokenizer
    sets both per call (``set_truncation_and_padding``: none unless the call asks, and SFT collators pad per batch),
    so the count is the words'. Read as saved, a fixed length of 2e8 allocated 2e8 tokens a record (s25-sec) and a
    truncation to 1 planned every record at one token."""
    tok = tokenize.load_tokenizer(str(tokenizer_with(tmp_path, tokenizer, **settings)))
    assert tok.count(["hello world the cat", "a"]) == [4, 1]
    assert tok.count(["hello world the cat"], special=True) == [4]


@pytest.mark.parametrize("normalizer", [
    {"type": "Replace", "pattern": {"String": "o"}, "content": "z" * 100_000},
    {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Prepend", "prepend": "y" * 100_000}]},
])
def test_a_normalizer_that_grows_the_text_is_refused(tmp_path, tokenizer, normalizer):
    """s25-sec: a Replace normalizer turning each 'o' into 4,000,000 characters took 3.4 GB and aborted on a 24 kB
    record; real ones replace a character or two ('▁' for a space)."""
    path = tokenizer_with(tmp_path, tokenizer, normalizer=normalizer)
    with pytest.raises(GpuplanError, match=r"tokenizer\.json's normalizer writes 100,000 characters"):
        tokenize.load_tokenizer(str(path))


def test_a_pattern_the_regex_engine_gives_up_on_is_one_sentence(tmp_path, tokenizer):
    """s25-sec: a pre-tokenizer regex with catastrophic backtracking hits Oniguruma's retry limit, and the
    tokenizers library panics (pyo3's PanicException, a BaseException that ``except Exception`` misses): it was a
    traceback and exit 1."""
    split = {"type": "Split", "pattern": {"Regex": "(a|a)+$"}, "behavior": "Isolated", "invert": False}
    tok = tokenize.load_tokenizer(str(tokenizer_with(tmp_path, tokenizer, pre_tokenizer=split)))
    with pytest.raises(GpuplanError, match="the tokenizers library failed on a text"):
        tok.count(["a" * 40 + "b"])


def test_a_post_processor_that_adds_a_flood_of_tokens_is_refused(tmp_path, tokenizer):
    """s25-sec: a TemplateProcessing of 300,000 special tokens (14 MB) took 3.2 s a text record; real templates add
    one to three (BOS, BOS + EOS, [CLS] + [SEP])."""
    special = {"SpecialToken": {"id": "</s>", "type_id": 0}}
    template = {"type": "TemplateProcessing", "single": [special] * 1000 + [{"Sequence": {"id": "A", "type_id": 0}}],
                "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
                "special_tokens": {"</s>": {"id": "</s>", "ids": [1], "tokens": ["</s>"]}}}
    path = tokenizer_with(tmp_path, tokenizer, post_processor=template)
    with pytest.raises(GpuplanError, match=r"post-processor adds 1,000 tokens to every text"):
        tokenize.load_tokenizer(str(path))
    template["single"] = [special, {"Sequence": {"id": "A", "type_id": 0}}, special]  # BOS + EOS: counted
    tok = tokenize.load_tokenizer(str(tokenizer_with(tmp_path, tokenizer, post_processor=template)))
    assert tok.count(["hello world"], special=True) == [4]


# ---- s27-sec: values measured whole, recursive loops, the clock, the 10,000-turn record, the count's deadline ------
DOUBLED = "{% set ns = namespace(l=['a']) %}{% for i in range(40) %}{% set ns.l = [ns.l, ns.l] %}{% endfor %}"
GROWN = [  # each kept 40 steps or fewer; written out whole, each is 2**40 copies or gigabytes
    DOUBLED + "{{ ns.l }}", DOUBLED + "{{ ns.l|tojson }}", DOUBLED + "{{ ns.l|join }}", DOUBLED + "{{ ns }}",
    DOUBLED + "{{ '%s' % ns.l }}", DOUBLED + "{{ '{}'.format(ns.l) }}", DOUBLED + "{{ ns.l == ns.l }}",
    "{% set ns = namespace(d={'a': 'a'}) %}{% for i in range(40) %}{% set ns.d = {'x': ns.d, 'y': ns.d} %}"
    "{% endfor %}{{ ns.d|string|length }}",
    "{% set ns = namespace(a=['a'], b=['a']) %}{% for i in range(40) %}{% set ns.a = [ns.a, ns.a] %}"
    "{% set ns.b = [ns.b, ns.b] %}{% endfor %}{{ ns.a == ns.b }}",  # two equal trees: 2**40 comparisons
    "{{ lipsum(n=99999, min=99998, max=99999)|length }}",
    "{{ [1, 2, 3]|tojson(indent=99999) }}", "{% set w = 'x' * 99999 %}{{ [[1, 2], [3]]|tojson(indent=w) }}",
    "{{ (range(99999)|batch(1)|sum(start=[]))|length }}",  # Python's sum of lists: the square of the items' time
    "{% set ns = namespace(l=['a']) %}{% for i in range(200) %}{% set ns.l = [ns.l] %}{% endfor %}",
]


@pytest.mark.parametrize("source", GROWN)
def test_a_value_is_measured_whole_before_it_is_made_or_written(source):
    """Session 27's audit: the budget counted a list's items, not what they hold, so a list doubled into itself 40
    times (40 steps) was 2**40 copies of its string when written, compared, joined or dumped: each ran past 60 s or
    2.8 GB. lipsum's words, tojson's indent and a sum of lists were made before their size was read. Now each is
    refused in a few hundredths of a second (2 s allowed on a loaded machine) and a few megabytes."""
    import tracemalloc

    tracemalloc.start()
    start = time.monotonic()
    with pytest.raises(tpl.TemplateLimit, match=r"a value of more than|nested more than|a sum of lists"):
        tpl.render(source, 10, messages=[])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert time.monotonic() - start < 2.0 and peak < 32 << 20, (time.monotonic() - start, peak)  # a loaded machine


def test_each_item_of_a_recursive_loop_is_a_step(monkeypatch):
    """``loop(items)`` in a recursive loop iterated its items outside the counting filter: 3 calls walked 300,000
    items in 3 steps. Now each item is a step (the clock given a minute, so that the steps are what stop it on a
    loaded machine)."""
    monkeypatch.setattr(tpl, "TIME_S", 60.0)
    source = ("{% for x in range(3) recursive %}{% if loop.depth == 1 %}{{ loop(range(99999)) }}{% endif %}"
              "{% endfor %}")
    with pytest.raises(tpl.TemplateLimit, match="more than 200,000 loop steps"):
        tpl.render(source, 10, messages=[])
    assert tpl.render(source.replace("99999", "9"), 10, messages=[]) == ""


def test_the_clock_is_read_after_a_step_that_works_on_a_large_value(monkeypatch):
    """The clock was read every 256 steps whatever a step did: 256 sorts of a long list ran between two readings.
    Now a step counts the characters it reads and makes, and one over :data:`CLOCK_WORK` reads the clock at once:
    three ``length`` of a 90,000-character string, three readings (and the one that sets the deadline)."""
    reads = []
    monkeypatch.setattr(tpl.time, "monotonic", lambda: reads.append(1) or time.perf_counter())
    tpl.render("{% set s = 'x' * 90000 %}{% for i in range(3) %}{{ s|length }}{% endfor %}", 10, messages=[])
    assert len(reads) == 1 + 3
    reads.clear()
    tpl.render("{% for i in range(3) %}{{ 'x'|length }}{% endfor %}", 10, messages=[])
    assert len(reads) == 1  # small steps: the clock waits for 256 of them


def test_a_record_of_10000_turns_is_counted_with_its_template(tmp_path, tokenizer):
    """A ChatML template on 10,000 turns of "hello" writes 290,000 characters, past the 140,000 of a budget made of
    the record's text alone, and the count was refused. The budget now grows by PER_TURN_CHARS and PER_TURN_STEPS a
    turn: the record counts its 10,000 words and its template's markers."""
    chatml = ("{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>\n' }}"
              "{% endfor %}")
    folder = folder_with(tmp_path, tokenizer, json.dumps({"chat_template": chatml, "eos_token": "</s>"}))
    path = tmp_path / "long.jsonl"
    turns = [{"role": "user" if i % 2 == 0 else "assistant", "content": "hello"} for i in range(10_000)]
    path.write_text(json.dumps({"messages": turns}) + "\n")
    from gpuplan.dataset import profile

    p = profile(plan(path, folder))
    assert p.lengths.content == (10_000,) and p.lengths.special[0] > 0  # every turn's markers are tokens ([UNK])


@pytest.mark.parametrize("source", [
    DOUBLED.replace("range(40)", "range(40 if messages|length > 5 else 0)") + "{{ ns.l }}",
    "{% for m in messages %}{{ m.content }}{{ 'x' * 99000 if messages|length > 5 }}{% endfor %}",
    "{% for x in [messages|length] recursive %}{% if x > 5 and loop.depth < 3 %}{{ loop(range(99999)) }}"
    "{% endif %}{% endfor %}",
])
def test_the_command_line_names_the_record_a_template_fails_on(tmp_path, tokenizer, capsys, source):
    """A template fine on the five-turn trial that goes past its budget on a record of 6 turns: one line on stderr
    naming the file and the record, exit 2 (the growth, a template writing 99,000 characters a turn, the loop)."""
    folder = folder_with(tmp_path, tokenizer, json.dumps({"chat_template": source, "eos_token": "</s>"}))
    path = tmp_path / "chat.jsonl"
    six = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "world"}] * 3
    path.write_text(json.dumps(CHAT) + "\n" + json.dumps({"messages": six}) + "\n")
    code = run(["estimate", "--model", "llama-3.2-1b", "--task", "train", "--method", "lora", "--gpu", "rtx-4090",
                "--dataset", str(path), "--tokenizer", str(folder)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert f"{path}, record 2: the chat template of {folder / 'tokenizer.json'} went past" in err, err


def test_counting_a_dataset_stops_at_the_command_line_s_deadline(tmp_path, tokenizer, capsys, monkeypatch):
    """The command line's counting had no bound: a huge file, or a template at 1.9 s a record (under its 2 s), ran
    for days. Now it stops at --count-timeout (default COUNT_TIMEOUT_S) with one sentence, exit 2."""
    from gpuplan import clock
    from gpuplan.dataset import template

    monkeypatch.setattr(template, "render", lambda *a, **k: time.sleep(0.05) or "hello")  # a slow template
    folder = folder_with(tmp_path, tokenizer, json.dumps({"chat_template": "{{ 'hello' }}", "eos_token": "</s>"}))
    path = tmp_path / "slow.jsonl"
    path.write_text((json.dumps(CHAT) + "\n") * 1000)
    args = ["estimate", "--model", "llama-3.2-1b", "--task", "train", "--method", "lora", "--gpu", "rtx-4090",
            "--dataset", str(path), "--tokenizer", str(folder)]
    start = time.monotonic()
    assert run([*args, "--count-timeout", "0.5"]) == 2
    err = capsys.readouterr().err
    assert time.monotonic() - start < 10 and err.count("\n") == 1, err
    assert f"counting the tokens of {path} took more than 0.5 s (" in err and "of 1,000 records counted)" in err
    assert run([*args, "--count-timeout", "-1"]) == 2
    assert "--count-timeout is a number of seconds, 0 or more" in capsys.readouterr().err
    assert clock.count_seconds() is None  # the bound is the command's, not the process's
    assert clock.COUNT_TIMEOUT_S == 1800


def test_every_pass_over_a_huge_file_of_tiny_records_is_within_the_count_timeout(tmp_path, tokenizer, capsys):
    """The first pass over a JSON Lines file (its records counted, to sample it) and the digest that names its cache
    entry ran before --count-timeout's clock started: 5 million records of 13 bytes were read whole however small
    the bound (about 3.5 s here; 20 million: 14 s). Now one deadline covers every pass: the command stops inside the
    first with one sentence, before any record is counted, and keeps nothing in the cache."""
    import os

    from gpuplan.dataset import cache

    folder = folder_with(tmp_path, tokenizer, json.dumps({"eos_token": "</s>"}))
    path = tmp_path / "tiny.jsonl"
    path.write_bytes(b'{"text":"a"}\n' * 5_000_000)
    args = ["estimate", "--model", "llama-3.2-1b", "--task", "train", "--method", "lora", "--gpu", "rtx-4090",
            "--dataset", str(path), "--tokenizer", str(folder), "--count-timeout", "0.05"]
    def kept() -> set[str]:
        return set(os.listdir(cache.folder())) if cache.folder().exists() else set()

    before = kept()
    assert run(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert f"counting the tokens of {path} took more than 0.05 s (0 records counted): give --count-timeout" in err
    assert kept() == before  # nothing half-written


def test_docs_security_states_the_template_budget_and_the_count_s_bound():
    """docs/security.md states the chat template's budget and the command line's bound on counting as the
    constants the code enforces."""
    from gpuplan import clock
    from gpuplan.dataset import read

    doc = " ".join((Path(__file__).resolve().parents[2] / "docs" / "security.md").read_text(encoding="utf-8").split())
    stated = [f"{tpl.STEPS:,} steps plus {tpl.PER_TURN_STEPS} a turn", f"{tpl.TIME_S:g} s, and {tpl.BASE_CHARS:,} "
              f"characters plus {tpl.PER_CHAR} per character of the record and {tpl.PER_TURN_CHARS} a turn",
              f"nests at most {tpl.MAX_DEPTH} levels", f"may pass {tpl.MAX_BITS:,} bits",
              f"every {tpl.CLOCK_WORK // tpl.CHARS_PER_STEP} steps, and after any step that reads or makes "
              f"{tpl.CLOCK_WORK:,} characters", f"`--count-timeout` seconds (default {clock.COUNT_TIMEOUT_S:g};",
              f"(every {read.CLOCK_LINES:,} lines)"]
    assert not [s for s in stated if s not in doc], [s for s in stated if s not in doc]


def test_a_record_s_own_data_is_within_its_budget_whatever_field_holds_it():
    """A turn whose tool call holds 300,000 characters and whose content is empty: the budget, made of the content
    (100,000 characters), grows once by the record written out as JSON when a value nears it, so reading the
    record's own turns (``messages|length``, ``tojson``) is never refused, and doubling them still is."""
    call = {"type": "function", "function": {"name": "f", "arguments": "x" * 300_000}}
    messages = [{"role": "assistant", "content": "", "tool_calls": [call]}]
    written = tpl.render("{{ messages|length }} {{ messages|tojson|length }}", 0, messages=messages)
    assert written == f"1 {len(json.dumps(messages))}"
    with pytest.raises(tpl.TemplateLimit, match="a value of more than"):
        tpl.render(DOUBLED.replace("['a']", "messages"), 0, messages=messages)
