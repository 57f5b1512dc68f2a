"""Checks of a user's dataset description (docs/custom_data.md) before any file is read (the arrays in its files:
regnn.data.array_checks). Every message names the user's file, what is wrong and the fix; an unknown key gets a
"did you mean" from the known ones."""

from __future__ import annotations

import difflib
from pathlib import Path


from regnn.description import DOC
from regnn.errors import DataError, quote

FORMATS = ("tables", "sql", "pyg", "npz", "dgl", "magnn")
TABLES_KEYS = ("format", "name", "target", "nodes", "edges", "classes", "reverse", "num_classes")
PYG_KEYS = ("format", "name", "graph", "target", "reverse", "num_classes")
SQL_KEYS = (*TABLES_KEYS, "database", "label", "split", "tables", "columns")
DGL_KEYS = (
    "format",
    "name",
    "graph",
    "graph_index",
    "target",
    "label",
    "features",
    "splits",
    "reverse",
    "num_classes",
    "classes",
)
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
            raise DataError(
                f"{where}: unknown {what} {quote(k)}; {did_you_mean(k, known)}known: {', '.join(known)} ({DOC})"
            )


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


def check_reverse(value, where) -> None:
    """reverse: add | keep | {relation: its reverse}: the pairs of relations the graph already holds as each
    other's reverse, every other relation reversed as with add."""
    if isinstance(value, dict) and value and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        return
    if value not in ("add", "keep"):
        raise DataError(
            f"{where}: reverse={quote(value)}; use add (reverse every relation), keep (the graph holds both "
            "directions of every relation) or {relation: its reverse, ...} (pairs the graph holds; the others added)"
        )


def _check_tables_or_pyg(meta: dict, fmt: str, where: str) -> None:
    _unknown(meta, {"tables": TABLES_KEYS, "sql": SQL_KEYS}.get(fmt, PYG_KEYS), where, "key")
    for k in ("name", "graph", "target", "database", "label", "split"):
        _text(meta, k, where)
    _whole(meta, "num_classes", where, 1)
    check_reverse(meta.get("reverse", "add"), where)
    _classes(meta, where)


def _check_dgl_or_npz(meta: dict, fmt: str, where: str) -> None:
    """The keys of a format: dgl or format: npz description."""
    _unknown(meta, DGL_KEYS if fmt == "dgl" else NPZ_KEYS, where, "key")
    for k in ("name", "graph", "target", "label", "features"):
        _text(meta, k, where)
    _whole(meta, "graph_index", where, 0)
    _whole(meta, "num_classes", where, 1)
    check_reverse(meta.get("reverse", "add"), where)
    _classes(meta, where)
    splits = meta.get("splits")
    if splits is not None:
        if not isinstance(splits, dict):
            raise DataError(f"{where}: splits must map train, val and test to mask names, got {quote(splits)} ({DOC})")
        _unknown(splits, SPLIT_KEYS, f"{where}: splits", "split")
        for s, v in splits.items():
            if not isinstance(v, str):
                raise DataError(f"{where}: splits.{s} must name a mask or id tensor, got {quote(v)} ({DOC})")


def check_description(meta: dict, path: Path) -> str:
    """Validates a description's keys, types and ranges; returns its format."""
    where = str(path)
    fmt = meta.get("format") or (
        "magnn"
        if "schema" in meta
        else None
        if "graph" not in meta
        else "npz"
        if str(meta["graph"]).endswith(".npz")
        else "dgl"
    )
    if fmt not in FORMATS:
        raise DataError(
            f"{where}: format {quote(fmt)} is not known; set format: tables (CSV or parquet tables), sql (a "
            "SQLite or DuckDB file), pyg (a saved PyG HeteroData), npz (numpy arrays), dgl (dgl.save_graphs) or "
            "magnn (MAGNN-style files); "
            f"{did_you_mean(fmt, FORMATS)}({DOC})"
        )
    if fmt in ("tables", "sql", "pyg"):
        _check_tables_or_pyg(meta, fmt, where)
        return fmt
    if fmt in ("dgl", "npz"):
        _check_dgl_or_npz(meta, fmt, where)
        return fmt
    _check_magnn(meta, where)
    return fmt


def _check_magnn(meta: dict, where: str) -> None:
    """A MAGNN-style description: its keys and its schema (node types, features, relations)."""
    _unknown(meta, MAGNN_KEYS, where, "key")
    _text(meta, "name", where)
    _text(meta, "dir", where)
    schema = meta.get("schema")
    if schema is None:
        return  # reported by the loader as missing
    if not isinstance(schema, dict):
        raise DataError(f"{where}: schema must be a mapping (node_types, target, relations, ...) ({DOC})")
    _unknown(schema, SCHEMA_KEYS, f"{where}: schema", "key")
    _whole(schema, "num_classes", f"{where}: schema", 1)
    types = schema.get("node_types")
    if types is not None and (
        not isinstance(types, list) or not types or not all(isinstance(t, str) and t for t in types)
    ):
        raise DataError(f"{where}: schema.node_types must be a list of names, got {quote(types)} ({DOC})")
    feats = schema.get("features")
    if feats is not None:
        if not isinstance(feats, dict):
            raise DataError(
                f"{where}: schema.features must map node types to feature files, got {quote(feats)} ({DOC})"
            )
        if types:
            _unknown(feats, types, f"{where}: schema.features", "node type")
        for t, f in feats.items():
            if f is not None and not isinstance(f, str):
                raise DataError(f"{where}: schema.features.{t} must be a file name or null, got {quote(f)} ({DOC})")
    rels = schema.get("relations")
    if rels is not None and (
        not isinstance(rels, list)
        or not all(isinstance(r, list) and len(r) in (2, 4) and all(isinstance(x, str) for x in r) for r in rels)
    ):
        raise DataError(
            f"{where}: schema.relations must be a list of [src, dst] or [src, dst, name, reverse_name] "
            f"lists of names, got {quote(rels)} ({DOC})"
        )
