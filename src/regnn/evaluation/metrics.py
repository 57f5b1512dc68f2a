"""Classification metrics, in percent as the paper reports them."""
from __future__ import annotations

import numpy as np
import torch
from sklearn.metrics import f1_score


def f1_scores(logits: torch.Tensor, labels: torch.Tensor) -> dict[str, float]:
    pred = logits.argmax(-1).cpu().numpy()
    y = labels.cpu().numpy()
    return {"micro_f1": 100.0 * f1_score(y, pred, average="micro"),
            "macro_f1": 100.0 * f1_score(y, pred, average="macro")}


def mean_std(values) -> dict[str, float]:
    """Mean and population standard deviation (ddof=0, as numpy and the authors' scripts)."""
    a = np.asarray(values, dtype=float)
    return {"mean": float(a.mean()), "std": float(a.std()), "n": int(a.size)}
