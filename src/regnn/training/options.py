"""The trainers' settings as typed, frozen values (regnn.spec fills them from the config: the values live there,
so nothing here has a default)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from regnn.training.early_stopping import StopRule


@dataclass(frozen=True)
class FullBatchOptions:
    optimizer: Mapping[str, Any]  # make_optimizer's arguments: name, lr, weight_decay (, momentum)
    max_epochs: int
    patience: int  # epochs without a better validation score before stopping
    stop_on: tuple[str, ...]  # the scores that must all improve for an epoch to be the best
    lr_schedule: str  # constant | cosine | onecycle
    precision: str  # fp32 | bf16

    def stop_rule(self) -> StopRule:
        return StopRule(self.max_epochs, self.patience, self.stop_on)


@dataclass(frozen=True)
class MinibatchOptions:
    optimizer: Mapping[str, Any]
    fanouts: tuple[int, ...]  # neighbours sampled per layer (-1: every one)
    batch_size: int
    eval: str  # sampled | layerwise
    eval_fanouts: tuple[int, ...]  # the sampled evaluation's fanouts
    eval_batch_size: int
    max_epochs: int | None  # None: DEFAULT_EPOCHS, or more to reach min_steps
    patience: int
    patience_steps: int
    min_steps: int
    max_batches: int | None  # batches per epoch at most (None: all)
    num_workers: int  # sampling threads
    embed_lr: float  # SparseAdam's lr for learnable node embeddings
    log_every: int
    sampling: str  # deterministic | parallel
    profile: bool
    stop_on: tuple[str, ...]
    evaluator: str  # the ogb Evaluator's dataset name

    def stop_rule(self, max_epochs: int) -> StopRule:
        """max_epochs: the run's (its own, or enough epochs of its batches to reach min_steps)."""
        return StopRule(max_epochs, self.patience, self.stop_on, self.patience_steps, self.min_steps)


def fanouts_for(fanouts, num_layers: int, each: int) -> tuple[int, ...]:
    """trainer.fanouts as ints, or `each` (trainer.default_fanout) in every one of the model's num_layers layers
    where it is null."""
    return (int(each),) * int(num_layers) if fanouts is None else tuple(int(f) for f in fanouts)
