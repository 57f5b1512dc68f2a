"""Early stopping on validation scores that keeps a copy of the best weights."""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence

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
