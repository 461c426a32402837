"""Capture ``llama-server --help`` of the llama.cpp build the smoke test runs (bench/llama_server.py builds it) into
llama-server-help.txt beside this file, for tests/launchers/test_launch_llama_cpp.py's check that every option the
llama.cpp target writes is one llama-server knows.

    python tests/data/llama.cpp/capture.py
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "src"))

from gpuplan.launchers.smoke_serve import LLAMA_CPP_COMMIT, LLAMA_CPP_PYTHON, llama_server  # noqa: E402


def main() -> int:
    binary = llama_server()
    if binary is None:
        print("no llama-server: run python bench/llama_server.py first")
        return 1
    text = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=60).stdout
    head = (f"# llama-server --help of ggml-org/llama.cpp@{LLAMA_CPP_COMMIT} (vendored by llama-cpp-python "
            f"{LLAMA_CPP_PYTHON}'s sdist), captured by capture.py\n")
    (Path(__file__).parent / "llama-server-help.txt").write_text(head + text)
    print(f"{len(text.splitlines())} lines from {binary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
