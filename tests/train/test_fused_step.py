"""The training step as the trainer runs it on the CPU (the CPU attention and feed-forward
network, the loss with its own gradient in row blocks, fused Adam) against the same model
trained the plain way (PyTorch's fused attention kernel, ``F.cross_entropy`` with label
smoothing, PyTorch's single-tensor Adam): the same losses and weights over 20 steps in
float32."""

import torch
import torch.nn.functional as F

from aiayn import ModelConfig, Transformer
from aiayn.data.corpus import Batch
from aiayn.runtime.cpu import CpuAttention, CpuFeedForward, cpu_layers
from aiayn.train.recipe import TrainConfig
from aiayn.train.step import train_step

from ..conftest import random_tokens

VOCAB = 60


def batches(count: int) -> list[Batch]:
    """Padded batches of random lengths, each with a start piece, as ``collate`` makes them."""
    generator = torch.Generator().manual_seed(5)
    out = []
    for _ in range(count):
        rows = int(torch.randint(2, 6, (1,), generator=generator))
        src_lengths = torch.randint(3, 11, (rows,), generator=generator).tolist()
        tgt_lengths = torch.randint(2, 12, (rows,), generator=generator).tolist()
        src = random_tokens(rows, max(src_lengths), VOCAB, src_lengths)
        tgt_out = random_tokens(rows, max(tgt_lengths), VOCAB, tgt_lengths)
        tgt_in = torch.cat([torch.full((rows, 1), 2), tgt_out[:, :-1]], 1)
        tgt_in[tgt_out == 0] = 0
        out.append(Batch(src, tgt_in, tgt_out, 0))
    return out


def plain_step(model, optimizer, batch: Batch, lr: float, smoothing: float) -> float:
    """One step written the plain way: the summed loss over the batch's target tokens."""
    for group in optimizer.param_groups:
        group["lr"] = lr
    logits = model(batch.src, batch.tgt_in)
    loss = F.cross_entropy(logits.flatten(0, 1), batch.tgt_out.flatten(), ignore_index=0,
                           label_smoothing=smoothing, reduction="sum")
    (loss / batch.target_tokens).backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss.item()


def test_the_trainers_step_equals_the_plain_one_over_20_steps_in_float32():
    cfg = ModelConfig.preset("tiny", vocab_size=VOCAB, dropout=0.0)  # (masks are random)
    torch.manual_seed(0)
    fused = cpu_layers(Transformer(cfg).train())
    plain = Transformer(cfg).train()
    plain.load_state_dict(fused.state_dict())
    for kind in (CpuAttention, CpuFeedForward):
        assert any(isinstance(m, kind) for m in fused.modules())
        assert not any(isinstance(m, kind) for m in plain.modules())
    train_cfg = TrainConfig(preset="tiny", precision="fp32")
    betas, eps = train_cfg.adam_betas, train_cfg.adam_eps
    fused_adam = torch.optim.Adam(fused.parameters(), lr=0.0, betas=betas, eps=eps, fused=True)
    plain_adam = torch.optim.Adam(plain.parameters(), lr=0.0, betas=betas, eps=eps,
                                  foreach=False)
    scaler = torch.amp.GradScaler("cpu", enabled=False)
    for step, batch in enumerate(batches(20)):
        lr = 1e-3 * min(1.0, (step + 1) / 5)
        ours, _, tokens, finite = train_step(fused, fused_adam, scaler, [batch], lr=lr,
                                             cfg=train_cfg, device=torch.device("cpu"))
        theirs = plain_step(plain, plain_adam, batch, lr, train_cfg.label_smoothing)
        assert finite and tokens == batch.target_tokens
        assert abs(ours - theirs) / tokens <= 1e-5, (step, ours, theirs)
    d = cfg.d_model
    for (name, a), b in zip(fused.named_parameters(), plain.parameters()):
        if name.endswith(("qkv_proj.bias", "kv_proj.bias")):
            # the keys' bias shifts every score of a query alike, which softmax ignores: its
            # gradient is rounding noise, which Adam scales up to whole steps
            start = d if name.endswith("qkv_proj.bias") else 0
            a, b = (torch.cat([t[:start], t[start + d:]]) for t in (a, b))
        torch.testing.assert_close(a, b, rtol=0, atol=1e-5, msg=name)
