"""HGT (Hu et al., 2020): HGTConv layers (regnn.models.baselines.typed_layers).

Per-type projection (GELU, as HGT's adaptation layer) -> `num_layers` HGTConv layers, each followed by GELU
(node-type specific key/query/value maps, relation-specific attention and message matrices with a learned
prior per relation, a gated skip connection per node type) -> a linear layer on the target nodes. The heads split
the hidden size: `hidden` must be a multiple of `heads`.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from regnn.models.baselines.inputs import TypedGraph
from regnn.models.baselines.typed_layers import HGTConv
from regnn.models.regnn import TypeProjection


class HGT(nn.Module):
    def __init__(self, *, in_dims: dict[str, int], num_classes: int, num_relations: int, hidden: int = 64,
                 heads: int = 8, num_layers: int = 2, dropout: float = 0.2, use_norm: bool = False):
        super().__init__()
        if hidden % heads:
            raise ValueError(f"hidden ({hidden}) must be a multiple of heads ({heads}): the heads split it")
        self.proj = TypeProjection(in_dims, hidden)
        self.convs = nn.ModuleList(
            HGTConv(hidden, hidden // heads, heads, len(in_dims), num_relations, dropout=dropout, use_norm=use_norm)
            for _ in range(num_layers))
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(hidden, num_classes)

    @classmethod
    def from_inputs(cls, inputs: TypedGraph, in_dims, num_classes, **kwargs) -> "HGT":
        return cls(in_dims={t: in_dims[t] for t in inputs.ntypes}, num_classes=num_classes,
                   num_relations=len(inputs.relation_names), **kwargs)

    def forward(self, inputs: TypedGraph, feats: dict[str, torch.Tensor], embed: bool = False):
        # GELU after the input projection, as the HGT authors' adaptation layer
        h = self.dropout(F.gelu(self.proj(feats, inputs.ntypes)))
        for conv in self.convs:
            # HGT's layer applies GELU to the aggregated messages before the target-type linear map; HGTConv
            # (as DGL's) leaves the activation out (stacked, it is linear but for the attention), so it comes
            # after each layer here (IMDB, seed 0: test Micro-F1 47.7 without, 54.3 with)
            h = F.gelu(conv(inputs, h))
        h = h[inputs.target_nodes]
        return self.head(h), (h if embed else None)
