import json
import signal
import subprocess
import sys
import textwrap
import time

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
from tests.conftest import FAST


def test_checkpoint_killed_midway_leaves_the_previous_one_loadable(tmp_path, toy_data):
    """SIGKILL a process that writes checkpoints in a loop, at several instants."""
    script = textwrap.dedent(f"""
        import sys, torch
        from pathlib import Path
        from aiayn import ModelConfig, Transformer
        from aiayn import checkpoint as ckpt
        from aiayn.data.tokenizer import Tokenizer
        model = Transformer(ModelConfig.preset("small", vocab_size=8000))
        tokenizer = Tokenizer.load("{toy_data / 'spm.model'}")
        run = Path(sys.argv[1])
        for step in range(1, 10_000):
            with torch.no_grad():
                model.output_proj.weight.fill_(step)
            ckpt.save_checkpoint(run, f"step_{{step:07d}}", model, model.cfg,
                                 tokenizer, state={{"step": step}})
            print(step, flush=True)
    """)
    for delay in (0.9, 1.3, 1.7):
        run = tmp_path / f"run{delay}"
        proc = subprocess.Popen([sys.executable, "-c", script, str(run)], stdout=subprocess.PIPE,
                                text=True)
        proc.stdout.readline()  # the first checkpoint is complete
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        last = (run / "checkpoints" / "last").resolve()
        model = Transformer(Checkpoint.open(last).config)
        Checkpoint.open(last).load_weights(model)  # loads, whole
        step = int(last.name.split("_")[1])
        assert torch.all(model.output_proj.weight == step)
        assert json.loads((last / ckpt.STATE_JSON).read_text())["step"] == step


def test_averaging_k_checkpoints_equals_the_mean_of_their_tensors(toy_data, tmp_path):
    train(toy_data, tmp_path / "run", TrainConfig(**FAST, max_steps=12, keep_last=3,
                                                   schedule="paper"),
          progress=False, log=lambda *_: None)
    steps = ckpt.list_step_checkpoints(tmp_path / "run")
    assert [p.name for p in steps] == ["step_0000004", "step_0000008", "step_0000012"]
    out = ckpt.average_checkpoints(steps, tmp_path / "avg")
    tensors = [load_file(str(p / ckpt.WEIGHTS)) for p in steps]
    averaged = load_file(str(out / ckpt.WEIGHTS))
    for key in averaged:
        torch.testing.assert_close(averaged[key], sum(t[key] for t in tensors) / 3)
    assert load(out).translate(["alpha"], DecodeOptions(beam=1))  # a usable checkpoint


def test_a_run_resolves_to_its_best_last_or_a_given_step(toy_data, tmp_path):
    run = tmp_path / "run"
    summary = train(toy_data, run, TrainConfig(**FAST, max_epochs=1, keep_last=10,
                                               schedule="paper"),
                    progress=False, log=lambda *_: None)
    assert summary["stopped"] == "max_epochs"
    steps = ckpt.list_step_checkpoints(run)
    assert ckpt.resolve_checkpoint(run, "last") == steps[-1].resolve()
    assert ckpt.resolve_checkpoint(run) == ckpt.resolve_checkpoint(run, "best")
    first = int(steps[0].name.split("_")[1])  # the oldest kept step
    assert ckpt.resolve_checkpoint(run, first) == steps[0].resolve()
    assert ckpt.resolve_checkpoint(steps[0]) == steps[0]  # a checkpoint is itself
    with pytest.raises(UserError, match="no checkpoint 'step_0009999'.*choose one of: best"):
        ckpt.resolve_checkpoint(run, 9999)


@pytest.mark.parametrize("saved_fused, resumed_fused", [(False, True), (True, False)])
def test_adam_moments_move_between_the_fused_and_the_default_adam(saved_fused, resumed_fused):
    def model_and_adam(fused):
        torch.manual_seed(0)
        model = torch.nn.Linear(8, 4)
        return model, torch.optim.Adam(model.parameters(), lr=1e-2, fused=fused)

    first, first_adam = model_and_adam(saved_fused)
    for _ in range(3):
        first(torch.randn(5, 8)).sum().backward()
        first_adam.step()
        first_adam.zero_grad()
    tensors, meta = ckpt.optimizer_tensors(first_adam)
    tensors = {k: v.clone() for k, v in tensors.items()}  # as read back from disk
    second, second_adam = model_and_adam(resumed_fused)
    second.load_state_dict(first.state_dict())
    ckpt.load_optimizer(second_adam, tensors, meta)
    assert second_adam.param_groups[0]["fused"] == saved_fused  # resumes as it was saved
    x = torch.randn(5, 8)
    for model, adam in ((first, first_adam), (second, second_adam)):
        model(x).sum().backward()
        adam.step()
    assert torch.equal(first.weight, second.weight) and torch.equal(first.bias, second.bias)
