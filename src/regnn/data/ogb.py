"""OGB heterogeneous node-property datasets (ogbn-mag) through ogb's own DGL loader, with the official split.

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

import dgl
import numpy as np
import torch

from regnn.data.dataset import HeteroDataset
from regnn.data.features import one_hot_ids
from regnn.errors import DataError
from regnn.io_safe import torch_load, weights_only_torch_load

FEATURELESS = ("mean", "file", "learnable")


def _dataset_dir(name: str, root: Path) -> Path:
    d = root / "_".join(name.split("-"))
    return d.with_name(d.name + "_dgl") if d.with_name(d.name + "_dgl").exists() else d


def _open(name: str, root: Path):
    """ogb's DglNodePropPredDataset, with plain errors where it would prompt or fail on a missing network."""
    from ogb.nodeproppred import DglNodePropPredDataset
    import pandas as pd
    import ogb.nodeproppred as onp

    master = pd.read_csv(Path(onp.__file__).parent / "master.csv", index_col=0, keep_default_na=False)
    if name not in master:
        raise DataError(f"{name!r} is not an OGB node-property dataset; known: {sorted(master.columns)}")
    d, version = _dataset_dir(name, root), master[name]["version"]
    if d.is_dir() and not (d / f"RELEASE_v{version}.txt").exists():
        raise DataError(f"{d} exists but has no RELEASE_v{version}.txt, so ogb would ask on the terminal whether to "
                        "download it again; delete the folder to download it afresh, or add the file if the data "
                        "is current")
    has_data = (d / "processed" / "dgl_data_processed").exists() or (d / "raw" / "triplet-type-list.csv.gz").exists()
    try:
        with warnings.catch_warnings():  # ogb wraps read-only numpy arrays; harmless, as it copies them later
            warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
            return DglNodePropPredDataset(name=name, root=str(root))
    except (OSError, RuntimeError, ValueError) as e:  # URLError is an OSError
        if has_data:
            raise DataError(f"{d}: ogb could not read the dataset ({type(e).__name__}: {e}); a file is missing or "
                            "corrupt: delete the folder and download it again") from e
        raise DataError(f"{name} is not under {root} and could not be downloaded ({type(e).__name__}: {e}); "
                        f"download it on a machine with network (ogb.nodeproppred.DglNodePropPredDataset("
                        f"'{name}', root=...)) and copy the {d.name}/ folder to {root} (dataset.dir)") from e


def with_reverse_relations(g: dgl.DGLHeteroGraph) -> dgl.DGLHeteroGraph:
    """The graph with every relation also in the reverse direction, named rev_<name> (structure only)."""
    data = {}
    for s, e, t in g.canonical_etypes:
        u, v = g.edges(etype=(s, e, t))
        data[(s, e, t)] = (u, v)
        data[(t, f"rev_{e}", s)] = (v, u)
    return dgl.heterograph(data, num_nodes_dict={t: g.num_nodes(t) for t in g.ntypes})


def mean_neighbour_features(g: dgl.DGLHeteroGraph, feats: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Feature-less types take the mean of their featured in-neighbours, in rounds outward from featured types."""
    feats = dict(feats)
    while missing := [t for t in g.ntypes if t not in feats]:
        done = {}
        for t in missing:
            rels = [c for c in g.canonical_etypes if c[2] == t and c[0] in feats and g.num_edges(c)]
            if not rels:
                continue
            total = sum(dgl.ops.copy_u_sum(g[c], feats[c[0]]) for c in rels)
            count = sum(g.in_degrees(etype=c) for c in rels).clamp(min=1).to(total.dtype)
            done[t] = total / count.unsqueeze(-1)
        if not done:
            raise DataError(f"node types {missing} have no path to a node type with features, so "
                            "featureless=mean cannot give them features; use featureless=learnable or a feature_file")
        feats |= done
    return feats


def _read_feature_file(path: Path, types: list[str], num_nodes: dict[str, int]) -> dict[str, torch.Tensor]:
    if not path.is_file():
        raise DataError(f"feature file {path} does not exist; set dataset.feature_file to a .npz or .pt holding one "
                        f"(num_nodes, dim) array per node type {types}")
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
            raise DataError(f"{path} has no features for node type {t!r} (it holds {sorted(arrays)}); add them or "
                            "use featureless=mean")
        x = torch.as_tensor(np.asarray(arrays[t]), dtype=torch.float32)
        if x.dim() != 2 or x.shape[0] != num_nodes[t]:
            raise DataError(f"{path}: features of {t!r} have shape {tuple(x.shape)}, but there are {num_nodes[t]} "
                            f"{t} nodes; rows must be nodes in OGB's id order")
        out[t] = x
    return out


def load_ogb(name: str = "ogbn-mag", root: str | Path | None = None, featureless: str = "mean",
             feature_file: str | Path | None = None, display_name: str | None = None) -> HeteroDataset:
    if root is None:
        raise DataError(f"{name}: no data folder given; set dataset.dir to the folder that holds (or will hold) "
                        f"{'_'.join(name.split('-'))}/")
    if featureless not in FEATURELESS:
        raise DataError(f"featureless={featureless!r} is not one of {list(FEATURELESS)}")
    if featureless == "file" and not feature_file:
        raise DataError("featureless=file needs dataset.feature_file=/path/to/embeddings.npz")
    ds = _open(name, Path(root))
    g, label_dict = ds[0]
    if len(label_dict) != 1:
        raise DataError(f"{name}: labels for {sorted(label_dict)}; one labelled node type is supported")
    target, labels = next(iter(label_dict.items()))
    # ogb reads split/<name>/split_dict.pt, where present, with a plain torch.load, which unpickles whatever the
    # file holds; a copied dataset folder is data from elsewhere, so its torch.load is made weights-only here
    with warnings.catch_warnings(), weights_only_torch_load():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        split = ds.get_idx_split()
    splits = {ours: torch.as_tensor(split[theirs][target]).long().sort().values
              for ours, theirs in (("train", "train"), ("val", "valid"), ("test", "test"))}
    featured = {t: g.nodes[t].data["feat"].float() for t in g.ntypes if "feat" in g.nodes[t].data}
    graph = with_reverse_relations(g)
    num_nodes = {t: graph.num_nodes(t) for t in graph.ntypes}
    rest = [t for t in graph.ntypes if t not in featured]
    if featureless == "mean":
        feats = mean_neighbour_features(graph, featured)
    elif featureless == "file":
        feats = featured | _read_feature_file(Path(feature_file), rest, num_nodes)
    else:
        feats = featured | {t: one_hot_ids(num_nodes[t]) for t in rest}
    return HeteroDataset(name=display_name or name, graph=graph, features=feats, target=target,
                         labels=labels.view(-1).long(), splits=splits, num_classes=int(ds.num_classes))
