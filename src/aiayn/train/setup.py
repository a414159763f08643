"""Training's setup: the data, the model (new, from ``--init``, or resumed), the precision,
the optimizer and the training state, gathered in a ``Run`` that the loop works with."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import cast

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from .. import checkpoint as ckpt
from ..checkpoint import Checkpoint
from ..config import ConfigError, ModelConfig
from ..data.corpus import ParallelCorpus, read_stats, split_lines, text_file
from ..data.tokenizer import AnyTokenizer, load_tokenizer
from ..errors import UserError
from ..model import build_model
from ..runtime import cpu, hardware
from ..runtime.hardware import choose_precision, read_cpu, shape_free_attention
from ..runtime.threads import use_available_cores
from .copies import Weights16
from .metrics import MetricsLog
from .recipe import PRECISIONS, TrainConfig


@dataclass
class TrainState:
    """Where training is: optimizer steps done, the next batch of the epoch, the best
    validation so far and how many validations since it (for patience), the steps skipped
    for a non-finite loss or gradient, and the sums of the metrics window not yet logged."""

    step: int = 0
    epoch: int = 0
    batch: int = 0
    best: dict = field(default_factory=lambda: {"valid_loss": float("inf"), "step": 0})
    bad_validations: int = 0
    skipped: int = 0  # steps skipped for a non-finite loss or gradient
    bad_steps: int = 0  # of them, how many in a row up to now
    window: dict = field(default_factory=dict)  # Window.sums() at the checkpoint

    def to_json(self) -> dict:
        return {"position": {"step": self.step, "epoch": self.epoch, "batch": self.batch},
                "best": self.best, "bad_validations": self.bad_validations,
                "skipped": self.skipped, "bad_steps": self.bad_steps, "window": self.window}

    @classmethod
    def from_json(cls, state: dict) -> "TrainState":
        return cls(**state["position"], best=state["best"],
                   bad_validations=state["bad_validations"],
                   skipped=state.get("skipped", 0), bad_steps=state.get("bad_steps", 0),
                   window=state.get("window", {}))

    def validated(self, record: dict) -> None:
        """Count a validation: the best so far, or one more without improvement."""
        if record["valid_loss"] < self.best["valid_loss"]:
            self.best, self.bad_validations = {**record}, 0
        else:
            self.bad_validations += 1


@dataclass
class Run:
    """Everything the loop works with, built by ``setup``."""

    cfg: TrainConfig
    model_cfg: ModelConfig
    run_dir: Path
    device: torch.device
    rank: int
    world: int
    model: nn.Module
    net: nn.Module  # the model, wrapped in DDP when there are several processes (not on copies)
    optimizer: torch.optim.Optimizer
    scaler: torch.amp.GradScaler
    train_data: ParallelCorpus
    valid_data: ParallelCorpus | None
    valid_sources: list[str]  # the validation pairs kept by `prepare`, as text
    references: list[str]
    tokenizer: AnyTokenizer
    languages: dict[str, str] | None
    labels: list[str] | None
    placeholders: bool  # the data was prepared with placeholder protection
    state: TrainState
    metrics: MetricsLog
    copies: Weights16 | None = None  # bf16 weight copies the step runs on (a GPU's bf16)

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def rank_and_world() -> tuple[int, int]:
    """This process's rank and the number of processes (0, 1 without DDP)."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _setup_distributed(device: torch.device) -> None:
    """A process group when a launcher started this process (torchrun sets its rank, the
    world's size and where rank 0 listens), one process too: the same DDP path as on many."""
    launched = all(name in os.environ for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR"))
    if launched and not dist.is_initialized():
        if device.type == "cuda":
            torch.cuda.set_device(device)  # (NCCL's collectives run on the current device)
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")


def _device(name: str) -> torch.device:
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise UserError("--device cuda: no CUDA device is available; use --device cpu")
    if name == "cuda" and "LOCAL_RANK" in os.environ:
        return torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    return torch.device(name)


def setup(data_dir: Path, run_dir: Path, cfg: TrainConfig, *, resume: bool, log) -> Run:
    """Data, model and optimizer, restored from RUN/checkpoints/last with ``resume``."""
    device = _device(cfg.device)
    if cfg.precision == "fp16" and device.type != "cuda":
        raise UserError("--precision fp16 needs a CUDA device; on CPU use bf16")
    use_available_cores(cfg.threads)
    if device.type == "cuda":
        shape_free_attention()
    if device.type == "cpu":
        # every step's activations, logits and gradients reuse their pages
        cpu.reuse_freed_memory(mmap_threshold=cpu.TRAIN_MMAP_THRESHOLD)
    _setup_distributed(device)
    rank, world = rank_and_world()

    # 1) data and vocabulary
    stats = read_stats(data_dir)
    tokenizer = load_tokenizer(data_dir)
    train_data = ParallelCorpus(data_dir, "train")
    valid_data = ParallelCorpus(data_dir, "valid") if "valid" in stats["splits"] else None

    def text(side: str) -> list[str]:  # the kept validation sentences, as text
        return split_lines((data_dir / text_file("valid", side)).read_text(encoding="utf-8"))
    valid_sources = text("src") if valid_data is not None else []
    references = text("tgt") if valid_data is not None else []
    model_cfg = (_init_config(cfg, tokenizer) if cfg.init
                 else cfg.model_config(tokenizer.vocab_size))
    guided = (train_data.links is not None and cfg.alignment_weight > 0
              and cfg.arch == "encoder-decoder" and model_cfg.n_decoder_layers > 0)
    if (cfg.aligner or cfg.aligner_only) and not guided:
        flag = "--aligner-only" if cfg.aligner_only else "--aligner"
        raise UserError(f"{flag} needs word alignments in {data_dir}: prepare the data with "
                        "`aiayn prepare --alignments FILE` and keep --alignment-weight above 0")
    if cfg.aligner_only:  # (an alignment head of the model's own stays as it is, unread)
        model_cfg = model_cfg.replace(aligner=True, alignment_layer=None)
    if guided and model_cfg.alignment_layer is None and not model_cfg.aligner:
        # the last layer's first head, as Marian's transformer trains it, or an aligner
        model_cfg = (model_cfg.replace(aligner=True) if cfg.aligner else
                     model_cfg.replace(alignment_layer=model_cfg.n_decoder_layers - 1))
    if guided and model_cfg.aligner:  # (read the other way too: docs/design.md)
        model_cfg = model_cfg.replace(source_aligner=True)
    if not guided:
        train_data.links = None  # (batches without alignment targets)
    if int(train_data.sizes.max()) > model_cfg.max_len:
        raise UserError(f"the longest training sentence ({int(train_data.sizes.max())} tokens) "
                        f"exceeds the model's max_len ({model_cfg.max_len}); prepare with a lower "
                        "--max-len or raise model.max_len")

    # 2) precision (once the data is known good), model and optimizer; resume restores the
    #    latter two, the RNG and the data position
    cfg, precision_note = _resolve_precision(cfg, device, run_dir, resume=resume)
    cfg, products_note = _resolve_products(cfg, device, run_dir, resume=resume)
    torch.manual_seed(cfg.seed)
    labels = stats.get("labels")
    if (cfg.task == "classify") != (labels is not None):
        raise UserError(f"{data_dir}: " + ("prepared for classification; train it with --arch "
                                           "encoder --task classify" if labels else
                                           "not prepared for classification; prepare it with "
                                           "--task classify"))
    model = build_model(cfg.arch, model_cfg,
                        num_classes=len(labels) if labels else None).to(device)
    cpu_training_layers(model, device, cfg)
    if cfg.init and not resume:
        source = Checkpoint.open(cfg.init)
        # guided alignment gives a model whose checkpoint has no aligner (or no source
        # aligner) a new one
        fresh = tuple(f"{name}." for name in ("aligner", "source_aligner")
                      if getattr(model_cfg, name) and not getattr(source.config, name))
        source.load_weights(model, fresh=fresh)
        log(f"starting from the weights of {cfg.init}")
    if cfg.aligner_only:
        for name, parameter in model.named_parameters():
            parameter.requires_grad_(name.startswith(("aligner.", "source_aligner.")))
    # fused: one pass over each parameter's tensors (CPU and CUDA kernels): 20 against 73 ms a
    # `base` step on the CPU (docs/design.md, "Training")
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=0.0,
                                 betas=cfg.adam_betas,
                                 eps=cfg.adam_eps, fused=device.type in ("cpu", "cuda"))
    if resume and _started_without_checkpoint(run_dir):
        log(f"{run_dir} was stopped before its first checkpoint: starting it from step 0")
        state = TrainState()
    elif resume:
        if rank == 0 and (left := ckpt.remove_leftovers(run_dir)):
            log(f"removed what an interrupted save left in {run_dir / 'checkpoints'}: "
                f"{', '.join(left)}")
        state = _resume(run_dir, model, optimizer, model_cfg, cfg.arch, tokenizer, log)
        if rank == 0 and (stale := run_dir / "checkpoints" / ckpt.AVERAGED).is_dir():
            shutil.rmtree(stale)  # (the average of where the run was; rewritten at its end)
            log(f"removed {stale}: the run goes on, and its end writes a new average")
    elif ckpt.list_step_checkpoints(run_dir):
        raise UserError(f"{run_dir} already holds checkpoints; pass --resume to continue it "
                        "or choose another --out")
    else:
        state = TrainState()
    if rank == 0:
        run_dir.mkdir(parents=True, exist_ok=True)
        cfg.save(run_dir / "train_config.json")
        model_cfg.save(run_dir / "model_config.json")
    metrics = MetricsLog(run_dir, rank == 0, tolerate_errors=cfg.on_save_error == "continue",
                         log=log)
    metrics.truncate_after(state.step)
    distributed = dist.is_available() and dist.is_initialized()
    if distributed and cfg.aligner_only:
        raise UserError("--aligner-only trains in one process: run it without torchrun")
    compiled = cfg.compile
    copies = Weights16(model) if uses_weight_copies(device, cfg) else None
    if distributed and copies is not None:  # (the copies' own all-reduce; DDP's start:)
        _broadcast_from_first(model)
    net = DistributedDataParallel(model) if distributed and copies is None else model
    if compiled:  # (validation and checkpoints use `model`, not compiled)
        net = cast(nn.Module, torch.compile(net, dynamic=True))
    scaler = torch.amp.GradScaler("cuda", enabled=cfg.precision == "fp16")
    if rank == 0:
        if precision_note:
            log(precision_note)
        if products_note:
            log(products_note)
        n_params = sum(p.numel() for p in model.parameters())
        what = f"that of {cfg.init}," if cfg.init else cfg.preset  # (an init's preset is its own)
        log(f"model: {what} {n_params / 1e6:.1f}M parameters, vocab {model_cfg.vocab_size}, "
            f"{len(train_data):,} training pairs, {world} process(es) on {device}"
            + ((f" (DDP over {dist.get_backend()})" if copies is None else
                f" (gradients averaged over {dist.get_backend()})") if distributed else "")
            + (", bf16 on weight copies" if copies is not None else "")
            + (", compiled (torch.compile)" if compiled else ""))
        if compiled and device.type == "cpu":
            log("--compile on the CPU: compiled steps measured no faster than eager ones in "
                "float32 and slower in bf16 (docs/benchmarks.md, \"Training\"); it is meant "
                "for GPUs")
        if cfg.aligner_only:
            log("aligner only: the model's own weights stay as they are; the loss is the "
                "aligners' cross-entropy against the data's word alignments, read from "
                "both sides")
        elif guided:
            head = ("the aligner and the source aligner" if model_cfg.source_aligner else
                    "the aligner" if model_cfg.aligner else
                    f"head 1 of decoder layer {(model_cfg.alignment_layer or 0) + 1}")
            verb = "learn" if model_cfg.source_aligner else "learns"
            log(f"guided alignment: {head} {verb} the data's word alignments "
                f"(weight {cfg.alignment_weight:g})")
    return Run(cfg, model_cfg, run_dir, device, rank, world, model, net, optimizer, scaler,
               train_data, valid_data, valid_sources, references, tokenizer,
               stats.get("languages"), labels,
               bool(stats.get("placeholders")), state, metrics, copies)


def uses_weight_copies(device: torch.device, cfg: TrainConfig) -> bool:
    """Whether the step runs on 16-bit weight copies (``aiayn.train.copies``): a GPU's bf16,
    unless compiled (Inductor fuses autocast's casts into their neighbours). On the CPU, where
    bf16 autocast already keeps LayerNorm in bf16, the copies measured 0.93x (`small`) and
    0.99x (`base`) the autocast step (docs/design.md)."""
    return (device.type == "cuda" and cfg.precision == "bf16" and not cfg.compile
            and not cfg.aligner_only)


def _broadcast_from_first(model: nn.Module) -> None:
    """Every process starts from the first one's parameters and buffers, as DDP's constructor
    makes them."""
    with torch.no_grad():
        for tensor in [*model.parameters(), *model.buffers()]:
            dist.broadcast(tensor, 0)


def cpu_training_layers(model: nn.Module, device: torch.device, cfg: TrainConfig) -> bool:
    """Swap the CPU's training layers into ``model`` (in place, its parameters and checkpoints
    unchanged) when ``device`` is a CPU: 16-bit training's attention and float32's
    feed-forward network (``cpu.cpu_layers``); in float32 eager steps with
    ``fp32_products`` "onednn" (or "auto" where oneDNN's products measured faster than
    PyTorch's, ``hardware.onednn_float32``) linear layers whose products go through oneDNN;
    in bf16 eager steps linear layers whose products add their bias (and the feed-forward
    network's first its ReLU) as oneDNN writes them (``cpu.CpuLinear``, ``bf16_training``).
    Returns whether float32's go through oneDNN; benchmarks build their models with it too.
    ``cfg.precision`` is resolved ("auto" counts as neither)."""
    if device.type != "cpu":
        return False
    onednn = _fp32_products_apply(device, cfg) and (
        cfg.fp32_products == "onednn"
        or cfg.fp32_products == "auto" and hardware.onednn_float32())
    if onednn:
        cpu.cpu_linears(model, onednn_training=True)
    elif cfg.precision == "bf16" and not cfg.compile:
        cpu.cpu_linears(model, bf16_training=True)
    cpu.cpu_layers(model)
    return onednn


def _resolve_precision(cfg: TrainConfig, device: torch.device, run_dir: Path, *,
                       resume: bool) -> tuple[TrainConfig, str]:
    """``cfg`` with ``precision`` "auto" replaced by the hardware's choice, or on ``resume`` by
    the precision the run started with, so that it goes on exactly; and a line saying which
    and why ("" for a precision the user named, but a warning for bf16 on a CPU that would
    emulate it). Under DDP every process takes the first one's choice."""
    if cfg.precision == "bf16" and device.type == "cpu":
        cpu = read_cpu()
        if cpu.flags and not cpu.native_bf16:
            return cfg, (f"precision: bf16 as asked, emulated on this {cpu.vector_isa} CPU "
                         "without native bf16 (AVX512_BF16, AMX): its products run many times "
                         "slower than float32's; without --precision it trains in fp32")
    if cfg.precision != "auto":
        return cfg, ""
    saved = _started(run_dir) if resume else None
    if saved is not None:
        started = saved.get("precision")
        if started in PRECISIONS and started != "auto":
            return replace(cfg, precision=started), f"precision: {started} (the run's own)"
    choice = choose_precision(device)
    return replace(cfg, precision=_first_process(choice.precision)), choice.describe()


def _fp32_products_apply(device: torch.device, cfg: TrainConfig) -> bool:
    """Whether ``fp32_products`` has a say: float32 eager training on the CPU."""
    return device.type == "cpu" and cfg.precision == "fp32" and not cfg.compile


def _resolve_products(cfg: TrainConfig, device: torch.device, run_dir: Path, *,
                      resume: bool) -> tuple[TrainConfig, str]:
    """``cfg`` with ``fp32_products`` "auto" replaced by the library float32 training's
    products take here ("onednn" where ``hardware.onednn_float32`` measured it faster on a
    CPU, in float32 eager steps; else "pytorch"), or on ``resume`` by the run's own (a run
    from before the setting: "pytorch"), so that it goes on exactly; and a line saying so
    where oneDNN's is taken ("" otherwise). Under DDP every process takes the first one's."""
    applies = _fp32_products_apply(device, cfg)
    if cfg.fp32_products == "onednn":
        if not cpu.onednn_available():
            raise UserError("--fp32-products onednn: this PyTorch has no oneDNN, or "
                            "torch.backends.mkldnn is off; use auto or pytorch")
        if not applies:
            what = "compiled" if cfg.compile else f"{cfg.precision} on {device.type}"
            return cfg, (f"--fp32-products onednn is for float32 training on the CPU, "
                         f"without --compile; this run trains {what}")
        return cfg, "float32 products through oneDNN (--fp32-products onednn)"
    if cfg.fp32_products != "auto":
        return cfg, ""
    saved = _started(run_dir) if resume else None
    if saved is not None:
        started = saved.get("fp32_products", "pytorch")
        if started == "pytorch" or started == "onednn" and cpu.onednn_available():
            note = ("float32 products through oneDNN (the run's own)"
                    if started == "onednn" and cfg.precision == "fp32" else "")
            return replace(cfg, fp32_products=started), note
    chosen = _first_process("onednn" if applies and hardware.onednn_float32() else "pytorch")
    if chosen != "onednn":
        return replace(cfg, fp32_products=chosen), ""
    plain, rate = hardware.float32_rates()
    return replace(cfg, fp32_products=chosen), (
        f"float32 products through oneDNN: {rate:.0f} GFLOP/s against {plain:.0f} through "
        "PyTorch's default (MKL) on this CPU")


def _started(run_dir: Path) -> dict | None:
    """The settings a run being resumed started with (its train_config.json), or None."""
    try:
        saved = json.loads((run_dir / "train_config.json").read_text())
    except (OSError, ValueError):
        return None
    return saved if isinstance(saved, dict) else None


def _first_process(value: str) -> str:
    """``value`` as the first process has it, under DDP; else ``value``."""
    if dist.is_available() and dist.is_initialized():
        shared = [value]
        dist.broadcast_object_list(shared, src=0)
        return shared[0]
    return value


def _init_config(cfg: TrainConfig, tokenizer: AnyTokenizer) -> ModelConfig:
    """The model of the checkpoint training starts from (``--init``), with the ``model``
    overrides (dropout, say) applied; its vocabulary must be the data's."""
    source = Checkpoint.open(cfg.init)
    if source.arch != cfg.arch:
        raise UserError(f"--init {cfg.init}: it holds a {source.arch} model, not "
                        f"{cfg.arch}; pass the matching --arch")
    if source.tokenizer.fingerprint() != tokenizer.fingerprint():
        raise UserError(f"--init {cfg.init}: the data was prepared with another vocabulary; "
                        f"prepare it with `aiayn prepare --tokenizer {cfg.init}`")
    try:
        return source.config.replace(**cfg.model)
    except ConfigError as err:
        raise UserError(f"--model: {err}") from None


def _started_without_checkpoint(run_dir: Path) -> bool:
    """A run directory that training wrote to (its configs) but that holds no checkpoint."""
    return ((run_dir / "train_config.json").is_file() and not ckpt.list_step_checkpoints(run_dir)
            and not (run_dir / "checkpoints" / "last").exists())


def _resume(run_dir: Path, model: nn.Module, optimizer: torch.optim.Optimizer,
            model_cfg: ModelConfig, arch: str, tokenizer: AnyTokenizer, log) -> TrainState:
    """Restore weights, optimizer, RNG and training state from RUN/checkpoints/last (or, when
    a killed process left ``last`` dangling, from the newest step checkpoint)."""
    if (run_dir / "checkpoints" / "last" / ckpt.WEIGHTS).is_file():
        saved = Checkpoint.open(run_dir, "last")
    elif steps := [p for p in ckpt.list_step_checkpoints(run_dir) if (p / ckpt.WEIGHTS).is_file()]:
        saved = Checkpoint.open(steps[-1])
        log(f"checkpoints/last is missing; resuming from the newest checkpoint, {steps[-1].name}")
    else:
        raise UserError(f"--resume: {run_dir} has no checkpoint to resume from "
                        "(checkpoints/last is missing); drop --resume to start afresh")
    _check_resumable(saved, model_cfg, arch, tokenizer)
    saved.load_weights(model)
    tensors, saved_state = saved.train_state()
    ckpt.load_optimizer(optimizer, tensors, saved_state["optimizer"])
    torch.set_rng_state(tensors["rng.cpu"])
    if "rng.cuda" in tensors and torch.cuda.is_available():
        torch.cuda.set_rng_state(tensors["rng.cuda"])
    state = TrainState.from_json(saved_state)
    log(f"resuming {saved.path.name} at step {state.step} (epoch {state.epoch}, "
        f"batch {state.batch})")
    return state


def _check_resumable(saved: Checkpoint, model_cfg: ModelConfig, arch: str,
                     tokenizer: AnyTokenizer) -> None:
    """A UserError unless the checkpoint holds this model and this vocabulary."""
    if saved.arch != arch:
        raise UserError(f"cannot resume {saved.path}: it is a {saved.arch} model, not "
                        f"{arch}; use the same --arch, or a new --out")
    old = saved.config
    if old != model_cfg:
        diffs = [f"{k} {v!r} -> {getattr(model_cfg, k)!r}" for k, v in old.to_dict().items()
                 if getattr(model_cfg, k) != v]
        raise UserError(f"cannot resume {saved.path}: the model differs ({'; '.join(diffs)}); "
                        "use the same data and model settings, or a new --out")
    if saved.tokenizer.fingerprint() != tokenizer.fingerprint():
        raise UserError(f"cannot resume {saved.path}: its vocabulary differs from the data's; "
                        "resume with the data it was trained on")
