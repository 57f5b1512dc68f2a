"""Relations taken out of a graph: for good (`dataset.drop_relations`: a graph trained without them) or emptied in
place (explain's masked ablation: a trained model keeps its relation ids, the relation just brings no message).

A relation goes with its reverse, the relation that runs back between the same node types under the reverse name:
`rev_X` for `X` (a custom graph's added reverses), `b->a` for `a->b` (the built-in graphs). A graph that holds only
one direction of a relation drops that one.
"""

from __future__ import annotations

import dataclasses

import torch

from regnn.data.hetero import HeteroGraph
from regnn.errors import DataError


def reverse_of(graph: HeteroGraph, name: str) -> str | None:
    """The name of the relation that runs back from `name`'s destination to its source, if the graph has one."""
    src, _, dst = graph.to_canonical_etype(name)
    candidates = [name[4:]] if name.startswith("rev_") else [f"rev_{name}"]
    a, arrow, b = name.partition("->")
    if arrow:
        candidates.append(f"{b}->{a}")
    back = {e for s, e, d in graph.canonical_etypes if (s, d) == (dst, src)}
    found = [c for c in candidates if c in back and c != name]
    return found[0] if found else None


def relation_groups(graph: HeteroGraph) -> list[tuple[str, ...]]:
    """Every relation with its reverse (one group, in the graph's order), a relation without one alone."""
    seen, groups = set(), []
    for _, name, _ in graph.canonical_etypes:
        if name in seen:
            continue
        back = reverse_of(graph, name)
        group = (name,) if back is None else (name, back)
        seen.update(group)
        groups.append(group)
    return groups


def with_reverses(graph: HeteroGraph, names) -> list[str]:
    """`names` and their reverses, each checked to be a relation of the graph."""
    known = graph.etypes
    unknown = [n for n in names if n not in known]
    if unknown:
        what = "is not a relation" if len(unknown) == 1 else "are not relations"
        raise DataError(f"dataset.drop_relations: {unknown} {what} of this graph; its relations are {known}")
    out = []
    for n in names:
        out += [x for x in (n, reverse_of(graph, n)) if x is not None and x not in out]
    return out


def without(graph: HeteroGraph, names, keep_slots: bool = False) -> HeteroGraph:
    """The graph without the relations `names` (exactly these); keep_slots: each kept as a relation with no edge,
    so that every other relation keeps its id (a trained model reads the graph by relation id)."""
    names = set(names)
    counts = {t: graph.num_nodes(t) for t in graph.ntypes}
    empty = (torch.zeros(0, dtype=torch.int64), torch.zeros(0, dtype=torch.int64))
    edges = {
        cet: (empty if cet[1] in names else graph.edges(etype=cet))
        for cet in graph.canonical_etypes
        if keep_slots or cet[1] not in names
    }
    return HeteroGraph(edges, counts)


def drop_relations(data, names) -> object:
    """A copy of the dataset (regnn.data.HeteroDataset) whose graph lacks `names` and their reverses."""
    if not names:
        return data
    gone = with_reverses(data.graph, list(names))
    if len(gone) == len(data.graph.etypes):
        raise DataError(f"dataset.drop_relations={list(names)} leaves no relation in the graph; keep at least one")
    return dataclasses.replace(data, graph=without(data.graph, gone))
