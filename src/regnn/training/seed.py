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
    _seed_dgl(seed)
    if deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True, warn_only=True)
        # deterministic mode also fills every fresh tensor with NaN (a debugging aid against reads of
        # uninitialised memory): one extra pass over every activation, ~10% of a GAT epoch on CPU. Every op here
        # writes all of its output, so the results are the same without it.
        torch.utils.deterministic.fill_uninitialized_memory = False
        torch.backends.cudnn.benchmark = False


def _seed_dgl(seed: int) -> None:
    """Seeds DGL's sampler, where DGL is installed.

    dgl.seed seeds one random engine per OpenMP thread, and on several threads the engine of this (the sampling)
    thread got another thread's seed in some processes, so mini-batch runs of one seed drew other neighbours.
    Seeded on one thread it gets `seed` every time; sampling runs on that one thread (sampling.py)."""
    try:
        import dgl
    except ImportError:  # no DGL: no DGL sampler to seed
        return
    before = dgl.utils.get_num_threads()
    if before != 1:
        dgl.utils.set_num_threads(1)
    try:
        dgl.seed(seed)
    finally:
        if before != 1:
            dgl.utils.set_num_threads(before)
