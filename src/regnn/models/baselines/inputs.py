"""Graph structures the relation-based baselines run on, built once per job from a HeteroDataset.

- TypedGraph (R-GCN, HGT): DGL's homogeneous view of the heterograph (`dgl.to_homogeneous`): nodes grouped by
  type, edges grouped by relation, so DGL's typed layers can take their pre-sorted fast path.
- SelfLoopGraph (Simple-HGN, GTN): the relation graph of RE-GNN (`build_relation_graph`) with every node's
  self-loop in ONE extra relation (Simple-HGN's self-loop edge type, GTN's identity matrix), held as an
  `Adjacency` for the fast CSR aggregation; built on the CPU, its arrays move to the device.
"""
from __future__ import annotations

from dataclasses import dataclass

import dgl
import torch

from regnn.core.adjacency import Adjacency
from regnn.data.relation_graph import build_relation_graph
from regnn.training.device import to_device_adjacency


@dataclass
class TypedGraph:
    graph: dgl.DGLGraph  # homogeneous; nodes grouped by type in `ntypes` order, edges grouped by relation
    ntype: torch.Tensor  # (N,) index into ntypes
    etype: torch.Tensor  # (E,) index into relation_names
    ntypes: list[str]
    relation_names: list[str]
    target_nodes: torch.Tensor  # homogeneous ids of the target nodes, by local id
    rel_norm: torch.Tensor  # (E, 1) 1 / (in-edges of the destination in the edge's relation): R-GCN's 1/c_{i,r}

    @classmethod
    def build(cls, data, device="cpu", **_model_options) -> "TypedGraph":
        g = dgl.to_homogeneous(data.graph)
        ntype, etype = g.ndata[dgl.NTYPE], g.edata[dgl.ETYPE]
        ntypes, names = list(data.graph.ntypes), list(data.graph.etypes)
        t = ntypes.index(data.target)
        target = torch.nonzero(ntype == t).squeeze(1)
        target = target[torch.argsort(g.ndata[dgl.NID][target])]  # by local id
        _, dst = g.edges()
        key = dst * len(names) + etype
        counts = torch.bincount(key)
        rel_norm = (1.0 / counts[key].to(torch.float32)).unsqueeze(1)
        g = dgl.graph(g.edges(), num_nodes=g.num_nodes())  # drop the id fields the layers do not need
        g.create_formats_()
        return cls(g.to(device), ntype.to(device), etype.to(device), ntypes, names, target.to(device),
                   rel_norm.to(device))


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
        adj = to_device_adjacency(rg.graph, device, rel=rg.rel.clamp(max=r))  # every self-loop: relation r
        return cls(adj, rg.ntypes, rg.nodes_of(data.target).to(device),
                   rg.relation_names[:r] + ["self"])
