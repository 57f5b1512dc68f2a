"""Loader for MAGNN-style processed datasets (DBLP, ACM, IMDB, or a user's own with a schema).

Files: adjM.npz (all nodes in one index space), node_types.npy, features_<i>.npz|npy per node type,
labels.npy (target type), train_val_test_idx.npz. Every error names the file and the fix.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch

from regnn.data.array_checks import check_adjacency, check_features, class_count, exact_ints, unlabelled_outside_splits
from regnn.data.dataset import HeteroDataset
from regnn.data.features import select_features
from regnn.data.hetero import HeteroGraph
from regnn.data.specs import MagnnSpec
from regnn.description import not_a_file
from regnn.errors import DataError

_REFETCH = "run `make data` to fetch it again from the mirror (REGNN_DATA_MIRROR)"


def _path(root: Path, name: str, fix: str = _REFETCH) -> Path:
    p = root / name
    why = not_a_file(p)
    if why is not None:
        if not root.is_dir():
            raise DataError(
                f"data directory {root} does not exist; "
                + (
                    "run `make data` (set REGNN_DATA_MIRROR to the folder holding DBLP/ ACM/ IMDB/) or set dataset.dir"
                    if fix == _REFETCH
                    else "set dir: in the description to the folder holding the files"
                )
            )
        raise DataError(f"{why}; {fix}")
    return p


def _check_npy_size(path: Path) -> None:
    """A .npy header that claims more data than the file holds (a corrupt or hostile header: numpy would try to
    allocate it first) is refused before the load."""
    with open(path, "rb") as f:
        fmt = np.lib.format
        version = fmt.read_magic(f)
        # headers of version 3 differ from 2 only in the encoding of field names
        shape, _, dtype = (fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0)(
            f, max_header_size=100_000
        )
        need = int(np.prod(shape, dtype=object)) * dtype.itemsize
        have = path.stat().st_size - f.tell()
    if dtype.hasobject:
        return  # refused by np.load(allow_pickle=False) with its own message
    if need > have:
        raise ValueError(f"its header claims shape {shape} of {dtype} ({need:,} bytes), the file holds {have:,}")


def _ints(x, path: Path, what: str, fix: str) -> np.ndarray:
    """Integer ids exactly as stored: a float array with fractions is refused, never truncated."""
    try:
        return exact_ints(x, f"{path}: {what}").ravel()
    except DataError as e:
        raise DataError(f"{e}; {fix}") from None


def read_array(path: Path, fix: str = _REFETCH):
    """np.ndarray or scipy sparse matrix from .npy / .npz (scipy sparse or plain arrays)."""
    try:
        if path.suffix == ".npy":
            _check_npy_size(path)
            return np.load(path, allow_pickle=False)
        with np.load(path, allow_pickle=False) as z:
            if "format" in z.files and "shape" in z.files:  # written by scipy.sparse.save_npz
                return sp.load_npz(path).tocsr()
            return {k: z[k] for k in z.files}
    except PermissionError as e:
        raise DataError(f"{path} cannot be read: permission denied; give this user read access (chmod u+r)") from e
    except IsADirectoryError as e:
        raise DataError(f"{path} is a folder, not a file; {fix}") from e
    except MemoryError as e:
        raise DataError(
            f"{path} asks for more memory than there is ({str(e).splitlines()[0][:120] if str(e) else ''});"
            f" the file is corrupt or not what regnn expects: {fix}"
        ) from e
    except (ValueError, OSError, EOFError, KeyError, zipfile.BadZipFile, IndexError) as e:
        why = str(e).splitlines()[0][:160] if str(e) else ""
        raise DataError(
            f"{path} cannot be read ({type(e).__name__}: {why}); the file is truncated or corrupt: {fix}"
        ) from e


def load_magnn(root: str | Path, spec: MagnnSpec, feats_type: str | None = None, fix: str = _REFETCH) -> HeteroDataset:
    """fix: what the user does about a bad file (the built-in datasets: fetch them again; a user's: fix it)."""
    root = Path(root)
    adj, node_types = _read_structure(root, spec, fix)
    graph, num_nodes = _graph(root, spec, adj, node_types)
    features = select_features(
        _read_features(root, spec, num_nodes, fix),
        num_nodes,
        spec.target,
        spec.default_feats_type if feats_type is None else feats_type,
    )
    labels, splits, num_classes, unlabelled = _read_labels(root, spec, fix)
    return HeteroDataset(
        name=spec.name,
        graph=graph,
        features=features,
        target=spec.target,
        labels=labels,
        splits=splits,
        num_classes=num_classes,
        unlabelled=unlabelled,
    )


def _read_structure(root: Path, spec: MagnnSpec, fix: str):
    """adjM.npz (checked) and node_types.npy (type ids of the schema), which must belong together."""
    adj = read_array(_path(root, "adjM.npz", fix), fix)
    if not sp.issparse(adj):
        raise DataError(f"{root / 'adjM.npz'} is not a scipy sparse matrix; {fix}")
    adj = check_adjacency(adj, root / "adjM.npz", fix)
    nt_path = _path(root, "node_types.npy", fix)
    node_types = _ints(read_array(nt_path, fix), nt_path, "node type ids", fix)
    n_all = node_types.shape[0]
    if adj.shape != (n_all, n_all):
        raise DataError(
            f"{root / 'adjM.npz'} is {adj.shape} but node_types.npy lists {n_all} nodes; "
            f"the two files do not belong together: {fix}"
        )
    if n_all and (node_types.min() < 0 or node_types.max() >= len(spec.node_types)):
        bad = int(node_types.min()) if node_types.min() < 0 else int(node_types.max())
        raise DataError(
            f"{nt_path} holds type id {bad}, but type ids index the schema's node_types "
            f"{list(spec.node_types)}: use 0..{len(spec.node_types) - 1}"
        )

    return adj, node_types


def _graph(root: Path, spec: MagnnSpec, adj, node_types):
    """The heterograph of the schema's relations (both directions) from the global adjacency, and the node
    counts per type; an edge that no relation covers is an error."""
    # global id -> (type, local id); local ids keep the global order within a type
    local = np.empty(node_types.shape[0], dtype=np.int64)
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
        pairs = (
            np.unique(
                np.concatenate(
                    [
                        np.stack([local[rows[fwd]], local[cols[fwd]]], 1),
                        np.stack([local[cols[bwd]], local[rows[bwd]]], 1),
                    ]
                ),
                axis=0,
            )
            if (fwd.any() or bwd.any())
            else np.zeros((0, 2), dtype=np.int64)
        )
        u, v = torch.from_numpy(pairs[:, 0].copy()), torch.from_numpy(pairs[:, 1].copy())
        data[(r.src, r.name, r.dst)] = (u, v)
        data[(r.dst, r.reverse, r.src)] = (v, u)
    if not covered.all():
        bad = (~covered).nonzero()[0][0]
        raise DataError(
            f"{root / 'adjM.npz'}: {(~covered).sum()} edges join node types "
            f"{spec.node_types[rt[bad]]!r} and {spec.node_types[ct[bad]]!r}, which no relation of the "
            f"{spec.name} schema covers; add the relation to the schema"
        )
    return HeteroGraph(data, num_nodes), num_nodes


def _read_features(root: Path, spec: MagnnSpec, num_nodes: dict, fix: str) -> dict:
    """Each node type's feature matrix from the schema's file (None where it has none), rows checked."""
    raw = {}
    for t in spec.node_types:
        f = spec.features.get(t)
        raw[t] = None if f is None else read_array(_path(root, f, fix), fix)
        if isinstance(raw[t], dict):
            raise DataError(f"{root / f} holds arrays {list(raw[t])}, not a feature matrix; {fix}")
        if raw[t] is not None and check_features(raw[t], str(root / f), fix).shape[0] != num_nodes[t]:
            raise DataError(
                f"{root / f}: feature matrix of shape {raw[t].shape} but there are {num_nodes[t]} "
                f"{t} nodes; rows must equal the node count: {fix}"
            )
    return raw


def _read_labels(root: Path, spec: MagnnSpec, fix: str):
    """Labels (checked ints; unlabelled outside the splits), the train/val/test ids and the class count."""
    label_path = _path(root, "labels.npy", fix)
    labels = _ints(read_array(label_path, fix), label_path, "class labels", fix)
    split_file = _path(root, "train_val_test_idx.npz", fix)
    split = read_array(split_file, fix)
    if not isinstance(split, dict) or any(f"{s}_idx" not in split for s in ("train", "val", "test")):
        raise DataError(f"{split_file} must hold arrays train_idx, val_idx and test_idx; {fix}")
    splits = {
        s: torch.from_numpy(np.sort(_ints(split[f"{s}_idx"], split_file, f"{s}_idx", fix)))
        for s in ("train", "val", "test")
    }
    labels, unlabelled = unlabelled_outside_splits(torch.from_numpy(labels), splits, str(label_path))
    num_classes = class_count(spec.num_classes, labels, splits, str(label_path))
    return labels, splits, num_classes, unlabelled
