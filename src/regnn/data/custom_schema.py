"""Checks of a user's dataset description (docs/custom_data.md) before any file is read, and of the integer
arrays in its files. Every message names the user's file, what is wrong and the fix; an unknown key gets a
"did you mean" from the known ones."""
from __future__ import annotations

import difflib
from pathlib import Path

import numpy as np
import torch

from regnn.errors import DataError

DOC = "see docs/custom_data.md"
FORMATS = ("npz", "dgl", "magnn")
DGL_KEYS = ("format", "name", "graph", "graph_index", "target", "label", "features", "splits", "reverse",
            "num_classes")
NPZ_KEYS = ("format", "name", "graph", "target", "reverse", "num_classes")
MAGNN_KEYS = ("format", "name", "dir", "schema")
SCHEMA_KEYS = ("name", "node_types", "target", "features", "relations", "num_classes", "default_feats_type")
SPLIT_KEYS = ("train", "val", "test")
# the fix for a user's own file (never `make data`, which fetches the built-in datasets)
USER_FIX = "fix or re-export the file (docs/custom_data.md)"


def did_you_mean(word: str, known) -> str:
    close = difflib.get_close_matches(str(word), [str(k) for k in known], n=1)
    return f"did you mean {close[0]!r}? " if close else ""


def _unknown(d: dict, known, where: str, what: str) -> None:
    for k in d:
        if k not in known:
            raise DataError(f"{where}: unknown {what} {k!r}; {did_you_mean(k, known)}known: {', '.join(known)} ({DOC})")


def _text(d: dict, key: str, where: str) -> None:
    if key in d and d[key] is not None and (not isinstance(d[key], str) or not d[key].strip()):
        raise DataError(f"{where}: {key} must be a name (text), got {d[key]!r} ({DOC})")


def _whole(d: dict, key: str, where: str, lo: int) -> None:
    v = d.get(key)
    if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < lo):
        raise DataError(f"{where}: {key} must be a whole number >= {lo}, got {v!r} ({DOC})")


def check_description(meta: dict, path: Path) -> str:
    """Validates a description's keys, types and ranges; returns its format."""
    where = str(path)
    fmt = meta.get("format") or ("magnn" if "schema" in meta else None if "graph" not in meta
                                 else "npz" if str(meta["graph"]).endswith(".npz") else "dgl")
    if fmt not in FORMATS:
        raise DataError(f"{where}: format {fmt!r} is not known; set format: npz (one numpy .npz of arrays), format: "
                        f"dgl (a dgl.save_graphs file) or format: magnn (MAGNN-style processed files); "
                        f"{did_you_mean(fmt, FORMATS)}({DOC})")
    if fmt in ("dgl", "npz"):
        _unknown(meta, DGL_KEYS if fmt == "dgl" else NPZ_KEYS, where, "key")
        for k in ("name", "graph", "target", "label", "features"):
            _text(meta, k, where)
        _whole(meta, "graph_index", where, 0)
        _whole(meta, "num_classes", where, 1)
        if meta.get("reverse", "add") not in ("add", "keep"):
            raise DataError(f"{where}: reverse={meta['reverse']!r}; use add (reverse every relation) or keep")
        splits = meta.get("splits")
        if splits is not None:
            if not isinstance(splits, dict):
                raise DataError(f"{where}: splits must map train, val and test to mask names, got {splits!r} ({DOC})")
            _unknown(splits, SPLIT_KEYS, f"{where}: splits", "split")
            for s, v in splits.items():
                if not isinstance(v, str):
                    raise DataError(f"{where}: splits.{s} must name a mask or id tensor, got {v!r} ({DOC})")
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
        raise DataError(f"{where}: schema.node_types must be a list of names, got {types!r} ({DOC})")
    feats = schema.get("features")
    if feats is not None:
        if not isinstance(feats, dict):
            raise DataError(f"{where}: schema.features must map node types to feature files, got {feats!r} ({DOC})")
        if types:
            _unknown(feats, types, f"{where}: schema.features", "node type")
        for t, f in feats.items():
            if f is not None and not isinstance(f, str):
                raise DataError(f"{where}: schema.features.{t} must be a file name or null, got {f!r} ({DOC})")
    rels = schema.get("relations")
    if rels is not None and (not isinstance(rels, list) or not all(
            isinstance(r, list) and len(r) in (2, 4) and all(isinstance(x, str) for x in r) for r in rels)):
        raise DataError(f"{where}: schema.relations must be a list of [src, dst] or [src, dst, name, reverse_name] "
                        f"lists of names, got {rels!r} ({DOC})")
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


def unlabelled_outside_splits(labels: torch.Tensor, splits: dict[str, torch.Tensor], where: str) -> torch.Tensor:
    """Target nodes outside the splits may carry label -1 (unlabelled, never scored: set to 0 here); a node in a
    split must have a class id."""
    n = labels.shape[0]
    for s, idx in splits.items():
        if idx.numel() and int(idx.min()) >= 0 and int(idx.max()) < n and (labels[idx] < 0).any():
            raise DataError(f"{where}: {int((labels[idx] < 0).sum())} nodes of split {s!r} have no label (< 0); "
                            "give them a class id or leave them out of the split")
    if (labels < -1).any():
        raise DataError(f"{where}: labels hold {int(labels.min())}; use class ids 0..C-1, and -1 only for "
                        "unlabelled nodes outside the splits")
    return labels.clamp(min=0)
