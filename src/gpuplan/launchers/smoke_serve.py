"""Smoke run of the llama.cpp target: a serving plan rewritten onto the tiny model of :mod:`.smoke` (same
``model_type``, 2 layers, 64 wide, random weights, its byte-level BPE tokenizer), that model written as a GGUF file
with llama.cpp's own writer, and ``llama-server.sh`` as :mod:`.llama_cpp` writes it started on the file: the run
passes when the server reports ready on ``/health`` and answers one OpenAI completion with the tokens asked for.

The GGUF is written the way ``convert_hf_to_gguf.py`` writes a dense Llama-like model (ggml-org/llama.cpp@0c1e5709,
``conversion/base.py`` ``TextModel.set_gguf_parameters`` and ``_set_vocab_gpt2``, ``conversion/llama.py``
``LlamaModel.permute``): gguf-py's ``GGUFWriter``, the tensor names of its ``TensorNameMap``, the hyperparameters
under the architecture's keys, the vocabulary as a ``gpt2`` tokenizer with its merges and special ids
(``gguf.SpecialVocab``), Llama's query and key rows permuted to ggml's rotary layout, norms in f32 and the rest in
f16 (``convert_hf_to_gguf.py --outtype f16``, the plan's file type when it quantizes nothing).

``llama-server`` is found on ``PATH``, else where ``bench/llama_server.py`` builds it (:data:`BUILT`): llama.cpp's
server from the source llama-cpp-python's sdist vendors, as the CI script does before the suite.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from ..engines import engine_for
from ..scenario import Scenario
from .llama_cpp import NAME as LLAMA_CPP

LLAMA_CPP_COMMIT = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"  # what llama-cpp-python 0.3.36's sdist vendors
LLAMA_CPP_PYTHON = "0.3.36"
BUILT = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gpuplan" / \
    f"llama.cpp-{LLAMA_CPP_COMMIT[:8]}" / "llama-server"
ARCH = {"llama": "LLAMA", "mistral": "LLAMA", "qwen2": "QWEN2", "qwen3": "QWEN3"}  # dense, as convert_hf_to_gguf
TOKENS = 8  # the completion's length (ignore_eos: random weights may pick the end token first)


@dataclass(frozen=True, kw_only=True)
class ServeRun:
    """One server's smoke run: the command, whether it came up, the completion's tokens and text, the log's end."""

    target: str
    command: str
    ready: bool
    tokens: int
    text: str
    seconds: float
    tail: str

    @property
    def passed(self) -> bool:
        return self.ready and self.tokens == TOKENS


def llama_server() -> Path | None:
    """The ``llama-server`` binary: on ``PATH``, else the one ``bench/llama_server.py`` built, else None."""
    found = shutil.which("llama-server")
    return Path(found) if found else BUILT if BUILT.is_file() and os.access(BUILT, os.X_OK) else None


def write_gguf(model: Path, out: Path) -> Path:
    """The Hugging Face model folder ``model`` (a dense Llama-like model) as an f16 GGUF file ``out`` (module
    docstring)."""
    import gguf
    import numpy as np
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    cfg = AutoConfig.from_pretrained(model)
    if cfg.model_type not in ARCH:
        raise ValueError(f"the smoke GGUF covers dense {', '.join(ARCH)} models, not {cfg.model_type}")
    arch = getattr(gguf.MODEL_ARCH, ARCH[cfg.model_type])
    heads, kv_heads = cfg.num_attention_heads, cfg.num_key_value_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    w = gguf.GGUFWriter(str(out), gguf.MODEL_ARCH_NAMES[arch])
    for add, value in ((w.add_block_count, cfg.num_hidden_layers), (w.add_context_length,
                       cfg.max_position_embeddings), (w.add_embedding_length, cfg.hidden_size),
                       (w.add_feed_forward_length, cfg.intermediate_size), (w.add_head_count, heads),
                       (w.add_head_count_kv, kv_heads), (w.add_key_length, head_dim), (w.add_value_length, head_dim),
                       (w.add_rope_dimension_count, head_dim), (w.add_layer_norm_rms_eps, cfg.rms_norm_eps),
                       (w.add_rope_freq_base, _rope_theta(cfg)), (w.add_file_type, gguf.LlamaFileType.MOSTLY_F16)):
        add(value)
    _vocab(w, model, AutoTokenizer.from_pretrained(model))
    names = gguf.get_tensor_name_map(arch, cfg.num_hidden_layers)
    tied = getattr(cfg, "tie_word_embeddings", False)
    for name, tensor in AutoModelForCausalLM.from_pretrained(model).state_dict().items():
        if tied and name == "lm_head.weight":  # llama.cpp duplicates the token embedding as the output
            continue
        data = tensor.float().numpy()
        if arch == gguf.MODEL_ARCH.LLAMA and name.endswith(("q_proj.weight", "k_proj.weight")):
            data = _permute(data, heads if "q_proj" in name else kv_heads)
        new = names.get_name(name, try_suffixes=(".weight", ".bias"))
        w.add_tensor(new, data if data.ndim == 1 else data.astype(np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return out


def _rope_theta(cfg) -> float:
    params = getattr(cfg, "rope_parameters", None) or {}
    return float(params.get("rope_theta") or getattr(cfg, "rope_theta", None) or 10000.0)


def _permute(weights, heads: int):
    """HF's rotate-half rows to ggml's interleaved pairs (``LlamaModel.permute``)."""
    return weights.reshape(heads, 2, weights.shape[0] // heads // 2, *weights.shape[1:]).swapaxes(1, 2) \
        .reshape(weights.shape)


def _vocab(w, model: Path, tok) -> None:
    """The tokenizer as ``_set_vocab_gpt2`` writes it: the tokens by id, special ones as control tokens, the
    merges and the special ids from the folder (``gguf.SpecialVocab``)."""
    import gguf

    by_id = {i: t for t, i in tok.get_vocab().items()}
    special = set(tok.all_special_tokens)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list([by_id[i] for i in range(len(by_id))])
    w.add_token_types([gguf.TokenType.CONTROL if by_id[i] in special else gguf.TokenType.NORMAL
                       for i in range(len(by_id))])
    gguf.SpecialVocab(model, load_merges=True).add_to_gguf(w)


def smoke_serving_scenario(s: Scenario, model: Path) -> Scenario:
    """``s`` on the tiny model: the same engine, card, cache type, flash attention and micro-batch, its f16 file
    (nothing to quantize), at most 4 requests of 64 + 16 tokens (the tiny model's 256 positions)."""
    keep = {k: getattr(s, k) for k in s.model_fields_set if k not in (
        "model", "model_size", "quant", "batch_size", "prompt_tokens", "output_tokens", "max_model_len")}
    keep.update({"model": str(model), "task": "infer", "batch_size": min(4, s.batch_size), "prompt_tokens": 64,
                 "output_tokens": 16})
    return Scenario.model_validate(keep)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve(folder: Path, port: int, gguf_file: Path, binary: Path, *, timeout_s: float = 120.0) -> ServeRun:
    """Start ``llama-server.sh`` in ``folder`` on ``gguf_file`` (``binary``'s folder first on ``PATH``), wait for
    ``/health``, ask for one completion of :data:`TOKENS` tokens, stop it."""
    from .smoke import clear

    env = {**os.environ, "GGUF": str(gguf_file), "PATH": f"{binary.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    start, log = time.monotonic(), folder / "llama-server.log"
    clear(log)  # a link put at its name is removed, not written through
    with open(log, "xb") as sink:
        proc = subprocess.Popen(["bash", "llama-server.sh"], cwd=folder, env=env, stdout=sink,
                                stderr=subprocess.STDOUT, start_new_session=True)
        answer, error = {}, ""
        try:
            ready = _wait_ready(proc, port, start + timeout_s)
            answer = _complete(port) if ready else {}
        except (OSError, ValueError) as err:  # refused, timed out, an HTTP error or a body that is not JSON
            error = f"\nthe completion failed: {type(err).__name__}: {err}"
        finally:
            stop(proc, grace_s=30)
    choice = (answer.get("choices") or [{}])[0]
    return ServeRun(target="llama.cpp", command="bash llama-server.sh", ready=ready,
                    tokens=int((answer.get("usage") or {}).get("completion_tokens", 0)), text=choice.get("text", ""),
                    seconds=time.monotonic() - start, tail=log.read_text(errors="replace")[-2000:] + error)


def stop(proc: subprocess.Popen, grace_s: float) -> None:
    """Stop a server started in its own session: SIGTERM to its process group, SIGKILL after ``grace_s``."""
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _wait_ready(proc: subprocess.Popen, port: int, deadline: float) -> bool:
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
                if r.status == 200:
                    return True
        except (OSError, urllib.error.URLError):  # refused while it starts, 503 while it loads
            pass
        time.sleep(0.25)
    return False


def _complete(port: int) -> dict:
    body = json.dumps({"prompt": "How much memory does the model need?", "max_tokens": TOKENS,
                       "ignore_eos": True, "temperature": 0}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as r:
        return json.loads(r.read())


def smoke_serving(s: Scenario, folder: Path, *, force: bool = False) -> tuple[object, list[ServeRun]]:
    """``gpuplan launch --smoke`` of a serving plan: llama.cpp's, the one engine that serves on a CPU; one sentence
    when the plan is another engine's or no ``llama-server`` is here."""
    from ..errors import GpuplanError

    if engine_for(s).launch_target != LLAMA_CPP:
        raise GpuplanError(f"--smoke serves with llama.cpp on this machine; engine {s.engine} needs a GPU (run "
                           "bench/smoke_gpu.py on a CUDA machine)")
    binary = llama_server()
    if binary is None:
        raise GpuplanError("--smoke needs llama.cpp's llama-server on PATH (install llama.cpp, or build it with "
                           "python bench/llama_server.py from a gpuplan checkout)")
    plan, run = smoke_llama_cpp(s, folder, binary, force=force)
    return plan, [run]


def smoke_llama_cpp(s: Scenario, folder: Path, binary: Path, *, force: bool = False) -> tuple[object, ServeRun]:
    """The llama.cpp smoke run of the serving plan ``s`` in ``folder`` (module docstring; new or empty unless
    ``force``: :func:`~.smoke.smoke_folder`): the plan and the run."""
    from . import launch_files, launch_plan, write
    from .settings import LaunchOptions
    from .smoke import INPUTS, clear, model_config, smoke_folder, write_inputs

    folder = smoke_folder(folder, force)
    clear(folder / INPUTS)
    inputs = write_inputs(folder / INPUTS, model_config(s))
    gguf_file = write_gguf(inputs["model"], Path(folder) / INPUTS / "tiny-F16.gguf")
    plan = launch_plan(smoke_serving_scenario(s, inputs["model"]), command="gpuplan launch --smoke")
    port = free_port()
    write(launch_files(plan, ["llama.cpp"], LaunchOptions(port=port)), folder, force=True)
    return plan, serve(Path(folder), port, gguf_file, binary)
