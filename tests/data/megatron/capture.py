"""Capture Megatron-LM's own argument parser (``megatron/training/arguments.py`` ``add_megatron_arguments``, which
``pretrain_gpt.py`` parses) into pretrain-args.json: every option's names, whether it takes a value, its choices.

Run with a Megatron-LM checkout on PYTHONPATH, and triton importable (the CPU wheel is enough: the parser's imports
reach modules that import triton). Python 3.11 lacks ``typing.override``, which one imported module uses: a no-op
stands in for it. ``python tests/data/megatron/capture.py COMMIT > tests/data/megatron/pretrain-args.json``
"""

import argparse
import json
import sys
import typing

if not hasattr(typing, "override"):
    typing.override = lambda f: f

from megatron.training.arguments import add_megatron_arguments

parser = add_megatron_arguments(argparse.ArgumentParser(allow_abbrev=False))
options = []
for action in parser._actions:
    if not action.option_strings:
        continue
    options.append({"names": action.option_strings, "dest": action.dest,
                    "takes_value": action.nargs != 0 and not isinstance(action, (argparse._StoreTrueAction,
                                                                                  argparse._StoreFalseAction,
                                                                                  argparse._StoreConstAction)),
                    "nargs": action.nargs if isinstance(action.nargs, (int, str)) else None,
                    "choices": [str(c) for c in action.choices] if action.choices else None})
json.dump({"source": f"NVIDIA/Megatron-LM@{sys.argv[1]} megatron/training/arguments.py add_megatron_arguments",
           "options": options}, sys.stdout, indent=1)
