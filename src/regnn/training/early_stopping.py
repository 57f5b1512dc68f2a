"""Early stopping on validation loss that keeps a copy of the best weights."""
from __future__ import annotations

import copy
import math


class EarlyStopping:
    """Stops after `patience` epochs without a validation loss below the best by more than `min_delta`."""

    def __init__(self, patience: int = 50, min_delta: float = 0.0):
        self.patience, self.min_delta = patience, min_delta
        self.best_loss = math.inf
        self.best_epoch = -1
        self.best_state: dict | None = None
        self.bad_epochs = 0

    def step(self, loss: float, epoch: int, model) -> bool:
        """Records this epoch; returns True when training should stop."""
        if loss < self.best_loss - self.min_delta:
            self.best_loss, self.best_epoch, self.bad_epochs = loss, epoch, 0
            self.best_state = copy.deepcopy(model.state_dict())
        else:
            self.bad_epochs += 1
        return self.bad_epochs >= self.patience

    def restore(self, model) -> None:
        if self.best_state is not None:
            model.load_state_dict(self.best_state)
