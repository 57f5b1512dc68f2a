"""Diverged training is stopped and recorded as a failed run, never as a score.

A non-finite loss or parameter, or a loss beyond any trained model's, stops the run (`Diverged`, one line: the
epoch, what went wrong, the usual causes). The pipeline writes the run as failed; a cell's metrics are the means over its finished runs only, and
the summary counts the failed ones.
"""
from __future__ import annotations

import math

import torch

from regnn.errors import RegnnError

HINT = ("lower optimizer.lr{lr}, or bring the input features to a common scale (dataset.feature_norm); NaN or inf "
        "in the features themselves gives this from epoch 0")


class Diverged(RegnnError):
    """Training produced a non-finite loss or parameter."""

    def __init__(self, epoch: int, what: str, lr=None):
        self.epoch, self.what = epoch, what
        super().__init__(f"training diverged at epoch {epoch}: {what}; "
                         + HINT.format(lr=f" (now {lr})" if lr is not None else ""))


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


def failed_record(run: int, seed: int, error: Diverged) -> dict:
    return {"run": run, "seed": seed, "failed": str(error), "failed_epoch": error.epoch}


def finished(records: list[dict]) -> list[dict]:
    """The records of runs that trained to the end (not failed)."""
    return [r for r in records if "failed" not in r]


def summary_metrics(records: list[dict], keys, mean_std) -> dict:
    """{metric: mean_std} over the finished runs only; {} when every run failed."""
    ok = finished(records)
    return {k: mean_std([r[k] for r in ok]) for k in keys if ok and k in ok[0]}
