"""A graph kept as tables with its own ids: `format: tables` (docs/custom_data.md).

One node table per type and one edge table per relation, CSV or parquet (read with pyarrow). Ids are any text or
numbers; they are read as text, mapped to positions here, and kept (HeteroDataset.node_ids), so that predictions
and embeddings carry them. Class names come from the label column (or `classes:`).

    format: tables
    target: paper
    nodes:
      paper:  {file: papers.csv, id: id, label: venue, split: split}   # other columns: features
      author: {file: authors.parquet, id: author_id, features: [f0, f1]}
      term:   {file: terms.csv}                                        # only ids: no features (one-hot)
    edges:
      writes: {file: writes.csv, source: author, target: paper}      # its first two columns: source, target ids
      has:    {file: has.parquet, source: paper, target: term, columns: [paper_id, term_id]}
    classes: [db, dm, ai, ir]   # optional: the class order (default: the labels' sorted values)
    reverse: add                # as the other formats

A node table's `split` column holds train, val or test (empty: in no split); an empty label marks an unlabelled
node, which must then be in no split. `features:` lists the feature columns (default: every column but the id,
label and split), or names one list column (parquet) holding each node's vector. Feature matrices that are mostly
zeros (bag-of-words) are kept sparse.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import torch

from regnn.data.array_checks import check_features, class_count, unlabelled_outside_splits
from regnn.data.custom_schema import DOC, did_you_mean
from regnn.data.dataset import HeteroDataset
from regnn.data.features import select_features
from regnn.data.hetero import HeteroGraph
from regnn.data.user_graph import unique_relations, user_dataset
from regnn.errors import DataError

NODE_KEYS = ("file", "id", "label", "split", "features")
EDGE_KEYS = ("file", "source", "target", "columns")
SPLITS = ("train", "val", "test")
SPARSE_BELOW = 0.1  # share of non-zero entries under which a feature matrix is kept sparse


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


def read_table(path: Path, id_columns=()) -> pd.DataFrame:
    """A CSV or parquet file as a DataFrame (pyarrow), the id columns as text."""
    import pyarrow as pa

    if not path.is_file():
        raise DataError(f"{path} does not exist; {DOC}")
    try:
        if path.suffix in (".parquet", ".pq"):
            import pyarrow.parquet as pq

            table = pq.read_table(path)
        else:
            from pyarrow import csv

            table = csv.read_csv(
                path,
                convert_options=csv.ConvertOptions(
                    column_types={c: pa.string() for c in id_columns}, strings_can_be_null=True
                ),
            )
    except (pa.ArrowInvalid, OSError) as e:
        raise DataError(
            f"{path} cannot be read as a {'parquet' if path.suffix in ('.parquet', '.pq') else 'CSV'} "
            f"table ({str(e).splitlines()[0][:200]}); {DOC}"
        ) from None
    df = table.to_pandas()
    for c in id_columns:
        if c in df.columns:
            df[c] = df[c].astype("string")
    return df


def pa_strings(ids: pd.Series):
    import pyarrow as pa

    return pa.array(ids.astype("string"), type=pa.string())


def sparse_if_mostly_zero(x: np.ndarray):
    """Features with under SPARSE_BELOW of their entries non-zero (bag-of-words) as a sparse matrix: the input
    projection multiplies them as such, several times faster, with the same values."""
    import scipy.sparse as sp

    return sp.csr_matrix(x) if x.size and np.count_nonzero(x) < SPARSE_BELOW * x.size else x


def csv_header(path: Path) -> list[str]:
    """A CSV file's column names (none for parquet, whose columns keep their types)."""
    import csv

    if path.suffix in (".parquet", ".pq") or not path.is_file():
        return []
    with open(path, newline="") as f:
        return next(csv.reader(f), [])


def _column(df: pd.DataFrame, col, path: Path, what: str) -> pd.Series:
    if col not in df.columns:
        raise DataError(f"{path} has no column {col!r} ({what}); its columns: {list(df.columns)[:12]}")
    return df[col]


class NodeTable:
    """One node type's table: ids (text, unique), and for the target its labels and splits."""

    def __init__(self, ntype: str, entry: dict, base: Path):
        self.ntype, self.path = ntype, base / entry["file"]
        self.id_col = entry.get("id", "id")
        self.df = read_table(self.path, [self.id_col])
        ids = _column(self.df, self.id_col, self.path, "the node ids")
        if ids.isna().any():
            row = int(np.flatnonzero(ids.isna().to_numpy())[0])
            raise DataError(f"{self.path}: row {row + 1} has no id; every node needs one")
        dup = ids.duplicated()
        if dup.any():
            row = int(np.flatnonzero(dup.to_numpy())[0])
            raise DataError(
                f"{self.path}: id {ids.iloc[row]!r} appears twice (again in row {row + 1}); node ids of "
                "a type must be unique"
            )
        self.ids = pa_strings(ids)
        self.entry = entry

    def positions(self, ids: pd.Series, path: Path, end: str) -> np.ndarray:
        """The position of every id in this table (pyarrow's hash lookup: millions of edges in seconds)."""
        import pyarrow.compute as pc

        pos = pc.index_in(pa_strings(ids), value_set=self.ids).fill_null(-1).to_numpy().astype(np.int64)
        if (pos < 0).any():
            row = int(np.flatnonzero(pos < 0)[0])
            raise DataError(
                f"{path}: row {row + 1}: {end} id {ids.iloc[row]!r} is not in the {self.ntype} table "
                f"{self.path.name}; every edge must join two listed nodes"
            )
        return pos

    def features(self, target: bool) -> np.ndarray | None:
        spec = self.entry.get("features")
        skip = {self.id_col} | (
            {self.entry.get("label", "label"), self.entry.get("split", "split")} if target else set()
        )
        if isinstance(spec, str):  # one list column holding each node's vector
            vectors = _column(self.df, spec, self.path, "the feature vectors")
            try:
                x = np.stack([np.asarray(v, dtype=np.float32) for v in vectors])
            except (TypeError, ValueError) as e:
                raise DataError(
                    f"{self.path}: column {spec!r} must hold one list of numbers per node, all of one length ({e})"
                ) from None
            return sparse_if_mostly_zero(check_features(x, f"{self.path}: column {spec!r}"))
        cols = list(spec) if spec is not None else [c for c in self.df.columns if c not in skip]
        if not cols:
            return None
        for c in cols:
            col = _column(self.df, c, self.path, "a feature column")
            if not (pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col)):
                bad = col[pd.to_numeric(col, errors="coerce").isna() & col.notna()]
                example = f" (row {int(bad.index[0]) + 1}: {bad.iloc[0]!r})" if len(bad) else ""
                raise DataError(
                    f"{self.path}: feature column {c!r} holds text{example}; features must be numbers: "
                    "encode it, or leave it out with features: [...]"
                )
        x = np.array(self.df[cols].to_numpy(dtype=np.float32, na_value=np.nan))  # writable: torch shares it
        return sparse_if_mostly_zero(check_features(x, f"{self.path}: feature columns"))

    def labels(self, classes) -> tuple[torch.Tensor, list[str]]:
        col = _column(self.df, self.entry.get("label", "label"), self.path, "the class of each target node")
        known = col.notna() & (col.astype("string").str.strip() != "")
        values = col[known]
        if classes is None:
            numeric = pd.to_numeric(values, errors="coerce")
            classes = (
                [str(int(v)) if float(v).is_integer() else str(v) for v in sorted(numeric.unique())]
                if numeric.notna().all()
                else sorted(values.astype(str).unique())
            )
        names = [str(c) for c in classes]
        text = values.map(lambda v: str(int(v)) if isinstance(v, float) and v.is_integer() else str(v))
        code = pd.Index(names).get_indexer(text.to_numpy(dtype=object))
        if (code < 0).any():
            row = int(values.index[np.flatnonzero(code < 0)[0]])
            raise DataError(
                f"{self.path}: row {row + 1}: label {text.iloc[np.flatnonzero(code < 0)[0]]!r} is not "
                f"one of classes {names}"
            )
        out = np.full(len(self.df), -1, dtype=np.int64)
        out[known.to_numpy()] = code
        return torch.from_numpy(out), names

    def splits(self) -> dict[str, torch.Tensor]:
        key = self.entry.get("split", "split")
        col = _column(self.df, key, self.path, "train, val or test per target node").astype("string").str.strip()
        bad = col.notna() & (col != "") & ~col.isin(SPLITS)
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise DataError(
                f"{self.path}: row {row + 1}: split {col.iloc[row]!r} is not train, val or test "
                "(leave it empty for a node in no split)"
            )
        return {s: torch.from_numpy(np.flatnonzero((col == s).fillna(False).to_numpy())) for s in SPLITS}


def _classes_in_train(labels: torch.Tensor, splits: dict, names: list[str], path: Path) -> None:
    """A class met in validation or test but never in training cannot be learnt: refused, naming it."""
    seen = set(labels[splits["train"]].tolist())
    for s in ("val", "test"):
        only = sorted(set(labels[splits[s]].tolist()) - seen)
        if only:
            raise DataError(
                f"{path}: class {names[only[0]]!r} has nodes in {s} but none in train; the model cannot "
                "learn it: move some of its nodes to train, or drop the class"
            )


def load_tables(meta: dict, where: Path, name: str, feats_type: str) -> HeteroDataset:

    base = where.parent
    target = meta.get("target")
    nodes = {t: NodeTable(t, e, base) for t, e in _entries(meta, "nodes", NODE_KEYS, where).items()}
    if target not in nodes:
        raise DataError(f"{where}: target {target!r} is not one of the node tables ({list(nodes)}); {DOC}")
    edges = {}
    for rel, e in _entries(meta, "edges", EDGE_KEYS, where).items():
        path = base / e["file"]
        ends = [e.get("source"), e.get("target")]
        for end in ends:
            if end not in nodes:
                raise DataError(f"{where}: edges.{rel}: node type {end!r} has no node table (types: {list(nodes)})")
        df = read_table(path, e.get("columns") or csv_header(path)[:2])
        cols = list(e.get("columns") or df.columns[:2])
        if len(cols) != 2 or any(c not in df.columns for c in cols):
            raise DataError(
                f"{path} needs two id columns, source then target (or columns: [src, dst]); it has {list(df.columns)}"
            )
        if df.empty:
            raise DataError(f"{path} holds no edges; drop relation {rel!r} or fill its table")
        src = nodes[ends[0]].positions(df[cols[0]].astype("string"), path, "source")
        dst = nodes[ends[1]].positions(df[cols[1]].astype("string"), path, "target")
        edges[(ends[0], rel, ends[1])] = (torch.from_numpy(src).long(), torch.from_numpy(dst).long())
    counts = {t: len(n.ids) for t, n in nodes.items()}
    try:
        graph = unique_relations(HeteroGraph(edges, counts), str(meta.get("reverse", "add")), where)
    except DataError as e:
        raise DataError(f"{where}: {e}") from None
    tgt = nodes[target]
    labels, names = tgt.labels(meta.get("classes"))
    splits = tgt.splits()
    labels, unlabelled = unlabelled_outside_splits(labels, splits, str(tgt.path))
    _classes_in_train(labels, splits, names, tgt.path)
    raw = {t: n.features(t == target) for t, n in nodes.items()}
    feats = select_features(raw, counts, target, feats_type)
    num_classes = class_count(meta.get("num_classes", len(names)), labels, splits, str(where))
    return user_dataset(
        where,
        name=name,
        graph=graph,
        features=feats,
        target=target,
        labels=labels,
        splits=splits,
        num_classes=num_classes,
        unlabelled=unlabelled,
        class_names=names,
        node_ids={t: n.ids.to_numpy(zero_copy_only=False).astype(str) for t, n in nodes.items()},
    )
