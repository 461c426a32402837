"""Build llama.cpp's ``llama-server`` for the llama.cpp smoke test (tests/launchers/test_launch_llama_cpp.py).

    python bench/llama_server.py [--force] [--jobs N]

No registry this project reaches ships a ``llama-server`` binary (Debian 12 has no llama.cpp package, and no PyPI
wheel carries the server's command line), so it is built from source: llama-cpp-python's sdist on PyPI vendors
llama.cpp at a known commit (``vendor/llama.cpp``, gpuplan.launchers.smoke_serve.LLAMA_CPP_COMMIT). CMake builds
the one target, static, CPU only, without tests, examples, OpenSSL or the web UI's download, and portable
(``GGML_NATIVE=OFF``); the binary goes to ``smoke_serve.BUILT`` (~/.cache/gpuplan/llama.cpp-<commit>/), where the
test finds it, so it is built once per machine. .ci/run runs this before the suite; the test skips, saying why,
when the binary is missing. Measured on this 2-core machine: 8.5 CPU-minutes (20 minutes 40 seconds of wall time
while shared with other work).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from gpuplan.launchers.smoke_serve import BUILT, LLAMA_CPP_COMMIT, LLAMA_CPP_PYTHON  # noqa: E402

CMAKE_FLAGS = ["-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=OFF", "-DGGML_NATIVE=OFF", "-DLLAMA_BUILD_TESTS=OFF",
               "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_APP=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF",
               "-DLLAMA_OPENSSL=OFF", "-DGGML_CCACHE=OFF"]


def source(work: Path) -> Path:
    """llama.cpp's source from llama-cpp-python's sdist (pip's ordinary download), checked to be the commit."""
    # the sdist alone (--no-binary for it only: its build backend, scikit-build-core, comes as a wheel for pip to
    # read the sdist's metadata; ":all:" would build that backend and its own backends from source too)
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", "llama-cpp-python",
                    f"llama-cpp-python=={LLAMA_CPP_PYTHON}", "-d", str(work)], check=True)
    sdist = next(work.glob("llama_cpp_python-*.tar.gz"))
    with tarfile.open(sdist) as tar:
        tar.extractall(work, filter="data")
    root = next(work.glob("llama_cpp_python-*/vendor/llama.cpp"))
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    if head.strip() and head.strip() != LLAMA_CPP_COMMIT:
        raise SystemExit(f"llama-cpp-python {LLAMA_CPP_PYTHON} vendors llama.cpp {head.strip()}, not "
                         f"{LLAMA_CPP_COMMIT}: update gpuplan.launchers.smoke_serve")
    return root


def build(root: Path, jobs: int) -> Path:
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    subprocess.run(["cmake", "-S", str(root), "-B", str(root / "build"), *generator, *CMAKE_FLAGS], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", str(root / "build"), "--target", "llama-server", "-j", str(jobs)],
                   check=True, stdout=subprocess.DEVNULL)
    return root / "build" / "bin" / "llama-server"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--force", action="store_true", help="build again even if the binary is there")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    if BUILT.is_file() and not args.force:
        print(f"llama-server is built: {BUILT}")
        return 0
    if not shutil.which("cmake"):
        print("no cmake: llama-server cannot be built here (apt-get install cmake)")
        return 1
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gpuplan-llama.cpp-") as work:
        binary = build(source(Path(work)), args.jobs)
        BUILT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(binary, BUILT.with_suffix(".tmp"))
        BUILT.with_suffix(".tmp").replace(BUILT)  # whole or not at all
    print(f"llama-server built in {time.monotonic() - start:.0f} s: {BUILT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
