"""A graph as a trained model knows it, by name: every node by its id, every class by its name, every relation and
feature column by its name, and what each node's label, split and feature row were. A run saves it beside its
model (runs/run_XX/graph.npz); a later graph is bound to it by those names, never by row position:

- `align` puts a graph's nodes into the order the model was trained in (the nodes it knew at their trained
  positions' order, new ones after them, sorted by id), its classes into the trained class ids by name and its
  feature columns into the trained order by name; a type without features of its own (one-hot ids: one learned
  input vector per node) gets, per node, the input column of its id, and a new node the mean of the type's columns
  (the type's mean learned vector). Another row order of the same files gives the same graph to the last bit.
- `Changes` says what differs from the trained graph in the user's terms: nodes added or removed per type, labels
  and splits changed (how many, which split), edges per relation, feature rows changed.

Types without ids of the user's (npz, DGL, the built-in datasets) are known by position: a position past the
trained count is a new node.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from regnn.errors import DataError

RECORD_FILE = "graph.npz"
SPLIT_CODES = {"train": 1, "val": 2, "test": 3}
MAX_MEAN_ENTRIES = 200_000_000  # new id-only nodes x the type's trained nodes: the mean rows' size bound


def row_hashes(x: torch.Tensor) -> np.ndarray:
    """A 64-bit hash of every row of x (dense or sparse, float32 bits): two rows with the same values hash equal,
    a changed value changes its row's hash. Not cryptographic: it tells a user which rows changed."""
    n, d = int(x.shape[0]), int(x.shape[1])
    rng = np.random.default_rng(0x5E9)
    coef = rng.integers(1, 2**63, size=d, dtype=np.uint64) | np.uint64(1)
    salt = rng.integers(1, 2**63, size=d, dtype=np.uint64)
    out = np.zeros(n, dtype=np.uint64)
    if x.is_sparse:
        x = x.coalesce()
        rows, cols = (a.numpy() for a in x.indices())
        bits = x.values().float().numpy().view(np.uint32).astype(np.uint64)
        keep = bits != 0  # an explicit zero is the same value as an absent one
        np.add.at(out, rows[keep], (bits[keep] + salt[cols[keep]]) * coef[cols[keep]])
        return out
    bits = x.float().contiguous().numpy().view(np.uint32).astype(np.uint64)
    with np.errstate(over="ignore"):
        contrib = np.where(bits != 0, (bits + salt[None, :]) * coef[None, :], np.uint64(0))
    return contrib.sum(axis=1, dtype=np.uint64) if d else out


def _edge_digest(u: np.ndarray, v: np.ndarray, n_dst: int) -> str:
    keys = np.sort(u.astype(np.int64) * max(n_dst, 1) + v.astype(np.int64))
    return hashlib.sha256(keys.tobytes()).hexdigest()


def _split_codes(data) -> np.ndarray:
    codes = np.zeros(data.graph.num_nodes(data.target), dtype=np.int8)
    for s, c in SPLIT_CODES.items():
        codes[data.splits[s].numpy()] = c
    return codes


@dataclass
class GraphRecord:
    """What a model was trained on, by name (see the module's text)."""

    counts: dict[str, int]
    ids: dict[str, np.ndarray]  # node type -> the user's ids by trained position (types without ids: absent)
    id_only: list[str]  # types without features of their own: one learned input vector per node
    classes: list[str] | None  # class names by class id (None: the classes are numbered only)
    labels: np.ndarray  # class id of every target node, -1: unlabelled
    split: np.ndarray  # SPLIT_CODES of every target node, 0: in no split
    relations: dict[str, dict]  # relation name -> {"ends": [source, destination], "edges": n, "digest": sha256}
    rows: dict[str, np.ndarray] = field(default_factory=dict)  # featured type -> row_hashes of its features
    columns: dict[str, list[str]] = field(default_factory=dict)  # type -> its feature columns' names, in order

    @classmethod
    def of(cls, data) -> "GraphRecord":
        from regnn.data.features import is_one_hot_ids

        g = data.graph
        id_only = sorted(t for t in g.ntypes if is_one_hot_ids(data.features[t]))
        return cls(
            counts={t: int(g.num_nodes(t)) for t in g.ntypes},
            ids={t: np.asarray(i).astype(str) for t, i in (data.node_ids or {}).items()},
            id_only=id_only,
            classes=list(data.class_names) if data.class_names else None,
            labels=data.known_labels().astype(np.int64),
            split=_split_codes(data),
            relations={
                e: {
                    "ends": [s, t],
                    "edges": int(g.num_edges((s, e, t))),
                    "digest": _edge_digest(*(a.numpy() for a in g.edges(etype=(s, e, t))), g.num_nodes(t)),
                }
                for s, e, t in g.canonical_etypes
            },
            rows={t: row_hashes(data.features[t]) for t in g.ntypes if t not in id_only},
            columns={t: list(c) for t, c in (data.feature_names or {}).items()},
        )

    def save(self, path: Path) -> None:
        meta = {
            "counts": self.counts,
            "id_only": self.id_only,
            "classes": self.classes,
            "relations": self.relations,
            "columns": self.columns,
        }
        arrays = {"meta": np.array(json.dumps(meta)), "labels": self.labels, "split": self.split}
        arrays |= {f"ids:{t}": np.asarray(i).astype(str) for t, i in self.ids.items()}
        arrays |= {f"rows:{t}": h for t, h in self.rows.items()}
        with open(path, "wb") as f:
            np.savez_compressed(f, **arrays)

    @classmethod
    def load(cls, path: Path) -> "GraphRecord":
        try:
            with np.load(path, allow_pickle=False) as z:
                meta = json.loads(str(z["meta"]))
                arrays = {k: z[k] for k in z.files}
        except (OSError, ValueError, KeyError, EOFError) as e:
            raise DataError(
                f"{path} is damaged or not the graph record a run writes ({str(e)[:120]}); copy the run folder "
                "again whole, or train the run again"
            ) from None
        return cls(
            counts={t: int(n) for t, n in meta["counts"].items()},
            ids={k[4:]: v for k, v in arrays.items() if k.startswith("ids:")},
            id_only=list(meta["id_only"]),
            classes=meta["classes"],
            labels=arrays["labels"],
            split=arrays["split"],
            relations=meta["relations"],
            rows={k[5:]: v for k, v in arrays.items() if k.startswith("rows:")},
            columns=meta.get("columns") or {},
        )

    def is_known_by_id(self, ntype: str) -> bool:
        return ntype in self.ids


@dataclass
class Changes:
    """What a graph changes against the record a model was trained on, in the user's terms."""

    new: dict[str, int] = field(default_factory=dict)  # node type -> nodes the model never saw
    removed: dict[str, int] = field(default_factory=dict)  # node type -> trained nodes the graph no longer has
    labels: dict[str, int] = field(default_factory=dict)  # split -> known target nodes whose label changed
    splits: int = 0  # known target nodes now in another split
    edges: dict[str, str] = field(default_factory=dict)  # relation -> what changed about its edges
    features: dict[str, int] = field(default_factory=dict)  # node type -> known nodes whose feature row changed
    reordered: bool = False  # the same nodes in another row order (not a change: bound by id)
    # known target nodes that lost their label or split (not a change of the model's inputs: nothing to score)
    unlabelled: int = 0

    @property
    def same(self) -> bool:
        return not (self.new or self.removed or self.labels or self.splits or self.edges or self.features)

    def lines(self) -> list[str]:
        out = [f"{n} new {t} nodes" for t, n in self.new.items()]
        out += [f"{n} {t} nodes removed" for t, n in self.removed.items()]
        out += [
            f"labels of {sum(self.labels.values())} known nodes changed ("
            + ", ".join(f"{n} {s}" for s, n in self.labels.items())
            + ")"
        ] * bool(self.labels)
        out += [f"{self.splits} known nodes moved to another split"] * bool(self.splits)
        # a relation's reverse changes as it does: named once
        out += [
            f"edges of {r}: {what}"
            for r, what in self.edges.items()
            if not (r.startswith("rev_") and self.edges.get(r[4:]) == what)
        ]
        out += [f"features of {n} known {t} nodes changed" for t, n in self.features.items()]
        return out

    def summary(self) -> str:
        return "; ".join(self.lines()) or "no change"

    def as_dict(self) -> dict:
        return dataclasses.asdict(self) | {"same": self.same}


@dataclass
class Aligned:
    """A graph bound to a model's record: the graph in the trained order, what changed, and which target nodes
    are new and how many of each target node's neighbours are."""

    data: object
    changes: Changes
    new_node: np.ndarray  # per target node (aligned order): the model never saw it
    new_neighbours: np.ndarray  # per target node: its in-neighbours (every relation) the model never saw


def _order(rec: GraphRecord, t: str, ids: np.ndarray | None, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(perm: the graph's positions in aligned order, trained position of each aligned node or -1 where new)."""
    if not rec.is_known_by_id(t):
        if ids is not None and rec.counts.get(t) is not None and t in rec.counts:
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
        gone, extra = [c for c in want if c not in have], [c for c in have if c not in want]
        if gone or extra:
            raise DataError(
                f"the {t} features were the columns {want} when the model trained; now "
                + (f"{gone} are missing" if gone else "")
                + (" and " if gone and extra else "")
                + (f"{extra} are new" if extra else "")
                + f"; give the {t} table those columns (or features: {want} in its description)"
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
            f"class {unknown[0]!r} is not one the model was trained on ({', '.join(rec.classes)}); classes are "
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
    features = {}
    for t, x in data.features.items():
        if t in rec.id_only:
            features[t] = _trained_inputs(trained[t], rec.counts[t], t)
        else:
            features[t] = _permuted_rows(x, perm[t])
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
    return Aligned(out, changes, new_node, new_neighbours)


def _num_classes(rec: GraphRecord) -> int:
    return int(rec.labels.max()) + 1 if rec.labels.size and rec.labels.max() >= 0 else 0


def _changes(data, rec: GraphRecord, trained: dict, perm: dict) -> Changes:
    ch = Changes()
    for t, pos in trained.items():
        new = int((pos < 0).sum())
        removed = rec.counts[t] - (len(pos) - new)
        if new:
            ch.new[t] = new
        if removed:
            ch.removed[t] = removed
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
    ch.unlabelled = int((((now_labels < 0) & (then_labels >= 0)) | ((now_split == 0) & (then_split > 0))).sum())
    g = data.graph
    for s, e, d in g.canonical_etypes:
        then = rec.relations.get(e)
        if then is None:
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
