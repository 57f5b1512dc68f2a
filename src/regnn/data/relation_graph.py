"""One weighted homogeneous graph from a heterograph: what every RE-GNN layer runs on.

Each edge carries the id of its relation type; ids [0, R) are the directed edge types of the heterograph and
ids [R, R + F) the node-type-specific self-loops (one per node, typed by the node's type). Existing self-loops
are dropped first, as in the authors' code, so every node has exactly one self-loop.

The graph is held as arrays (source, destination, relation id per edge, sorted by destination), from which
the models' `Adjacency` and the neighbour sampler's CSC arrays are built.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from regnn.core.adjacency import Adjacency
    from regnn.core.backend import Backend
    from regnn.data.dataset import HeteroDataset


@dataclass
class RelationGraph:
    src: torch.Tensor  # (E,) int64 source of every edge, the edges sorted by destination (then source)
    dst: torch.Tensor  # (E,) int64 destination
    rel: torch.Tensor  # (E,) int64 relation id
    relation_names: list[str]  # R edge relation names, then F self-loop names ("self:<type>")
    num_edge_relations: int
    ntypes: list[str]  # node blocks in the homogeneous id space, in this order
    offsets: dict[str, int]  # first homogeneous id of each node type
    node_type: torch.Tensor  # (N,) index into ntypes

    @property
    def num_nodes(self) -> int:
        return self.node_type.shape[0]

    @property
    def num_edges(self) -> int:
        return self.src.shape[0]

    @property
    def num_relations(self) -> int:
        return len(self.relation_names)

    def adjacency(self, backend: Backend | None = None) -> Adjacency:
        """The models' view of this graph (its CSR and CSC arrays), on the backend given or the one chosen for
        the arrays' device (regnn.core.backend)."""
        from regnn.core.adjacency import Adjacency

        return Adjacency.from_edges(self.src, self.dst, self.rel, self.num_nodes, backend=backend)

    def nodes_of(self, ntype: str, local_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Homogeneous ids of nodes of `ntype` (all, or the given local ids)."""
        if local_ids is None:
            local_ids = torch.arange(int((self.node_type == self.ntypes.index(ntype)).sum()))
        return local_ids + self.offsets[ntype]

    def to(self, device) -> "RelationGraph":
        return RelationGraph(
            self.src.to(device),
            self.dst.to(device),
            self.rel.to(device),
            self.relation_names,
            self.num_edge_relations,
            self.ntypes,
            self.offsets,
            self.node_type.to(device),
        )


def relation_name(canonical_etype: tuple[str, str, str]) -> str:
    return canonical_etype[1]


def relation_ends(graph) -> dict[str, list[str]]:
    """Every relation name the models use -> [source type, destination type]: the edge relations (a user's
    `buys` says neither), then each node type's self-loop ("self:<type>")."""
    ends = {relation_name(cet): [cet[0], cet[2]] for cet in graph.canonical_etypes}
    return ends | {f"self:{t}": [t, t] for t in graph.ntypes}


def sorted_by_destination(src: torch.Tensor, dst: torch.Tensor, rel: torch.Tensor, n: int):
    """The edges destination-major (then by source): edge ids are CSR positions (no permutation later)."""
    order = torch.argsort(dst * n + src)
    return src[order], dst[order], rel[order]


def build_relation_graph(data: HeteroDataset, self_loops: bool = True) -> RelationGraph:
    g = data.graph
    ntypes = list(g.ntypes)
    offsets, start = {}, 0
    for t in ntypes:
        offsets[t] = start
        start += g.num_nodes(t)
    n = start
    srcs, dsts, rels, names = [], [], [], []
    for r, cet in enumerate(g.canonical_etypes):
        u, v = g.edges(etype=cet)
        srcs.append(u + offsets[cet[0]])
        dsts.append(v + offsets[cet[2]])
        rels.append(torch.full((u.numel(),), r, dtype=torch.int64))
        names.append(relation_name(cet))
    src = torch.cat(srcs) if srcs else torch.zeros(0, dtype=torch.int64)
    dst = torch.cat(dsts) if dsts else torch.zeros(0, dtype=torch.int64)
    rel = torch.cat(rels) if rels else torch.zeros(0, dtype=torch.int64)
    keep = src != dst
    src, dst, rel = src[keep], dst[keep], rel[keep]
    node_type = torch.cat([torch.full((g.num_nodes(t),), i, dtype=torch.int64) for i, t in enumerate(ntypes)])
    num_edge_rel = len(names)
    if self_loops:
        ids = torch.arange(n)
        src, dst = torch.cat([src, ids]), torch.cat([dst, ids])
        rel = torch.cat([rel, num_edge_rel + node_type])
        names += [f"self:{t}" for t in ntypes]
    src, dst, rel = sorted_by_destination(src, dst, rel, n)
    return RelationGraph(src, dst, rel, names, num_edge_rel, ntypes, offsets, node_type)
