"""Capture the signatures the Unsloth script calls, for the launch tests: Unsloth cannot be imported without a GPU
(and pins its own torch), so its source is read, not run. From a release's wheel, with :mod:`ast`:
``FastLanguageModel.from_pretrained`` (``unsloth/models/loader.py``), ``FastLlamaModel.get_peft_model``
(``unsloth/models/llama.py``, which ``FastLanguageModel.get_peft_model`` calls for decoder LMs) with each
parameter's default as written, and the default ``target_modules``.

    pip download --no-deps unsloth==2026.10.9 -d /tmp/unsloth
    python tests/data/unsloth/capture.py /tmp/unsloth/unsloth-2026.10.9-py3-none-any.whl \
        > tests/data/unsloth/signatures-2026.10.9.json
"""

import ast
import json
import re
import sys
import zipfile


def method(tree: ast.Module, cls: str, name: str) -> dict:
    node = next(f for c in tree.body if isinstance(c, ast.ClassDef) and c.name == cls
                for f in c.body if isinstance(f, ast.FunctionDef) and f.name == name)
    a = node.args
    positional = a.posonlyargs + a.args
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    params = {p.arg: None if d is None else ast.unparse(d) for p, d in zip(positional, defaults, strict=True)}
    params.update({p.arg: None if d is None else ast.unparse(d) for p, d in zip(a.kwonlyargs, a.kw_defaults,
                                                                                 strict=True)})
    return {"parameters": params, "var_keyword": a.kwarg.arg if a.kwarg else None}


def main() -> None:
    wheel = sys.argv[1]
    version = re.search(r"unsloth-([^-]+)-", wheel).group(1)
    with zipfile.ZipFile(wheel) as z:
        loader = ast.parse(z.read("unsloth/models/loader.py"))
        llama = ast.parse(z.read("unsloth/models/llama.py"))
    targets = next(ast.literal_eval(n.value) for n in llama.body if isinstance(n, ast.Assign)
                   and any(isinstance(t, ast.Name) and t.id == "_DEFAULT_TARGET_MODULES" for t in n.targets))
    json.dump({"source": "unslothai/unsloth unsloth/models/loader.py FastLanguageModel.from_pretrained, "
                         "unsloth/models/llama.py FastLlamaModel.get_peft_model and _DEFAULT_TARGET_MODULES "
                         "(read from the wheel with ast)",
               "unsloth_version": version,
               "from_pretrained": method(loader, "FastLanguageModel", "from_pretrained"),
               "get_peft_model": method(llama, "FastLlamaModel", "get_peft_model"),
               "default_target_modules": targets}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
