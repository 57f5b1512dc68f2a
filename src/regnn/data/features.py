"""Input features per node type, and the `feats_type` choices of the authors' code, by name."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch

from regnn.names import FEATS_TYPES  # raw, target_zeros, target_onehot: the authors' feats_type 0, 1, 2

_ALIASES = {"0": "raw", "1": "target_zeros", "2": "target_onehot"}
ZERO_DIM = 10


def canonical_feats_type(value) -> str:
    name = _ALIASES.get(str(value), str(value))
    if name not in FEATS_TYPES:
        raise ValueError(f"feats_type={value!r} is not one of {list(FEATS_TYPES)} (or the authors' codes 0/1/2)")
    return name


def to_tensor(x) -> torch.Tensor:
    """scipy sparse -> coalesced sparse COO float32; numpy -> dense float32 (sparse input stays sparse)."""
    if sp.issparse(x):
        coo = x.tocoo()
        idx = torch.from_numpy(np.vstack([coo.row, coo.col]).astype(np.int64))
        return torch.sparse_coo_tensor(
            idx, torch.from_numpy(coo.data.astype(np.float32)), coo.shape, check_invariants=False
        ).coalesce()
    if isinstance(x, torch.Tensor):
        return x.float()
    return torch.from_numpy(np.asarray(x, dtype=np.float32))


def one_hot_ids(n: int) -> torch.Tensor:
    idx = torch.arange(n).repeat(2, 1)
    return torch.sparse_coo_tensor(idx, torch.ones(n), (n, n), check_invariants=False).coalesce()


def is_one_hot_ids(x: torch.Tensor) -> bool:
    """Whether x is the identity one_hot_ids gives a type without features of its own: its nodes are then
    told apart by their ids alone."""
    if not x.is_sparse or x.dim() != 2 or x.shape[0] != x.shape[1] or x._nnz() != x.shape[0]:
        return False
    x = x.coalesce()
    ids = torch.arange(x.shape[0])
    return bool((x.indices() == ids).all() and (x.values() == 1).all())


def select_features(raw: dict, num_nodes: dict[str, int], target: str, feats_type: str) -> dict[str, torch.Tensor]:
    """raw: node type -> array/tensor or None (no features); returns float32 tensors for every node type."""
    feats_type = canonical_feats_type(feats_type)
    out = {}
    for t, n in num_nodes.items():
        x = raw.get(t)
        if t == target or feats_type == "raw":
            out[t] = one_hot_ids(n) if x is None else to_tensor(x)
        elif feats_type == "target_zeros":
            out[t] = torch.zeros(n, ZERO_DIM)
        else:
            out[t] = one_hot_ids(n)
    return out
