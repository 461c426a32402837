"""The latency-vs-rate curve of each plan (the knee), as a PNG; matplotlib is optional (``pip install
'gpuplan[plot]'``)."""

from __future__ import annotations

from pathlib import Path

from ..errors import GpuplanError, echo
from ..userfiles import output_file, write_file

PLOT_FORMATS = (".png", ".svg", ".pdf", ".jpg", ".jpeg", ".webp", ".tif", ".tiff", ".eps", ".ps")  # matplotlib's


def plot_target(path: str) -> Path:
    """Where ``--plot`` writes, checked before any work: a file name with a picture suffix matplotlib writes, in a
    folder that exists (:func:`~gpuplan.userfiles.output_file`); else one sentence."""
    p = output_file(path, "--plot")
    if p.suffix.lower() not in PLOT_FORMATS:
        raise GpuplanError(f"--plot writes a picture: name it .png, .svg or .pdf (matplotlib also writes "
                           f"{', '.join(s for s in PLOT_FORMATS[3:])}), not {echo(p.name)}")
    return p


def plot_curves(plans, workload, path: str) -> None:
    """p-th percentile TTFT and TPOT against the arrival rate, one line per plan, SLOs dashed."""
    target = plot_target(path)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise GpuplanError("--plot needs matplotlib: pip install 'gpuplan[plot]'") from None
    q = workload.slo.percentile
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    for p in plans:
        pts = sorted(p.curve, key=lambda x: x.rate_rps)
        a.plot([x.rate_rps for x in pts], [x.ttft_s for x in pts], marker="o", label=p.setup)
        streamed = [x for x in pts if x.tpot_s is not None]  # a prompt-only load streams no second token
        b.plot([x.rate_rps for x in streamed], [x.tpot_s * 1000 for x in streamed], marker="o", label=p.setup)
    if workload.slo.ttft_s:
        a.axhline(workload.slo.ttft_s, ls="--", c="k")
    if workload.slo.tpot_s:
        b.axhline(workload.slo.tpot_s * 1000, ls="--", c="k")
    a.set(xlabel="arrival rate (req/s)", ylabel=f"p{q} TTFT (s)", yscale="log", title="time to first token")
    b.set(xlabel="arrival rate (req/s)", ylabel=f"p{q} TPOT (ms)", title="time per output token")
    b.legend(fontsize=7)
    fig.tight_layout()
    try:
        write_file(target, lambda temp: fig.savefig(temp, dpi=110), "--plot")
    finally:
        plt.close(fig)
