"""Early stopping on validation scores that keeps a copy of the best weights."""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from regnn.names import MONITORS  # what early stopping can watch: name -> whether higher is better


class EarlyStopping:
    """An epoch is the new best when every monitored score beats its best so far by more than `min_delta`;
    training stops after `patience` epochs without one.

    monitor=("val_loss",) is the RE-GNN protocol; ("val_micro_f1", "val_macro_f1") is R-HGNN's released rule
    (validation accuracy and Macro-F1 must both improve).
    """

    def __init__(self, patience: int, monitor: Sequence[str], min_delta: float = 0.0):
        unknown = [m for m in monitor if m not in MONITORS]
        if not monitor or unknown:
            raise ValueError(f"early stopping can monitor {sorted(MONITORS)}, got {list(monitor)}")
        self.patience, self.min_delta, self.monitor = patience, min_delta, tuple(monitor)
        self.best = {m: -math.inf if MONITORS[m] else math.inf for m in self.monitor}
        self.best_epoch = -1
        self.best_state: dict | None = None
        self.bad_epochs = 0

    def improves(self, scores: Mapping[str, float]) -> bool:
        return all(
            scores[m] > self.best[m] + self.min_delta if MONITORS[m] else scores[m] < self.best[m] - self.min_delta
            for m in self.monitor
        )

    def step(self, scores: Mapping[str, float], epoch: int, model) -> bool:
        """Records this epoch's scores (a mapping with every monitored name); True when training should stop."""
        if self.improves(scores):
            self.best = {m: float(scores[m]) for m in self.monitor}
            self.best_epoch, self.bad_epochs = epoch, 0
            self.best_state = copy.deepcopy(model.state_dict())
        else:
            self.bad_epochs += 1
        return self.bad_epochs >= self.patience

    def restore(self, model) -> None:
        if self.best_state is not None:
            model.load_state_dict(self.best_state)


@dataclass(frozen=True)
class StopRule:
    """When a run ends: after max_epochs, or `patience` epochs (and, mini-batch, `patience_steps` optimizer steps)
    without a better validation score on every name in stop_on."""

    max_epochs: int
    patience: int  # epochs without a better validation score
    stop_on: tuple[str, ...]  # () : no early stopping, every epoch is trained and the last one kept
    patience_steps: int = 0  # and optimizer steps without one (mini-batch)
    min_steps: int = 0  # never stop before this many steps

    def stopper(self) -> EarlyStopping | None:
        return EarlyStopping(self.patience, self.stop_on) if self.stop_on else None

    @property
    def epochs_after_best(self) -> int | None:
        """The most epochs a run trains after its best one (None: no early stopping, max_epochs are trained)."""
        return self.patience if self.stop_on else None
