"""RE-GNN: per-type input projection -> homogeneous GNN layers on the relation-weighted graph -> classes."""
from __future__ import annotations

import torch
from torch import nn

from regnn.core.relation import RelationWeights
from regnn.models.backbones import BACKBONES


class TypeProjection(nn.Module):
    """x~_i = x_i W_type(i) + b_type(i): one linear map per node type into a shared space (sparse-aware)."""

    def __init__(self, in_dims: dict[str, int], out_dim: int):
        super().__init__()
        self.lins = nn.ModuleDict({t: nn.Linear(d, out_dim) for t, d in in_dims.items()})
        for lin in self.lins.values():
            nn.init.xavier_normal_(lin.weight, gain=1.414)

    def forward(self, feats: dict[str, torch.Tensor], order: list[str]) -> torch.Tensor:
        out = []
        for t in order:
            x, lin = feats[t], self.lins[t]
            out.append(torch.sparse.mm(x, lin.weight.t()) + lin.bias if x.is_sparse else lin(x))
        return torch.cat(out)


class REGNN(nn.Module):
    """A homogeneous GNN made heterogeneity-aware by one scalar weight per relation type per layer.

    With both relation switches off it is the plain GNN on the same graph (every edge and self-loop weighs 1).
    The graph is an argument of forward, never stored on the model.
    """

    def __init__(self, *, in_dims: dict[str, int], num_classes: int, relation_names: list[str],
                 num_edge_relations: int, backbone: str = "gcn", hidden: int = 64, num_layers: int = 4,
                 dropout: float = 0.6, scale: float = 100.0, edge_embeddings: bool = True,
                 self_loop_embeddings: bool = True, relation_slope: float = 0.01, **backbone_kwargs):
        super().__init__()
        if backbone not in BACKBONES:
            raise ValueError(f"unknown backbone {backbone!r}; known: {sorted(BACKBONES)}")
        self.relation_names = list(relation_names)
        self.proj = TypeProjection(in_dims, hidden)
        stack = BACKBONES[backbone](hidden=hidden, num_classes=num_classes, num_layers=num_layers, **backbone_kwargs)
        self.convs = nn.ModuleList(stack.convs)
        self.head = stack.head
        num_node_types = len(relation_names) - num_edge_relations
        self.relations = nn.ModuleList(
            RelationWeights(num_edge_relations, num_node_types, scale=scale, heads=k,
                            edge_embeddings=edge_embeddings, self_loop_embeddings=self_loop_embeddings,
                            negative_slope=relation_slope)
            for k in stack.relation_heads)
        self.dropout = nn.Dropout(dropout)

    def forward(self, adj, feats: dict[str, torch.Tensor], ntypes: list[str]):
        """Returns (class scores, representations fed to the output layer) for every node.

        adj: one Adjacency for every layer (full graph) or a list with one per layer (sampled blocks).
        """
        return self.propagate(adj, self.proj(feats, ntypes))

    def propagate(self, adj, h: torch.Tensor):
        adjs = adj if isinstance(adj, (list, tuple)) else [adj] * len(self.convs)
        last = len(self.convs) - 1
        emb = None
        for i, (conv, rw, a) in enumerate(zip(self.convs, self.relations, adjs)):
            if i == last and self.head is None:
                emb = h[: a.num_dst]
            h = conv(a, self.dropout(h), None if rw.is_constant else rw())
        if self.head is not None:
            emb = h
            h = self.head(h)
        return h, emb

    def relation_weights(self) -> list[dict[str, float]]:
        """Per layer: {relation name: weight} (lists per head for attention layers)."""
        return [rw.named_values(self.relation_names) for rw in self.relations]
