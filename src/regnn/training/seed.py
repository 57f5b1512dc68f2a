"""Seeding and deterministic settings for repeatable runs."""

from __future__ import annotations

import os
import random

import numpy as np
import torch


def seed_everything(seed: int, deterministic: bool = True) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    if deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True, warn_only=True)
        # deterministic mode also fills every fresh tensor with NaN (a debugging aid against reads of
        # uninitialised memory): one extra pass over every activation, ~10% of a GAT epoch on CPU. Every op here
        # writes all of its output, so the results are the same without it.
        torch.utils.deterministic.fill_uninitialized_memory = False
        torch.backends.cudnn.benchmark = False
