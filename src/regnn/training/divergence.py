"""Diverged training is stopped and recorded as a failed run, never as a score.

A non-finite loss or parameter, or a loss beyond any trained model's, stops the run (`Diverged`, one line: the
epoch, what went wrong, the usual causes). A training loss that blows up while the validation loss stays where
it was is not stopped (the best-validation weights may still be fine) but reported (`TrainLossBlowup`: one
warning line and a flag in the run's record). The pipeline writes the run as failed; a cell's metrics are the means over
its finished runs only, and the summary counts the failed ones.
"""

from __future__ import annotations

import math

import torch

from regnn.errors import RegnnError

HINT = (
    "lower optimizer.lr{lr}, or bring the input features to a common scale (dataset.feature_norm); NaN or inf "
    "in the features themselves gives this from epoch 0"
)


class Diverged(RegnnError):
    """Training produced a non-finite loss or parameter."""

    def __init__(self, epoch: int, what: str, lr=None):
        self.epoch, self.what = epoch, what
        super().__init__(
            f"training diverged at epoch {epoch}: {what}; " + HINT.format(lr=f" (now {lr})" if lr is not None else "")
        )


# a cross-entropy this large means logits a million apart: the weights have blown up (ACM at lr 1e4 reached
# 1e25 with every value still finite), whereas trained models stay below ~10
EXPLODED = 1e6


def check_loss(value: float, name: str, epoch: int, lr=None) -> None:
    if not math.isfinite(value):
        raise Diverged(epoch, f"the {name} is {value}", lr)
    if value > EXPLODED:
        raise Diverged(epoch, f"the {name} is {value:.3g} (above {EXPLODED:g}: the weights blew up)", lr)


def check_parameters(model: torch.nn.Module, epoch: int, lr=None) -> None:
    """Raises Diverged naming the first parameter that holds NaN or inf."""
    params = [p for p in model.parameters() if p.is_floating_point()]
    if not params or bool(torch.stack([p.detach().isfinite().all() for p in params]).all()):
        return
    name = next(n for n, p in model.named_parameters() if p.is_floating_point() and not p.detach().isfinite().all())
    raise Diverged(epoch, f"parameter {name} holds NaN or inf", lr)


class TrainLossBlowup:
    """Watches one run's losses for a training loss that grows while validation does not follow.

    Training-mode outputs that blow up (dropout masks rescaled by 1/(1-p) compounding over many layers, features
    far outside the usual scale, too high a learning rate) give a training loss far above both its own minimum and
    the validation loss (computed without dropout), while the validation loss stays near chance; the 1e6 guard of
    check_loss never fires and the run ends at early stopping with a score near chance. An epoch is flagged when
    its training loss exceeds `factor` times the smaller of its minimum so far and the epoch's validation loss,
    and twice the loss of a uniform guess (so that an easy task's tiny losses do not trip it); `epochs`
    consecutive flagged epochs report the run, once.
    """

    def __init__(self, num_classes: int, factor: float = 10.0, epochs: int = 20):
        self.factor, self.epochs = factor, epochs
        self.floor = 2 * math.log(max(2, num_classes))
        self.min_train, self.min_epoch, self.streak = math.inf, -1, 0
        self.report: dict | None = None

    def step(self, epoch: int, train_loss: float, val_loss: float) -> dict | None:
        """Records an epoch's losses; returns the report at the epoch that completes the streak, else None."""
        if train_loss < self.min_train:
            self.min_train, self.min_epoch = train_loss, epoch
        ref = min(self.min_train, val_loss)
        flagged = train_loss > self.factor * ref and train_loss > self.floor
        self.streak = self.streak + 1 if flagged else 0
        if self.report is None and self.streak >= self.epochs:
            self.report = {
                "epoch": epoch,
                "train_loss": float(train_loss),
                "min_train_loss": float(self.min_train),
                "min_train_epoch": self.min_epoch,
                "val_loss": float(val_loss),
                "epochs": self.streak,
            }
            return self.report
        return None

    @staticmethod
    def message(r: dict) -> str:
        return (
            f"training loss blew up: {r['train_loss']:.4g} at epoch {r['epoch']}, above {r['epochs']} epochs in "
            f"a row far over its minimum {r['min_train_loss']:.4g} (epoch {r['min_train_epoch']}) and the "
            f"validation loss {r['val_loss']:.4g}: the training-mode outputs explode while evaluation does not; "
            "lower model.dropout (and model.attn_dropout) or optimizer.lr, or rescale the features "
            "(dataset.feature_norm=standard)"
        )


def failed_record(run: int, seed: int, error: Diverged) -> dict:
    return {"run": run, "seed": seed, "failed": str(error), "failed_epoch": error.epoch}


def finished(records: list[dict]) -> list[dict]:
    """The records of runs that trained to the end (not failed)."""
    return [r for r in records if "failed" not in r]


def summary_metrics(records: list[dict], keys, mean_std) -> dict:
    """{metric: mean_std} over the finished runs only; {} when every run failed."""
    ok = finished(records)
    return {k: mean_std([r[k] for r in ok]) for k in keys if ok and k in ok[0]}
