"""Loader for MAGNN-style processed datasets (DBLP, ACM, IMDB, or a user's own with a schema).

Files: adjM.npz (all nodes in one index space), node_types.npy, features_<i>.npz|npy per node type,
labels.npy (target type), train_val_test_idx.npz. Every error names the file and the fix.
"""
from __future__ import annotations

import zipfile
from pathlib import Path

import dgl
import numpy as np
import scipy.sparse as sp
import torch

from regnn.data.dataset import HeteroDataset
from regnn.data.features import select_features
from regnn.data.specs import MagnnSpec
from regnn.errors import DataError

_REFETCH = "run `make data` to fetch it again from the mirror (REGNN_DATA_MIRROR)"


def _path(root: Path, name: str) -> Path:
    p = root / name
    if not p.is_file():
        if not root.is_dir():
            raise DataError(f"data directory {root} does not exist; run `make data` "
                            "(set REGNN_DATA_MIRROR to the folder holding DBLP/ ACM/ IMDB/) or set dataset.dir")
        raise DataError(f"{p} is missing; {_REFETCH}")
    return p


def read_array(path: Path):
    """np.ndarray or scipy sparse matrix from .npy / .npz (scipy sparse or plain arrays)."""
    try:
        if path.suffix == ".npy":
            return np.load(path, allow_pickle=False)
        with np.load(path, allow_pickle=False) as z:
            if "format" in z.files and "shape" in z.files:  # written by scipy.sparse.save_npz
                return sp.load_npz(path).tocsr()
            return {k: z[k] for k in z.files}
    except (ValueError, OSError, EOFError, KeyError, zipfile.BadZipFile, IndexError) as e:
        raise DataError(f"{path} cannot be read ({type(e).__name__}: {e}); the file is truncated or corrupt: "
                        f"{_REFETCH}") from e


def load_magnn(root: str | Path, spec: MagnnSpec, feats_type: str | None = None) -> HeteroDataset:
    root = Path(root)
    adj = read_array(_path(root, "adjM.npz"))
    if not sp.issparse(adj):
        raise DataError(f"{root / 'adjM.npz'} is not a scipy sparse matrix; {_REFETCH}")
    node_types = np.asarray(read_array(_path(root, "node_types.npy"))).astype(np.int64).ravel()
    n_all = node_types.shape[0]
    if adj.shape != (n_all, n_all):
        raise DataError(f"{root / 'adjM.npz'} is {adj.shape} but node_types.npy lists {n_all} nodes; "
                        f"the two files do not belong together: {_REFETCH}")
    if n_all and (node_types.min() < 0 or node_types.max() >= len(spec.node_types)):
        raise DataError(f"{root / 'node_types.npy'} holds type ids up to {node_types.max()} but the schema "
                        f"names {len(spec.node_types)} types {spec.node_types}")

    # global id -> (type, local id); local ids keep the global order within a type
    local = np.empty(n_all, dtype=np.int64)
    num_nodes = {}
    for i, t in enumerate(spec.node_types):
        members = np.flatnonzero(node_types == i)
        local[members] = np.arange(members.size)
        num_nodes[t] = int(members.size)

    adj = adj.tocoo()
    rows, cols = adj.row.astype(np.int64), adj.col.astype(np.int64)
    rt, ct = node_types[rows], node_types[cols]
    tid = {t: i for i, t in enumerate(spec.node_types)}
    covered = np.zeros(rows.size, dtype=bool)
    data = {}
    for r in spec.relations:
        s, d = tid[r.src], tid[r.dst]
        fwd = (rt == s) & (ct == d)
        # between two types, either block may hold the edges; within one type the stored direction is the relation
        bwd = (rt == d) & (ct == s) if s != d else np.zeros_like(fwd)
        covered |= fwd | bwd
        # union of the (src,dst) block and the transposed (dst,src) block, without duplicates
        pairs = np.unique(np.concatenate([
            np.stack([local[rows[fwd]], local[cols[fwd]]], 1),
            np.stack([local[cols[bwd]], local[rows[bwd]]], 1)]), axis=0) if (fwd.any() or bwd.any()) \
            else np.zeros((0, 2), dtype=np.int64)
        u, v = torch.from_numpy(pairs[:, 0].copy()), torch.from_numpy(pairs[:, 1].copy())
        data[(r.src, r.name, r.dst)] = (u, v)
        data[(r.dst, r.reverse, r.src)] = (v, u)
    if not covered.all():
        bad = (~covered).nonzero()[0][0]
        raise DataError(f"{root / 'adjM.npz'}: {(~covered).sum()} edges join node types "
                        f"{spec.node_types[rt[bad]]!r} and {spec.node_types[ct[bad]]!r}, which no relation of the "
                        f"{spec.name} schema covers; add the relation to the schema")
    graph = dgl.heterograph(data, num_nodes_dict=num_nodes)

    raw = {}
    for t in spec.node_types:
        f = spec.features.get(t)
        raw[t] = None if f is None else read_array(_path(root, f))
        if isinstance(raw[t], dict):
            raise DataError(f"{root / f} holds arrays {list(raw[t])}, not a feature matrix; {_REFETCH}")
        if raw[t] is not None and (raw[t].ndim != 2 or raw[t].shape[0] != num_nodes[t]):
            raise DataError(f"{root / f}: feature matrix of shape {raw[t].shape} but there are {num_nodes[t]} "
                            f"{t} nodes; rows must equal the node count: {_REFETCH}")
    features = select_features(raw, num_nodes, spec.target,
                               spec.default_feats_type if feats_type is None else feats_type)

    labels = np.asarray(read_array(_path(root, "labels.npy"))).astype(np.int64).ravel()
    split_file = _path(root, "train_val_test_idx.npz")
    split = read_array(split_file)
    if not isinstance(split, dict) or any(f"{s}_idx" not in split for s in ("train", "val", "test")):
        raise DataError(f"{split_file} must hold arrays train_idx, val_idx and test_idx; {_REFETCH}")
    splits = {s: torch.from_numpy(np.sort(np.asarray(split[f"{s}_idx"]).astype(np.int64).ravel()))
              for s in ("train", "val", "test")}
    num_classes = spec.num_classes or (int(labels.max()) + 1 if labels.size else 0)
    return HeteroDataset(name=spec.name, graph=graph, features=features, target=spec.target,
                         labels=torch.from_numpy(labels), splits=splits, num_classes=num_classes)
