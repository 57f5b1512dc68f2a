"""PyG's HeteroData in and out: `from_heterodata`, `to_heterodata`, and `format: pyg` for one saved to disk.

A HeteroData is saved as its tensors and names only, `torch.save(data.to_dict(), "graph.pt")`, and read here
with `torch.load(weights_only=True)`: no code is unpickled, and reading it needs neither PyG nor DGL. What is read:

    data[t].x                  features of node type t (dense or sparse); a type without x needs data[t].num_nodes
                               and gets one-hot ids
    data[s, r, d].edge_index   (2, E) source and destination positions, one per relation
    data[target].y             class per target node, -1 for an unlabelled one (in no split)
    data[target].train_mask, val_mask, test_mask (boolean), or train_idx, val_idx, test_idx (positions)
    data[t].node_id            optional: the user's ids of t's nodes (a tensor or a list), kept in predictions
    data[target].class_names   optional: the class names, by class id

    format: pyg
    graph: graph.pt
    target: paper
    reverse: keep   # keep: the graph holds both directions (T.ToUndirected); add (default): reverse every relation
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from regnn.names import SPLITS
from regnn.data.array_checks import check_features, exact_ints
from regnn.data.custom_schema import DOC
from regnn.data.dataset import HeteroDataset
from regnn.data.hetero import HeteroGraph
from regnn.data.user_graph import UserGraph, to_dataset
from regnn.errors import DataError


def _stores(d: dict, where: str) -> tuple[dict[str, dict], dict[tuple, dict]]:
    nodes = {k: v for k, v in d.items() if isinstance(k, str) and k != "_global_store"}
    edges = {k: v for k, v in d.items() if isinstance(k, tuple)}
    if not nodes or not edges:
        raise DataError(
            f"{where} holds {'no node types' if not nodes else 'no relations'}; save a HeteroData with "
            f"torch.save(data.to_dict(), path) ({DOC})"
        )
    for k in edges:
        if len(k) != 3 or not all(isinstance(x, str) for x in k):
            raise DataError(f"{where}: relation {k!r} must be (source type, name, destination type)")
    return nodes, edges


def _node_count(t: str, store: dict, where: str) -> int:
    x, n = store.get("x"), store.get("num_nodes")
    if x is not None:
        if n is not None and int(n) != x.shape[0]:
            raise DataError(f"{where}: {t}.x has {x.shape[0]} rows but {t}.num_nodes is {int(n)}")
        return int(x.shape[0])
    if n is None:
        raise DataError(f"{where}: node type {t!r} has neither x nor num_nodes; set data[{t!r}].num_nodes")
    return int(n)


def _split(store: dict, s: str, n: int, where: str) -> torch.Tensor:
    if f"{s}_mask" in store:
        m = torch.as_tensor(store[f"{s}_mask"])
        if m.dtype != torch.bool or m.dim() != 1 or m.numel() != n:
            raise DataError(
                f"{where}: {s}_mask must be a boolean vector over the {n} target nodes, got "
                f"{tuple(m.shape)} {m.dtype} (several splits as columns: pick one)"
            )
        return torch.nonzero(m).view(-1)
    if f"{s}_idx" in store:
        return torch.from_numpy(np.sort(exact_ints(torch.as_tensor(store[f"{s}_idx"]).view(-1), f"{where}: {s}_idx")))
    raise DataError(f"{where}: the target type has neither {s}_mask nor {s}_idx; give every split ({DOC})")


def _ids(value, n: int, what: str) -> np.ndarray:
    a = np.asarray(value.numpy() if isinstance(value, torch.Tensor) else value).astype(str).reshape(-1)
    if a.size != n:
        raise DataError(f"{what} holds {a.size} ids for {n} nodes")
    if len(np.unique(a)) != n:
        raise DataError(f"{what} lists an id twice; node ids of a type must be unique")
    return a


def _features(x, what: str) -> torch.Tensor | None:
    """A node type's x, checked as every format's features are (real, two-dimensional, finite), sparse or dense."""
    if x is None:
        return None
    if x.layout not in (torch.strided, torch.sparse_coo):  # CSR, CSC and blocked layouts
        x = x.to_sparse_coo()
    if not x.is_sparse:
        return torch.from_numpy(np.array(check_features(x.numpy(), what), dtype=np.float32))
    import scipy.sparse as sp

    x = x.coalesce()
    if x.dim() != 2:
        raise DataError(f"{what} has shape {tuple(x.shape)}; features must be (nodes, dim)")
    idx, values = x.indices().numpy(), x.values().numpy()
    check_features(sp.coo_matrix((values, (idx[0], idx[1])), shape=tuple(x.shape)), f"{what} (sparse)")
    return x.float().coalesce()


def from_pyg_dict(
    d: dict,
    target: str,
    name: str = "custom",
    reverse: str | dict = "add",
    num_classes: int | None = None,
    feats_type: str = "raw",
    where: str = "HeteroData",
) -> HeteroDataset:
    """A HeteroDataset from HeteroData.to_dict()'s form (names and tensors). The relations keep their order and
    names (reverse: keep) or gain reversed copies rev_<name> (reverse: add)."""

    nodes, rels = _stores(d, where)
    if target not in nodes:
        raise DataError(f"{where}: target {target!r} is not a node type ({list(nodes)})")
    counts = {t: _node_count(t, s, where) for t, s in nodes.items()}
    edges = {}
    for (s, r, t), store in rels.items():
        for end in (s, t):
            if end not in counts:
                raise DataError(f"{where}: relation {(s, r, t)} joins node type {end!r}, which has no store")
        ei = store.get("edge_index")
        if ei is None or ei.dim() != 2 or ei.shape[0] != 2:
            raise DataError(f"{where}: {(s, r, t)} needs edge_index of shape (2, E)")
        ei = torch.from_numpy(exact_ints(ei, f"{where}: {(s, r, t)} edge_index"))
        edges[(s, r, t)] = (ei[0].contiguous(), ei[1].contiguous())
    try:
        graph = HeteroGraph(edges, counts)
    except DataError as e:
        raise DataError(f"{where}: {e}") from None
    ts, n = nodes[target], counts[target]
    if "y" not in ts:
        raise DataError(f"{where}: the target type {target!r} has no y (class per node, -1: unlabelled)")
    labels = torch.from_numpy(exact_ints(torch.as_tensor(ts["y"]).view(-1), f"{where}: {target}.y"))
    ids = {t: _ids(s["node_id"], counts[t], f"{where}: {t}.node_id") for t, s in nodes.items() if "node_id" in s}
    names = [str(c) for c in ts["class_names"]] if ts.get("class_names") is not None else None
    read = UserGraph(
        Path(where),
        Path(where),
        graph,
        target,
        labels,
        {s: _split(ts, s, n, where) for s in SPLITS},
        {t: _features(store.get("x"), f"{where}: {t}.x") for t, store in nodes.items()},
        reverse=reverse,
        num_classes=num_classes if num_classes is not None else (len(names) if names else None),
        classes=names,
        num_nodes=counts,
        node_ids=ids or None,
    )
    return to_dataset(read, name, feats_type)


def from_heterodata(
    data, target: str, name: str = "custom", reverse: str = "add", num_classes: int | None = None
) -> HeteroDataset:
    """regnn's dataset from a PyG HeteroData (see the module's docstring for the attributes read)."""
    return from_pyg_dict(data.to_dict(), target, name, reverse, num_classes)


def to_heterodata(ds: HeteroDataset):
    """A PyG HeteroData of the dataset: x per type (none for one-hot ids: num_nodes instead), edge_index per
    relation, y (-1 unlabelled) and train/val/test masks on the target, node_id and class_names where the data has
    them. Needs torch-geometric (pip install 'regnn[pyg]')."""
    try:
        from torch_geometric.data import HeteroData
    except ImportError:
        raise DataError("to_heterodata needs PyG: pip install torch-geometric (or regnn[pyg])") from None
    from regnn.data.scaling import is_placeholder

    out, g = HeteroData(), ds.graph
    for t in g.ntypes:
        x = ds.features[t]
        if is_placeholder(x):
            out[t].num_nodes = g.num_nodes(t)
        else:
            out[t].x = x
        if ds.node_ids and t in ds.node_ids:
            out[t].node_id = list(map(str, ds.node_ids[t]))
    for s, r, t in g.canonical_etypes:
        out[s, r, t].edge_index = torch.stack(g.edges(etype=(s, r, t)))
    n = g.num_nodes(ds.target)
    out[ds.target].y = torch.from_numpy(ds.known_labels())
    for s in SPLITS:
        mask = torch.zeros(n, dtype=torch.bool)
        mask[ds.splits[s]] = True
        out[ds.target][f"{s}_mask"] = mask
    if ds.class_names:
        out[ds.target].class_names = list(ds.class_names)
    return out


def save_pyg(ds: HeteroDataset, folder: str | Path) -> Path:
    """Writes the dataset as a saved HeteroData (graph.pt, tensors and names only) and its dataset.yaml (reverse:
    keep: every relation is stored). Returns the yaml's path."""
    import yaml

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    torch.save(to_heterodata(ds).to_dict(), folder / "graph.pt")
    meta = {
        "format": "pyg",
        "graph": "graph.pt",
        "target": ds.target,
        "reverse": "keep",
        "num_classes": int(ds.num_classes),
    }
    (folder / "dataset.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
    return folder / "dataset.yaml"


def load_pyg(meta: dict, where: Path, name: str, feats_type: str) -> HeteroDataset:
    from regnn.data.safe_load import torch_load

    gfile = where.parent / str(meta.get("graph", "graph.pt"))
    if not gfile.is_file():
        raise DataError(
            f"{gfile} does not exist; save the HeteroData with torch.save(data.to_dict(), '{gfile.name}') ({DOC})"
        )
    d = torch_load(gfile)
    if not isinstance(d, dict):
        raise DataError(f"{gfile} is not a saved HeteroData dict; write it with torch.save(data.to_dict(), path)")
    if not meta.get("target"):
        raise DataError(f"{where}: key 'target' is missing (the labelled node type); {DOC}")
    return from_pyg_dict(
        d, str(meta["target"]), name, meta.get("reverse", "add"), meta.get("num_classes"), feats_type, str(gfile)
    )
