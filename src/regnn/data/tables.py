"""A graph kept as tables with its own ids: `format: tables` (docs/custom_data.md).

One node table per type and one edge table per relation, CSV or parquet, read by regnn.data.table_reader: ids,
labels and splits as text exactly as written (only an empty cell is missing). Ids are mapped to positions here and
kept (HeteroDataset.node_ids), so that predictions and embeddings carry them. Class names are the label texts (or
`classes:`).

    format: tables
    target: paper
    nodes:
      paper:  {file: papers.csv, id: id, label: venue, split: split, columns: {title: text}}  # other columns: features
      author: {file: authors.parquet, id: author_id, features: [f0, f1]}
      term:   {file: terms.csv}                                        # only ids: no features (one-hot)
    edges:
      writes: {file: writes.csv, source: author, target: paper}      # its first two columns: source, target ids
      has:    {file: has.parquet, source: paper, target: term, columns: [paper_id, term_id]}
    classes: [db, dm, ai, ir]   # optional: the class order (default: the labels' sorted values)
    reverse: add                # as the other formats

A node table's `split` column holds train, val or test (empty: in no split); an empty label marks an unlabelled
node, which must then be in no split. `features:` lists the feature columns (default: every column but the id,
label and split), or names one list column (parquet) holding each node's vector; `columns:` declares a column's
kind (number, category, text, date, boolean; regnn.data.column_kinds: else inferred), and each column is encoded
by its kind with encoders fitted on the training nodes (regnn.data.table_columns). Feature matrices that are
mostly zeros (bag-of-words, one-hot categories) are kept sparse.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import torch

from regnn.names import SPLITS
from regnn.data.custom_schema import DOC, did_you_mean
from regnn.data.dataset import HeteroDataset, predicting
from regnn.data.hetero import HeteroGraph
from regnn.data.table_columns import Encoded, encode, is_plain, kept_sparse
from regnn.data.table_features import vectors
from regnn.data.table_reader import Table, first, read_table
from regnn.data.user_graph import UserGraph, to_dataset
from regnn.errors import DataError, quote

NODE_KEYS = ("file", "id", "label", "split", "features", "columns")
EDGE_KEYS = ("file", "source", "target", "columns", "ignore")
_SAID: set = set()  # the tables whose feature columns this process has summarised already


def _entries(meta: dict, key: str, known: tuple, where: Path) -> dict[str, dict]:
    block = meta.get(key)
    if not isinstance(block, dict) or not block:
        raise DataError(
            f"{where}: {key} must map each {'node type' if key == 'nodes' else 'relation'} to its "
            f"table ({{file: ...}}); {DOC}"
        )
    out = {}
    for name, entry in block.items():
        entry = {"file": entry} if isinstance(entry, str) else entry
        if not isinstance(entry, dict) or not entry.get("file"):
            raise DataError(f"{where}: {key}.{name} needs file: <csv or parquet>; {DOC}")
        for k in entry:
            if k not in known:
                raise DataError(
                    f"{where}: {key}.{name}: unknown key {k!r}; {did_you_mean(k, known)}known: "
                    f"{', '.join(known)} ({DOC})"
                )
        out[str(name)] = entry
    return out


def class_order(values) -> list[str]:
    """The default class order: by number where every class name is a finite number (ties: as text), else as text."""
    try:
        numbers = [float(v) for v in values]
    except ValueError:
        return sorted(values)
    return sorted(values, key=lambda v: (float(v), v)) if np.isfinite(numbers).all() else sorted(values)


class NodeTable:
    """One node type's table: ids (text as written, unique), and for the target its labels and splits."""

    def __init__(self, ntype: str, entry: dict, base: Path, table: Table | None = None):
        import pyarrow.compute as pc

        self.ntype, self.entry = ntype, entry
        self.path = base / entry["file"] if table is None else table.path
        self.id_col = entry.get("id", "id")
        self.table = read_table(self.path) if table is None else table
        if not len(self.table):
            raise DataError(
                f"{self.path} holds no nodes (a header and no rows); fill it, or drop node type {ntype!r} and its "
                "relations"
            )
        self.ids = self.table.text(self.id_col, "the node ids").combine_chunks()
        row = first(pc.equal(self.ids, ""))
        if row is not None:
            raise DataError(f"{self.path}: {self.table.where(row)} has no id; every node needs one")
        codes = self.ids.dictionary_encode()
        if len(codes.dictionary) < len(self.ids):  # codes count in order of first appearance
            code = codes.indices.to_numpy()
            once = np.unique(code, return_index=True)[1]
            again = int(np.flatnonzero(np.arange(len(code)) != once[code])[0])
            was = self.table.where(int(once[code[again]]))
            raise DataError(
                f"{self.path}: id {quote(self.ids[again].as_py())} appears twice ({was}, again in "
                f"{self.table.where(again)}); node ids of a type must be unique"
            )

    def positions(self, table: Table, col: str, end: str) -> np.ndarray:
        """The position of every id of an edge table's column in this table (pyarrow's hash lookup: millions of edges
        in seconds)."""
        import pyarrow.compute as pc

        ids = table.text(col, f"the {end} ids")
        pos = pc.index_in(ids, value_set=self.ids).fill_null(-1).to_numpy().astype(np.int64)
        if (pos < 0).any():
            row = int(np.flatnonzero(pos < 0)[0])
            value = ids[row].as_py()
            raise DataError(
                f"{table.path}: {table.where(row)} has no {end} id; every edge joins two listed nodes"
                if value == ""
                else f"{table.path}: {table.where(row)}: {end} id {quote(value)} is not in the {self.ntype} table "
                f"{self.path.name}; every edge must join two listed nodes"
            )
        return pos

    def feature_columns(self, target: bool) -> list[str] | None:
        """The names of the feature columns, in order: `features:`, or every column but the id (and the target's
        label and split); None: one list column, or none."""
        spec = self.entry.get("features")
        if isinstance(spec, str):
            return None
        if spec is not None and not (isinstance(spec, list) and all(isinstance(c, str) for c in spec)):
            raise DataError(f"{self.path}: features must list column names, or name one list column; got {quote(spec)}")
        skip = {self.id_col} | (
            {self.entry.get("label", "label"), self.entry.get("split", "split")} if target else set()
        )
        cols = list(spec) if spec is not None else [c for c in self.table.data.column_names if c not in skip]
        if set(cols) & skip:
            raise DataError(
                f"{self.path}: features lists {sorted(set(cols) & skip)}, the id{', label or split' * target}: "
                "ids, labels and splits are never features; leave it out of features: [...]"
            )
        return cols or None

    def features(self, target: bool, fit_rows: np.ndarray) -> Encoded | None:
        """The features: one list column's vectors, or the feature columns encoded by their kinds with encoders
        fitted on fit_rows (the training nodes); None: a table of ids only."""
        spec = self.entry.get("features")
        if isinstance(spec, str):  # one list column holding each node's vector
            x = kept_sparse(vectors(self.table, spec))
            return Encoded(x, None, None, None)
        cols = self.feature_columns(target)
        if not cols:
            return None
        said = (str(self.path), self.ntype) in _SAID  # summarised once per process
        _SAID.add((str(self.path), self.ntype))
        where = None if said else f"{self.path.name} ({self.ntype})"
        return encode(self.table, self.ntype, cols, self.entry, fit_rows, where)

    def labels(self, classes) -> tuple[torch.Tensor, list[str]]:
        import pyarrow.compute as pc

        key = self.entry.get("label", "label")
        if predicting() and key not in self.table.data.column_names:  # a graph to predict: no label at all
            return torch.full((len(self.table),), -1, dtype=torch.long), [str(c) for c in classes or []]
        col = self.table.text(key, "the class of each target node")
        blank = first(pc.and_(pc.not_equal(col, ""), pc.equal(pc.utf8_trim_whitespace(col), "")))
        if blank is not None:
            raise DataError(
                f"{self.path}: {self.table.where(blank)}: label {quote(col[blank].as_py())} is only blank space; "
                "leave the cell empty for an unlabelled node, or name its class"
            )
        text = col.to_numpy(zero_copy_only=False)
        known = text != ""
        names = [str(c) for c in classes] if classes is not None else class_order(set(text[known]))
        code = pd.Index(names).get_indexer(text[known])
        if (code < 0).any():
            row = int(np.flatnonzero(known)[np.flatnonzero(code < 0)[0]])
            raise DataError(
                f"{self.path}: {self.table.where(row)}: label {quote(text[row])} is not one of classes {names}"
            )
        out = np.full(len(text), -1, dtype=np.int64)
        out[known] = code
        return torch.from_numpy(out), names

    def splits(self) -> dict[str, torch.Tensor]:
        import pyarrow as pa
        import pyarrow.compute as pc

        key = self.entry.get("split", "split")
        if predicting() and key not in self.table.data.column_names:
            return {s: torch.zeros(0, dtype=torch.long) for s in SPLITS}
        col = self.table.text(key, "train, val or test per target node")
        row = first(pc.and_(pc.not_equal(col, ""), pc.invert(pc.is_in(col, value_set=pa.array(SPLITS)))))
        if row is not None:
            raise DataError(
                f"{self.path}: {self.table.where(row)}: split {quote(col[row].as_py())} is not train, val or test "
                "(leave it empty for a node in no split)"
            )
        return {s: torch.from_numpy(np.flatnonzero(pc.equal(col, s).to_numpy())) for s in SPLITS}


def _relation(rel: str, e: dict, nodes: dict[str, NodeTable], where: Path, table: Table | None = None):
    """One edge table (read from its file unless given) as (source type, relation, target type) and its source and
    target positions."""
    ends = [e.get("source"), e.get("target")]
    for end in ends:
        if end not in nodes:
            raise DataError(f"{where}: edges.{rel}: node type {end!r} has no node table (types: {list(nodes)})")
    table = read_table(where.parent / e["file"]) if table is None else table
    path = table.path
    cols = _edge_columns(rel, e, table.data.column_names, path)
    if not len(table):
        raise DataError(f"{path} holds no edges; drop relation {rel!r} or fill its table")
    src = nodes[ends[0]].positions(table, cols[0], "source")
    dst = nodes[ends[1]].positions(table, cols[1], "target")
    return (ends[0], rel, ends[1]), (torch.from_numpy(src), torch.from_numpy(dst))


def _edge_columns(rel: str, e: dict, have: list[str], path: Path) -> list[str]:
    """The source and target id columns of an edge table, by name: `columns: [source, target]`, else the columns
    named after the source and target node types, else (two columns only: `source, target`, or neither named
    after the other end's type) the two in order. Any other column is refused unless listed in `ignore:` (regnn
    reads no edge attributes)."""
    src, dst = e["source"], e["target"]
    if e.get("columns") is not None:
        cols = e["columns"]
        if not (isinstance(cols, list) and len(cols) == 2 and all(c in have for c in cols)):
            raise DataError(f"{path}: columns: {quote(cols)} must name two of its columns ({have}), source then target")
    elif src != dst and src in have and dst in have:
        cols = [src, dst]
    elif len(have) == 2 and (have == ["source", "target"] or not (src != dst and (have[0] == dst or have[1] == src))):
        cols = list(have)
    else:
        raise DataError(
            f"{path}: cannot tell which of its columns {have} hold the {src} (source) and {dst} (target) ids of "
            f"relation {rel}; name them with columns: [<source column>, <target column>] in edges.{rel}"
        )
    ignore = e.get("ignore") or []
    if not isinstance(ignore, list) or any(c not in have for c in ignore):
        raise DataError(f"{path}: ignore: {quote(ignore)} must list columns of the table ({have})")
    extra = [c for c in have if c not in cols and c not in ignore]
    if extra:
        raise DataError(
            f"{path}: column(s) {extra} beside the id columns {cols}; regnn reads no edge attributes: drop them, or "
            f"list them in edges.{rel} as ignore: {extra}"
        )
    return list(cols)


def load_tables(meta: dict, where: Path, name: str, feats_type: str, read=None) -> HeteroDataset:
    """The graph of a `format: tables` description; read(block, name, entry) gives a node or edge table where it is
    not a file (format: sql), else each entry's file is read."""
    base = where.parent
    target = meta.get("target")
    given = _entries(meta, "nodes", NODE_KEYS, where)
    nodes = {t: NodeTable(t, e, base, None if read is None else read("nodes", t, e)) for t, e in given.items()}
    if target not in nodes:
        raise DataError(f"{where}: target {target!r} is not one of the node tables ({list(nodes)}); {DOC}")
    edge_keys = EDGE_KEYS if read is None else (*EDGE_KEYS, "relation")  # sql: a foreign key's name, its column's
    edges = dict(
        _relation(e.get("relation", rel), e, nodes, where, None if read is None else read("edges", rel, e))
        for rel, e in _entries(meta, "edges", edge_keys, where).items()
    )
    counts = {t: len(n.ids) for t, n in nodes.items()}
    try:
        graph = HeteroGraph(edges, counts)
    except DataError as e:
        raise DataError(f"{where}: {e}") from None
    tgt = nodes[target]
    labels, names = tgt.labels(meta.get("classes"))
    splits = tgt.splits()
    fit_rows = {t: splits["train"].numpy() if t == target else np.arange(counts[t]) for t in nodes}
    feats = {t: n.features(t == target, fit_rows[t]) for t, n in nodes.items()}
    states = {t: f.state for t, f in feats.items() if f is not None and f.state is not None}
    kept = states if any(not is_plain(s) for s in states.values()) else None  # numbers only: nothing to keep
    got = UserGraph(
        where,
        tgt.path,
        graph,
        target,
        labels,
        splits,
        {t: None if f is None else f.x for t, f in feats.items()},
        reverse=meta.get("reverse", "add"),
        num_classes=meta.get("num_classes", len(names) or None),
        classes=names,
        num_nodes=counts,
        node_ids={t: n.ids.to_numpy(zero_copy_only=False).astype(str) for t, n in nodes.items()},
        feature_names={t: f.names for t, f in feats.items() if f is not None and f.names},
        every_class_in_train=True,
        column_encoding=kept,
        unseen=None if kept is None else {t: feats[t].unseen for t in kept},
    )
    return to_dataset(got, name, feats_type)
