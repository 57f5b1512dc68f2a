"""What every reader of a user's graph (npz, DGL, tables, PyG) shares: the description's required keys, one
uniquely named edge type per relation direction (with the reverses added), and the dataset whose consistency errors
name the user's file."""

from __future__ import annotations

from pathlib import Path

from regnn.data.custom_schema import DOC
from regnn.data.dataset import HeteroDataset
from regnn.data.hetero import HeteroGraph
from regnn.errors import DataError


def need(meta: dict, key: str, where: Path, what: str):
    if meta.get(key) in (None, ""):
        raise DataError(f"{where}: key {key!r} is missing ({what}); {DOC}")
    return meta[key]


def unique_relations(g: HeteroGraph, reverse: str, where: Path) -> HeteroGraph:
    """Every relation direction its own uniquely named edge type (names repeated across types get src-/->dst)."""
    if reverse not in ("add", "keep"):
        raise DataError(f"{where}: reverse={reverse!r}; use add (reverse every relation) or keep")
    names = [e for _, e, _ in g.canonical_etypes]
    data = {}
    for s, e, t in g.canonical_etypes:
        e2 = e if names.count(e) == 1 else f"{s}-{e}->{t}"
        u, v = g.edges(etype=(s, e, t))
        data[(s, e2, t)] = (u, v)
        if reverse == "add":
            data[(t, f"rev_{e2}", s)] = (v, u)
    out = [e for _, e, _ in data]
    if len(set(out)) != len(out):
        raise DataError(
            f"{where}: relation names repeat after adding reverses ({sorted(out)}); rename relations "
            "or set reverse: keep if the graph already holds both directions"
        )
    return HeteroGraph(data, {t: g.num_nodes(t) for t in g.ntypes})


def user_dataset(gfile: Path, **fields) -> HeteroDataset:
    """HeteroDataset(**fields), its consistency errors naming the user's file rather than the dataset's name."""
    try:
        return HeteroDataset(**fields)
    except DataError as e:
        msg = str(e)
        prefix = f"{fields['name']}: "
        raise DataError(f"{gfile}: {msg[len(prefix) :] if msg.startswith(prefix) else msg}") from None
