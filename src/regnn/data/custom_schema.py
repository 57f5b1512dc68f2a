"""Checks of a user's dataset description (docs/custom_data.md) before any file is read, and of the integer
arrays in its files. Every message names the user's file, what is wrong and the fix; an unknown key gets a
"did you mean" from the known ones."""
from __future__ import annotations

import difflib
from pathlib import Path

import numpy as np
import torch

from regnn.errors import DataError, quote

DOC = "see docs/custom_data.md"
FORMATS = ("tables", "pyg", "npz", "dgl", "magnn")
TABLES_KEYS = ("format", "name", "target", "nodes", "edges", "classes", "reverse", "num_classes")
PYG_KEYS = ("format", "name", "graph", "target", "reverse", "num_classes")
DGL_KEYS = ("format", "name", "graph", "graph_index", "target", "label", "features", "splits", "reverse",
            "num_classes", "classes")
NPZ_KEYS = ("format", "name", "graph", "target", "reverse", "num_classes", "classes")
MAGNN_KEYS = ("format", "name", "dir", "schema")
SCHEMA_KEYS = ("name", "node_types", "target", "features", "relations", "num_classes", "default_feats_type")
SPLIT_KEYS = ("train", "val", "test")
# the fix for a user's own file (never `make data`, which fetches the built-in datasets)
USER_FIX = "fix or re-export the file (docs/custom_data.md)"


def did_you_mean(word: str, known) -> str:
    close = difflib.get_close_matches(str(word), [str(k) for k in known], n=1)
    return f"did you mean {quote(close[0])}? " if close else ""


def _unknown(d: dict, known, where: str, what: str) -> None:
    for k in d:
        if k not in known:
            raise DataError(f"{where}: unknown {what} {quote(k)}; {did_you_mean(k, known)}"
                            f"known: {', '.join(known)} ({DOC})")


def _text(d: dict, key: str, where: str) -> None:
    if key in d and d[key] is not None and (not isinstance(d[key], str) or not d[key].strip()):
        raise DataError(f"{where}: {key} must be a name (text), got {quote(d[key])} ({DOC})")


def _whole(d: dict, key: str, where: str, lo: int) -> None:
    v = d.get(key)
    if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < lo):
        raise DataError(f"{where}: {key} must be a whole number >= {lo}, got {quote(v)} ({DOC})")


def _classes(meta: dict, where: str) -> None:
    classes = meta.get("classes")
    if classes is not None and (not isinstance(classes, list) or len(set(map(str, classes))) != len(classes)):
        raise DataError(f"{where}: classes must be a list of distinct class names, got {quote(classes)} ({DOC})")


def class_names(meta: dict, num_classes: int, where) -> list[str] | None:
    """The description's `classes:` (names by class id), checked against the number of classes."""
    classes = meta.get("classes")
    if classes is None:
        return None
    if len(classes) != num_classes:
        raise DataError(f"{where}: classes names {len(classes)} classes but the labels have {num_classes}; name "
                        f"each class 0..{num_classes - 1} once ({DOC})")
    return [str(c) for c in classes]


def _check_tables_or_pyg(meta: dict, fmt: str, where: str) -> None:
    _unknown(meta, TABLES_KEYS if fmt == "tables" else PYG_KEYS, where, "key")
    for k in ("name", "graph", "target"):
        _text(meta, k, where)
    _whole(meta, "num_classes", where, 1)
    if meta.get("reverse", "add") not in ("add", "keep"):
        raise DataError(f"{where}: reverse={quote(meta['reverse'])}; use add (reverse every relation) or keep")
    _classes(meta, where)


def _check_dgl_or_npz(meta: dict, fmt: str, where: str) -> None:
    """The keys of a format: dgl or format: npz description."""
    _unknown(meta, DGL_KEYS if fmt == "dgl" else NPZ_KEYS, where, "key")
    for k in ("name", "graph", "target", "label", "features"):
        _text(meta, k, where)
    _whole(meta, "graph_index", where, 0)
    _whole(meta, "num_classes", where, 1)
    if meta.get("reverse", "add") not in ("add", "keep"):
        raise DataError(f"{where}: reverse={quote(meta['reverse'])}; use add (reverse every relation) or keep")
    _classes(meta, where)
    splits = meta.get("splits")
    if splits is not None:
        if not isinstance(splits, dict):
            raise DataError(f"{where}: splits must map train, val and test to mask names, "
                            f"got {quote(splits)} ({DOC})")
        _unknown(splits, SPLIT_KEYS, f"{where}: splits", "split")
        for s, v in splits.items():
            if not isinstance(v, str):
                raise DataError(f"{where}: splits.{s} must name a mask or id tensor, got {quote(v)} ({DOC})")


def check_description(meta: dict, path: Path) -> str:
    """Validates a description's keys, types and ranges; returns its format."""
    where = str(path)
    fmt = meta.get("format") or ("magnn" if "schema" in meta else None if "graph" not in meta
                                 else "npz" if str(meta["graph"]).endswith(".npz") else "dgl")
    if fmt not in FORMATS:
        raise DataError(f"{where}: format {quote(fmt)} is not known; set format: tables (CSV or parquet node and edge "
                        "tables), format: pyg (a PyG HeteroData saved as tensors), format: npz (one numpy .npz of "
                        "arrays), format: dgl (a dgl.save_graphs file) or format: magnn (MAGNN-style processed files); "
                        f"{did_you_mean(fmt, FORMATS)}({DOC})")
    if fmt in ("tables", "pyg"):
        _check_tables_or_pyg(meta, fmt, where)
        return fmt
    if fmt in ("dgl", "npz"):
        _check_dgl_or_npz(meta, fmt, where)
        return fmt
    _unknown(meta, MAGNN_KEYS, where, "key")
    _text(meta, "name", where)
    _text(meta, "dir", where)
    schema = meta.get("schema")
    if schema is None:
        return fmt  # reported by the loader as missing
    if not isinstance(schema, dict):
        raise DataError(f"{where}: schema must be a mapping (node_types, target, relations, ...) ({DOC})")
    _unknown(schema, SCHEMA_KEYS, f"{where}: schema", "key")
    _whole(schema, "num_classes", f"{where}: schema", 1)
    types = schema.get("node_types")
    if types is not None and (not isinstance(types, list) or not types
                              or not all(isinstance(t, str) and t for t in types)):
        raise DataError(f"{where}: schema.node_types must be a list of names, got {quote(types)} ({DOC})")
    feats = schema.get("features")
    if feats is not None:
        if not isinstance(feats, dict):
            raise DataError(f"{where}: schema.features must map node types to feature files, "
                            f"got {quote(feats)} ({DOC})")
        if types:
            _unknown(feats, types, f"{where}: schema.features", "node type")
        for t, f in feats.items():
            if f is not None and not isinstance(f, str):
                raise DataError(f"{where}: schema.features.{t} must be a file name or null, got {quote(f)} ({DOC})")
    rels = schema.get("relations")
    if rels is not None and (not isinstance(rels, list) or not all(
            isinstance(r, list) and len(r) in (2, 4) and all(isinstance(x, str) for x in r) for r in rels)):
        raise DataError(f"{where}: schema.relations must be a list of [src, dst] or [src, dst, name, reverse_name] "
                        f"lists of names, got {quote(rels)} ({DOC})")
    return fmt


def exact_ints(x, what: str) -> np.ndarray:
    """x as int64, refusing what a cast would change: fractions, NaN, inf (integer-valued floats are kept)."""
    a = x.numpy() if isinstance(x, torch.Tensor) else np.asarray(x)
    if a.dtype == bool:
        return a.astype(np.int64)
    if np.issubdtype(a.dtype, np.integer):
        return a.astype(np.int64)
    if not np.issubdtype(a.dtype, np.floating):
        raise DataError(f"{what} holds {a.dtype} values; it must hold integers")
    bad = ~np.isfinite(a) | (a != np.round(a))
    if bad.any():
        i = int(np.flatnonzero(bad.ravel())[0])
        raise DataError(f"{what} holds non-integer values (e.g. {a.ravel()[i].item()!r} at position {i}); it must hold "
                        "integers: store it as an integer array")
    return a.astype(np.int64)


def unlabelled_outside_splits(labels: torch.Tensor, splits: dict[str, torch.Tensor],
                              where: str) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(labels, unlabelled mask or None where every node has a label). Target nodes outside the splits may carry
    label -1 (unlabelled, never scored: set to 0 here, the mask keeps which they are); a node in a split must have
    a class id."""
    n = labels.shape[0]
    for s, idx in splits.items():
        if idx.numel() and int(idx.min()) >= 0 and int(idx.max()) < n and (labels[idx] < 0).any():
            raise DataError(f"{where}: {int((labels[idx] < 0).sum())} nodes of split {s!r} have no label (< 0); "
                            "give them a class id or leave them out of the split")
    if (labels < -1).any():
        raise DataError(f"{where}: labels hold {int(labels.min())}; use class ids 0..C-1, and -1 only for "
                        "unlabelled nodes outside the splits")
    unlabelled = labels < 0
    return labels.clamp(min=0), (unlabelled if bool(unlabelled.any()) else None)


MAX_CLASSES = 100_000  # a class count past this is a typo (the output layer alone would not fit in memory)


def _first_bad_row(x, bad) -> int | None:
    """The first row holding a value for which bad(values) is true (dense or scipy sparse), or None."""
    import scipy.sparse as sp

    if sp.issparse(x):
        c = x.tocoo()
        hit = bad(c.data)
        return int(c.row[hit].min()) if hit.any() else None
    hit = bad(np.asarray(x))
    if not hit.any():
        return None
    return int(np.flatnonzero(hit.reshape(hit.shape[0], -1).any(axis=1))[0])


def check_features(x, what: str, fix: str = USER_FIX):
    """A feature matrix as it must be to train on: two dimensions, real numbers (bool, integer or float) and finite.
    Anything else is refused with the file, the problem and, for NaN or inf, the first row that holds one."""
    a = x.numpy() if isinstance(x, torch.Tensor) else x
    dtype = a.dtype
    if not (dtype == np.bool_ or np.issubdtype(dtype, np.integer) or np.issubdtype(dtype, np.floating)):
        kind = ("complex numbers" if np.issubdtype(dtype, np.complexfloating) else "text" if dtype.kind in "US"
                else f"{dtype} values")
        raise DataError(f"{what} holds {kind}; features must be real numbers (bool, integer or float): convert or "
                        f"encode them, then {fix}")
    shape = tuple(a.shape)
    if len(shape) != 2:
        hint = " (one value per node: store it as x[:, None])" if len(shape) == 1 else ""
        raise DataError(f"{what} has shape {shape}; features must be (nodes, dim){hint}: {fix}")
    if np.issubdtype(dtype, np.floating):
        row = _first_bad_row(a, lambda v: ~np.isfinite(v))
        if row is not None:
            raise DataError(f"{what} holds NaN or inf (first in row {row}); replace them (e.g. with 0 or the column "
                            f"mean), then {fix}")
        big = np.finfo(np.float32).max  # regnn trains in float32: larger values would become inf there
        row = _first_bad_row(a, lambda v: np.abs(v) > big) if dtype.itemsize > 4 else None
        if row is not None:
            raise DataError(f"{what} holds values beyond float32's range (first in row {row}), which training "
                            f"in float32 would turn into inf; rescale them (e.g. log1p or standardise), then {fix}")
    return x


def check_adjacency(adj, path, fix: str = USER_FIX):
    """adjM as regnn reads it: every stored non-zero is one unweighted edge. Explicit zeros are dropped (with a
    note); negative, NaN, inf and other values than 1 are refused, since the models take no edge weights."""
    import logging

    adj = adj.tocsr()
    try:
        adj.check_format(full_check=True)  # indices beyond the shape, indptr out of order
    except ValueError as e:
        raise DataError(f"{path} is not a valid sparse matrix ({str(e).splitlines()[0]}); the file is corrupt: "
                        f"{fix}") from None
    if not (np.issubdtype(adj.dtype, np.number) or adj.dtype == bool) or np.issubdtype(adj.dtype, np.complexfloating):
        raise DataError(f"{path} holds {adj.dtype} values; store 1 for every edge: {fix}")
    zeros = int((adj.data == 0).sum())
    if zeros:
        adj = adj.copy()
        adj.eliminate_zeros()
        logging.getLogger("regnn").warning("%s stores %d explicit zeros; they are not edges and were dropped", path,
                                           zeros)
    data = adj.data
    bad = ~np.isfinite(data) | (data != 1) if np.issubdtype(data.dtype, np.floating) else (data != 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        row = int(np.searchsorted(adj.indptr, i, side="right") - 1)
        raise DataError(f"{path} holds edge values other than 1 (e.g. {data[i].item()!r} at row {row}, column "
                        f"{int(adj.indices[i])}): regnn's relations are unweighted; store 1 for every edge "
                        f"(adj.data[:] = 1 keeps the links, dropping the weights): {fix}")
    return adj


def class_count(declared, labels: torch.Tensor, splits: dict[str, torch.Tensor], where: str) -> int:
    """The number of classes: the declared one (at least the largest label + 1) or the largest label + 1. Classes
    with no training node get a warning: the model cannot learn them, and they lower the scores silently."""
    import logging

    seen = int(labels.max()) + 1 if labels.numel() else 0
    n = seen if declared is None else int(declared)
    if n < seen:
        raise DataError(f"{where}: labels range over [{int(labels.min())}, {seen - 1}] but there are {n} classes "
                        f"(num_classes); class ids must be 0..{n - 1}, or num_classes at least {seen}")
    if n > MAX_CLASSES:
        raise DataError(f"{where}: num_classes is {n}; at most {MAX_CLASSES} are supported ({DOC})")
    train = splits.get("train")
    if train is not None and train.numel() and n and 0 <= int(train.min()) and int(train.max()) < labels.numel():
        present = torch.bincount(labels[train], minlength=n)[:n] > 0
        absent = torch.nonzero(~present).flatten().tolist()
        if absent and labels.numel():
            scored = torch.cat([splits[s] for s in ("val", "test") if s in splits])
            shown = ", ".join(map(str, absent[:10])) + (f" and {len(absent) - 10} more" if len(absent) > 10 else "")
            logging.getLogger("regnn").warning(
                "%s: class%s %s ha%s no training node (%d of them in validation/test); the model cannot predict "
                "%s", where, "es" if len(absent) > 1 else "", shown, "ve" if len(absent) > 1 else "s",
                int(torch.isin(labels[scored], torch.tensor(absent)).sum()) if scored.numel() else 0,
                "them" if len(absent) > 1 else "it")
    return n
