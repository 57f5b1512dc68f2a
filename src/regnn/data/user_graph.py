"""What every reader of a user's graph (npz, DGL, tables, PyG) shares: the description's required keys and the one
tail that turns what a reader read (a UserGraph) into a HeteroDataset: one uniquely named edge type per relation
direction (with the reverses added), unlabelled nodes, feature selection, the class count and names, and the
dataset whose consistency errors name the user's file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from regnn.data.array_checks import class_count, unlabelled_outside_splits
from regnn.data.custom_schema import DOC, check_reverse
from regnn.data.dataset import HeteroDataset
from regnn.data.features import canonical_feats_type, select_features
from regnn.data.hetero import HeteroGraph
from regnn.errors import DataError


@dataclass
class UserGraph:
    """A user's graph as one reader read it, before the shared tail (to_dataset)."""

    where: Path  # the description: errors about its keys (reverse, num_classes, classes) name it
    source: Path  # the file holding labels and splits: errors about them name it
    graph: HeteroGraph  # the relations as stored
    target: str
    labels: torch.Tensor  # class id per target node; -1: unlabelled, outside the splits
    splits: dict[str, torch.Tensor]
    features: dict  # node type -> features as stored, None (or absent): none
    reverse: str | dict = "add"  # add | keep | {relation: its reverse} (unique_relations)
    num_classes: int | None = None  # declared; None: the largest label + 1
    classes: list | None = None  # declared class names, by class id
    node_ids: dict | None = None  # node type -> the user's ids, by local id
    every_class_in_train: bool = False  # refuse a class seen in val or test but never in train
    # node type -> count in the reader's order, the order of the features and so of the model's input layers and
    # their initialisation (a seed's numbers depend on it); None: the graph's order
    num_nodes: dict[str, int] | None = None
    feature_names: dict[str, list[str]] | None = None  # node type -> its feature columns' names (tables)
    column_encoding: dict | None = None  # node type -> its columns' encoders, fitted on the training nodes (tables)
    unseen: dict | None = None  # node type -> per node, its columns whose value the training nodes lacked

    @classmethod
    def described(cls, meta: dict, where: Path, source: Path, graph, target, labels, splits, features, num_nodes=None):
        """With the description's reverse, num_classes and classes keys (the npz and DGL formats)."""
        return cls(
            where,
            source,
            graph,
            target,
            labels,
            splits,
            features,
            reverse=meta.get("reverse", "add"),
            num_classes=meta.get("num_classes"),
            classes=meta.get("classes"),
            num_nodes=num_nodes,
        )


def to_dataset(g: UserGraph, name: str, feats_type: str) -> HeteroDataset:
    """The one tail of every user-graph reader."""
    graph = unique_relations(g.graph, g.reverse, g.where)
    labels, unlabelled = unlabelled_outside_splits(g.labels, g.splits, str(g.source))
    if g.every_class_in_train:
        _classes_in_train(labels, g.splits, g.classes, g.source)
    counts = g.num_nodes if g.num_nodes is not None else {t: graph.num_nodes(t) for t in graph.ntypes}
    features = select_features(g.features, counts, g.target, feats_type)
    num_classes = class_count(g.num_classes, labels, g.splits, str(g.where))
    if g.classes and len(g.classes) != num_classes:
        raise DataError(
            f"{g.where}: classes names {len(g.classes)} classes but the labels have {num_classes}; name "
            f"each class 0..{num_classes - 1} once ({DOC})"
        )
    return user_dataset(
        g.source,
        name=name,
        graph=graph,
        features=features,
        target=g.target,
        labels=labels,
        splits=g.splits,
        num_classes=num_classes,
        unlabelled=unlabelled,
        class_names=[str(c) for c in g.classes] if g.classes else None,
        node_ids=g.node_ids,
        feature_names={
            t: c
            for t, c in (g.feature_names or {}).items()
            if t == g.target or canonical_feats_type(feats_type) == "raw"
        }
        or None,
        column_encoding=g.column_encoding,
        unseen=g.unseen,
    )


def _classes_in_train(labels: torch.Tensor, splits: dict, names: list | None, path: Path) -> None:
    """A class met in validation or test but never in training cannot be learnt: refused, naming it."""
    seen = set(labels[splits["train"]].tolist())
    for s in ("val", "test"):
        only = sorted(set(labels[splits[s]].tolist()) - seen)
        if only:
            name = names[only[0]] if names else only[0]
            raise DataError(
                f"{path}: class {name!r} has nodes in {s} but none in train; the model cannot "
                "learn it: move some of its nodes to train, or drop the class"
            )


def need(meta: dict, key: str, where: Path, what: str):
    if meta.get(key) in (None, ""):
        raise DataError(f"{where}: key {key!r} is missing ({what}); {DOC}")
    return meta[key]


def unique_relations(g: HeteroGraph, reverse, where: Path) -> HeteroGraph:
    """Every relation direction its own uniquely named edge type (names repeated across types get src-/->dst).
    reverse: add (every relation reversed as rev_<name>), keep (the graph holds both directions) or {relation: its
    reverse} (those pairs are held; every other relation is reversed as with add)."""
    pairs = _reverse_pairs(g, reverse, where)
    held = set(pairs) | set(pairs.values())
    names = [e for _, e, _ in g.canonical_etypes]
    data, taken = {}, {}
    for s, e, t in g.canonical_etypes:
        e2 = e if names.count(e) == 1 else f"{s}-{e}->{t}"
        u, v = g.edges(etype=(s, e, t))
        out = [((s, e2, t), (u, v), f"relation {e} ({s}->{t})")]
        if reverse != "keep" and e not in held:
            out.append(((t, f"rev_{e2}", s), (v, u), f"the reverse of {e} ({t}->{s})"))
        for key, edges, what in out:
            if key[1] in taken:
                raise DataError(
                    f"{where}: {what} and {taken[key[1]]} are both named {key[1]}; rename one (regnn names the "
                    f"reverse of each relation rev_<name>), or where one is the other's reverse say so with "
                    f"reverse: {{{key[1].removeprefix('rev_')}: {key[1]}}}"
                )
            taken[key[1]], data[key] = what, edges
    return HeteroGraph(data, {t: g.num_nodes(t) for t in g.ntypes})


def _reverse_pairs(g: HeteroGraph, reverse, where: Path) -> dict[str, str]:
    """The pairs of relations declared each other's reverse ({} for add and keep), checked; with add, every
    undeclared pair the graph holds is refused, all named at once."""
    check_reverse(reverse, where)
    pairs = dict(reverse) if isinstance(reverse, dict) else {}
    names = {e for _, e, _ in g.canonical_etypes}
    for r in [*pairs, *pairs.values()]:
        if r not in names:
            raise DataError(
                f"{where}: reverse names relation {r!r}, which the graph lacks (relations: {sorted(names)})"
            )
    if reverse != "keep":
        declared = set(pairs) | set(pairs.values())
        found = [f for f in _held_reverses(g) if f[0] not in declared and f[1] not in declared]
        if found:
            listed = ", ".join(f"{a}: {b}" for a, b, _ in found)
            raise DataError(
                f"{where}: relations {'; '.join(w for _, _, w in found)} are each other's reverse, so the graph "
                "already holds both directions, which reverse: add would add again; declare such pairs with "
                f"reverse: {{{listed}}} (every other relation is still reversed), or set reverse: keep where the "
                "graph holds both directions of every relation"
            )
    return pairs


def _held_reverses(g: HeteroGraph) -> list[tuple[str, str, str]]:
    """The pairs of relations that are each other's reverse (the same edges, each turned round; a relation may be
    its own)."""
    edges = {c: g.edges(etype=c) for c in g.canonical_etypes}
    found = []
    for i, (s, e, t) in enumerate(g.canonical_etypes):
        u, v = edges[(s, e, t)]
        for s2, e2, t2 in g.canonical_etypes[i:]:
            u2, v2 = edges[(s2, e2, t2)]
            if (s2, t2) != (t, s) or u2.numel() != u.numel() or not u.numel():
                continue
            n = max(g.num_nodes(s), g.num_nodes(t))
            if torch.equal(torch.sort(u * n + v).values, torch.sort(v2 * n + u2).values):
                found.append((e, e2, f"{e} ({s}->{t}) and {e2} ({s2}->{t2})"))
    return found


def user_dataset(gfile: Path, **fields) -> HeteroDataset:
    """HeteroDataset(**fields), its consistency errors naming the user's file rather than the dataset's name."""
    try:
        return HeteroDataset(**fields)
    except DataError as e:
        msg = str(e)
        prefix = f"{fields['name']}: "
        raise DataError(f"{gfile}: {msg[len(prefix) :] if msg.startswith(prefix) else msg}") from None
