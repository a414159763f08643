"""Validation during training: the label-smoothed loss, NLL and perplexity of the validation
split (accuracy and F1 for a classifier), and the greedy BLEU of its first sentences."""

from __future__ import annotations

import math
from typing import cast

import torch
from torch import nn

from ..config import ModelConfig
from ..data.corpus import ParallelCorpus, token_batches
from ..decode.options import DecodeOptions
from ..evaluate import score
from ..runtime import cpu
from ..translate import Translator
from . import step
from .recipe import TrainConfig, label_smoothed_nll
from .setup import Run


def validate(run: Run) -> dict:
    """Validation loss (every rank) and BLEU (rank 0) at the current step, logged and counted
    towards the best checkpoint and patience."""
    record: dict = {"step": run.state.step}
    if run.valid_data is None:
        return record
    record.update(evaluate_loss(run.model, run.valid_data, run.cfg, run.device))
    if run.is_main and run.cfg.valid_bleu_sentences and run.cfg.arch == "encoder-decoder":
        record["valid_bleu"] = evaluate_bleu(run, run.cfg.valid_bleu_sentences)
    run.state.validated(record)
    run.metrics.write(record)
    return record


def evaluate_loss(model: nn.Module, corpus: ParallelCorpus, cfg: TrainConfig,
                  device: torch.device) -> dict:
    """Validation label-smoothed loss, NLL and perplexity per target token."""
    training = model.training
    model.eval()
    loss_sum = nll_sum = tokens = 0.0
    predicted: list[torch.Tensor] = []
    gold: list[torch.Tensor] = []
    with torch.inference_mode(), step.autocast(device, cfg.precision):
        for indices in token_batches(corpus.sizes, cfg.max_tokens, seed=0, epoch=0, shuffle=False):
            batch = corpus.collate(indices, cast(ModelConfig, model.cfg)).to(device)
            logits = step.forward(model, batch)
            loss, nll = label_smoothed_nll(logits.flatten(0, 1), batch.tgt_out.flatten(),
                                           cfg.label_smoothing, batch.pad_id)
            loss_sum, nll_sum = loss_sum + float(loss), nll_sum + float(nll)
            tokens += batch.target_tokens
            if corpus.labels is not None:
                predicted.append(logits[:, 0].argmax(-1))
                gold.append(batch.tgt_out[:, 0])
    model.train(training)
    mean_nll = nll_sum / tokens
    record = {"valid_loss": loss_sum / tokens, "valid_nll": mean_nll,
              "valid_ppl": math.exp(min(mean_nll, 50))}
    if corpus.labels is not None:
        record.update(classification_scores(torch.cat(predicted), torch.cat(gold),
                                            len(corpus.labels)))
    return record


def classification_scores(predicted: torch.Tensor, gold: torch.Tensor, classes: int) -> dict:
    """Accuracy and macro-averaged F1 (a class that never occurs nor is predicted counts 0)."""
    f1 = []
    for c in range(classes):
        tp = int(((predicted == c) & (gold == c)).sum())
        fp = int(((predicted == c) & (gold != c)).sum())
        fn = int(((predicted != c) & (gold == c)).sum())
        f1.append(2 * tp / (2 * tp + fp + fn) if tp else 0.0)
    return {"valid_accuracy": float((predicted == gold).float().mean()),
            "valid_f1": sum(f1) / classes}


def evaluate_bleu(run: Run, count: int) -> float:
    """Greedy-decoded sacreBLEU of the first ``count`` validation sentences, scored as
    `aiayn evaluate` scores."""
    count = min(count, len(run.valid_sources))
    training = run.model.training
    run.model.eval()
    translator = Translator(cpu.for_inference(run.model), run.tokenizer,
                            placeholders=run.placeholders)
    outputs = translator.translate(run.valid_sources[:count],
                                   DecodeOptions(beam=1, batch_tokens=run.cfg.max_tokens))
    run.model.train(training)
    return score(cast("list[str]", outputs), run.references[:count])["bleu"]
