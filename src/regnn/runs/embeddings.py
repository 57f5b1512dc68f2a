"""embeddings.npz: the representation of every target node (the layer before the classifier), with its position,
the user's id where the data has one, its label (-1: unlabelled) and its split (train/val/test, outside: labelled
in no split, unlabelled).

Written by a run with save_embeddings=true and by predict.py with embeddings=true; read by the t-SNE figure and
re-clustering, which use the test nodes as the paper does. Files that hold the test nodes alone (no `split`
array) read as they are.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from regnn.names import SPLITS


def split_names(data) -> np.ndarray:
    """The split of every target node by name: train, val, test, outside (labelled, in no split) or unlabelled."""
    names = np.where(data.known_labels() >= 0, "outside", "unlabelled").astype(object)
    for s in SPLITS:
        names[data.splits[s].numpy()] = s
    return names.astype(str)


def user_ids(data, ntype: str | None = None) -> np.ndarray | None:
    """The user's own ids of a node type (the target by default), position order; None where the data has none."""
    ids = (data.node_ids or {}).get(ntype or data.target)
    return None if ids is None else np.asarray(ids)


def write(path: Path, data, embeddings: torch.Tensor) -> None:
    """embeddings: (target nodes, dim), position order."""
    arrays = {
        "node_ids": np.arange(embeddings.shape[0]),
        "embeddings": embeddings.float().numpy(),
        "labels": data.known_labels(),
        "split": split_names(data),
    }
    ids = user_ids(data)
    if ids is not None:
        arrays["ids"] = ids.astype(str)
    np.savez_compressed(path, **arrays)


def read_test(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(embeddings, labels) of the test nodes in a file either writer made."""
    z = np.load(path, allow_pickle=False)
    if "split" not in z:
        return z["embeddings"], z["labels"]
    test = z["split"] == "test"
    return z["embeddings"][test], z["labels"][test]
