"""The user's own heterogeneous graph: `dataset=custom dataset.path=<file or folder>` (docs/custom_data.md).

`path` is a small YAML or JSON description (or a folder holding `dataset.yaml`, `dataset.yml` or
`dataset.json`). Relative file names in it are relative to its folder. Six formats: `tables` (CSV or parquet,
regnn.data.tables), `sql` (a SQLite or DuckDB file, regnn.data.sql_graph) and `pyg` (a saved HeteroData,
regnn.data.pyg), read by their own modules, and these three:

format: npz      one .npz file of named arrays (numpy.savez), no DGL needed:
    graph: graph.npz        # the file; its arrays:
                            #   edges:<src>:<relation>:<dst>  (2, E) ints: source and destination ids, local to
                            #                                 their node types; one array per relation
                            #   num_nodes:<type>              node count of a type (optional where features:<type>
                            #                                 gives it by its rows)
                            #   features:<type>               (nodes, dim) input features (types without: one-hot)
                            #   labels                        class id per target node (-1: unlabelled)
                            #   train, val, test              target node ids, or boolean masks over them
    target: paper           # labelled node type
    reverse: add            # as for format: dgl
    num_classes: 5          # optional (default: largest label + 1)
format: dgl      a heterograph written by `dgl.save_graphs` (needs DGL installed):
    graph: graph.bin        # the file
    target: paper           # labelled node type
    label: label            # ndata key on the target type holding class ids (or a key of the saved labels dict)
    features: feat          # ndata key holding input features, on every type that has them (default "feat")
    splits: {train: train_mask, val: val_mask, test: test_mask}  # boolean masks in the target's ndata, or
                            # keys of the saved labels dict holding masks or node ids
    reverse: add            # add: every relation also reversed as rev_<name> (default); keep: the graph already
                            # holds both directions
    num_classes: 5          # optional (default: largest label + 1)
format: magnn    the MAGNN-style processed files (adjM.npz, node_types.npy, labels.npy, train_val_test_idx.npz,
                 features) with any node types, described by `schema:` (see regnn.data.specs.MagnnSpec.from_dict).

Target nodes outside the splits may carry label -1 (unlabelled); nodes in a split must have a class id.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import yaml

from regnn.data.array_checks import check_features, exact_ints
from regnn.data.custom_schema import DOC, USER_FIX, check_description
from regnn.data.dataset import HeteroDataset
from regnn.data.hetero import HeteroGraph
from regnn.data.magnn import load_magnn, read_array
from regnn.data.specs import MagnnSpec
from regnn.data.user_graph import UserGraph, need, to_dataset
from regnn.description import not_a_file, read_meta
from regnn.errors import DataError

MAX_NODES = 100_000_000  # per node type: ~50x OGBN-MAG's largest; past it the one-hot ids alone exhaust memory


def load_custom(path: str | Path | None = None, name: str = "custom", feats_type: str | None = None) -> HeteroDataset:
    meta, desc = read_meta(path)
    fmt = check_description(meta, desc)  # keys, types and ranges, before any file is read
    base = desc.parent
    if fmt == "magnn":
        schema = need(meta, "schema", desc, "node_types, target, relations and features of the MAGNN files")
        spec = MagnnSpec.from_dict({"name": meta.get("name", name), **schema})
        return load_magnn(base / meta.get("dir", "."), spec, feats_type or spec.default_feats_type, fix=USER_FIX)
    if fmt == "tables":
        from regnn.data.tables import load_tables

        return load_tables(meta, desc, meta.get("name", name), feats_type or "raw")
    if fmt == "sql":
        from regnn.data.sql_graph import load_sql

        return load_sql(meta, desc, meta.get("name", name), feats_type or "raw")
    if fmt == "pyg":
        from regnn.data.pyg import load_pyg

        return load_pyg(meta, desc, meta.get("name", name), feats_type or "raw")
    if fmt == "npz":
        return _load_npz(meta, desc, meta.get("name", name), feats_type or "raw")
    from regnn.data.custom_dgl import load_dgl

    return load_dgl(meta, desc, meta.get("name", name), feats_type or "raw")


def _npz_ids(x: np.ndarray, n: int, what: str) -> torch.Tensor:
    """Sorted target ids from an id array or a boolean mask over the n target nodes."""
    x = x.reshape(-1)
    if x.dtype == bool:
        if x.size != n:
            raise DataError(f"{what} is a boolean mask of {x.size} entries but there are {n} target nodes")
        return torch.from_numpy(np.flatnonzero(x)).long()
    return torch.from_numpy(np.sort(exact_ints(x, what)))  # range: HeteroDataset, naming the file (_dataset)


def _named_arrays(z: dict, gfile: Path) -> tuple[dict, dict, dict]:
    """The graph file's edges (per canonical relation), node counts and raw features (per node type)."""
    edges, counts, raw = {}, {}, {}
    for key, a in z.items():
        kind, _, rest = key.partition(":")
        if kind == "edges":
            cet = tuple(rest.split(":"))
            if len(cet) != 3 or not all(cet):
                raise DataError(f"{gfile}: array {key!r} must be named edges:<src type>:<relation>:<dst type>")
            if a.ndim != 2 or a.shape[0] != 2:
                raise DataError(f"{gfile}: {key} has shape {a.shape}; it must be (2, edges): sources, destinations")
            ids = exact_ints(a, f"{gfile}: {key}")
            edges[cet] = (torch.from_numpy(ids[0].copy()), torch.from_numpy(ids[1].copy()))
        elif kind == "num_nodes" and rest:
            counts[rest] = int(exact_ints(a.reshape(-1)[:1], f"{gfile}: {key}")[0]) if a.size == 1 else -1
            if counts[rest] < 0:
                raise DataError(f"{gfile}: {key} must be one non-negative whole number")
            if counts[rest] > MAX_NODES:
                raise DataError(
                    f"{gfile}: {key} is {counts[rest]:,}; at most {MAX_NODES:,} nodes of a type are "
                    "supported (a type without features gets a learnable vector per node)"
                )
        elif kind == "features" and rest:
            raw[rest] = check_features(a, f"{gfile}: {key}")
        elif key not in ("labels", "train", "val", "test"):
            raise DataError(
                f"{gfile}: unknown array {key!r}; arrays are edges:<src>:<relation>:<dst>, "
                f"num_nodes:<type>, features:<type>, labels, train, val, test ({DOC})"
            )
    return edges, counts, raw


def _load_npz(meta: dict, where: Path, name: str, feats_type: str) -> HeteroDataset:
    gfile = where.parent / need(meta, "graph", where, "the .npz file of edge, feature, label and split arrays")
    if (why := not_a_file(gfile)) is not None:
        raise DataError(
            f"{why.replace(' is missing', ' does not exist')}; write it with numpy.savez('{gfile.name}', "
            f"**arrays) ({DOC})"
        )
    z = read_array(gfile, USER_FIX)
    if not isinstance(z, dict):
        raise DataError(
            f"{gfile} is a scipy sparse matrix, not a file of named arrays; write it with numpy.savez ({DOC})"
        )
    target = need(meta, "target", where, "the labelled node type")
    edges, counts, raw = _named_arrays(z, gfile)
    if not edges:
        raise DataError(f"{gfile} holds no edges:<src>:<relation>:<dst> array; the graph needs at least one relation")
    types = sorted({t for s, _, d in edges for t in (s, d)} | set(counts) | set(raw))
    for t in types:
        if t in raw and counts.setdefault(t, raw[t].shape[0]) != raw[t].shape[0]:
            raise DataError(f"{gfile}: features:{t} has {raw[t].shape[0]} rows but num_nodes:{t} is {counts[t]}")
        if t not in counts:
            raise DataError(f"{gfile}: node type {t!r} has neither num_nodes:{t} nor features:{t}; add its count")
    if target not in counts:
        raise DataError(f"{where}: target {target!r} is not a node type of {gfile.name} ({types})")
    try:
        g = HeteroGraph(edges, counts)
    except DataError as e:
        raise DataError(f"{gfile}: {e}") from e
    n = counts[target]
    missing = [k for k in ("labels", "train", "val", "test") if k not in z]
    if missing:
        raise DataError(f"{gfile} lacks the arrays {missing}: labels per target node and train/val/test ids or masks")
    labels = torch.from_numpy(exact_ints(z["labels"].reshape(-1), f"{gfile}: labels"))
    if labels.shape[0] != n:
        raise DataError(f"{gfile}: labels has {labels.shape[0]} entries but there are {n} {target} nodes")
    splits = {s: _npz_ids(z[s], n, f"{gfile}: {s}") for s in ("train", "val", "test")}
    read = UserGraph.described(meta, where, gfile, g, target, labels, splits, raw, counts)
    return to_dataset(read, name, feats_type)


def save_npz(data: HeteroDataset, folder: str | Path) -> Path:
    """Writes a loaded or generated dataset in the npz format (graph.npz + dataset.yaml, both directions of every
    relation stored, `reverse: keep`), so that it trains through dataset=custom as a user's graph does. Types
    without features of their own (one-hot ids, zeros) get only their node count. Returns the yaml's path."""
    from regnn.data.scaling import is_placeholder

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    g, z = data.graph, {}
    for s, r, t in g.canonical_etypes:
        z[f"edges:{s}:{r}:{t}"] = np.stack([e.numpy() for e in g.edges(etype=(s, r, t))])
    for t in g.ntypes:
        x = data.features.get(t)
        if x is not None and not is_placeholder(x):
            z[f"features:{t}"] = x.to_dense().numpy()
        else:
            z[f"num_nodes:{t}"] = np.array(g.num_nodes(t))
    z["labels"] = data.known_labels()  # -1 where a node has no label (HeteroDataset stores it as class 0)
    for split in ("train", "val", "test"):
        z[split] = data.splits[split].numpy()
    np.savez(folder / "graph.npz", **z)
    meta = {
        "format": "npz",
        "graph": "graph.npz",
        "target": data.target,
        "reverse": "keep",
        "num_classes": int(data.num_classes),
        **({"classes": list(data.class_names)} if data.class_names else {}),
    }
    (folder / "dataset.yaml").write_text(yaml.safe_dump(meta))
    return folder / "dataset.yaml"
