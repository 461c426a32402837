"""``llama-server.sh``: llama.cpp's ``llama-server`` command of a serving plan (engine llama.cpp).

The flags are the settings the memory estimate assumed (:mod:`gpuplan.engines.llama_cpp`), written out rather than
left to llama-server's defaults, which fit the context and the layers to the free memory on their own (``--fit``):

- ``-m``: the GGUF file, ``$GGUF`` or ``<model>-<TYPE>.gguf`` in the folder the script runs from (llama.cpp runs
  GGUF files only; the notes say how to make one from the Hugging Face checkpoint);
- ``-np`` one slot per request of the plan's batch and ``-c`` the cells of all of them, batch x (prompt + output):
  with a slot count given, llama-server gives each slot ``n_ctx / n_parallel`` cells of its own (the KV buffer
  :func:`gpuplan.engines.llama_cpp.kv_bytes` counts; ``--kv-unified`` is on only with ``-np`` left to auto);
- ``-ngl``: the layers the estimate placed on the GPU, plus one for the output head, which llama.cpp counts as layer
  ``n_layer + 1`` (``src/llama-model.cpp`` ``load_tensors``: ``i_gpu_start = n_layer + 1 - n_gpu_layers``), so the
  head is on the GPU as the estimate counts it; ``-sm layer -ts`` the devices' shares of a split;
- ``-ub`` the micro-batch the compute buffer was sized at, ``-fa`` flash attention, ``-ctk``/``-ctv`` the cache type
  (f16, bf16, q8_0);
- ``--port``; llama-server listens on 127.0.0.1 unless ``--host`` says otherwise.

Option names are those of llama.cpp's ``common/arg.cpp`` (``common_params_parser_init``) at the commit
llama-cpp-python 0.3.36 vendors (ggml-org/llama.cpp@0c1e5709), its ``llama-server --help`` captured in
tests/data/llama.cpp; ``tests/launchers/test_launch_llama_cpp.py`` starts the written script on a tiny GGUF.
"""

from __future__ import annotations

from .. import overheads as oh
from ..speed.ggml import ftype
from .files import LaunchFile, Raw, pasted, quote, shell_text
from .plan import LaunchPlan
from .serving import refusal
from .settings import LaunchOptions

NAME = "llama.cpp"
SCRIPT = "llama-server.sh"
CACHE_TYPE = {"auto": "f16", "fp16": "f16", "bf16": "bf16", "int8": "q8_0"}
N_BATCH = 2048  # llama-server's logical batch (common.h n_batch); the micro-batch cannot exceed it


def applies(plan: LaunchPlan) -> str | None:
    return refusal(plan, NAME, "llama.cpp", "llama.cpp's buffers")


def gguf_name(plan: LaunchPlan) -> str:
    """The GGUF file's default name: the model's last name and the file type, as llama-quantize's users name them
    (``Llama-3.1-8B-Q4_K_M.gguf``)."""
    return f"{plan.model.name.rstrip('/').split('/')[-1]}-{ftype(plan.scenario, plan.model).upper()}.gguf"


def gpu_layers(plan: LaunchPlan) -> int:
    """``-ngl``: the repeating layers on the GPU (the estimate's) and the output head (module docstring)."""
    held = plan.result.memory.gpu_layers
    return min(plan.model.num_layers if held is None else held, plan.model.num_layers) + 1


def command(plan: LaunchPlan, opts: LaunchOptions) -> list[str]:
    s = plan.scenario
    ubatch = s.ubatch_tokens or oh.LLAMA_CPP_UBATCH
    argv = ["llama-server", "-m", Raw('"$GGUF"'), "-c", str(s.batch_size * (s.prompt_tokens + s.output_tokens)),
            "-np", str(s.batch_size), "-ngl", str(gpu_layers(plan)), "-ub", str(ubatch)]
    if ubatch > N_BATCH:
        argv += ["-b", str(ubatch)]
    argv += ["-fa", s.flash_attention, "-ctk", CACHE_TYPE[s.kv_cache_dtype], "-ctv", CACHE_TYPE[s.kv_cache_dtype]]
    devices = s.tp * s.pp
    if devices > 1:
        shares = s.tensor_split or [1.0] * devices
        argv += ["-sm", "layer", "-ts", ",".join(f"{x:g}" for x in shares)]
    return [*argv, "--port", str(opts.port)]


def notes(plan: LaunchPlan, opts: LaunchOptions) -> list[str]:
    mem, name = plan.result.memory, gguf_name(plan)
    kind = name.rsplit("-", 1)[-1].removesuffix(".gguf")
    out = [f"run: {pasted(['bash', SCRIPT], {'GGUF': f'path/to/{name}'})} (default: {quote(name)} in this folder); "
           f"the OpenAI-compatible server listens on 127.0.0.1:{opts.port} (add --host 0.0.0.0 to serve other "
           "machines)",
           f"the GGUF: a published {kind} file of {plan.model.name}, or made with llama.cpp: python "
           "convert_hf_to_gguf.py MODEL_FOLDER --outtype f16 --outfile F16.gguf, then "
           + pasted(["llama-quantize", "F16.gguf", name, kind]),
           f"buffers as predicted (llama-server's load log prints each): model {mem.weights_gib:.2f} GiB, KV "
           f"{mem.kv_cache_gib:.2f} GiB, compute {mem.activations_gib:.2f} GiB on the GPU"
           + (f", {mem.cpu_gib:.2f} GiB in host memory" if mem.cpu_gib else "")]
    offloaded = mem.offloaded_layers or 0
    if offloaded:
        out.append(f"-ngl {gpu_layers(plan)}: {plan.model.num_layers - offloaded} of {plan.model.num_layers} layers "
                   f"and the output on the GPU; the other {offloaded} run from system RAM on the CPU")
    return out


def files(plan: LaunchPlan, opts: LaunchOptions) -> list[LaunchFile]:
    default = Raw(f"GGUF=${{GGUF:-{quote(gguf_name(plan))}}}")
    return [LaunchFile(name=SCRIPT, target=NAME, text=shell_text(plan, command(plan, opts), notes=notes(plan, opts),
                                                                 before=[[default]]),
                       reader="bash (llama-server)", executable=True)]
