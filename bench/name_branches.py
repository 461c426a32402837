"""Lines of ``src/gpuplan`` that branch on an engine's, a stack's or a sharding's name outside their profile folders
(``engines/``, ``stacks/``, ``sharding/``): the count the architecture reviews take (architecture-review-2 counted
91 engine branches in 24 files; bench/results/architecture_rewalk_s15.md counts all three).

A line counts when its code (comments left out) compares a quoted name of that kind (``== "vllm"``, ``in ("ddp",``)
or compares the field itself (``engine ==``, ``s.stack in (...)``). ZeRO's levels (zero1/2/3: what a sharding
splits) are counted apart. Run ``python bench/name_branches.py`` (``-v KIND`` lists a kind's lines).
"""

from __future__ import annotations

import argparse
import collections
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "gpuplan"
ENGINES = ["transformers", "vllm", "sglang", "llama.cpp", "trtllm", "mlx"]
STACKS = ["hf", "torchtune", "torchtitan", "unsloth", "axolotl", "pytorch", "megatron", "diffusers", "kohya",
          "simpletuner", "ai-toolkit"]
SHARDINGS = ["single", "ddp", "fsdp", "fsdp1", "fsdp2", "deepspeed"]
LEVELS = ["zero1", "zero2", "zero3"]


def _pattern(names: list[str], field: str) -> re.Pattern:
    quoted = "[\"'](?:" + "|".join(re.escape(n) for n in names) + ")[\"']"
    return re.compile(rf"(==|!=)\s*{quoted}|{quoted}\s*(==|!=)|\b(?:not\s+)?in\s*[\(\[\{{]\s*{quoted}"
                      rf"|\b{field}\s*(==|!=)|\.{field}\s+(not\s+)?in\s+[A-Za-z_(\[{{]")


KINDS = {"engine": (_pattern(ENGINES, "engine"), "engines"), "stack": (_pattern(STACKS, "stack"), "stacks"),
         "sharding": (_pattern(SHARDINGS, "(?:sharding|sharded_by)"), "sharding"),
         "zero level": (_pattern(LEVELS, "resolved_sharding"), "sharding")}


def branches() -> dict[str, list[tuple[str, int, str, bool]]]:
    """Kind -> its lines: (file under src/gpuplan, line number, code, inside its profile folder)."""
    out: dict[str, list[tuple[str, int, str, bool]]] = {kind: [] for kind in KINDS}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("  #")[0]
            for kind, (pattern, home) in KINDS.items():
                if pattern.search(code):
                    out[kind].append((str(rel), number, line.strip(), rel.parts[0] == home))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-v", dest="kind", choices=list(KINDS), help="list this kind's lines outside its folder")
    args = parser.parse_args()
    for kind, rows in branches().items():
        outside = [r for r in rows if not r[3]]
        files = collections.Counter(r[0] for r in outside)
        print(f"{kind}: {len(outside)} lines in {len(files)} files outside {KINDS[kind][1]}/ "
              f"(+{len(rows) - len(outside)} inside): " + ", ".join(f"{f} {n}" for f, n in files.most_common()))
        if args.kind == kind:
            print("\n".join(f"  {f}:{n}: {code[:140]}" for f, n, code, _ in outside))


if __name__ == "__main__":
    main()
