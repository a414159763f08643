"""The training loop: one plain loop, top to bottom, for the encoder-decoder Transformer.

Single process, or one process per device under ``torchrun`` (DistributedDataParallel: gloo on
CPU, NCCL on GPU; each rank takes every world-th batch; rank 0 alone writes).
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import sacrebleu
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from ..data.corpus import Batch, ParallelCorpus, read_stats, token_batches
from ..data.tokenizer import Tokenizer
from ..decode.search import greedy_search
from ..errors import UserError
from ..model import LanguageModel, Transformer
from . import checkpoint as ckpt
from .recipe import TrainConfig, autocast_dtype, label_smoothed_nll, noam_lr


@dataclass
class Position:
    """Where training is: optimizer steps done, and the next batch of the epoch."""

    step: int = 0
    epoch: int = 0
    batch: int = 0


def _dist() -> tuple[int, int]:
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _setup_distributed(device: torch.device) -> None:
    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")


def _device(name: str) -> torch.device:
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise UserError("--device cuda: no CUDA device is available; use --device cpu")
    if name == "cuda" and "LOCAL_RANK" in os.environ:
        return torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    return torch.device(name)


class MetricsLog:
    """``RUN/metrics.jsonl``, one JSON object a line; TensorBoard too when it is installed."""

    def __init__(self, run_dir: Path, enabled: bool) -> None:
        self.path, self.enabled, self.tb = run_dir / "metrics.jsonl", enabled, None
        if enabled:
            try:
                from torch.utils.tensorboard import SummaryWriter
                self.tb = SummaryWriter(str(run_dir / "tensorboard"))
            except ImportError:
                pass

    def truncate_after(self, step: int) -> None:
        """On resume, drop lines logged after the checkpoint (they will be logged again)."""
        if not (self.enabled and self.path.exists()):
            return
        kept = [line for line in self.path.read_text().splitlines()
                if line.strip() and json.loads(line).get("step", 0) <= step]
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text("".join(line + "\n" for line in kept))
        os.replace(tmp, self.path)

    def write(self, record: dict) -> None:
        if not self.enabled:
            return
        with open(self.path, "a") as handle:
            handle.write(json.dumps(record) + "\n")
        if self.tb is not None:
            for key, value in record.items():
                if key != "step" and isinstance(value, (int, float)):
                    self.tb.add_scalar(key, value, record["step"])

    def close(self) -> None:
        if self.tb is not None:
            self.tb.close()


def evaluate_loss(model: Transformer, corpus: ParallelCorpus, cfg: TrainConfig,
                  device: torch.device) -> dict:
    """Validation label-smoothed loss, NLL and perplexity per target token."""
    model.eval()
    loss_sum = nll_sum = tokens = 0.0
    with torch.inference_mode(), _autocast(device, cfg.precision):
        for indices in token_batches(corpus.sizes, cfg.max_tokens, seed=0, epoch=0, shuffle=False):
            batch = corpus.collate(indices).to(device)
            logits = _forward(model, batch)
            loss, nll = label_smoothed_nll(logits.flatten(0, 1), batch.tgt_out.flatten(),
                                           cfg.label_smoothing, model.cfg.pad_id)
            loss_sum, nll_sum = loss_sum + float(loss), nll_sum + float(nll)
            tokens += batch.target_tokens
    model.train()
    nll = nll_sum / tokens
    return {"valid_loss": loss_sum / tokens, "valid_nll": nll, "valid_ppl": math.exp(min(nll, 50))}


def evaluate_bleu(model: Transformer, corpus: ParallelCorpus, references: list[str],
                  tokenizer: Tokenizer, count: int, max_tokens: int, device: torch.device) -> float:
    """Greedy-decoded, detokenized sacreBLEU on the first ``count`` validation sentences."""
    model.eval()
    count = min(count, len(corpus))
    sizes = corpus.lengths("src", count) + 1
    hyps: dict[int, str] = {}
    for indices in token_batches(sizes, max_tokens, seed=0, epoch=0, shuffle=False):
        batch = corpus.collate(indices).to(device)
        for i, h in zip(indices, greedy_search(model, batch.src)):
            hyps[int(i)] = tokenizer.decode(h.tokens)
    model.train()
    return sacrebleu.corpus_bleu([hyps[i] for i in range(count)], [references[:count]]).score


def train_step(net: nn.Module, optimizer: torch.optim.Optimizer, scaler: torch.amp.GradScaler,
               micro: list[Batch], *, lr: float, cfg: TrainConfig, pad_id: int,
               device: torch.device) -> tuple[float, float, int]:
    """One optimizer step over the micro-batches ``micro`` (gradient accumulation).

    The loss is summed over target tokens and divided by the step's token count across all
    ranks; DDP averages gradients over ranks, hence the factor ``world``. Returns this rank's
    summed smoothed loss, summed NLL and target tokens.
    """
    _, world = _dist()
    ddp = net if isinstance(net, DistributedDataParallel) else None
    step_tokens = torch.tensor(float(sum(b.target_tokens for b in micro)))
    if world > 1:
        dist.all_reduce(step_tokens)
    norm = world / float(step_tokens)
    for group in optimizer.param_groups:
        group["lr"] = lr
    loss_sum = nll_sum = 0.0
    tokens = 0
    for i, batch in enumerate(micro):
        sync = ddp.no_sync() if ddp is not None and i < len(micro) - 1 else nullcontext()
        with sync:
            with _autocast(device, cfg.precision):
                logits = _forward(net, batch)
            loss, nll = label_smoothed_nll(logits.flatten(0, 1), batch.tgt_out.flatten(),
                                           cfg.label_smoothing, pad_id)
            scaler.scale(loss * norm).backward()
        loss_sum += loss.item()
        nll_sum += nll.item()
        tokens += batch.target_tokens
    if cfg.clip_norm:
        scaler.unscale_(optimizer)
        params = [p for group in optimizer.param_groups for p in group["params"]]
        nn.utils.clip_grad_norm_(params, cfg.clip_norm)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    return loss_sum, nll_sum, tokens


def _forward(net: nn.Module, batch: Batch) -> torch.Tensor:
    """Teacher-forced logits: the translation model reads the source, the LM the target alone."""
    module = net.module if isinstance(net, DistributedDataParallel) else net
    if isinstance(module, LanguageModel):
        return net(batch.tgt_in)
    return net(batch.src, batch.tgt_in)


def _autocast(device: torch.device, precision: str):
    dtype = autocast_dtype(precision)
    return torch.autocast(device.type, dtype=dtype) if dtype is not None else nullcontext()


def _state_tensors(optimizer: torch.optim.Optimizer) -> tuple[dict, dict]:
    tensors, meta = ckpt.optimizer_tensors(optimizer)
    tensors["rng.cpu"] = torch.get_rng_state()
    if torch.cuda.is_available():
        tensors["rng.cuda"] = torch.cuda.get_rng_state()
    return tensors, meta


def _check_resumable(saved: Path, model_cfg, arch: str, tokenizer_path: Path) -> None:
    saved_arch = ckpt.load_arch(saved)
    if saved_arch != arch:
        raise UserError(f"cannot resume {saved}: it is a {saved_arch} model, not "
                        f"{arch}; use the same --arch, or a new --out")
    old = ckpt.load_config(saved)
    if old != model_cfg:
        diffs = [f"{k} {v!r} -> {getattr(model_cfg, k)!r}" for k, v in old.to_dict().items()
                 if getattr(model_cfg, k) != v]
        raise UserError(f"cannot resume {saved}: the model differs ({'; '.join(diffs)}); "
                        "use the same data and model settings, or a new --out")
    if (saved / ckpt.TOKENIZER).read_bytes() != tokenizer_path.read_bytes():
        raise UserError(f"cannot resume {saved}: its vocabulary differs from the data's "
                        f"{tokenizer_path}; resume with the data it was trained on")


def train(data_dir: str | Path, run_dir: str | Path, cfg: TrainConfig, *, resume: bool = False,
          progress: bool = True, log=print) -> dict:
    """Train a Transformer on a prepared data directory; checkpoints go to ``run_dir``.

    Returns a summary: steps, final and best validation figures, the last checkpoint.
    Raises UserError for bad data, flags or checkpoints.
    """
    data_dir, run_dir = Path(data_dir), Path(run_dir)
    device = _device(cfg.device)
    if cfg.precision == "fp16" and device.type != "cuda":
        raise UserError("--precision fp16 needs a CUDA device; on CPU use bf16")
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    _setup_distributed(device)
    rank, world = _dist()
    is_main = rank == 0

    # 1) data and vocabulary
    stats = read_stats(data_dir)
    tokenizer_path = data_dir / "spm.model"
    tokenizer = Tokenizer.load(tokenizer_path)
    train_data = ParallelCorpus(data_dir, "train")
    valid_data = ParallelCorpus(data_dir, "valid") if "valid" in stats["splits"] else None
    references = ((data_dir / "valid.tgt.txt").read_text(encoding="utf-8").splitlines()
                  if valid_data is not None else [])
    model_cfg = cfg.model_config(tokenizer.vocab_size)
    if int(train_data.sizes.max()) > model_cfg.max_len:
        raise UserError(f"the longest training sentence ({int(train_data.sizes.max())} tokens) "
                        f"exceeds the model's max_len ({model_cfg.max_len}); prepare with a lower "
                        "--max-len or raise model.max_len")

    # 2) model and optimizer; resume restores both, the RNG and the data position
    torch.manual_seed(cfg.seed)
    model = ckpt.ARCHS[cfg.arch](model_cfg).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.0, betas=cfg.adam_betas,
                                 eps=cfg.adam_eps)
    pos, best = Position(), {"valid_loss": float("inf"), "step": 0}
    bad_validations = 0
    last_dir = run_dir / "checkpoints" / "last"
    if resume:
        if not (last_dir / ckpt.WEIGHTS).is_file():
            raise UserError(f"--resume: {run_dir} has no checkpoint to resume from "
                            "(checkpoints/last is missing); drop --resume to start afresh")
        saved = last_dir.resolve()
        _check_resumable(saved, model_cfg, cfg.arch, tokenizer_path)
        ckpt.load_weights(model, saved)
        tensors, state = ckpt.load_train_state(saved)
        ckpt.load_optimizer(optimizer, tensors, state["optimizer"])
        torch.set_rng_state(tensors["rng.cpu"])
        if "rng.cuda" in tensors and torch.cuda.is_available():
            torch.cuda.set_rng_state(tensors["rng.cuda"])
        pos = Position(**state["position"])
        best, bad_validations = state["best"], state["bad_validations"]
        log(f"resuming {saved.name} at step {pos.step} (epoch {pos.epoch}, batch {pos.batch})")
    elif (run_dir / "checkpoints").exists() and ckpt.list_step_checkpoints(run_dir):
        raise UserError(f"{run_dir} already holds checkpoints; pass --resume to continue it "
                        "or choose another --out")
    if is_main:
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "train_config.json").write_text(json.dumps(cfg.to_dict(), indent=2) + "\n")
        model_cfg.save(run_dir / "model_config.json")
    metrics = MetricsLog(run_dir, is_main)
    metrics.truncate_after(pos.step)
    net: nn.Module = DistributedDataParallel(model) if world > 1 else model
    scaler = torch.amp.GradScaler("cuda", enabled=cfg.precision == "fp16")
    n_params = sum(p.numel() for p in model.parameters())
    if is_main:
        log(f"model: {cfg.preset} {n_params / 1e6:.1f}M parameters, vocab {model_cfg.vocab_size}, "
            f"{len(train_data):,} training pairs, {world} process(es) on {device}")

    def save(name: str) -> Path | None:
        if not is_main:
            return None
        tensors, meta = _state_tensors(optimizer)
        state = {"position": vars(pos), "best": best, "bad_validations": bad_validations,
                 "optimizer": meta, "train_config": cfg.to_dict()}
        return ckpt.save_checkpoint(run_dir, name, model, model_cfg, tokenizer_path,
                                    extra_tensors=tensors, state=state)

    # 3) the loop
    start_time, start_step = time.monotonic(), pos.step
    bar = None
    if progress and is_main:
        from tqdm import tqdm
        bar = tqdm(total=cfg.max_steps or None, initial=pos.step, unit="step", dynamic_ncols=True)
    window = {"loss": 0.0, "nll": 0.0, "tokens": 0, "time": time.monotonic()}
    last_saved, summary, stop = -1, {}, ""
    batches = None
    net.train()
    while not stop:
        if cfg.max_epochs and pos.epoch >= cfg.max_epochs:
            stop = "max_epochs"
            break
        if batches is None:
            all_batches = token_batches(train_data.sizes, cfg.max_tokens, seed=cfg.seed,
                                        epoch=pos.epoch)
            usable = len(all_batches) - len(all_batches) % world  # every rank gets as many
            batches = all_batches[rank:usable:world]
        if pos.batch + cfg.grad_accum > len(batches):
            pos.epoch, pos.batch, batches = pos.epoch + 1, 0, None
            continue
        micro = [train_data.collate(batches[pos.batch + i]).to(device)
                 for i in range(cfg.grad_accum)]
        lr = noam_lr(pos.step + 1, model_cfg.d_model, cfg.warmup, cfg.lr_scale)
        loss, nll, tokens = train_step(net, optimizer, scaler, micro, lr=lr, cfg=cfg,
                                       pad_id=model_cfg.pad_id, device=device)
        window["loss"] += loss
        window["nll"] += nll
        window["tokens"] += tokens
        pos.step += 1
        pos.batch += cfg.grad_accum

        if bar is not None:
            bar.update(1)
        if pos.step % cfg.log_every == 0:
            elapsed = time.monotonic() - window["time"]
            record = {"step": pos.step, "epoch": pos.epoch,
                      "loss": window["loss"] / window["tokens"],
                      "nll": window["nll"] / window["tokens"], "lr": lr,
                      "tokens_per_s": window["tokens"] * world / max(elapsed, 1e-9)}
            metrics.write(record)
            if bar is not None:
                bar.set_postfix(loss=f"{record['loss']:.3f}", lr=f"{lr:.2e}",
                                tok_s=f"{record['tokens_per_s']:.0f}")
            window = {"loss": 0.0, "nll": 0.0, "tokens": 0, "time": time.monotonic()}

        minutes = (time.monotonic() - start_time) / 60
        if cfg.max_steps and pos.step >= cfg.max_steps:
            stop = "max_steps"
        elif cfg.max_minutes and minutes >= cfg.max_minutes:
            stop = "max_minutes"
        if world > 1:  # every rank stops together, whatever its clock says
            flag = torch.tensor(float(bool(stop)))
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)
            stop = stop or ("max_minutes" if flag.item() else "")

        if pos.step % cfg.valid_every == 0 or stop:
            record = {"step": pos.step}
            if valid_data is not None:
                record.update(evaluate_loss(model, valid_data, cfg, device))
                if is_main and cfg.valid_bleu_sentences and cfg.arch == "encoder-decoder":
                    record["valid_bleu"] = evaluate_bleu(model, valid_data, references, tokenizer,
                                                         cfg.valid_bleu_sentences, cfg.max_tokens,
                                                         device)
                if record["valid_loss"] < best["valid_loss"]:
                    best, bad_validations = {**record}, 0
                else:
                    bad_validations += 1
                metrics.write(record)
                if bar is not None:  # progress and validation go to stderr, results to stdout
                    bar.write(" ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                                       for k, v in record.items()), file=sys.stderr)
            name = f"step_{pos.step:07d}"
            save(name)
            last_saved = pos.step
            if is_main:
                if best["step"] == pos.step:
                    ckpt._point(run_dir / "checkpoints" / "best", name)
                ckpt.prune(run_dir, cfg.keep_last, {f"step_{best['step']:07d}"})
            summary = record
            if cfg.patience and bad_validations >= cfg.patience and not stop:
                stop = "patience"
    if bar is not None:
        bar.close()
    metrics.close()
    if last_saved != pos.step:
        save(f"step_{pos.step:07d}")
    if world > 1:
        dist.barrier()
    steps_run = pos.step - start_step
    return {"stopped": stop, "step": pos.step, "epoch": pos.epoch, "steps_run": steps_run,
            "minutes": (time.monotonic() - start_time) / 60, "last": summary, "best": best,
            "checkpoint": str((run_dir / "checkpoints" / "last").resolve())}
