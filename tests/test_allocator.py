"""glibc's allocator settings (``aiayn.runtime.cpu.reuse_freed_memory``): applied once unless
the user opted out, training steps reuse the logits' pages, a kept amount held at glibc's limit.
Each runs in a process of its own; they are not numerics, so ``make test`` runs them once."""

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="glibc malloc settings")


@pytest.mark.parametrize("keep,applied", [("0", "True"), ("1", "False")])
def test_allocator_settings_apply_once_unless_opted_out(keep, applied):
    # how many page faults they save is machine-dependent: docs/design.md, "Experiments behind
    # the decisions"
    script = "from aiayn.runtime.cpu import reuse_freed_memory as r; print(r(), r())"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env={**os.environ, "AIAYN_KEEP_MALLOC": keep}, check=True).stdout
    assert out.split() == [applied, applied]


@pytest.mark.parametrize("threshold", ["TRAIN_MMAP_THRESHOLD", "MMAP_THRESHOLD"])
def test_training_steps_take_their_logits_from_pages_already_made(threshold):
    # logits and their gradient of 2,000 tokens x 10,000 entries (80 MB each, above the
    # decoding threshold): mapped afresh every step, each faults its ~20,000 pages again;
    # under training's threshold the steps reuse the heap's pages (now and then one step still
    # faults the logits' pages afresh, in about one run of eight: most steps are asked of)
    script = f"""
import resource, torch
from aiayn import ModelConfig, Transformer
from aiayn.data.corpus import Batch
from aiayn.runtime import cpu
from aiayn.train.recipe import TrainConfig
from aiayn.train.step import train_step
print(cpu.reuse_freed_memory(mmap_threshold=cpu.{threshold}))
torch.manual_seed(0)
model = Transformer(ModelConfig.preset("tiny", vocab_size=10000)).train()
opt = torch.optim.Adam(model.parameters(), fused=True)
scaler = torch.amp.GradScaler("cpu", enabled=False)
src, tgt = torch.randint(4, 10000, (50, 41)), torch.randint(4, 10000, (50, 41))
batch = Batch(src[:, 1:], tgt[:, :-1], tgt[:, 1:], pad_id=0)
for _ in range(8):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    train_step(model, opt, scaler, [batch], lr=1e-4, cfg=TrainConfig(preset="tiny",
               precision="fp32"), device=torch.device("cpu"))
    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env={**os.environ, "AIAYN_KEEP_MALLOC": "0"}, check=True).stdout
    applied, *faults = out.split()
    assert applied == "True"
    reusing = sum(int(count) < 5000 for count in faults[-6:])  # steps after the first two
    assert reusing >= 4 if threshold == "TRAIN_MMAP_THRESHOLD" else reusing == 0


@pytest.mark.parametrize("keep_mib,kept", [(4096, True), (0, False)])
def test_a_kept_amount_past_what_glibc_takes_is_held_at_its_limit(keep_mib, kept):
    # `aiayn serve --keep-freed-mib 4096`: 4 GiB wrapped to 0 in mallopt's C int, which
    # returned every freed page at once; held at the limit, a freed 128 MiB stays resident.
    # glibc's own malloc and free, with nothing allocated in between that could sit above the
    # block at the top of the heap and keep it from being trimmed either way
    script = f"""
import ctypes, os
from aiayn.runtime import cpu
print(cpu.reuse_freed_memory({keep_mib} << 20, mmap_threshold=cpu.TRAIN_MMAP_THRESHOLD))
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
statm = os.open("/proc/self/statm", os.O_RDONLY)
resident = lambda: int(os.pread(statm, 100, 0).split()[1]) * 4096 >> 20
block = libc.malloc(128 << 20)
ctypes.memset(block, 1, 128 << 20)
before = resident()
libc.free(block)
print(before - resident())
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env={**os.environ, "AIAYN_KEEP_MALLOC": "0"}, check=True).stdout
    applied, returned_mib = out.split()
    assert applied == "True"
    assert (int(returned_mib) < 64) == kept
