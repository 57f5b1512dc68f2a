"""A heterogeneous graph as arrays: one (source ids, destination ids) pair per canonical edge type.

It answers the part of DGL's heterograph interface that regnn reads (`ntypes`, `canonical_etypes`, `etypes`,
`num_nodes`, `num_edges`, `edges`, `in_degrees`, `to_canonical_etype`) with DGL's conventions, so that a graph
loaded here gives the same relation ids, node offsets and edge order as one loaded through DGL: node types and
canonical edge types are sorted by name, and each edge type keeps its edges in the order given.
"""

from __future__ import annotations

import torch

from regnn.errors import DataError

CanonicalEtype = tuple[str, str, str]


class HeteroGraph:
    def __init__(self, edges: dict[CanonicalEtype, tuple], num_nodes: dict[str, int]):
        self._num_nodes = {t: int(num_nodes[t]) for t in sorted(num_nodes)}
        self._edges: dict[CanonicalEtype, tuple[torch.Tensor, torch.Tensor]] = {}
        for cet in sorted(edges):
            s, _, d = cet
            for t in (s, d):
                if t not in self._num_nodes:
                    raise DataError(f"edge type {cet} joins node type {t!r}, which has no node count")
            u, v = (torch.as_tensor(x, dtype=torch.int64).reshape(-1) for x in edges[cet])
            if u.shape != v.shape:
                raise DataError(f"edge type {cet}: {u.numel()} sources but {v.numel()} destinations")
            for ids, t in ((u, s), (v, d)):
                if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= self._num_nodes[t]):
                    raise DataError(
                        f"edge type {cet}: node ids in [{int(ids.min())}, {int(ids.max())}] but there "
                        f"are {self._num_nodes[t]} {t} nodes"
                    )
            self._edges[cet] = (u, v)

    @property
    def ntypes(self) -> list[str]:
        return list(self._num_nodes)

    @property
    def canonical_etypes(self) -> list[CanonicalEtype]:
        return list(self._edges)

    @property
    def etypes(self) -> list[str]:
        return [e for _, e, _ in self._edges]

    def to_canonical_etype(self, etype: str | CanonicalEtype) -> CanonicalEtype:
        if isinstance(etype, tuple):
            if etype not in self._edges:
                raise KeyError(f"edge type {etype} is not in the graph")
            return etype
        found = [c for c in self._edges if c[1] == etype]
        if len(found) != 1:
            raise KeyError(f"edge type {etype!r} names {len(found)} canonical edge types; give (src, name, dst)")
        return found[0]

    def num_nodes(self, ntype: str | None = None) -> int:
        return sum(self._num_nodes.values()) if ntype is None else self._num_nodes[ntype]

    def num_edges(self, etype: str | CanonicalEtype | None = None) -> int:
        if etype is None:
            return sum(u.numel() for u, _ in self._edges.values())
        return self._edges[self.to_canonical_etype(etype)][0].numel()

    def edges(self, etype: str | CanonicalEtype | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        if etype is None:
            if len(self._edges) != 1:
                raise KeyError("the graph has several edge types; name one")
            etype = next(iter(self._edges))
        return self._edges[self.to_canonical_etype(etype)]

    def in_degrees(self, etype: str | CanonicalEtype | None = None) -> torch.Tensor:
        cet = self.to_canonical_etype(etype) if etype is not None else next(iter(self._edges))
        return torch.bincount(self._edges[cet][1], minlength=self._num_nodes[cet[2]])

    def out_degrees(self, etype: str | CanonicalEtype | None = None) -> torch.Tensor:
        cet = self.to_canonical_etype(etype) if etype is not None else next(iter(self._edges))
        return torch.bincount(self._edges[cet][0], minlength=self._num_nodes[cet[0]])

    def with_reverse(self, name=lambda e: f"rev_{e}") -> "HeteroGraph":
        """Every edge type also reversed (destination -> source), named by `name(edge type name)`."""
        data = dict(self._edges)
        for (s, e, t), (u, v) in self._edges.items():
            data[(t, name(e), s)] = (v, u)
        return HeteroGraph(data, self._num_nodes)

    def __repr__(self) -> str:
        return (
            f"HeteroGraph(num_nodes={self._num_nodes}, "
            f"num_edges={ {c: u.numel() for c, (u, _) in self._edges.items()} })"
        )
