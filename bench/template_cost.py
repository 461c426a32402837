"""What the chat template's budget costs (gpuplan/dataset/template.py): CPU milliseconds per record of three
templates of released models' form, and the steps a turn takes, on the src that PYTHONPATH names.

    PYTHONPATH=src python bench/template_cost.py

The templates: ChatML as Qwen2.5's, Llama 3.1's (system turn split off, ``trim``, ``tojson``), DeepSeek-R1's (a
namespace, two passes over the turns, ``split`` of ``</think>``), each condensed here from the text its
tokenizer_config.json ships (tool branches left out, long tags broken over lines). Records: 2,000 conversations of
2-8 turns of 5-100 words (seed 0); the best of 5 passes of CPU time (time.process_time: other work on the machine
counts less than in wall time). Then one record of 10,000 turns of 2 characters: its render time and the steps it
took.
"""

from __future__ import annotations

import random
import time

from gpuplan.dataset import template as tpl

QWEN = """{%- if messages[0]['role'] == 'system' %}
    {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}
{%- else %}
    {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first)
        or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}
"""
LLAMA = """{{- bos_token }}
{%- if not date_string is defined %}
    {%- set date_string = "26 Jul 2024" %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}
{{- "<|start_header_id|>system<|end_header_id|>\\n\\n" }}
{%- if tools is not none %}
    {{- "Environment: ipython\\n" }}
{%- endif %}
{{- "Cutting Knowledge Date: December 2023\\n" }}
{{- "Today Date: " + date_string + "\\n\\n" }}
{{- system_message }}
{{- "<|eot_id|>" }}
{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim
            + '<|eot_id|>' }}
    {%- elif message.role == "tool" or message.role == "ipython" %}
        {{- "<|start_header_id|>ipython<|end_header_id|>\\n\\n" }}
        {%- if message.content is mapping or message.content is iterable %}
            {{- message.content | tojson }}
        {%- else %}
            {{- message.content }}
        {%- endif %}
        {{- "<|eot_id|>" }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}
{%- endif %}
"""
DEEPSEEK = ("{% if not add_generation_prompt is defined %}{% set add_generation_prompt = false %}{% endif %}"
            "{% set ns = namespace(is_first=false, is_tool=false, is_output_first=true, system_prompt='', "
            "is_first_sp=true) %}{%- for message in messages %}{%- if message['role'] == 'system' %}{%- if "
            "ns.is_first_sp %}{% set ns.system_prompt = ns.system_prompt + message['content'] %}{% set "
            "ns.is_first_sp = false %}{%- else %}{% set ns.system_prompt = ns.system_prompt + '\\n\\n' + "
            "message['content'] %}{%- endif %}{%- endif %}{%- endfor %}{{ bos_token }}{{ ns.system_prompt }}"
            "{%- for message in messages %}{%- if message['role'] == 'user' %}{%- set ns.is_tool = false -%}"
            "{{'<｜User｜>' + message['content']}}{%- endif %}{%- if message['role'] == 'assistant' and "
            "'tool_calls' not in message %}{%- if ns.is_tool %}{{'<｜tool▁outputs▁end｜>' + message['content'] + "
            "'<｜end▁of▁sentence｜>'}}{%- set ns.is_tool = false -%}{%- else %}{% set content = message['content'] %}"
            "{% if '</think>' in content %}{% set content = content.split('</think>')[-1] %}{% endif %}"
            "{{'<｜Assistant｜>' + content + '<｜end▁of▁sentence｜>'}}{%- endif %}{%- endif %}{%- endfor -%}"
            "{% if add_generation_prompt and not ns.is_tool %}{{'<｜Assistant｜>'}}{% endif %}")
TEMPLATES = {"Qwen2.5 (ChatML)": QWEN, "Llama 3.1": LLAMA, "DeepSeek-R1": DEEPSEEK}
SPECIAL = {"bos_token": "<s>", "eos_token": "</s>"}


def records(n: int = 2000) -> list[list[dict]]:
    rng = random.Random(0)
    words = ["the", "cat", "sat", "on", "a", "mat", "and", "then", "it", "went", "to", "sleep", "while", "dog"]
    out = []
    for _ in range(n):
        turns = [{"role": "system", "content": "You are a helpful assistant."}] if rng.random() < 0.5 else []
        for i in range(rng.randint(2, 8)):
            text = " ".join(rng.choice(words) for _ in range(rng.randint(5, 100)))
            turns.append({"role": "user" if i % 2 == 0 else "assistant", "content": text})
        out.append(turns)
    return out


def per_record_ms(source: str, data: list[list[dict]]) -> float:
    best = float("inf")
    for _ in range(5):
        start = time.process_time()
        for turns in data:
            tpl.render(source, sum(len(m["content"]) for m in turns), messages=turns, add_generation_prompt=False,
                       **SPECIAL)
        best = min(best, time.process_time() - start)
    return best / len(data) * 1e3


def long_record(source: str, turns: int = 10_000) -> str:
    """The render of one record of ``turns`` turns: seconds and steps, or the limit it went past."""
    made = []

    class Counted(tpl.Budget):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": "hi"} for i in range(turns)]
    real, tpl.Budget = tpl.Budget, Counted
    try:
        start = time.process_time()
        tpl.render(source, 2 * turns, messages=messages, add_generation_prompt=False, **SPECIAL)
        steps = getattr(made[0], "max_steps", tpl.STEPS) - made[0].steps
        return f"{time.process_time() - start:.2f} s, {steps:,} steps ({steps / turns:.1f} a turn)"
    except tpl.TemplateLimit as limit:
        return f"refused: {limit}"
    finally:
        tpl.Budget = real


def main() -> None:
    data = records()
    print("| template | ms/record | 10,000 turns of 'hi' |\n|---|---|---|")
    for name, source in TEMPLATES.items():
        print(f"| {name} | {per_record_ms(source, data):.3f} | {long_record(source)} |")


if __name__ == "__main__":
    main()
