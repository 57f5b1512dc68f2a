"""A graph as a trained model knows it, by name: every node by its id, every class by its name, every relation and
feature column by its name, and what each node's label, split and feature row were. A run saves it beside its
model (runs/run_XX/graph.npz); a later graph is bound to it by those names, never by row position
(regnn.data.graph_binding):

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
        g = data.graph
        id_only = sorted(t for t in g.ntypes if data.is_id_only(t))
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

    @classmethod
    def once(cls, data) -> "GraphRecord":
        """The record of data, made once per dataset object (every run of a cell saves the same one)."""
        rec = getattr(data, "_graph_record", None)
        if rec is None:
            rec = cls.of(data)
            object.__setattr__(data, "_graph_record", rec)
        return rec

    def same_graph(self, other: "GraphRecord") -> bool:
        """Whether two records are of one graph: the same nodes by id in one order, classes, labels, splits, edges
        and feature rows (two runs of a cell share one)."""
        eq = np.array_equal
        return (
            self.counts == other.counts
            and self.classes == other.classes
            and self.relations == other.relations
            and self.columns == other.columns
            and set(self.ids) == set(other.ids)
            and all(eq(self.ids[t], other.ids[t]) for t in self.ids)
            and set(self.rows) == set(other.rows)
            and all(eq(self.rows[t], other.rows[t]) for t in self.rows)
            and eq(self.labels, other.labels)
            and eq(self.split, other.split)
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
    labelled: int = 0  # known target nodes in no split that gained a label (not a change of the inputs either)
    examples: dict[str, list[str]] = field(default_factory=dict)  # "new <type>" / "removed <type>" -> a few ids

    @property
    def same(self) -> bool:
        return not (self.new or self.removed or self.labels or self.splits or self.edges or self.features)

    def lines(self) -> list[str]:
        def e(key: str) -> str:
            ids = self.examples.get(key)
            return f" ({', '.join(ids)}{', ...' if ids and len(ids) == 3 else ''})" if ids else ""

        out = [f"{n} new {t} nodes{e('new ' + t)}" for t, n in self.new.items()]
        out += [f"{n} {t} nodes removed{e('removed ' + t)}" for t, n in self.removed.items()]
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
