"""What the machine has, and the training precision chosen from it, in one place.

``--precision auto`` (training's default) asks ``choose_precision``:

- **CUDA**: bf16 autocast where the GPU computes in bf16 (Ampere and later), else fp16
  autocast with loss scaling.
- **CPU without native bf16** (no AVX512_BF16 or AMX-BF16 among its flags, or oneDNN capped
  below them by ``ONEDNN_MAX_CPU_ISA``): float32. There PyTorch's bf16 products are emulated or
  fall back to its reference GEMM on one thread: on an AVX2 AMD EPYC (Zen 3) bf16 training ran
  at 56 target tokens/s against ~1,500 in float32.
- **CPU with native bf16**: the flags alone do not settle it, so a training-shaped product is
  timed in both precisions (about half a second) and bf16 is chosen only where it is clearly
  faster. On AMD Zen 4 and Zen 5 oneDNN's bf16 products ran at about twice the float32 rate and
  bf16 trained 1.7x faster; on an Intel Xeon with AVX512_BF16 but no AMX exposed, bf16
  products ran at 159-183 GFLOP/s against float32's 243-378 (MKL), and bf16 trained at 0.65x.

In float32 the products' path is measured too (``onednn_float32``): PyTorch's ``F.linear``
runs them through MKL, which on AMD Zen 5 with AVX-512 ran at half oneDNN's rate or less, so
where oneDNN's product is clearly faster at the probe, float32 training's products go through
oneDNN (``runtime.cpu.CpuLinear``), and that rate is float32's in the precision choice and
in MFU.

The choice never changes results beyond the precision itself, is printed when training starts
(``Choice.describe``), and is overridden by naming a precision. docs/design.md ("Precision
chosen by the machine") has the measurements.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from .cpu import onednn_available, onednn_bf16_available, onednn_linear

CPUINFO = Path("/proc/cpuinfo")
NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16")
BF16_MARGIN = 1.15  # bf16 must beat float32 by this factor: a near tie keeps float32's accuracy
# oneDNN's float32 products must beat PyTorch's (MKL's) by this factor to be used in training:
# with AVX2 only, on a Zen 5 so capped, they were 1.0-1.15x, not worth a second path
ONEDNN_FP32_MARGIN = 1.2
# a training-shaped product: a 4,096-token batch through a `small`/`base` feed-forward layer
PROBE_SHAPE = (4096, 512, 2048)


@dataclass(frozen=True)
class Cpu:
    """The CPU's model name and feature flags, as /proc/cpuinfo lists them."""

    model: str
    flags: frozenset[str]

    @property
    def native_bf16(self) -> bool:
        return any(flag in self.flags for flag in NATIVE_BF16_FLAGS)

    @property
    def vector_isa(self) -> str:
        """The widest vector extension, as a short name for logs."""
        for flag, name in (("amx_bf16", "AMX"), ("avx512f", "AVX-512"), ("avx2", "AVX2")):
            if flag in self.flags:
                return name
        return "no AVX2"


def read_cpu(cpuinfo: Path = CPUINFO) -> Cpu:
    """This machine's CPU; empty where /proc/cpuinfo cannot be read (not Linux)."""
    model, flags = "unknown CPU", frozenset[str]()
    try:
        text = cpuinfo.read_text()
    except OSError:
        return Cpu(model, flags)
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and model == "unknown CPU":
            model = value.strip()
        elif key == "flags" and not flags:
            flags = frozenset(value.split())
    return Cpu(model, flags)


@dataclass(frozen=True)
class Choice:
    """A precision and why it was chosen."""

    precision: str
    reason: str

    def describe(self) -> str:
        return f"precision: {self.precision} ({self.reason})"


def product_rate(dtype: torch.dtype, shape: tuple[int, int, int] = PROBE_SHAPE,
                 seconds: float = 0.2, *, onednn: bool = False) -> float:
    """GFLOP/s of ``F.linear`` (with ``onednn``, oneDNN's product) at ``shape`` (rows, in,
    out) in ``dtype``: the best of repeated timings over about ``seconds``, after one untimed
    product."""
    rows, d_in, d_out = shape
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(rows, d_in, generator=generator).to(dtype)
    w = torch.randn(d_out, d_in, generator=generator).to(dtype)
    product: Callable[[], object] = (
        (lambda: onednn_linear(x, w, None)) if onednn
        else (lambda: F.linear(x, w)))
    product()
    best, start = float("inf"), time.perf_counter()
    while time.perf_counter() - start < seconds:
        t = time.perf_counter()
        product()
        best = min(best, time.perf_counter() - t)
        if best > seconds:  # an emulated product: one timing says enough
            break
    return 2 * rows * d_in * d_out / best / 1e9


def choose_cpu_precision(cpu: Cpu, *, onednn_bf16: bool,
                         rate: Callable[[torch.dtype], float] = product_rate) -> Choice:
    """float32 unless the CPU has native bf16, oneDNN may use it, and bf16 products measure
    ``BF16_MARGIN`` times faster than float32's (``rate`` gives GFLOP/s for a dtype)."""
    if not cpu.native_bf16:
        return Choice("fp32", f"{cpu.vector_isa} CPU without native bf16 (AVX512_BF16, AMX): "
                              "bf16 products would be emulated")
    if not onednn_bf16:
        return Choice("fp32", "oneDNN's bf16 kernels are not available to this process "
                              "(ONEDNN_MAX_CPU_ISA, or a PyTorch without them)")
    fp32, bf16 = rate(torch.float32), rate(torch.bfloat16)
    figures = f"bf16 products {bf16:.0f} GFLOP/s, float32 {fp32:.0f} on this CPU"
    if bf16 >= BF16_MARGIN * fp32:
        return Choice("bf16", figures)
    return Choice("fp32", figures)


def choose_cuda_precision(device: torch.device) -> Choice:
    if torch.cuda.is_bf16_supported():
        return Choice("bf16", f"{torch.cuda.get_device_name(device)} computes in bf16")
    return Choice("fp16", f"{torch.cuda.get_device_name(device)} has no bf16: fp16 with "
                          "loss scaling")


@functools.cache
def float32_rates() -> tuple[float, float]:
    """GFLOP/s of float32 products at the training-shaped probe through ``F.linear`` (MKL on
    x86) and through oneDNN (0.0 where this process has no oneDNN), measured once per
    process."""
    onednn = product_rate(torch.float32, onednn=True) if onednn_available() else 0.0
    return product_rate(torch.float32), onednn


def onednn_float32() -> bool:
    """Whether float32 training's products go through oneDNN here: its product measured
    ``ONEDNN_FP32_MARGIN`` times PyTorch's rate or more."""
    plain, onednn = float32_rates()
    return onednn >= ONEDNN_FP32_MARGIN * plain


def measured_rate(dtype: torch.dtype) -> float:
    """``product_rate`` at the training-shaped probe, measured once per process; in float32
    through the path float32 training takes by default (``onednn_float32``), the MFU of a
    run that names the other one included."""
    if dtype is torch.float32:
        plain, onednn = float32_rates()
        return onednn if onednn_float32() else plain
    return _measured_rate(dtype)


@functools.cache
def _measured_rate(dtype: torch.dtype) -> float:
    return product_rate(dtype)


@functools.cache
def _cpu_choice() -> Choice:
    return choose_cpu_precision(read_cpu(), onednn_bf16=onednn_bf16_available(),
                                rate=measured_rate)


DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def _cuda_rate(dtype: torch.dtype, device: torch.device, n: int = 8192) -> float:
    """GFLOP/s of an n x n x n product on the GPU, the best of 5 after one untimed."""
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    a @ b
    best = float("inf")
    for _ in range(5):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        a @ b
        end.record()
        torch.cuda.synchronize(device)
        best = min(best, start.elapsed_time(end) / 1000)
    return 2 * n ** 3 / best / 1e9


@functools.cache
def _first_peak(device: torch.device, precision: str) -> float:
    dtype = DTYPES[precision]
    if device.type == "cuda":
        return _cuda_rate(dtype, device) * 1e9
    return measured_rate(dtype) * 1e9


_better_peaks: dict[tuple[str, str], float] = {}


def peak_flops(device: torch.device, precision: str) -> float:
    """The FLOP/s a matrix product reaches on ``device`` in ``precision`` (not "auto"),
    measured here: the denominator of model FLOPs utilization. On a CPU the training-shaped
    probe (``PROBE_SHAPE``), shared with the precision choice, or the faster of its later
    measurements (``measure_peak_again``); on a GPU an 8,192-square product."""
    first = _first_peak(device, precision)
    return max(first, _better_peaks.get((str(device), precision), 0.0))


PROBES_AGAIN = 3  # at most this many more probes a process (about 0.1 s each)
_probed_again: dict[tuple[str, str], int] = {}


def measure_peak_again(device: torch.device, precision: str) -> float:
    """``peak_flops`` after one more probe on a CPU (the first ``PROBES_AGAIN`` calls), the
    faster kept: a probe that met other work on the machine's cores (another process, the
    first batches being read) measures too little, and every MFU over it too much. Training
    probes again after its first validations."""
    key = (str(device), precision)
    if device.type == "cpu" and _probed_again.get(key, 0) < PROBES_AGAIN:
        _probed_again[key] = _probed_again.get(key, 0) + 1
        dtype = DTYPES[precision]
        onednn = dtype is torch.float32 and onednn_float32()
        rate = product_rate(dtype, seconds=0.1, onednn=onednn) * 1e9
        _better_peaks[key] = max(rate, _better_peaks.get(key, 0.0))
    return peak_flops(device, precision)


def choose_precision(device: torch.device) -> Choice:
    """The training precision for ``device`` (measured once per process on a CPU)."""
    if device.type == "cuda":
        return choose_cuda_precision(device)
    if device.type == "cpu":
        return _cpu_choice()
    return Choice("fp32", f"{device.type} device")


def shape_free_attention() -> None:
    """SDPA without its cuDNN kernels, set where a model trains or is loaded on CUDA. cuDNN
    (16-bit inputs only) builds a graph for every new shape, 10-14 ms of host time a call, and
    token batches change shape at every step (a `base` bf16 training step on an H200 took 445
    ms with it, 63 ms with flash attention; docs/benchmarks.md, GPU). Process-wide."""
    torch.backends.cuda.enable_cudnn_sdp(False)
