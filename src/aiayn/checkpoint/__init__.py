"""Self-sufficient checkpoint directories, written atomically, read without unpickling.

A checkpoint directory holds everything needed to translate or to resume:

- ``model.safetensors``       the weights (tied tensors stored once)
- ``config.json``             the resolved ModelConfig, with ``arch``, ``languages``,
                              ``labels`` and ``placeholders`` beside it
- ``tokenizer.model``         the SentencePiece vocabulary (or, for a model in OPUS-MT's form,
                              ``source.spm``, ``target.spm``, ``vocab.json``
                              [``target_vocab.json``]: ``aiayn.data.tokenizer``)
- ``train_state.safetensors`` optimizer moments and RNG states (tensors only)
- ``train_state.json``        step, data position, schedule, optimizer hyper-parameters, metrics
- ``checksums.json``          every file's SHA-256 (``aiayn.integrity``)

``read`` opens one into a ``Checkpoint`` (its config read once); ``write`` saves, points,
prunes and averages.
"""

from .read import (
    AVERAGED,
    CONFIG,
    STATE_JSON,
    STATE_TENSORS,
    WEIGHTS,
    Checkpoint,
    list_checkpoints,
    list_step_checkpoints,
    resolve_checkpoint,
    step_name,
)
from .write import (
    CheckpointWriteError,
    average_checkpoints,
    load_optimizer,
    new_directory,
    optimizer_tensors,
    point,
    prune,
    remove_leftovers,
    save_checkpoint,
)

__all__ = ["AVERAGED", "CONFIG", "STATE_JSON", "STATE_TENSORS", "WEIGHTS", "Checkpoint",
           "CheckpointWriteError", "average_checkpoints", "list_checkpoints",
           "list_step_checkpoints", "load_optimizer", "new_directory", "optimizer_tensors",
           "point", "prune", "remove_leftovers", "resolve_checkpoint", "save_checkpoint",
           "step_name"]
