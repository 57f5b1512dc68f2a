"""Classification metrics, in percent as the paper reports them."""

from __future__ import annotations

import numpy as np
import torch


def f1_scores(logits: torch.Tensor, labels: torch.Tensor, num_classes: int | None = None) -> dict[str, float]:
    """Micro- and macro-F1 (percent) from a confusion matrix; the same numbers as sklearn's f1_score
    (tested), without its per-call validation, which costs more than a training step on small graphs.

    Macro-F1 averages over the classes present in labels or predictions, as sklearn does by default; a class
    with no true and no predicted node is left out.
    """
    pred = logits.argmax(-1)
    y = labels.to(pred.device)
    c = int(num_classes or max(int(y.max()), int(pred.max())) + 1)
    conf = torch.bincount(y * c + pred, minlength=c * c).view(c, c).double()
    tp = conf.diagonal()
    support, predicted = conf.sum(1), conf.sum(0)
    present = (support + predicted) > 0
    f1 = torch.where(present, 2 * tp / (support + predicted).clamp(min=1), torch.zeros_like(tp))
    micro = tp.sum() / conf.sum().clamp(min=1)
    return {"micro_f1": 100.0 * float(micro), "macro_f1": 100.0 * float(f1[present].mean())}


def split_scores(logits: torch.Tensor, labels: torch.Tensor, splits: dict[str, torch.Tensor]) -> dict[str, float]:
    """{<split>_micro_f1, <split>_macro_f1} of every split (node ids into logits and labels), as a run reports them
    and predict.py re-scores them."""
    out = {}
    for s, i in splits.items():
        i = i.to(logits.device)
        out |= {f"{s}_{k}": v for k, v in f1_scores(logits[i], labels.to(logits.device)[i], logits.shape[1]).items()}
    return out


def mean_std(values) -> dict[str, float]:
    """Mean and population standard deviation (ddof=0, as numpy and the authors' scripts)."""
    a = np.asarray(values, dtype=float)
    return {"mean": float(a.mean()), "std": float(a.std()), "n": int(a.size)}


AT_CHANCE = 5.0  # a run whose test Micro-F1 is within this many points of the chance level learned nothing


def runs_at_chance(per_run: list[dict], chance: float | None) -> int | None:
    """How many finished runs scored at chance (test Micro-F1 within AT_CHANCE of always predicting the largest
    class, `chance`); None where the chance level is not known."""
    if chance is None:
        return None
    return sum(
        1
        for r in per_run
        if "failed" not in r and r.get("test_micro_f1") is not None and abs(r["test_micro_f1"] - chance) <= AT_CHANCE
    )
