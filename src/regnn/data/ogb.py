"""OGB heterogeneous node-property datasets (ogbn-mag) through ogb's own raw-file readers, with the official split.

Only the labelled type (ogbn-mag: paper, 128-d word2vec features) has input features. The others get theirs by
`featureless`:
    mean       the mean of the features of their neighbours that have features, type by type outward from the
               featured type (ogbn-mag: authors and fields of study average their papers, institutions their
               authors); nodes without such neighbours get zeros. The default.
    file       read from `feature_file`, e.g. the metapath2vec embeddings the paper used: a .npz or .pt holding
               one (num_nodes, dim) array per feature-less node type, keyed by type name.
    learnable  one-hot ids: a learnable embedding per node (the mini-batch trainer keeps them as sparse
               `embed_dim`-d embeddings; the full-batch trainer as a linear map of the ids).
Every relation is kept in both directions, each its own relation type (reverse names are `rev_<name>`).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import torch

from regnn.data.dataset import HeteroDataset
from regnn.data.features import one_hot_ids
from regnn.data.hetero import HeteroGraph
from regnn.errors import DataError
from regnn.data.safe_load import torch_load

FEATURELESS = ("mean", "file", "learnable")


def _dataset_dir(name: str, root: Path) -> Path:
    d = root / "_".join(name.split("-"))
    return d.with_name(d.name + "_dgl") if d.with_name(d.name + "_dgl").exists() else d


def _meta(name: str):
    import ogb.nodeproppred as onp
    import pandas as pd

    master = pd.read_csv(Path(onp.__file__).parent / "master.csv", index_col=0, keep_default_na=False)
    if name not in master:
        raise DataError(f"{name!r} is not an OGB node-property dataset; known: {sorted(master.columns)}")
    return master[name]


def _files(meta, key: str) -> list[str]:
    return [] if meta[key] == "None" else meta[key].split(",")


def _open(name: str, root: Path):
    """The graph dict, label dict and split dict of an OGB heterogeneous dataset, read from its raw files by ogb's
    own readers (ogb's processed cache is a pickle; the raw CSVs are plain data). A folder without raw files is
    downloaded by ogb's NodePropPredDataset first, with plain errors where it would prompt or fail on a missing
    network."""
    from ogb.io.read_graph_raw import read_csv_heterograph_raw, read_node_label_hetero, read_nodesplitidx_split_hetero

    meta = _meta(name)
    d, version = _dataset_dir(name, root), meta["version"]
    if meta["is hetero"] != "True" or meta["binary"] == "True":
        raise DataError(f"{name} is not a heterogeneous OGB dataset in CSV form; regnn reads those (ogbn-mag)")
    if d.is_dir() and not (d / f"RELEASE_v{version}.txt").exists():
        raise DataError(
            f"{d} exists but has no RELEASE_v{version}.txt, so ogb would ask on the terminal whether to "
            "download it again; delete the folder to download it afresh, or add the file if the data "
            "is current"
        )
    raw = d / "raw"
    if not (raw / "triplet-type-list.csv.gz").exists():
        from ogb.nodeproppred import NodePropPredDataset

        try:
            NodePropPredDataset(name=name, root=str(root))
        except (OSError, RuntimeError, ValueError) as e:  # URLError is an OSError
            raise DataError(
                f"{name} is not under {root} and could not be downloaded ({type(e).__name__}: {e}); "
                f"download it on a machine with network (ogb.nodeproppred.NodePropPredDataset("
                f"'{name}', root=...)) and copy the {d.name}/ folder to {root} (dataset.dir)"
            ) from e
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
            graph = read_csv_heterograph_raw(
                str(raw),
                add_inverse_edge=meta["add_inverse_edge"] == "True",
                additional_node_files=_files(meta, "additional node files"),
                additional_edge_files=_files(meta, "additional edge files"),
            )[0]
            labels = read_node_label_hetero(str(raw))
            split_dir = d / "split" / meta["split"]
            # ogb takes a split_dict.pt where one exists (read here without unpickling), else the CSVs
            split = (
                torch_load(split_dir / "split_dict.pt")
                if (split_dir / "split_dict.pt").is_file()
                else dict(zip(("train", "valid", "test"), read_nodesplitidx_split_hetero(str(split_dir))))
            )
    except (OSError, ValueError, KeyError, IndexError) as e:  # pandas' parser errors are ValueErrors
        raise DataError(
            f"{d}: ogb could not read the dataset ({type(e).__name__}: {str(e)[:160]}); a file is missing "
            "or corrupt: delete the folder and download it again"
        ) from e
    return graph, labels, split, int(meta["num classes"])


def with_reverse_relations(g: HeteroGraph) -> HeteroGraph:
    """The graph with every relation also in the reverse direction, named rev_<name> (structure only)."""
    return g.with_reverse(lambda e: f"rev_{e}")


def mean_neighbour_features(g: HeteroGraph, feats: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Feature-less types take the mean of their featured in-neighbours, in rounds outward from featured types."""
    feats = dict(feats)
    while missing := [t for t in g.ntypes if t not in feats]:
        done = {}
        for t in missing:
            rels = [c for c in g.canonical_etypes if c[2] == t and c[0] in feats and g.num_edges(c)]
            if not rels:
                continue
            x = feats[rels[0][0]]
            total = torch.zeros(g.num_nodes(t), x.shape[1], dtype=x.dtype)
            for c in rels:
                u, v = g.edges(etype=c)
                total.index_add_(0, v, feats[c[0]].index_select(0, u))
            count = sum(g.in_degrees(etype=c) for c in rels).clamp(min=1).to(total.dtype)
            done[t] = total / count.unsqueeze(-1)
        if not done:
            raise DataError(
                f"node types {missing} have no path to a node type with features, so "
                "featureless=mean cannot give them features; use featureless=learnable or a feature_file"
            )
        feats |= done
    return feats


def _read_feature_file(path: Path, types: list[str], num_nodes: dict[str, int]) -> dict[str, torch.Tensor]:
    if not path.is_file():
        raise DataError(
            f"feature file {path} does not exist; set dataset.feature_file to a .npz or .pt holding one "
            f"(num_nodes, dim) array per node type {types}"
        )
    if path.suffix == ".npz":
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    elif path.suffix == ".pt":
        arrays = torch_load(path)  # weights_only: a downloaded .pt must not run code when read
        if not isinstance(arrays, dict):
            raise DataError(f"{path} holds a {type(arrays).__name__}; it must hold a dict {{node type: tensor}}")
    else:
        raise DataError(f"feature file {path}: use .npz (one array per node type) or .pt (a dict of tensors)")
    out = {}
    for t in types:
        if t not in arrays:
            raise DataError(
                f"{path} has no features for node type {t!r} (it holds {sorted(arrays)}); add them or "
                "use featureless=mean"
            )
        x = torch.as_tensor(np.asarray(arrays[t]), dtype=torch.float32).contiguous()  # rows are gathered per batch
        if x.dim() != 2 or x.shape[0] != num_nodes[t]:
            raise DataError(
                f"{path}: features of {t!r} have shape {tuple(x.shape)}, but there are {num_nodes[t]} "
                f"{t} nodes; rows must be nodes in OGB's id order"
            )
        out[t] = x
    return out


def load_ogb(
    name: str = "ogbn-mag",
    root: str | Path | None = None,
    featureless: str = "mean",
    feature_file: str | Path | None = None,
    display_name: str | None = None,
) -> HeteroDataset:
    if root is None:
        raise DataError(
            f"{name}: no data folder given; set dataset.dir to the folder that holds (or will hold) "
            f"{'_'.join(name.split('-'))}/"
        )
    if featureless not in FEATURELESS:
        raise DataError(f"featureless={featureless!r} is not one of {list(FEATURELESS)}")
    if featureless == "file" and not feature_file:
        raise DataError("featureless=file needs dataset.feature_file=/path/to/embeddings.npz")
    raw, label_dict, split, num_classes = _open(name, Path(root))
    if len(label_dict) != 1:
        raise DataError(f"{name}: labels for {sorted(label_dict)}; one labelled node type is supported")
    target, labels = next(iter(label_dict.items()))
    labels = torch.from_numpy(np.array(labels))
    splits = {
        ours: torch.as_tensor(np.array(split[theirs][target])).long().sort().values
        for ours, theirs in (("train", "train"), ("val", "valid"), ("test", "test"))
    }
    g = HeteroGraph(
        {
            cet: (torch.from_numpy(np.ascontiguousarray(e[0])), torch.from_numpy(np.ascontiguousarray(e[1])))
            for cet, e in raw["edge_index_dict"].items()
        },
        raw["num_nodes_dict"],
    )
    # row-major: ogb's CSV reader gives column-major arrays, whose rows a sampled batch gathers several times slower
    featured = {
        t: torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
        for t, x in raw["node_feat_dict"].items()
        if x is not None
    }
    graph = with_reverse_relations(g)
    num_nodes = {t: graph.num_nodes(t) for t in graph.ntypes}
    rest = [t for t in graph.ntypes if t not in featured]
    if featureless == "mean":
        feats = mean_neighbour_features(graph, featured)
    elif featureless == "file":
        feats = featured | _read_feature_file(Path(feature_file), rest, num_nodes)
    else:
        feats = featured | {t: one_hot_ids(num_nodes[t]) for t in rest}
    return HeteroDataset(
        name=display_name or name,
        graph=graph,
        features=feats,
        target=target,
        labels=labels.view(-1).long(),
        splits=splits,
        num_classes=num_classes,
    )
