"""``import gpuplan`` must stay light: no torch, transformers, huggingface_hub, pynvml, rich or typer."""

import subprocess
import sys

HEAVY = ("torch", "transformers", "huggingface_hub", "pynvml", "rich", "typer", "pandas", "tokenizers", "datasets",
         "pyarrow", "jinja2")


def test_import_loads_no_heavy_module():
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", "import gpuplan"],
                          capture_output=True, text=True, check=True)
    imported = {line.split("|")[-1].strip().split(".")[0] for line in proc.stderr.splitlines() if "|" in line}
    assert "gpuplan" in imported  # the trace is real
    assert not imported & set(HEAVY), imported & set(HEAVY)
