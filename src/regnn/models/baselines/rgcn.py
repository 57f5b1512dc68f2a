"""R-GCN (Schlichtkrull et al., 2018): RelGraphConv layers (regnn.models.baselines.typed_layers).

h_v' = act(W_0 h_v + sum_r sum_{u in N_r(v)} 1/c_{v,r} W_r h_u): one weight matrix per relation (each direction
of a relation is its own type, as for RE-GNN), a self-connection weight W_0, and the mean over the neighbours
of each relation (c_{v,r} = in-edges of v in relation r). Node features first pass the per-type projection
(R-GCN itself has no input features; every heterogeneous baseline here starts from the same projection).

The representation for clustering and t-SNE is the last layer's output. R-GCN has no classifier apart from its
layers, so that output is the only one that has taken in the last hop of neighbours (RE-GCN's representation is
likewise taken after its last propagation). The input of the last layer (the author's own state before it hears
from its papers) clusters far worse (docs/baselines.md, Table 3).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from regnn.models.baselines.inputs import TypedGraph
from regnn.models.baselines.typed_layers import RelGraphConv
from regnn.models.stack import StackShape
from regnn.nn.projection import TypeProjection


class RGCN(nn.Module):
    def __init__(
        self,
        in_dims: dict[str, int],
        shape: StackShape,
        *,
        num_relations: int,
        dropout: float,
        num_bases: int | None,
    ):
        super().__init__()
        hidden, num_classes, num_layers = shape
        if num_layers < 1:
            raise ValueError(f"num_layers must be >= 1, got {num_layers}")
        if num_bases is not None and num_bases < 0:
            raise ValueError(f"num_bases must be >= 0 (0 or None: no basis decomposition), got {num_bases}")
        self.proj = TypeProjection(in_dims, hidden)
        # 0 is the R-GCN paper's "no decomposition"; as many bases as relations or more decompose nothing either
        # (DGL's RelGraphConv falls back the same way), so one search range fits graphs of any relation count
        bases = num_bases if num_bases and num_bases < num_relations else None
        self.convs = nn.ModuleList(
            RelGraphConv(hidden, num_classes if i == num_layers - 1 else hidden, num_relations, num_bases=bases)
            for i in range(num_layers)
        )
        self.dropout = nn.Dropout(dropout)

    @classmethod
    def from_inputs(cls, inputs: TypedGraph, in_dims, num_classes, hidden, num_layers, **kwargs) -> "RGCN":
        shape = StackShape(hidden, num_classes, num_layers)
        return cls(in_dims, shape, num_relations=len(inputs.relation_names), **kwargs)

    def forward(self, inputs: TypedGraph, feats: dict[str, torch.Tensor], embed: bool = False):
        h = self.proj(feats, inputs.ntypes)
        last = len(self.convs) - 1
        for i, conv in enumerate(self.convs):
            h = conv(inputs, self.dropout(h), inputs.rel_norm)
            if i < last:
                h = F.relu(h)
        out = h[inputs.target_nodes]
        return out, (out if embed else None)
