"""`aiayn plot`: training and validation curves from RUN/metrics.jsonl as a PNG."""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import UserError


def plot_run(run_dir: Path, out: str | Path | None = None) -> Path:
    """Plot loss (train and valid), learning rate, throughput and valid BLEU against steps."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = run_dir / "metrics.jsonl"
    if not path.is_file():
        raise UserError(f"{run_dir}: no metrics.jsonl; is it a training run directory?")
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    train = [r for r in records if "loss" in r]
    valid = [r for r in records if "valid_loss" in r]
    if not train:
        raise UserError(f"{path}: no training steps logged yet")
    fig, axes = plt.subplots(2, 2, figsize=(11, 7), constrained_layout=True)
    ax = axes[0, 0]
    ax.plot([r["step"] for r in train], [r["loss"] for r in train], label="train (smoothed)")
    if valid:
        ax.plot([r["step"] for r in valid], [r["valid_loss"] for r in valid], "o-",
                label="valid (smoothed)")
    ax.set(title="label-smoothed loss per token", xlabel="step", ylabel="loss")
    ax.legend()
    axes[0, 1].plot([r["step"] for r in train], [r["lr"] for r in train])
    axes[0, 1].set(title="learning rate", xlabel="step")
    axes[1, 0].plot([r["step"] for r in train], [r["tokens_per_s"] for r in train])
    axes[1, 0].set(title="target tokens / s", xlabel="step")
    bleu = [r for r in valid if "valid_bleu" in r]
    ax = axes[1, 1]
    if bleu:
        ax.plot([r["step"] for r in bleu], [r["valid_bleu"] for r in bleu], "o-")
    ax.set(title="validation BLEU (greedy)", xlabel="step")
    fig.suptitle(f"{run_dir.name}")
    target = Path(out) if out else run_dir / "curves.png"
    fig.savefig(target, dpi=100)
    plt.close(fig)
    return target
