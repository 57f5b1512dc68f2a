"""Graph structures the relation-based baselines run on, built once per job from a HeteroDataset.

- TypedGraph (R-GCN, HGT): the homogeneous view of the heterograph with DGL's `to_homogeneous` numbering (nodes
  grouped by type in `ntypes` order, each type's nodes in local order; edges grouped by canonical edge type in
  `canonical_etypes` order, each type's edges in their given order), and one Adjacency whose sources are the
  (relation, source node) pairs, on which the typed layers (regnn.models.baselines.typed_layers) aggregate.
- SelfLoopGraph (Simple-HGN, GTN): the relation graph of RE-GNN (`build_relation_graph`) with every node's
  self-loop in ONE extra relation (Simple-HGN's self-loop edge type, GTN's identity matrix), held as an
  `Adjacency` for the fast CSR aggregation; built on the CPU, its arrays move to the device.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from regnn.core.adjacency import Adjacency
from regnn.data.relation_graph import build_relation_graph
from regnn.errors import DataError


@dataclass
class TypedGraph:
    """A heterograph as one homogeneous graph, numbered as DGL's `to_homogeneous` numbers it.

    Relation r joins source type s_r to destination type t_r. What a typed layer sends along an edge of r depends
    only on r and the source node, so it is computed once per (relation, source node) pair: row
    `pair_offsets[r] + u` of a table holds relation r's message from the local source u of type s_r. `adj` has
    those rows as its sources, the homogeneous nodes as its destinations and r as every edge's relation; its edge
    ids are the positions in `src`/`dst`/`etype` (DGL's edge order)."""

    ntypes: list[str]
    relation_names: list[str]
    node_offsets: list[int]  # nodes of type t: homogeneous ids [node_offsets[t], node_offsets[t + 1])
    relation_types: list[tuple[int, int]]  # (source type, destination type) of every relation
    pair_offsets: list[int]  # relation r's (relation, source node) rows: [pair_offsets[r], pair_offsets[r + 1])
    ntype: torch.Tensor  # (N,) index into ntypes
    src: torch.Tensor  # (E,) homogeneous ids, edges grouped by relation
    dst: torch.Tensor  # (E,)
    etype: torch.Tensor  # (E,) index into relation_names
    target_nodes: torch.Tensor  # homogeneous ids of the target nodes, by local id
    rel_norm: torch.Tensor  # (E, 1) 1 / (in-edges of the destination in the edge's relation): R-GCN's 1/c_{i,r}
    adj: Adjacency

    @property
    def num_nodes(self) -> int:
        return self.node_offsets[-1]

    @classmethod
    def build(cls, data, device="cpu", **_model_options) -> "TypedGraph":
        return cls.from_hetero(data.graph, data.target, device)

    @classmethod
    def from_hetero(cls, g, target: str, device="cpu") -> "TypedGraph":
        """From a HeteroGraph (or anything with its interface) and the name of the target node type."""
        ntypes, cets = list(g.ntypes), list(g.canonical_etypes)
        if target not in ntypes:
            raise DataError(f"target node type {target!r} is not in the graph's node types {ntypes}")
        counts = [g.num_nodes(t) for t in ntypes]
        node_offsets = [0]
        for c in counts:
            node_offsets.append(node_offsets[-1] + c)
        index = {t: i for i, t in enumerate(ntypes)}
        relation_types = [(index[s], index[d]) for s, _, d in cets]
        pair_offsets = [0]
        for s, _ in relation_types:
            pair_offsets.append(pair_offsets[-1] + counts[s])
        srcs, dsts, pairs, etypes = [], [], [], []
        for r, (cet, (s, d)) in enumerate(zip(cets, relation_types)):
            u, v = (x.to(torch.int64) for x in g.edges(etype=cet))
            srcs.append(u + node_offsets[s])
            dsts.append(v + node_offsets[d])
            pairs.append(u + pair_offsets[r])
            etypes.append(torch.full_like(u, r))
        empty = torch.zeros(0, dtype=torch.int64)
        src, dst, pair, etype = (torch.cat(x) if x else empty for x in (srcs, dsts, pairs, etypes))
        n, num_rel = node_offsets[-1], len(cets)
        ntype = torch.repeat_interleave(torch.arange(len(ntypes)), torch.tensor(counts, dtype=torch.int64))
        t = index[target]
        target_nodes = torch.arange(node_offsets[t], node_offsets[t + 1])
        key = dst * num_rel + etype
        rel_norm = (1.0 / torch.bincount(key, minlength=n * num_rel)[key].to(torch.float32)).unsqueeze(1)
        adj = Adjacency.from_edges(pair, dst, etype, pair_offsets[-1], n).to(device)
        return cls(
            ntypes,
            [e for _, e, _ in cets],
            node_offsets,
            relation_types,
            pair_offsets,
            ntype.to(device),
            src.to(device),
            dst.to(device),
            etype.to(device),
            target_nodes.to(device),
            rel_norm.to(device),
            adj,
        )

    def node_blocks(self):
        """(type index, first homogeneous id, one past the last) of every node type."""
        return [(t, self.node_offsets[t], self.node_offsets[t + 1]) for t in range(len(self.ntypes))]

    def pair_table(self, x: torch.Tensor, per_relation) -> torch.Tensor:
        """The (relation, source node) rows of adj's sources: per_relation(r, x's rows of r's source type) for
        every relation r, stacked in relation order."""
        rows = [
            per_relation(r, x[self.node_offsets[s] : self.node_offsets[s + 1]])
            for r, (s, _) in enumerate(self.relation_types)
        ]
        return torch.cat(rows) if rows else x.new_zeros(0, *x.shape[1:])


@dataclass
class SelfLoopGraph:
    adj: Adjacency  # rel: relation ids [0, R) of the heterograph's edges, R for every self-loop
    ntypes: list[str]  # node blocks of the homogeneous graph, in this order
    target_nodes: torch.Tensor
    relation_names: list[str]  # R relation names, then "self"

    @property
    def num_relations(self) -> int:
        return len(self.relation_names)

    @classmethod
    def build(cls, data, device="cpu", **_model_options) -> "SelfLoopGraph":
        rg = build_relation_graph(data, self_loops=True)
        r = rg.num_edge_relations
        adj = Adjacency.from_edges(rg.src, rg.dst, rg.rel.clamp(max=r), rg.num_nodes).to(device)  # self-loops: r
        return cls(adj, rg.ntypes, rg.nodes_of(data.target).to(device), rg.relation_names[:r] + ["self"])
