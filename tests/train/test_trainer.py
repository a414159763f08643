import json
import os
import socket
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

from aiayn import Transformer
from aiayn import checkpoint as ckpt
from aiayn.checkpoint import Checkpoint
from aiayn.errors import UserError
from aiayn.train.recipe import TrainConfig
from aiayn.train.trainer import train
from aiayn.translate import DecodeOptions, load
from tests.conftest import FAST, PRODUCTS, assert_float32_close, losses


def test_resumed_training_equals_uninterrupted_training(toy_data, tmp_path):
    # the paper's schedule: a fitted one follows the budget, which differs between the runs
    cfg = TrainConfig(**FAST, max_steps=10, schedule="paper")
    quiet = dict(progress=False, log=lambda *_: None)
    train(toy_data, tmp_path / "whole", cfg, **quiet)
    train(toy_data, tmp_path / "split", TrainConfig(**FAST, max_steps=4, schedule="paper"),
          **quiet)
    summary = train(toy_data, tmp_path / "split", cfg, resume=True, **quiet)
    assert summary["step"] == 10 and summary["steps_run"] == 6
    whole, split = losses(tmp_path / "whole"), losses(tmp_path / "split")
    assert list(whole) == list(range(1, 11)) and whole == split  # bit-identical
    a = load_file(str(tmp_path / "whole/checkpoints/last" / ckpt.WEIGHTS))
    b = load_file(str(tmp_path / "split/checkpoints/last" / ckpt.WEIGHTS))
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("into_second", [0, 1])
def test_resuming_at_or_after_an_epoch_s_end_equals_uninterrupted_training(toy_data, tmp_path,
                                                                          into_second):
    """The batches are collated a step ahead on a thread; the position a checkpoint records
    is still the one after its step, at an epoch's last batch too, and the run ends at the
    start of the epoch after its last."""
    from aiayn.data.corpus import ParallelCorpus, token_batches
    fast = {**FAST, "max_tokens": 600, "valid_every": 1000, "valid_bleu_sentences": 0,
            "schedule": "paper"}
    per_epoch = len(token_batches(ParallelCorpus(toy_data, "train").sizes, fast["max_tokens"],
                                  seed=TrainConfig().seed, epoch=0))
    quiet = dict(progress=False, log=lambda *_: None)
    cfg = TrainConfig(**fast, max_epochs=2)
    whole = train(toy_data, tmp_path / "whole", cfg, **quiet)
    first = train(toy_data, tmp_path / "split",
                  TrainConfig(**fast, max_epochs=2, max_steps=per_epoch + into_second), **quiet)
    assert first["stopped"] == "max_steps"
    saved = json.loads((tmp_path / "split/checkpoints/last" / ckpt.STATE_JSON).read_text())
    assert saved["position"] == {"step": per_epoch + into_second, "epoch": into_second,
                                 "batch": per_epoch if into_second == 0 else 1}
    split = train(toy_data, tmp_path / "split", cfg, resume=True, **quiet)
    assert whole["stopped"] == split["stopped"] == "max_epochs"
    assert whole["step"] == split["step"] == 2 * per_epoch
    assert losses(tmp_path / "whole") == losses(tmp_path / "split")
    ended = json.loads((tmp_path / "whole/checkpoints/last" / ckpt.STATE_JSON).read_text())
    assert ended["position"] == {"step": 2 * per_epoch, "epoch": 2, "batch": 0}


def test_training_on_the_cpu_keeps_its_logits_pages(toy_data, tmp_path, monkeypatch):
    # the allocator setting is process-wide and set once: the call is what is checked here,
    # its effect on page faults in tests/test_cpu.py
    from aiayn.runtime import cpu
    from aiayn.train.setup import setup
    calls = []
    monkeypatch.setattr(cpu, "reuse_freed_memory", lambda *a, **kw: calls.append(kw))
    setup(toy_data, tmp_path / "run", TrainConfig(**FAST), resume=False, log=lambda *_: None)
    assert calls == [{"mmap_threshold": cpu.TRAIN_MMAP_THRESHOLD}]


def test_run_directory_holds_self_sufficient_checkpoints(toy_data, tmp_path):
    summary = train(toy_data, tmp_path / "run", TrainConfig(**FAST, max_steps=8, keep_last=1),
                    progress=False, log=lambda *_: None)
    root = tmp_path / "run" / "checkpoints"
    names = sorted(p.name for p in root.iterdir())
    assert "last" in names and "best" in names
    assert (root / "last").resolve().name == "step_0000008"
    for f in (ckpt.WEIGHTS, ckpt.CONFIG, "tokenizer.model", ckpt.STATE_JSON, ckpt.STATE_TENSORS):
        assert (root / "last" / f).is_file()
    records = [json.loads(x) for x in (tmp_path / "run/metrics.jsonl").read_text().splitlines()]
    assert {"step", "loss", "lr", "tokens_per_s"} <= set(records[0])
    assert {"valid_loss", "valid_bleu"} <= set(records[4])
    assert summary["last"]["valid_loss"] > 0
    assert load(tmp_path / "run").translate(["alpha beta"], DecodeOptions(beam=2))[0] is not None


def test_logged_rates_leave_validations_and_checkpoints_out(toy_data, tmp_path, monkeypatch):
    """tokens/s and MFU are the steps': a validation (here made 0.4 s slower) and its
    checkpoint, between two logged lines, count in no window."""
    import time

    from aiayn.train import trainer
    validate = trainer.validate

    def slow_validation(run):
        time.sleep(0.4)
        return validate(run)
    monkeypatch.setattr(trainer, "validate", slow_validation)
    fast = {**FAST, "valid_every": 2, "valid_bleu_sentences": 0}
    train(toy_data, tmp_path / "run", TrainConfig(**fast, max_steps=5), progress=False,
          log=lambda *_: None)
    records = [json.loads(x) for x in (tmp_path / "run/metrics.jsonl").read_text().splitlines()]
    steps = [r for r in records if "tokens_per_s" in r]
    assert len(steps) == 5  # steps 3 and 5 each follow a validation
    # each window is one step of a tiny model (at most 150 target tokens): far under the
    # 0.4 s that every other one follows
    slowest = 150 / min(r["tokens_per_s"] for r in steps)
    assert slowest < 0.4, f"a window took up to {slowest:.2f} s: a validation was counted"


def test_resume_refuses_a_different_model_shape(toy_data, tmp_path):
    train(toy_data, tmp_path / "run", TrainConfig(**FAST, max_steps=4), progress=False,
          log=lambda *_: None)
    bigger = TrainConfig(**{**FAST, "model": {"dropout": 0.1, "d_ff": 128}}, max_steps=8)
    with pytest.raises(UserError, match=r"the model differs \(d_ff 64 -> 128\)"):
        train(toy_data, tmp_path / "run", bigger, resume=True, progress=False)
    with pytest.raises(UserError, match="already holds checkpoints; pass --resume"):
        train(toy_data, tmp_path / "run", TrainConfig(**FAST), progress=False)


DDP_SCRIPT = """
import os, sys, json, torch
from aiayn.train.recipe import TrainConfig
from aiayn.train.trainer import train
cfg = TrainConfig(preset="tiny", max_tokens=150, warmup=10, valid_every=100, max_steps=5,
                  valid_bleu_sentences=0, log_every=1, grad_accum=int(sys.argv[3]), threads=1,
                  precision="fp32", fp32_products=sys.argv[4])
train(sys.argv[1], sys.argv[2], cfg, progress=False, log=lambda *_: None)
"""


def free_port() -> int:
    """A free port on 127.0.0.1 for a process group's rendezvous."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_launched_process_trains_through_ddp_even_alone(toy_data, tmp_path, monkeypatch):
    """torchrun --nproc-per-node 1 takes the path that many processes take (DDP, the
    collectives), so that a launch checked on one GPU is the launch that runs on eight."""
    import torch.distributed as dist
    port = free_port()
    for name, value in {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1",
                        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}.items():
        monkeypatch.setenv(name, value)
    logged: list[str] = []
    try:
        summary = train(toy_data, tmp_path / "run", TrainConfig(**FAST, max_steps=3),
                        progress=False, log=logged.append)
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
    assert summary["step"] == 3
    assert any(line.startswith("model:") and line.endswith("1 process(es) on cpu (DDP over "
                                                             "gloo)") for line in logged)


def test_the_compiled_training_pass_equals_the_eager_one_over_20_steps(toy_data, tmp_path):
    """--compile (torch.compile, Inductor, dynamic shapes): the same losses as eager
    within 1e-5 in float32, compiled once for every batch shape."""
    import torch._dynamo
    settings = {**FAST, "model": {"dropout": 0.0}, "valid_every": 100,
                "valid_bleu_sentences": 0}
    quiet = dict(progress=False, log=lambda *_: None)
    train(toy_data, tmp_path / "eager", TrainConfig(**settings, max_steps=20), **quiet)
    torch._dynamo.reset()
    logged: list[str] = []
    with torch._dynamo.config.patch(error_on_recompile=True):
        train(toy_data, tmp_path / "compiled", TrainConfig(**settings, max_steps=20,
                                                           compile=True),
              progress=False, log=logged.append)
    assert any(line.endswith("compiled (torch.compile)") for line in logged)
    assert sum(line.startswith("--compile on the CPU:") for line in logged) == 1
    eager, compiled = losses(tmp_path / "eager"), losses(tmp_path / "compiled")
    assert list(eager) == list(compiled) == list(range(1, 21))
    assert all(abs(eager[k] - compiled[k]) < 1e-5 for k in eager)


def test_ddp_with_two_gloo_processes_equals_one_process_on_the_global_batch(toy_data, tmp_path):
    script = tmp_path / "ddp.py"
    script.write_text(DDP_SCRIPT)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    port = free_port()
    subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                    "--master-addr", "127.0.0.1", "--master-port", str(port), str(script),
                    str(toy_data), str(tmp_path / "ddp"), "1", PRODUCTS],
                   check=True, env=env, capture_output=True)
    subprocess.run([sys.executable, str(script), str(toy_data), str(tmp_path / "one"), "2",
                    PRODUCTS], check=True, env=env, capture_output=True)
    a = load_file(str(tmp_path / "ddp/checkpoints/last" / ckpt.WEIGHTS))
    b = load_file(str(tmp_path / "one/checkpoints/last" / ckpt.WEIGHTS))
    assert a.keys() == b.keys()
    for key in a:
        assert_float32_close(a[key], b[key])
    assert not torch.equal(a["output_proj.weight"],
                           Transformer(Checkpoint.open(tmp_path / "one/checkpoints/last").config
                                       ).output_proj.weight)


def test_items_made_ahead_arrive_in_order_with_their_error_in_its_turn():
    import threading

    from aiayn.train.trainer import ahead

    def items():
        yield from range(3)
        raise UserError("bad batch")

    got = []
    with pytest.raises(UserError, match="bad batch"):
        for item in ahead(items()):
            got.append(item)
    assert got == [0, 1, 2]
    made = ahead(iter(range(100)))
    assert next(made) == 0
    made.close()  # the caller stopped: so does the thread
    for thread in threading.enumerate():
        if thread.name == "aiayn-batches":
            thread.join(timeout=2)
            assert not thread.is_alive()
