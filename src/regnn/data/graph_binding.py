"""A graph bound to the record of the graph a model trained on (regnn.data.graph_record), by name: its nodes put
into the trained order by id, its classes and feature columns by name, a new node of an id-only type given the
type's mean learned vector, and what differs from the trained graph said in the user's terms (Changes)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from regnn.data.graph_record import (
    MAX_MEAN_ENTRIES,
    SPLIT_CODES,
    Changes,
    GraphRecord,
    _edge_digest,
    _split_codes,
    row_hashes,
)
from regnn.errors import DataError


@dataclass
class Aligned:
    """A graph bound to a model's record: the graph in the trained order, what changed, and which target nodes
    are new and how many of each target node's neighbours are."""

    data: object
    changes: Changes
    new_node: np.ndarray  # per target node (aligned order): the model never saw it
    new_neighbours: np.ndarray  # per target node: its in-neighbours (every relation) the model never saw
    new_by_type: dict = None  # node type -> which of its nodes (aligned order) the model never saw
    in_reach: np.ndarray | None = None  # per target node: a new node lies in its receptive field (predict sets it)


def _order(rec: GraphRecord, t: str, ids: np.ndarray | None, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(perm: the graph's positions in aligned order, trained position of each aligned node or -1 where new)."""
    if not rec.is_known_by_id(t):
        if ids is not None:
            raise DataError(
                f"the model knows its {t} nodes by position (the graph it trained on gave them no ids) but this "
                f"graph gives them ids; predict on a graph of the format it trained on"
            )
        pos = np.arange(n)
        return pos, np.where(pos < rec.counts[t], pos, -1)
    if ids is None:
        raise DataError(
            f"the model knows its {t} nodes by their ids, but this graph gives them none; predict on a graph "
            "that names them (format: tables, or pyg with node_id)"
        )
    ids = np.asarray(ids).astype(str)
    at = pd.Index(rec.ids[t]).get_indexer(ids)
    known = np.flatnonzero(at >= 0)
    new = np.flatnonzero(at < 0)
    perm = np.concatenate([known[np.argsort(at[known], kind="stable")], new[np.argsort(ids[new], kind="stable")]])
    return perm, at[perm]


def _permuted_rows(x: torch.Tensor, perm: np.ndarray) -> torch.Tensor:
    idx = torch.from_numpy(perm.astype(np.int64))
    if not x.is_sparse:
        return x.index_select(0, idx)
    x = x.coalesce()
    inv = torch.empty_like(idx)
    inv[idx] = torch.arange(len(idx))
    i = x.indices().clone()
    i[0] = inv[i[0]]
    return torch.sparse_coo_tensor(i, x.values(), (len(perm), x.shape[1]), check_invariants=False).coalesce()


def _trained_inputs(trained_pos: np.ndarray, n_trained: int, t: str) -> torch.Tensor:
    """The one-hot input of every node of an id-only type over the trained nodes: the column of its id, or for a
    new node every column at 1/n_trained (its input vector: the type's mean learned vector)."""
    known = np.flatnonzero(trained_pos >= 0)
    new = np.flatnonzero(trained_pos < 0)
    if len(new) * n_trained > MAX_MEAN_ENTRIES:
        raise DataError(
            f"{len(new):,} new {t} nodes, each given the mean of {n_trained:,} learned vectors, would take "
            f"{len(new) * n_trained:,} entries; predict on a graph with fewer new {t} nodes, or train on this one"
        )
    rows = np.concatenate([known, np.repeat(new, n_trained)])
    cols = np.concatenate([trained_pos[known], np.tile(np.arange(n_trained), len(new))])
    vals = np.concatenate([np.ones(len(known)), np.full(len(new) * n_trained, 1.0 / max(n_trained, 1))])
    idx = torch.from_numpy(np.vstack([rows, cols]).astype(np.int64))
    shape = (len(trained_pos), n_trained)
    return torch.sparse_coo_tensor(
        idx, torch.from_numpy(vals.astype(np.float32)), shape, check_invariants=False
    ).coalesce()


def _by_column_name(data, rec: GraphRecord) -> None:
    """Each type's feature columns in the trained order, by name; a column missing or added is refused."""
    for t, want in rec.columns.items():
        have = list((data.feature_names or {}).get(t) or [])
        if have == want or t in rec.id_only:
            continue
        if not have:
            raise DataError(
                f"the model's {t} features are the named columns {ascii(want)} of a tables graph, and this graph "
                "names none (npz, PyG and DGL features have no column names): predict on a tables graph with "
                "those columns"
            )
        gone, extra = [c for c in want if c not in have], [c for c in have if c not in want]
        if gone or extra:
            raise DataError(
                f"the {t} features were the columns {ascii(want)} when the model trained; now "
                + (f"{ascii(gone)} are missing" if gone else "")
                + (" and " if gone and extra else "")
                + (f"{ascii(extra)} are new" if extra else "")
                + f"; give the {t} table those columns (or features: {ascii(want)} in its description)"
            )
        x = data.features[t]
        order = torch.tensor([have.index(c) for c in want])
        data.features[t] = x.index_select(1, order) if not x.is_sparse else x.to_dense().index_select(1, order)
        data.feature_names[t] = list(want)


def _class_codes(data, rec: GraphRecord) -> np.ndarray:
    """The graph's labels as the model's class ids (by name); -1 unlabelled. A class the model does not know is
    refused, naming it."""
    labels = data.known_labels()
    if rec.classes is None or not data.class_names:
        return labels
    at = pd.Index(rec.classes).get_indexer([str(c) for c in data.class_names])
    used = np.unique(labels[labels >= 0])
    unknown = [data.class_names[c] for c in used if at[c] < 0]
    if unknown:
        raise DataError(
            f"class {ascii(str(unknown[0]))} is not one the model was trained on "
            f"({', '.join(ascii(str(c)) for c in rec.classes)}); classes are "
            "bound by name: relabel those nodes with a class it knows, leave them unlabelled, or train on this graph"
        )
    out = labels.copy()
    out[labels >= 0] = at[labels[labels >= 0]]
    return out


def align(data, rec: GraphRecord, scale=None):
    """data (a HeteroDataset read for predicting, features as stored) bound to the record by name: see the
    module's text; scale(dataset) then scales its features as the model's were (before they are compared with the
    record's). Returns an Aligned, or None for a graph of other node types (the schema check names them)."""
    from regnn.data.dataset import HeteroDataset, empty_splits_allowed
    from regnn.data.hetero import HeteroGraph

    g = data.graph
    missing = [t for t in rec.counts if t not in g.ntypes]
    if missing or set(g.ntypes) - set(rec.counts):
        return None  # another schema: the schema check names it
    _by_column_name(data, rec)
    perm, trained, inv = {}, {}, {}
    ids = data.node_ids or {}
    for t in g.ntypes:
        perm[t], trained[t] = _order(rec, t, ids.get(t), g.num_nodes(t))
        inv[t] = np.empty(len(perm[t]), dtype=np.int64)
        inv[t][perm[t]] = np.arange(len(perm[t]))
    edges = {}
    for s, e, d in g.canonical_etypes:
        u, v = (a.numpy() for a in g.edges(etype=(s, e, d)))
        # the edges keep their rows' order: the same edge table with its nodes' rows reordered sums every node's
        # messages in the same order, so its numbers are the same to the last bit
        edges[(s, e, d)] = (torch.from_numpy(inv[s][u]), torch.from_numpy(inv[d][v]))
    graph = HeteroGraph(edges, {t: len(p) for t, p in perm.items()})
    features = {
        t: _trained_inputs(trained[t], rec.counts[t], t) if t in rec.id_only else _permuted_rows(x, perm[t])
        for t, x in data.features.items()
    }
    tgt = data.target
    labels = torch.from_numpy(_class_codes(data, rec)[perm[tgt]])
    unlabelled = labels < 0
    splits = {s: torch.sort(torch.from_numpy(inv[tgt][data.splits[s].numpy()])).values for s in data.splits}
    with empty_splits_allowed():
        out = HeteroDataset(
            name=data.name,
            graph=graph,
            features=features,
            target=tgt,
            labels=labels.clamp(min=0),
            splits=splits,
            num_classes=len(rec.classes) if rec.classes else max(data.num_classes, _num_classes(rec)),
            node_ids={t: np.asarray(i)[perm[t]] for t, i in ids.items()} or None,
            class_names=list(rec.classes) if rec.classes else data.class_names,
            unlabelled=unlabelled if bool(unlabelled.any()) else None,
            feature_names=data.feature_names,
            column_encoding=data.column_encoding,
            unseen={t: np.asarray(u)[perm[t]] for t, u in (data.unseen or {}).items()} or None,
        )
    out.id_only_types = frozenset(rec.id_only)
    if scale is not None:
        scale(out)
    changes = _changes(out, rec, trained, perm)
    new_node = trained[tgt] < 0
    new_neighbours = np.zeros(len(new_node), dtype=np.int64)
    for s, _, d in graph.canonical_etypes:
        if d == tgt:
            u, v = (a.numpy() for a in graph.edges(etype=(s, _, d)))
            np.add.at(new_neighbours, v, (trained[s][u] < 0).astype(np.int64))
    return Aligned(out, changes, new_node, new_neighbours, {t: p < 0 for t, p in trained.items()})


def _num_classes(rec: GraphRecord) -> int:
    return int(rec.labels.max()) + 1 if rec.labels.size and rec.labels.max() >= 0 else 0


def _changes(data, rec: GraphRecord, trained: dict, perm: dict) -> Changes:
    ch = Changes()
    for t, pos in trained.items():
        new = int((pos < 0).sum())
        removed = rec.counts[t] - (len(pos) - new)
        if new:
            ch.new[t] = new
            ids = (data.node_ids or {}).get(t)
            if ids is not None:
                ch.examples[f"new {t}"] = [ascii(str(i)) for i in np.asarray(ids)[pos < 0][:3]]
        if removed:
            ch.removed[t] = removed
            if rec.is_known_by_id(t):
                gone = np.setdiff1d(np.arange(rec.counts[t]), pos[pos >= 0])[:3]
                ch.examples[f"removed {t}"] = [ascii(str(i)) for i in rec.ids[t][gone]]
        if (pos >= 0).all() and not np.array_equal(perm[t], np.arange(len(perm[t]))):
            ch.reordered = True
    tp = trained[data.target]
    known = np.flatnonzero(tp >= 0)
    now_labels, then_labels = data.known_labels()[known], rec.labels[tp[known]]
    now_split, then_split = _split_codes(data)[known], rec.split[tp[known]]
    moved = (now_labels != then_labels) & (now_labels >= 0) & (then_labels >= 0)
    names = {0: "no split", **{c: s for s, c in SPLIT_CODES.items()}}
    for c in np.unique(then_split[moved]):
        ch.labels[names[int(c)]] = int((moved & (then_split == c)).sum())
    ch.splits = int(((now_split != then_split) & (now_split > 0)).sum())
    ch.labelled = int(((now_labels >= 0) & (then_labels < 0)).sum())
    ch.unlabelled = int((((now_labels < 0) & (then_labels >= 0)) | ((now_split == 0) & (then_split > 0))).sum())
    _edge_changes(ch, data.graph, rec, trained)
    for t, then in rec.rows.items():
        if t not in data.features:
            continue
        pos = trained[t]
        known_t = np.flatnonzero(pos >= 0)
        if not len(known_t):
            continue
        diff = int((row_hashes(data.features[t])[known_t] != then[pos[known_t]]).sum())
        if diff:
            ch.features[t] = diff
    return ch


def within_reach(graph, seeds: dict[str, np.ndarray], hops: int) -> dict[str, np.ndarray]:
    """Per node type, the nodes that some seed node reaches along at most `hops` edges (messages flow from an
    edge's source to its destination): the nodes whose `hops`-layer receptive field holds a seed."""
    reached = {t: np.asarray(seeds.get(t, np.zeros(graph.num_nodes(t), bool)), bool).copy() for t in graph.ntypes}
    edges = {c: tuple(x.numpy() for x in graph.edges(etype=c)) for c in graph.canonical_etypes}
    for _ in range(hops):
        step = {t: r.copy() for t, r in reached.items()}
        for (s, _, d), (u, v) in edges.items():
            step[d][v[reached[s][u]]] = True
        if all(np.array_equal(step[t], reached[t]) for t in reached):
            break
        reached = step
    return reached


def _edge_changes(ch: Changes, g, rec: GraphRecord, trained: dict) -> None:
    """Per relation: the edges then and now, how many touch new nodes, and whether those among known nodes
    changed (where no node of its ends was removed; else only the counts can tell)."""
    now = {e for _, e, _ in g.canonical_etypes}
    for e in rec.relations:
        if e not in now:
            ch.edges[e] = "the relation is gone"
    for s, e, d in g.canonical_etypes:
        then = rec.relations.get(e)
        if then is None or then["ends"] != [s, d]:
            ch.edges[e] = "a relation the model never saw"
            continue
        u, v = (a.numpy() for a in g.edges(etype=(s, e, d)))
        old = (trained[s][u] >= 0) & (trained[d][v] >= 0)
        n_new = int((~old).sum())
        if not ch.removed.get(s) and not ch.removed.get(d):
            same = _edge_digest(trained[s][u[old]], trained[d][v[old]], rec.counts[d]) == then["digest"]
        else:
            same = int(old.sum()) == then["edges"] and n_new == 0
        if not same or n_new:
            parts = [f"{then['edges']} then, {len(u)} now"]
            if n_new:
                parts.append(f"{n_new} touch new nodes")
            if not same:
                parts.append(
                    "edges among known nodes changed"
                    if not ch.removed.get(s) and not ch.removed.get(d)
                    else "nodes were removed"
                )
            ch.edges[e] = ", ".join(parts)
