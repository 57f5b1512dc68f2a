"""A user's graph written by `dgl.save_graphs` (format: dgl, docs/custom_data.md): read with DGL where it is
installed, then held as arrays like every other format."""

from __future__ import annotations

from pathlib import Path

import torch

from regnn.data.array_checks import check_features, exact_ints
from regnn.data.custom_schema import DOC
from regnn.data.dataset import HeteroDataset
from regnn.data.hetero import HeteroGraph
from regnn.description import not_a_file
from regnn.data.user_graph import UserGraph, need, to_dataset
from regnn.errors import DataError


def _ids(key: str, g, target: str, extra: dict, n: int, where: Path) -> torch.Tensor:
    """Target-local ids from a mask in the target's ndata or a mask/id tensor in the saved labels dict."""
    nd = g.nodes[target].data
    if key in nd:
        x = nd[key]
    elif key in extra:
        x = extra[key]
    else:
        raise DataError(
            f"{where}: split key {key!r} is neither in the ndata of {target!r} ({sorted(nd)}) nor in "
            f"the saved labels dict ({sorted(extra)})"
        )
    x = torch.as_tensor(x).view(-1)
    if x.dtype == torch.bool or (x.numel() == n and key in nd):
        return torch.nonzero(x.bool()).view(-1)
    if x.is_floating_point():
        raise DataError(f"{where}: split {key!r} holds floats; give a boolean mask or integer node ids")
    return torch.from_numpy(exact_ints(x, f"{where}: split {key!r}")).sort().values


def _import_dgl(where: Path):
    try:
        import dgl
    except ImportError as e:
        raise DataError(
            f"{where}: format: dgl reads a dgl.save_graphs file, which needs DGL (pip install dgl), and "
            f"DGL is not installed here ({e}); install it, or write the graph as format: npz, which "
            f"needs nothing ({DOC})"
        ) from e
    return dgl


def _as_arrays(g) -> HeteroGraph:
    """A DGL heterograph's structure as a HeteroGraph (same types, same edge order)."""
    return HeteroGraph({cet: g.edges(etype=cet) for cet in g.canonical_etypes}, {t: g.num_nodes(t) for t in g.ntypes})


def _read_graph(meta: dict, where: Path):
    """The graph file named by the description: (its path, the chosen graph, the saved labels dict, the target
    type)."""
    gfile = where.parent / need(meta, "graph", where, "the file written by dgl.save_graphs")
    dgl = _import_dgl(where)
    if (why := not_a_file(gfile)) is not None:
        raise DataError(
            f"{why.replace(' is missing', ' does not exist')}; save your graph with "
            f"dgl.save_graphs('{gfile.name}', [g])"
        )
    try:
        graphs, extra = dgl.load_graphs(str(gfile))
    except Exception as e:  # DGL raises its own error types, with a C++ stack trace after the first line
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise DataError(
            f"{gfile} is not a graph file written by dgl.save_graphs (DGL: {first[-120:]}); save your "
            f"graph with dgl.save_graphs('{gfile.name}', [g]) ({DOC})"
        ) from e
    index = meta.get("graph_index", 0)
    if index >= len(graphs):
        raise DataError(
            f"{where}: graph_index {index}, but {gfile.name} holds {len(graphs)} graph(s); use 0..{len(graphs) - 1}"
        )
    g = graphs[index]
    target = need(meta, "target", where, "the labelled node type")
    if target not in g.ntypes:
        raise DataError(f"{where}: target {target!r} is not a node type of {gfile.name} ({g.ntypes})")
    return gfile, g, extra, target


def load_dgl(meta: dict, where: Path, name: str, feats_type: str) -> HeteroDataset:
    gfile, g, extra, target = _read_graph(meta, where)
    n = g.num_nodes(target)
    label_key = need(meta, "label", where, "the ndata key with the class ids of the target nodes")
    labels = g.nodes[target].data.get(label_key, extra.get(label_key))
    if labels is None:
        raise DataError(
            f"{where}: label key {label_key!r} is neither in the ndata of {target!r} "
            f"({sorted(g.nodes[target].data)}) nor in the saved labels dict ({sorted(extra)})"
        )
    labels = torch.as_tensor(labels)
    if labels.dim() == 2 and labels.shape[1] == 1:
        labels = labels.view(-1)
    if labels.dim() != 1 or labels.shape[0] != n:
        raise DataError(
            f"{where}: labels {label_key!r} have shape {tuple(labels.shape)} and dtype {labels.dtype}; "
            f"need one integer class id per {target} node ({n})"
        )
    labels = torch.from_numpy(exact_ints(labels, f"{gfile}: labels {label_key!r}"))  # 2.0 is 2; 2.5 is refused
    split_keys = need(meta, "splits", where, "train, val and test masks")
    missing = [s for s in ("train", "val", "test") if s not in split_keys]
    if missing:
        raise DataError(f"{where}: splits lacks {missing}; name a mask for each of train, val and test")
    splits = {s: _ids(str(split_keys[s]), g, target, extra, n, where) for s in ("train", "val", "test")}
    fkey = meta.get("features", "feat")
    if "features" in meta and not any(fkey in g.nodes[t].data for t in g.ntypes):
        keys = sorted({k for t in g.ntypes for k in g.nodes[t].data})
        raise DataError(
            f"{where}: features {fkey!r} is in the ndata of no node type of {gfile.name} (keys: {keys}); "
            "name the key that holds the features, or leave features out for one-hot ids"
        )
    raw = {
        t: (
            check_features(g.nodes[t].data[fkey], f"{gfile}: features {fkey!r} of {t!r}").float()
            if fkey in g.nodes[t].data
            else None
        )
        for t in g.ntypes
    }
    read = UserGraph.described(meta, where, gfile, _as_arrays(g), target, labels, splits, raw)
    return to_dataset(read, name, feats_type)
