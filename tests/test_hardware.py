import json
import os
import platform
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from aiayn.runtime import hardware
from aiayn.runtime.cpu import onednn_available
from aiayn.runtime.hardware import Choice, Cpu, choose_cpu_precision, measure_peak_again, read_cpu
from aiayn.train.recipe import TrainConfig
from aiayn.train.trainer import train
from tests.conftest import FAST

# /proc/cpuinfo flags of the CPU kinds aiayn has run on (abridged to what the choice reads)
ZEN3 = Cpu("AMD EPYC 7B13", frozenset("sse4_2 avx fma avx2 bmi2".split()))
ZEN4 = Cpu("AMD EPYC 9B14", frozenset("avx2 avx512f avx512bw avx512vl avx512_bf16".split()))
XEON = Cpu("Intel(R) Xeon(R) Processor", frozenset("avx2 avx512f avx512_bf16 avx512_fp16".split()))
SAPPHIRE = Cpu("Intel(R) Xeon(R) Platinum 8480+", frozenset("avx512f avx512_bf16 amx_bf16".split()))


def rates(fp32: float, bf16: float):
    return lambda dtype: {torch.float32: fp32, torch.bfloat16: bf16}[dtype]


def never(dtype):
    raise AssertionError("a CPU without native bf16 is decided without measuring")


def test_cpu_without_native_bf16_trains_in_float32_without_measuring():
    choice = choose_cpu_precision(ZEN3, onednn_bf16=False, rate=never)
    assert choice.precision == "fp32" and "AVX2" in choice.reason
    # PyTorch's oneDNN check passing does not make emulated bf16 native
    assert choose_cpu_precision(ZEN3, onednn_bf16=True, rate=never).precision == "fp32"


def test_native_bf16_is_chosen_where_its_products_measure_faster():
    choice = choose_cpu_precision(ZEN4, onednn_bf16=True, rate=rates(fp32=220, bf16=430))
    assert choice == Choice("bf16", "bf16 products 430 GFLOP/s, float32 220 on this CPU")
    assert choose_cpu_precision(SAPPHIRE, onednn_bf16=True,
                                rate=rates(fp32=300, bf16=1500)).precision == "bf16"


def test_native_bf16_that_measures_slower_or_level_keeps_float32():
    assert choose_cpu_precision(XEON, onednn_bf16=True,
                                rate=rates(fp32=290, bf16=168)).precision == "fp32"
    level = rates(fp32=300, bf16=300 * hardware.BF16_MARGIN * 0.99)
    assert choose_cpu_precision(ZEN4, onednn_bf16=True, rate=level).precision == "fp32"


def test_onednn_capped_below_bf16_keeps_float32():
    # ONEDNN_MAX_CPU_ISA=AVX2 on an AVX-512 machine: the flags say native, oneDNN cannot use it
    choice = choose_cpu_precision(ZEN4, onednn_bf16=False, rate=never)
    assert choice.precision == "fp32" and "ONEDNN_MAX_CPU_ISA" in choice.reason


def test_cpuinfo_is_read_for_model_and_flags(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: AMD EPYC 9B14\nflags\t\t: fpu avx2 avx512f "
                    "avx512_bf16\n\nprocessor\t: 1\nmodel name\t: AMD EPYC 9B14\nflags\t\t: fpu\n")
    cpu = read_cpu(info)
    assert cpu.model == "AMD EPYC 9B14" and cpu.native_bf16 and cpu.vector_isa == "AVX-512"
    assert read_cpu(tmp_path / "missing") == Cpu("unknown CPU", frozenset())


def test_product_rate_measures_a_positive_rate():
    assert hardware.product_rate(torch.float32, shape=(64, 32, 48), seconds=0.01) > 0
    if onednn_available():
        assert hardware.product_rate(torch.float32, shape=(64, 32, 48), seconds=0.01,
                                     onednn=True) > 0


@pytest.mark.parametrize("plain, onednn, chosen", [(200.0, 450.0, True), (200.0, 235.0, False),
                                                   (380.0, 300.0, False), (200.0, 0.0, False)])
def test_float32_products_go_through_onednn_where_clearly_faster(monkeypatch, plain, onednn,
                                                                 chosen):
    """The rates of an AMD Zen 5 (MKL at half oneDNN's), of the same CPU capped to AVX2 (a
    near tie), of an Intel Xeon (MKL faster), and of a PyTorch without oneDNN."""
    monkeypatch.undo()  # (the suite's fixed choices)
    monkeypatch.setattr(hardware, "float32_rates", lambda: (plain, onednn))
    assert hardware.onednn_float32() is chosen
    # the precision choice and MFU count float32 at the rate of the path training takes
    assert hardware.measured_rate(torch.float32) == (onednn if chosen else plain)
    probes = []
    monkeypatch.setattr(hardware, "product_rate",
                        lambda dtype, seconds, onednn: probes.append(onednn) or 100.0)
    hardware._probed_again.clear()
    try:
        measure_peak_again(torch.device("cpu"), "fp32")
    finally:
        hardware._probed_again.clear()
        hardware._better_peaks.clear()
    assert probes == [chosen]


def test_float32_training_takes_the_measured_products_path(toy_data, tmp_path, monkeypatch):
    from torch import nn

    from aiayn.runtime.cpu import CpuLinear
    from aiayn.train import setup as train_setup
    built = []
    real = train_setup.cpu_training_layers

    def keep(model, device, cfg):
        built.append(model)
        return real(model, device, cfg)

    def linears():
        return {type(m) for m in built[-1].modules() if isinstance(m, (nn.Linear, CpuLinear))}

    def run(name, faster, **settings):
        monkeypatch.setattr(hardware, "onednn_float32", lambda: faster)
        said = []
        cfg = TrainConfig(**{**FAST, "fp32_products": "auto", **settings})
        train(toy_data, tmp_path / name, cfg, progress=False, log=said.append)
        saved = json.loads((tmp_path / name / "train_config.json").read_text())
        return [line for line in said if line.startswith("float32 products")], saved
    monkeypatch.setattr(train_setup, "cpu_training_layers", keep)
    monkeypatch.setattr(hardware, "float32_rates", lambda: (200.0, 450.0))
    said, saved = run("fast", True, max_steps=2)
    assert linears() == {CpuLinear} and all(
        m.onednn_training for m in built[-1].modules() if isinstance(m, CpuLinear))
    assert said == ["float32 products through oneDNN: 450 GFLOP/s against 200 through "
                    "PyTorch's default (MKL) on this CPU"]
    assert saved["fp32_products"] == "onednn"
    said, saved = run("slow", False, max_steps=2)
    assert linears() == {nn.Linear} and not said and saved["fp32_products"] == "pytorch"
    # a resumed run keeps its own, whatever the machine measures now
    for name, faster, own in (("fast", False, CpuLinear), ("slow", True, nn.Linear)):
        monkeypatch.setattr(hardware, "onednn_float32", lambda faster=faster: faster)
        said = []
        train(toy_data, tmp_path / name, TrainConfig(**{**FAST, "fp32_products": "auto"},
                                                     max_steps=4),
              resume=True, progress=False, log=said.append)
        assert linears() == {own}
        assert ("float32 products through oneDNN (the run's own)" in said) == (own is CpuLinear)
    # a run from before the setting took PyTorch's products
    config = tmp_path / "fast" / "train_config.json"
    older = json.loads(config.read_text())
    del older["fp32_products"]
    config.write_text(json.dumps(older))
    monkeypatch.setattr(hardware, "onednn_float32", lambda: True)
    train(toy_data, tmp_path / "fast", TrainConfig(**{**FAST, "fp32_products": "auto"},
                                                   max_steps=6),
          resume=True, progress=False, log=lambda *_: None)
    assert linears() == {nn.Linear}
    # bf16 takes its own products whatever float32 measured, and a compiled step PyTorch's
    model = nn.Sequential(nn.Linear(4, 4))
    cfg = TrainConfig(**{**FAST, "precision": "bf16", "fp32_products": "auto"})
    assert not real(model, torch.device("cpu"), cfg) and type(model[0]) is CpuLinear
    assert model[0].bf16_training and not model[0].onednn_training
    model = nn.Sequential(nn.Linear(4, 4))
    assert not real(model, torch.device("cpu"), replace(cfg, compile=True))
    assert type(model[0]) is nn.Linear


@pytest.mark.skipif(not onednn_available(), reason="this PyTorch has no oneDNN")
def test_onednn_products_asked_for_are_said_and_where_they_do_not_apply(toy_data, tmp_path):
    for precision, said_line in (
            ("fp32", "float32 products through oneDNN (--fp32-products onednn)"),
            ("bf16", "--fp32-products onednn is for float32 training on the CPU, without "
                     "--compile; this run trains bf16 on cpu")):
        said = []
        train(toy_data, tmp_path / precision, TrainConfig(
            **{**FAST, "precision": precision, "fp32_products": "onednn"}, max_steps=1),
            progress=False, log=said.append)
        assert said_line in said


def test_onednn_products_asked_for_without_onednn_are_refused(toy_data, tmp_path,
                                                              monkeypatch):
    from aiayn.errors import UserError
    monkeypatch.setattr(torch.backends.mkldnn, "enabled", False)
    with pytest.raises(UserError, match=r"^--fp32-products onednn: this PyTorch has no "
                                        r"oneDNN, or torch.backends.mkldnn is off; use auto"):
        train(toy_data, tmp_path / "run", TrainConfig(**{**FAST, "fp32_products": "onednn"},
                                                      max_steps=1),
              progress=False, log=lambda *_: None)
    assert not (tmp_path / "run" / "checkpoints").exists()


def test_auto_precision_is_printed_recorded_and_kept_on_resume(toy_data, tmp_path, monkeypatch):
    monkeypatch.setattr(hardware, "_cpu_choice", lambda: Choice("fp32", "a test CPU"))
    said = []
    cfg = {**FAST, "precision": "auto"}
    train(toy_data, tmp_path / "run", TrainConfig(**cfg, max_steps=4), progress=False,
          log=said.append)
    assert "precision: fp32 (a test CPU)" in said
    saved = json.loads((tmp_path / "run" / "train_config.json").read_text())
    assert saved["precision"] == "fp32"
    # the machine now says otherwise: the resumed run keeps the precision it started with
    monkeypatch.setattr(hardware, "_cpu_choice", lambda: Choice("bf16", "another CPU"))
    said.clear()
    train(toy_data, tmp_path / "run", TrainConfig(**cfg, max_steps=6), resume=True,
          progress=False, log=said.append)
    assert "precision: fp32 (the run's own)" in said
    assert json.loads((tmp_path / "run" / "train_config.json").read_text())["precision"] == "fp32"


def test_a_named_precision_is_used_without_asking_the_machine(toy_data, tmp_path, monkeypatch):
    def ask():
        raise AssertionError("--precision fp32 was given")
    monkeypatch.setattr(hardware, "_cpu_choice", ask)
    said = []
    train(toy_data, tmp_path / "run", TrainConfig(**FAST, max_steps=2), progress=False,
          log=said.append)
    assert not any(line.startswith("precision:") for line in said)
    assert TrainConfig().precision == "auto"  # what `aiayn train` does without the flag


@pytest.mark.parametrize("flags, warned", [({"avx2"}, True), ({"avx2", "avx512_bf16"}, False)])
def test_bf16_named_on_a_cpu_that_would_emulate_it_trains_and_says_so(toy_data, tmp_path,
                                                                     monkeypatch, flags, warned):
    from aiayn.train import setup as train_setup
    monkeypatch.setattr(train_setup, "read_cpu", lambda: Cpu("a test CPU", frozenset(flags)))
    said = []
    train(toy_data, tmp_path / "run", TrainConfig(**{**FAST, "precision": "bf16"}, max_steps=2),
          progress=False, log=said.append)
    notes = [line for line in said if line.startswith("precision:")]
    assert notes == (["precision: bf16 as asked, emulated on this AVX2 CPU without native bf16 "
                      "(AVX512_BF16, AMX): its products run many times slower than float32's; "
                      "without --precision it trains in fp32"] if warned else [])


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86 oneDNN ISA")
def test_bf16_training_without_onednns_bf16_kernels_takes_autocasts_products(toy_data, tmp_path):
    # oneDNN held to AVX2 (as on an AVX2-only CPU) has no bf16 kernels: its product would fail
    code = ("import sys; from pathlib import Path\n"
            "from aiayn.runtime.cpu import onednn_bf16_available\n"
            "from aiayn.train.recipe import TrainConfig\n"
            "from aiayn.train.trainer import train\n"
            "from tests.conftest import FAST\n"
            "assert not onednn_bf16_available()\n"
            "cfg = TrainConfig(**{**FAST, 'precision': 'bf16'}, max_steps=2)\n"
            "train(Path(sys.argv[1]), Path(sys.argv[2]), cfg, progress=False, log=print)\n")
    env = {**os.environ, "ONEDNN_MAX_CPU_ISA": "AVX2"}
    run = subprocess.run([sys.executable, "-c", code, str(toy_data), str(tmp_path / "run")],
                         env=env, capture_output=True, text=True, cwd=Path(__file__).parent.parent)
    assert run.returncode == 0, run.stderr[-2000:]
    assert (tmp_path / "run" / "checkpoints" / "last").exists()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_precision_is_bf16_where_supported():
    choice = hardware.choose_precision(torch.device("cuda"))
    assert choice.precision == ("bf16" if torch.cuda.is_bf16_supported() else "fp16")


@pytest.mark.parametrize("arch", ["encoder-decoder", "decoder-only", "encoder"])
def test_training_flops_equal_pytorchs_count_of_a_step(arch):
    """The model FLOPs counted from the shapes equal what PyTorch's FlopCounterMode counts
    over a forward and backward pass (matrix products, attention included)."""
    from torch.utils.flop_counter import FlopCounterMode

    from aiayn.config import ModelConfig
    from aiayn.model import build_model
    from aiayn.train.metrics import training_flops
    cfg = ModelConfig.preset("tiny", vocab_size=50, dropout=0.0)
    model = build_model(arch, cfg, num_classes=3 if arch == "encoder" else None)
    src, tgt = torch.randint(4, 50, (3, 7)), torch.randint(4, 50, (3, 5))
    # the attention's reference path (its products are what FlopCounterMode counts; it has
    # no count for the CPU's fused kernel)
    with FlopCounterMode(display=False) as counter:
        if arch == "encoder-decoder":
            out = model(src, tgt, return_weights=True)[0]
        elif arch == "decoder-only":
            out = model(tgt, return_weights=True)[0]
        else:
            out = model(src, return_weights=True)[0].logits
        out.float().sum().backward()
    counted = counter.get_total_flops()
    ours = training_flops(arch, cfg, tuple(src.shape), tuple(tgt.shape))
    if arch == "encoder":  # the classifier's head (3 outputs) is left out of ours
        assert 0.99 * counted <= ours < counted
    else:
        assert ours == counted


def forget_peaks() -> None:
    hardware._first_peak.cache_clear()
    hardware._better_peaks.clear()
    hardware._probed_again.clear()


def test_the_training_log_reports_mfu(toy_data, tmp_path, monkeypatch):
    monkeypatch.setattr(hardware, "measured_rate", lambda dtype: 50.0)  # GFLOP/s
    forget_peaks()
    train(toy_data, tmp_path / "run", TrainConfig(**FAST, max_steps=3), progress=False,
          log=lambda *_: None)
    forget_peaks()
    logged = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text()
              .splitlines()]
    steps = [r for r in logged if "loss" in r]
    assert steps and all(0 < r["mfu"] < 1 for r in steps)


def test_a_faster_probe_after_validation_becomes_the_peak(toy_data, tmp_path, monkeypatch):
    """A first probe that met other work measures too little: training probes again after
    its first validations and divides by the fastest rate seen, never a slower one."""
    cpu, probes = torch.device("cpu"), iter([400.0, 100.0])  # GFLOP/s: faster, then slower
    monkeypatch.setattr(hardware, "measured_rate", lambda dtype: 50.0)  # the first, disturbed
    monkeypatch.setattr(hardware, "product_rate", lambda dtype, seconds, onednn: next(probes))
    monkeypatch.setattr(hardware, "measure_peak_again", measure_peak_again)
    forget_peaks()
    try:
        train(toy_data, tmp_path / "run", TrainConfig(**{**FAST, "valid_every": 2,
                                                         "log_every": 1}, max_steps=4),
              progress=False, log=lambda *_: None)
        assert hardware.peak_flops(cpu, "fp32") == 400e9  # (the slower second probe: not kept)
    finally:
        forget_peaks()
    steps = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text()
             .splitlines() if "loss" in json.loads(line)]
    assert [r["step"] for r in steps] == [1, 2, 3, 4]
    per_token = [r["mfu"] / r["tokens_per_s"] for r in steps]  # a batch's FLOPs/token / peak
    assert per_token[2] < per_token[1] / 4 and per_token[3] < per_token[1] / 4
