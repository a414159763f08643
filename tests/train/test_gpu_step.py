"""A GPU's bf16 training step on 16-bit weight copies, run on the CPU (the code is
device-agnostic; only the choice to use it is the GPU's): against the model converted to bf16
by PyTorch, and against the step under autocast."""

import os
import subprocess
import sys

import torch

from aiayn import ModelConfig, Transformer
from aiayn.train.copies import Weights16
from aiayn.train.recipe import TrainConfig
from aiayn.train.step import train_step

from ..conftest import losses
from .test_fused_step import VOCAB, batches


def tiny_model() -> Transformer:
    torch.manual_seed(0)
    return Transformer(ModelConfig.preset("tiny", vocab_size=VOCAB, dropout=0.0)).train()


def test_weight_copies_compute_what_the_model_converted_to_bf16_computes():
    model, batch = tiny_model(), batches(1)[0]
    converted = Transformer(model.cfg).train()
    converted.load_state_dict(model.state_dict())
    converted.to(torch.bfloat16)  # PyTorch's conversion, parameters and buffers
    copies = Weights16(model)
    copies.refresh()
    ours = copies(batch.src, batch.tgt_in)
    theirs = converted(batch.src, batch.tgt_in)
    assert ours.dtype == torch.bfloat16
    assert torch.equal(ours, theirs)
    grad = torch.randn_like(theirs)
    ours.backward(grad)
    theirs.backward(grad)
    copies.gradients_to_masters()
    named = dict(converted.named_parameters())
    for name, param in model.named_parameters():
        assert param.grad is not None and param.grad.dtype == torch.float32
        assert torch.equal(param.grad, named[name].grad.float()), name
    assert all(c.grad is None for c in copies.copies)


def test_gradients_of_micro_batches_add_up_in_float32():
    model, (first, second) = tiny_model(), batches(2)
    copies = Weights16(model)
    copies.refresh()
    expected = {}
    for i, batch in enumerate((first, second)):
        copies(batch.src, batch.tgt_in).float().square().mean().backward()
        for (name, _), copy in zip(model.named_parameters(), copies.copies):
            expected[name] = expected.get(name, 0) + copy.grad.float()
        copies.gradients_to_masters()
    for name, param in model.named_parameters():
        torch.testing.assert_close(param.grad, expected[name], rtol=0, atol=0)


def test_a_step_on_copies_trains_as_a_step_under_autocast():
    """Over 10 steps in bf16, the step on weight copies and the step under CPU autocast (whose
    LayerNorm and residual stream are bf16 too) give losses within bf16's rounding."""
    cfg = TrainConfig(preset="tiny", precision="bf16")
    data = batches(10)
    losses = {}
    for way in ("copies", "autocast"):
        model = tiny_model()
        optimizer = torch.optim.Adam(model.parameters(), lr=0.0, betas=cfg.adam_betas,
                                     eps=cfg.adam_eps)
        scaler = torch.amp.GradScaler("cuda", enabled=False)
        copies = Weights16(model) if way == "copies" else None
        losses[way] = []
        for batch in data:
            loss, _, tokens, finite = train_step(model, optimizer, scaler, [batch, batch],
                                                 lr=1e-3, cfg=cfg,
                                                 device=torch.device("cpu"), copies=copies)
            assert finite
            losses[way].append(loss / tokens)
    assert losses["copies"][-1] < losses["copies"][0]
    torch.testing.assert_close(losses["copies"], losses["autocast"], rtol=3e-2, atol=0)


COPIES_SCRIPT = """
import sys
import aiayn.train.setup as setup
setup.uses_weight_copies = lambda device, cfg: True  # (the GPU's bf16 choice, on the CPU)
from aiayn.train.recipe import TrainConfig
from aiayn.train.trainer import train
cfg = TrainConfig(preset="tiny", max_tokens=150, warmup=10, valid_every=100, max_steps=5,
                  valid_bleu_sentences=0, log_every=1, grad_accum=int(sys.argv[3]), threads=1,
                  precision="bf16")
lines = []
train(sys.argv[1], sys.argv[2], cfg, progress=False, log=lines.append)
print("\\n".join(line for line in lines if line.startswith("model:")))
"""


def test_two_processes_on_weight_copies_equal_one_process_on_the_global_batch(toy_data,
                                                                               tmp_path):
    """Over several processes the copies' float32 gradients are averaged in one all-reduce of
    their own (no DDP): two gloo processes train the weights one process trains on both
    processes' batches as two micro-batches."""
    from safetensors.torch import load_file

    from aiayn import checkpoint as ckpt

    from .test_trainer import free_port
    script = tmp_path / "copies.py"
    script.write_text(COPIES_SCRIPT)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    two = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node",
                          "2", "--master-addr", "127.0.0.1", "--master-port", str(free_port()),
                          str(script), str(toy_data), str(tmp_path / "two"), "1"],
                         check=True, env=env, capture_output=True, text=True)
    one = subprocess.run([sys.executable, str(script), str(toy_data), str(tmp_path / "one"),
                          "2"], check=True, env=env, capture_output=True, text=True)
    assert ("2 process(es) on cpu (gradients averaged over gloo), bf16 on weight copies"
            in two.stdout)
    assert "1 process(es) on cpu, bf16 on weight copies" in one.stdout
    two_losses, one_losses = losses(tmp_path / "two"), losses(tmp_path / "one")
    assert list(two_losses) == list(one_losses) == [1, 2, 3, 4, 5]  # (rank 0 logs its own)
    assert one_losses[5] < one_losses[1]
    a = load_file(str(tmp_path / "two/checkpoints/last" / ckpt.WEIGHTS))
    b = load_file(str(tmp_path / "one/checkpoints/last" / ckpt.WEIGHTS))
    assert a.keys() == b.keys()
    for key in a:
        assert a[key].dtype == torch.float32
        torch.testing.assert_close(a[key], b[key], rtol=1e-5, atol=1e-5)


def test_resumed_training_on_weight_copies_equals_uninterrupted_training(toy_data, tmp_path,
                                                                        monkeypatch):
    """The copies hold nothing a checkpoint must keep: they are made from the float32
    weights at each step, so a resumed run on them is bit-identical to one never stopped."""
    from safetensors.torch import load_file

    from aiayn import checkpoint as ckpt
    from aiayn.train import setup
    from aiayn.train.trainer import train

    from ..conftest import FAST
    monkeypatch.setattr(setup, "uses_weight_copies", lambda device, cfg: True)
    settings = {**FAST, "precision": "bf16", "schedule": "paper", "grad_accum": 2}
    logged: list[str] = []
    train(toy_data, tmp_path / "whole", TrainConfig(**settings, max_steps=8), progress=False,
          log=logged.append)
    assert any(line.endswith("bf16 on weight copies") for line in logged)
    quiet = dict(progress=False, log=lambda *_: None)
    train(toy_data, tmp_path / "split", TrainConfig(**settings, max_steps=3), **quiet)
    train(toy_data, tmp_path / "split", TrainConfig(**settings, max_steps=8), resume=True,
          **quiet)
    whole, split = losses(tmp_path / "whole"), losses(tmp_path / "split")
    assert list(whole) == list(range(1, 9)) and whole == split  # bit-identical
    a = load_file(str(tmp_path / "whole/checkpoints/last" / ckpt.WEIGHTS))
    b = load_file(str(tmp_path / "split/checkpoints/last" / ckpt.WEIGHTS))
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_weight_copies_run_through_the_module_they_are_given():
    """``run`` (a compiled model in the GPU benchmark) is what runs, with the copies in the
    model's place during the call and the float32 parameters back after it."""
    model, batch = tiny_model(), batches(1)[0]
    seen = []

    class Wrapper(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *args):
            seen.append({p.dtype for p in self.inner.parameters()})
            return self.inner(*args)

    copies = Weights16(model, run=Wrapper(model))
    copies.refresh()
    out = copies(batch.src, batch.tgt_in)
    assert seen == [{torch.bfloat16}]
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    plain = Weights16(model)
    plain.refresh()
    assert torch.equal(out, plain(batch.src, batch.tgt_in))
