"""Validation over more than one split: k folds of a dataset's training and validation nodes, the test nodes never
touched. Fold i validates on the i-th fold and trains on the other training and validation nodes, so k runs (one
per fold) validate on every labelled node outside the test set once: on a small validation set, a score that
stands on far more nodes than the split's own."""

from __future__ import annotations

import torch


def fold_splits(
    splits: dict[str, torch.Tensor], labels: torch.Tensor, k: int, i: int, seed: int = 0
) -> dict[str, torch.Tensor]:
    """The splits of fold i of k: stratified (each class's training and validation nodes dealt over the folds in a
    seeded random order, so every fold holds each class in proportion), ids sorted; test as given."""
    if not isinstance(k, int) or k < 2:
        raise ValueError(f"folds={k!r}: a whole number >= 2 (or null for the dataset's own split)")
    if not 0 <= i < k:
        raise ValueError(f"fold {i} of {k}: a fold number from 0 to {k - 1}")
    pool = torch.cat([splits["train"], splits["val"]]).unique()
    if pool.numel() < k:
        raise ValueError(
            f"folds={k}: more folds than the {pool.numel()} training and validation nodes; use at most {pool.numel()}"
        )
    g = torch.Generator().manual_seed(seed)
    fold = torch.empty(pool.numel(), dtype=torch.int64)
    start = 0  # where the next class's nodes continue the round, so that fold sizes differ by one at most
    for c in labels[pool].unique(sorted=True):
        members = (labels[pool] == c).nonzero().view(-1)
        members = members[torch.randperm(members.numel(), generator=g)]
        fold[members] = (torch.arange(members.numel()) + start) % k
        start = (start + members.numel()) % k
    return {"train": pool[fold != i], "val": pool[fold == i], "test": splits["test"]}
