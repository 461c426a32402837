"""Capture the options of `vllm serve` from vLLM's own argument parser, for the launch tests on machines where
vLLM does not install (it pulls a CUDA build of torch and the NVIDIA libraries).

Run where vLLM imports (a CPU machine works with `VLLM_TARGET_DEVICE=cpu` and the wheel installed with
`--no-deps` plus its pure-Python imports):

    VLLM_TARGET_DEVICE=cpu python tests/data/vllm/capture.py > tests/data/vllm/serve-args-<version>.json
"""

import json
import sys
from importlib.metadata import version

try:  # vLLM 0.33 moved the parser
    from vllm.entrypoints.common.cli_args import make_arg_parser
except ImportError:  # vLLM 0.32
    from vllm.entrypoints.launchers.cli_args import make_arg_parser
from vllm.model_executor.layers.quantization import QUANTIZATION_METHODS
from vllm.utils.argparse_utils import FlexibleArgumentParser


def describe(action) -> dict:
    kind = type(action).__name__
    return {"options": list(action.option_strings), "dest": action.dest, "action": kind,
            "type": getattr(action.type, "__name__", None) if action.type else None,
            "choices": None if action.choices is None else [str(c) for c in action.choices],
            "nargs": action.nargs if isinstance(action.nargs, (int, str, type(None))) else str(action.nargs)}


def main() -> None:
    parser = make_arg_parser(FlexibleArgumentParser())
    actions = [describe(a) for a in parser._actions if a.dest != "help"]
    json.dump({"source": f"{make_arg_parser.__module__}.make_arg_parser (the parser of `vllm serve`); "
                         "quantization methods: vllm.model_executor.layers.quantization.QUANTIZATION_METHODS",
               "vllm_version": version("vllm"), "actions": actions,
               "quantization_methods": list(QUANTIZATION_METHODS)}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
