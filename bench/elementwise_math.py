"""Are eager PyTorch's element-wise and normalization kernels bound by their per-element math on some cards? (issue
34: the torch 2.0 A100 rows of bench/modules_cases.yaml, whose eager element-wise work reads 1.46 to 1.59 times the
modelled bytes' time where the RTX 3090, RTX 4090, V100 and T4 read 0.79 to 1.29.)

Each kernel's per-element arithmetic is written as PyTorch's CUDA code has it (opmath float, fp16 storage):

- SiLU: ``x / (1 + exp(-x))`` (aten/src/ATen/native/cuda/ActivationSiluKernel.cu, ``c10::cuda::compat::exp``);
- GELU: ``x * 0.5 * (1 + erf(x * M_SQRT1_2))`` (ActivationGeluKernel.cu, GeluCUDAKernelImpl, approximate none);
- GroupNorm's statistics: one ``WelfordOps::reduce`` step per element (aten/src/ATen/native/SharedReduceOps.h:
  ``delta / new_nf``, an IEEE division, with the count kept as int64), group_norm_kernel.cu
  RowwiseMomentsCUDAKernel; its output ``x * a + b`` with per-channel ``a``, ``b``;
- LayerNorm's statistics: layer_norm_kernel.cu cuWelfordOnlineSum (``delta * (1.f / new_count)``) and its output
  ``(x - mean) * rstd * gamma + beta``;
- the residual add ``a + b`` (BinaryOps).

compiled by nvcc for each card's architecture (sm_75 for the T4, and for the V100, which nvcc 13 no longer
targets; sm_80 A100; sm_86 RTX 3090; sm_89 RTX 4090) and disassembled (cuobjdump -sass); the instructions one
element executes are counted by pipe (FMA: FFMA, FADD, FMUL, IMAD, HADD2, HFMA2, F2FP, FCHK; XU: MUFU, I2F; ALU:
the other arithmetic and logic; the not-taken slow path of the division left out). The one-element kernels'
counts include their index, load and store instructions (PyTorch's vectorized loops share those among four
elements): an upper bound on each element's math. A kernel's math time per element is its busiest pipe at that
pipe's lanes (per SM partition and clock: FMA 16 on sm_70/75/80, 32 on sm_86/89 shared with the ALU's 16; ALU
16; XU 4; one instruction issued per clock for 32 threads), over the card's SMs at its clock (the T4's at the
clock its 70 W cap sustains, overheads.CONTINUOUS_CLOCK_FACTOR); its memory time, the bytes an element moves (2
in and 2 out, 2 for a statistics pass, 6 for an add) at the achievable bandwidth (overheads.BANDWIDTH_FRACTION).
A ratio above 1 would make the kernel math-bound on that card.

Result (bench/results/elementwise_math.md): on the A100 every kernel's math is 0.29 to 0.96 of its bytes' time
(GroupNorm's Welford statistics the highest), so ``max(bytes / bandwidth, math)`` leaves every module row
unchanged: the lead does not hold at the compiler's instruction counts; to explain 1.46 to 1.59 times the modelled
element-wise time on the A100 alone, those kernels would need two to three times the instructions they compile to.

``python bench/elementwise_math.py`` prints the table from the counts recorded below (nvcc 13.0.88, cuobjdump and
nvdisasm 13.2.86 from PyPI's nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm); ``--compile`` counts them again with
the nvcc and cuobjdump on PATH; ``--what-if`` adds the torch 2.0 benchmark's SD 1.5 rows with each card's
element-wise time at bytes plus math (the upper bound above); ``--write`` writes bench/results/elementwise_math.md.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from gpuplan import overheads as oh  # noqa: E402
from gpuplan.hardware import load_gpu  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "elementwise_math.md"

SOURCE = r"""
#include <cuda_fp16.h>
extern "C" __global__ void silu(const __half* x, __half* y){int i=blockIdx.x*blockDim.x+threadIdx.x;
  float v=__half2float(x[i]); y[i]=__float2half(v/(1.0f+expf(-v)));}
extern "C" __global__ void gelu(const __half* x, __half* y){int i=blockIdx.x*blockDim.x+threadIdx.x;
  float v=__half2float(x[i]); y[i]=__float2half(v*0.5f*(1.0f+erff(v*0.70710678118654752440f)));}
struct W{float mean,m2; long long n; float nf;};
extern "C" __global__ void group_norm_stats(const __half* x, float* out, long long N){W a{0,0,0,0};
  for(long long j=threadIdx.x;j<N;j+=blockDim.x){float d=__half2float(x[blockIdx.x*N+j]); long long nn=a.n+1;
  float nf=(float)nn; float delta=d-a.mean; float nm=a.mean+delta/nf; float nd=d-nm; a={nm,a.m2+delta*nd,nn,nf};}
  out[blockIdx.x*threadIdx.x]=a.mean+a.m2;}
extern "C" __global__ void group_norm_out(const __half* x, const float* a, const float* b, __half* y){
  int i=blockIdx.x*blockDim.x+threadIdx.x; int c=i>>12; y[i]=__float2half(__half2float(x[i])*a[c]+b[c]);}
extern "C" __global__ void layer_norm_stats(const __half* x, float* out, int N){float mean=0,m2=0,count=0;
  for(int j=threadIdx.x;j<N;j+=blockDim.x){float v=__half2float(x[blockIdx.x*N+j]); float delta=v-mean;
  float nc=count+1.f; float nm=mean+delta*(1.f/nc); m2+=delta*(v-nm); mean=nm; count=nc;}
  out[blockIdx.x*threadIdx.x]=mean+m2;}
extern "C" __global__ void layer_norm_out(const __half* x, const __half* g, const __half* b, float mean, float rstd,
  __half* y){int i=blockIdx.x*blockDim.x+threadIdx.x; int c=i&1023;
  y[i]=__float2half(((__half2float(x[i])-mean)*rstd)*__half2float(g[c])+__half2float(b[c]));}
extern "C" __global__ void add(const __half* x, const __half* z, __half* y){int i=blockIdx.x*blockDim.x+threadIdx.x;
  y[i]=__float2half(__half2float(x[i])+1.0f*__half2float(z[i]));}
"""

BYTES = {"silu": 4, "gelu": 4, "group_norm_stats": 2, "group_norm_out": 4, "layer_norm_stats": 2,
         "layer_norm_out": 4, "add": 6}
LOOPS = ("group_norm_stats", "layer_norm_stats")  # counted per element: the loop's body
FMA = ("FFMA", "FADD", "FMUL", "IMAD", "HADD2", "HFMA2", "HMUL2", "F2FP", "FCHK")
XU = ("MUFU", "I2F", "F2I", "F2F")
CONTROL = ("BRA", "BSSY", "BSYNC", "EXIT", "CALL", "RET", "NOP")
MEMORY = ("LDG", "STG", "S2R", "S2UR", "ULDC", "LDC")

# (fma, alu, xu, all) per element, as --compile counted them
RECORDED = {
    "sm_75": {"silu": (22, 1, 3, 34), "gelu": (19, 18, 2, 44), "group_norm_stats": (15, 7, 2, 29),
              "group_norm_out": (7, 4, 1, 19), "layer_norm_stats": (10, 6, 0, 21), "layer_norm_out": (9, 4, 1, 23),
              "add": (7, 2, 1, 16)},
    "sm_80": {"silu": (23, 1, 2, 35), "gelu": (24, 14, 1, 45), "group_norm_stats": (15, 6, 2, 28),
              "group_norm_out": (9, 3, 0, 20), "layer_norm_stats": (10, 5, 0, 20), "layer_norm_out": (11, 7, 0, 26),
              "add": (9, 1, 0, 17)},
    "sm_86": {"silu": (23, 0, 2, 34), "gelu": (20, 18, 1, 45), "group_norm_stats": (15, 6, 2, 28),
              "group_norm_out": (8, 4, 0, 20), "layer_norm_stats": (8, 6, 0, 19), "layer_norm_out": (10, 8, 0, 26),
              "add": (8, 2, 0, 17)},
    "sm_89": {"silu": (23, 0, 2, 34), "gelu": (20, 18, 1, 45), "group_norm_stats": (15, 6, 2, 28),
              "group_norm_out": (8, 4, 0, 20), "layer_norm_stats": (8, 6, 0, 19), "layer_norm_out": (10, 8, 0, 26),
              "add": (8, 2, 0, 17)},
}

# the torch 2.0 benchmark's cards (bench/modules_cases.yaml), the architecture their counts come from
CARDS = (("a100-sxm4-40gb", "sm_80"), ("t4", "sm_75"), ("v100-sxm2-16gb", "sm_75"), ("rtx-3090", "sm_86"),
         ("rtx-4090", "sm_89"))


def _instructions(sass: str) -> dict[str, list[tuple[int, str, str]]]:
    out = {}
    for block in re.split(r"\n\s*Function : ", sass)[1:]:
        name = block.split("\n")[0].strip()
        found = re.findall(r"/\*([0-9a-f]{4})\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_]+)(?:\.[A-Z0-9_]+)*\s*([^;]*);", block)
        out[name] = [(int(a, 16), op, args) for a, op, args in found]
    return out


def _executed(ins: list[tuple[int, str, str]], loop: bool) -> list[str]:
    """The instructions one element executes: a loop's body (from its backward branch's target), else the kernel
    up to its first EXIT; the division's slow-path call (the return address's MOV, the CALL and what follows it up
    to the BSYNC) is not taken."""
    lo, hi = 0, None
    if loop:
        for a, op, args in ins:
            target = re.search(r"0x([0-9a-f]+)", args)
            if op == "BRA" and target and int(target.group(1), 16) < a:
                lo, hi = int(target.group(1), 16), a
    calls = {a for a, op, _ in ins if op == "CALL"}
    out, skipping = [], False
    for a, op, _ in ins:
        if a < lo or (hi is not None and a > hi):
            continue
        if op == "MOV" and a + 16 in calls:
            skipping = True
        if op == "BSYNC":
            skipping = False
        if not skipping:
            out.append(op)
        if op == "EXIT":
            break
    return out


def _pipes(ops: list[str]) -> tuple[int, int, int, int]:
    kinds = Counter("fma" if o in FMA else "xu" if o in XU else "control" if o in CONTROL else
                    "memory" if o in MEMORY else "alu" for o in ops)
    return kinds["fma"], kinds["alu"], kinds["xu"], len(ops)


def compile_counts() -> dict[str, dict[str, tuple[int, int, int, int]]]:
    counts = {}
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "k.cu"
        src.write_text(SOURCE)
        for arch in RECORDED:
            cubin = Path(tmp) / f"{arch}.cubin"
            subprocess.run(["nvcc", "-cubin", f"-arch={arch}", "-O3", str(src), "-o", str(cubin)], check=True)
            sass = subprocess.run(["cuobjdump", "-sass", str(cubin)], check=True, capture_output=True, text=True)
            found = _instructions(sass.stdout)
            counts[arch] = {k: _pipes(_executed(found[k], k in LOOPS)) for k in BYTES}
    return counts


def math_ratio(card: str, arch: str, kernel: str, counts) -> float:
    """The kernel's math time per element over its memory time per element on the card."""
    fma, alu, xu, total = counts[arch][kernel]
    gpu = load_gpu(card)
    clock = gpu.boost_clock_mhz * 1e6 * oh.CONTINUOUS_CLOCK_FACTOR.get(gpu.id, 1.0)
    if arch in ("sm_86", "sm_89"):  # a second FP32 datapath, shared with the integer work
        cycles = max(fma + alu, 2 * alu, 8 * xu, total)
    else:
        cycles = max(2 * fma, 2 * alu, 8 * xu, total)
    math_s = cycles / (4 * 32 * gpu.sm_count * clock)
    memory_s = BYTES[kernel] / (gpu.bandwidth_gbs * 1e9 * oh.BANDWIDTH_FRACTION)
    return math_s / memory_s


# SD 1.5's UNet's element-wise bytes by kernel (share of the profile's other_bytes): one fake-tensor forward at batch 8
# (batch 4 with guidance), 64 x 64 latents, tallied by aten op with model/record.py's own rule: add, mul and div
# 51.8 %, GELU 11.7, GroupNorm 11.5, LayerNorm 8.8, SiLU 8.5, concatenations, clones and upsampling (no math) 7.6
UNET_MIX = {"add": 0.518, "gelu": 0.117, "group_norm": 0.115, "layer_norm": 0.088, "silu": 0.085, "copy": 0.076}


def unet_factors(card: str, arch: str, counts) -> tuple[float, float]:
    """The UNet's element-wise time over its bytes' time with each kernel at max(bytes, math), and at bytes + math
    (no overlap at all: an upper bound); a norm's recorded bytes (in and out, 4 per element) stand for its two
    kernels (statistics, 2 bytes, and output, 4)."""
    def factor(kind: str) -> float:
        if kind == "copy":
            return 0.0
        if kind in ("group_norm", "layer_norm"):
            return (2 * math_ratio(card, arch, kind + "_stats", counts)
                    + 4 * math_ratio(card, arch, kind + "_out", counts)) / 4
        return math_ratio(card, arch, kind, counts)
    whole = sum(UNET_MIX.values())  # the shares as rounded
    bounded = sum(share * max(1.0, factor(k)) for k, share in UNET_MIX.items()) / whole
    summed = sum(share * (1.0 + factor(k)) for k, share in UNET_MIX.items()) / whole
    return bounded, summed


def table(counts) -> str:
    lines = ["| kernel | bytes per element | " + " | ".join(f"{c} ({a}): math / bytes" for c, a in CARDS) + " |",
             "|---|---:|" + "---:|" * len(CARDS)]
    for kernel in BYTES:
        ratios = " | ".join(f"{math_ratio(c, a, kernel, counts):.2f}" for c, a in CARDS)
        lines.append(f"| {kernel} | {BYTES[kernel]} | {ratios} |")
    lines.append("| SD 1.5 UNet, each at max(bytes, math) | | " + " | ".join(
        f"{unet_factors(c, a, counts)[0]:.2f}" for c, a in CARDS) + " |")
    lines.append("| SD 1.5 UNet, bytes + math (no overlap) | | " + " | ".join(
        f"{unet_factors(c, a, counts)[1]:.2f}" for c, a in CARDS) + " |")
    lines.append("| measured: eager minus compiled over the modelled element-wise time | | 1.46-1.59 | 1.29 | "
                 "1.09-1.13 | 0.93-1.01 | 0.79-0.85 |")
    lines += ["", "| architecture | kernel | FMA | ALU | XU | all |", "|---|---|---:|---:|---:|---:|"]
    for arch, kernels in counts.items():
        lines += [f"| {arch} | {k} | {' | '.join(str(v) for v in c)} |" for k, c in kernels.items()]
    return "\n".join(lines)


def what_if() -> str:
    """The torch 2.0 benchmark's SD 1.5 rows (bench/modules.py) with each card's element-wise time taken as bytes plus
    math (:func:`unet_factors`' upper bound, not a model): the element-wise bandwidth of gpuplan.speed.modules
    divided by the card's factor for this run only."""
    import gpuplan.speed.modules as speed
    import modules

    factors = {load_gpu(c).id: unet_factors(c, a, RECORDED)[1] for c, a in CARDS}
    before = {r["id"]: r for r in modules.run()[0] if r["quantity"] == "it/s"}
    plain = speed.bandwidth
    speed.bandwidth = lambda gpu: plain(gpu) / factors.get(gpu.id, 1.0)
    try:
        after = {r["id"]: r for r in modules.run()[0] if r["quantity"] == "it/s"}
    finally:
        speed.bandwidth = plain
    rows = [f"| {k} | {before[k]['error']:+.0%} | {after[k]['error']:+.0%} |" for k in before
            if re.fullmatch(r"sd15-(a100|v100|t4|3090|4090)-b\d+", k)]
    return "\n".join(["| row | now | bytes + math |", "|---|---:|---:|", *rows])


def main() -> None:
    counts = compile_counts() if "--compile" in sys.argv else RECORDED
    if "--compile" in sys.argv and counts != RECORDED:
        print("counts differ from RECORDED: " + repr(counts), file=sys.stderr)
    text = table(counts)
    if "--what-if" in sys.argv:
        text += "\n\n" + what_if()
    print(text)
    if "--write" in sys.argv:
        doc = (__doc__ or "").strip()
        RESULTS.write_text(f"# Element-wise kernels' math against their bytes (`python bench/elementwise_math.py "
                           f"--write`)\n\n{doc}\n\n{text}\n", encoding="utf-8")


if __name__ == "__main__":
    main()
