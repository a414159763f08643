"""The Annotated Transformer's sanity check: learn to copy random sequences."""

import torch

from aiayn import ModelConfig, Transformer
from aiayn.decode.search import greedy_search
from aiayn.train.recipe import label_smoothed_nll, noam_lr

SYMBOLS, LENGTH = 10, 8  # ids 4..13, sequences of 8


def copy_batch(batch: int, gen: torch.Generator):
    body = torch.randint(4, 4 + SYMBOLS, (batch, LENGTH), generator=gen)
    src = torch.cat([body, torch.full((batch, 1), 3)], 1)  # + EOS
    tgt_in = torch.cat([torch.full((batch, 1), 2), body], 1)  # BOS +
    tgt_out = torch.cat([body, torch.full((batch, 1), 3)], 1)  # + EOS
    return src, tgt_in, tgt_out


def test_copy_task_is_learned_to_99_percent_exact_match():
    torch.manual_seed(0)
    cfg = ModelConfig.preset("tiny", vocab_size=4 + SYMBOLS, d_model=64, d_ff=128, n_heads=4,
                             dropout=0.0)
    model = Transformer(cfg)
    opt = torch.optim.Adam(model.parameters(), lr=0, betas=(0.9, 0.98), eps=1e-9)
    gen = torch.Generator().manual_seed(0)
    for step in range(1, 301):
        for group in opt.param_groups:
            group["lr"] = noam_lr(step, cfg.d_model, warmup=100, scale=0.3)
        src, tgt_in, tgt_out = copy_batch(64, gen)
        loss, _ = label_smoothed_nll(model(src, tgt_in).flatten(0, 1), tgt_out.flatten(), 0.0, 0)
        opt.zero_grad()
        (loss / tgt_out.numel()).backward()
        opt.step()
    model.eval()
    src, _, tgt_out = copy_batch(500, torch.Generator().manual_seed(123))
    hyps = greedy_search(model, src, max_len_b=2)
    exact = sum(h.tokens == src[i, :LENGTH].tolist() for i, h in enumerate(hyps))
    assert exact / len(hyps) >= 0.99, exact
