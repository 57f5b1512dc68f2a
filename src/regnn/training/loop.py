"""The epoch loop of a run: a trainer gives a step (train one epoch, validate, return the epoch's history row) and this
loop does the rest: stop signals, divergence and blow-up checks, early stopping (in epochs, and in optimizer steps
where a step reports them), the history, logging hooks and mid-run checkpoints. Full batch
(regnn.training.trainer), mini-batch (regnn.training.minibatch) and the skip-gram trainer (regnn.training.skipgram)
differ only in their step. (regnn.training.trainer.epochs steps a model without this loop's bookkeeping, for a
benchmark that times two models in turn.)

A checkpoint (regnn.runs.resume.RunCheckpoint) is written at the end of an epoch once its interval has passed, and
when a stop signal arrives; the loop's own state (epoch, steps, history, early stopping, the blow-up watch) is
part of it, as are every random state, so a resumed run continues exactly where the stopped one was.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable

import torch

from regnn.runtime import interrupt
from regnn.training.divergence import TrainLossBlowup, check_loss, check_parameters
from regnn.training.early_stopping import StopRule

log = logging.getLogger("regnn")


@dataclass(frozen=True)
class Hooks:
    """What a job hands a trainer beside the training itself: a logger's per-epoch call, mid-run checkpoints."""

    on_epoch: Callable | None = None
    checkpoint: object | None = None  # regnn.runs.resume.RunCheckpoint


class EpochLoop:
    """Runs step(epoch) -> row until the stop rule ends it; holds the state a checkpoint keeps."""

    def __init__(
        self,
        model,
        rule: StopRule,
        num_classes: int,
        lr=None,
        *,
        check_losses: bool = True,
        on_epoch: Callable | None = None,
        report: Callable | None = None,
    ):
        self.model, self.rule, self.lr, self.check_losses = model, rule, lr, check_losses
        self.stopper = rule.stopper()
        self.blowup = TrainLossBlowup(num_classes)
        self.on_epoch, self.report = on_epoch, report
        self.history: list[dict] = []
        self.epoch = self.steps = self.best_step = 0

    def run(self, step: Callable[[int], dict], checkpoint=None) -> list[dict]:
        """Trains from self.epoch on; the best weights stay in self.stopper (restore() puts them back)."""
        while self.epoch < self.rule.max_epochs:
            try:
                interrupt.check(f"before epoch {self.epoch}")
            except interrupt.Interrupted:
                if checkpoint is not None and self.epoch > 0:
                    checkpoint.save(self, why="stopped")
                raise
            row = step(self.epoch)
            if self.end_epoch(row):
                break
            if checkpoint is not None and checkpoint.due():
                checkpoint.save(self, why="interval")
        return self.history

    def end_epoch(self, row: dict) -> bool:
        """Checks and records an epoch's row; True when training should stop."""
        epoch = self.epoch
        if self.check_losses:  # a diverged run is stopped, never scored
            check_loss(row["train_loss"], "training loss", epoch, self.lr)
            check_parameters(self.model, epoch, self.lr)
            check_loss(row["val_loss"], "validation loss", epoch, self.lr)
        self.history.append(row)
        if "val_loss" in row and self.blowup.step(epoch, row["train_loss"], row["val_loss"]):
            log.warning(TrainLossBlowup.message(self.blowup.report))
        if self.on_epoch:
            self.on_epoch(row)
        improves = self.stopper is None or self.stopper.improves(row)
        if self.report:
            self.report(row, epoch if improves else self.best_epoch)
        self.steps = row.get("steps", self.steps + 1)
        if improves:
            self.best_step = self.steps
        self.epoch += 1
        if self.stopper is None:
            return False
        return (
            self.stopper.step(row, epoch, self.model)
            and self.steps - self.best_step >= self.rule.patience_steps
            and self.steps >= self.rule.min_steps
        )

    @property
    def best_epoch(self) -> int:
        """The epoch whose weights the run keeps (without early stopping: the last trained)."""
        return self.stopper.best_epoch if self.stopper is not None else self.epoch - 1

    def restore(self) -> None:
        """The best epoch's weights back into the model (without early stopping they are already there)."""
        if self.stopper is not None:
            self.stopper.restore(self.model)

    # -- checkpoints --------------------------------------------------------------------------------------------
    def state(self) -> dict:
        s = self.stopper
        return {
            "epoch": self.epoch,
            "steps": self.steps,
            "best_step": self.best_step,
            "history": self.history,
            "stopper": None
            if s is None
            else {"best": s.best, "best_epoch": s.best_epoch, "bad_epochs": s.bad_epochs, "best_state": s.best_state},
            "blowup": {k: getattr(self.blowup, k) for k in ("min_train", "min_epoch", "streak", "report")},
        }

    def load_state(self, state: dict) -> None:
        self.epoch, self.steps, self.best_step = state["epoch"], state["steps"], state["best_step"]
        self.history = list(state["history"])
        if (s := state["stopper"]) is not None:
            self.stopper.best, self.stopper.best_epoch = dict(s["best"]), s["best_epoch"]
            self.stopper.bad_epochs, self.stopper.best_state = s["bad_epochs"], s["best_state"]
        for k, v in state["blowup"].items():
            setattr(self.blowup, k, v)


def random_states() -> dict:
    """Every random state a run draws from (torch's CPU and CUDA generators, numpy's, Python's)."""
    import random

    import numpy as np

    np_state = np.random.get_state()
    out = {
        "torch": torch.get_rng_state(),
        "python": list(random.getstate()[1]),
        "python_version": random.getstate()[0],
        "python_gauss": random.getstate()[2],
        "numpy": {
            "keys": torch.from_numpy(np_state[1].astype("int64")),
            "pos": int(np_state[2]),
            "has_gauss": int(np_state[3]),
            "gauss": float(np_state[4]),
        },
    }
    if torch.cuda.is_available():
        out["cuda"] = torch.cuda.get_rng_state_all()
    return out


def set_random_states(state: dict) -> None:
    import random

    import numpy as np

    torch.set_rng_state(state["torch"])
    random.setstate((state["python_version"], tuple(state["python"]), state["python_gauss"]))
    n = state["numpy"]
    np.random.set_state(("MT19937", n["keys"].numpy().astype("uint32"), n["pos"], n["has_gauss"], n["gauss"]))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
