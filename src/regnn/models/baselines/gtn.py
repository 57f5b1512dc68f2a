"""GTN (Yun et al., NeurIPS 2019): soft edge-type selection and composite adjacency products, kept sparse.

Each of `num_channels` channels learns num_layers + 1 soft selections P_k = sum_r softmax(w_k)_r A_r over the
relation matrices and the identity (the last candidate, so shorter meta-paths stay reachable), and chains them:
M_1 = P_1 P_0, M_k = P_k D_{k-1}^-1 M_{k-1} (the product row-normalised before each further step), then one GCN
layer on D^-1 (M_L + I). A GCN weight shared by the channels, the channels concatenated, a hidden linear layer
with ReLU (the GTN code's earlier version; the current one has none) and a linear output layer follow. Where the
GTN code (both versions) differs: it multiplies the raw features by the GCN weight (here per-type projections
come first), and it row-normalises the last product too before adding the self-loops, (D^-1 M_L + I) / 2.

The products are never formed: M_L Y = P_L(... D_1^-1 P_1(P_0 Y)) is a chain of sparse matmuls over the union
graph, and the row sums come from the same chain applied to a column of ones. DBLP's 2-hop products through
terms and venues would hold tens of millions of entries; this chain costs a few SpMMs per channel. The GTN
code's earlier version also removes the diagonal of each product before normalising, which needs the product
explicitly; here self-paths (e.g. an author to itself through its papers) stay in, as in the GTN
paper's equations.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from regnn.core.adjacency import Adjacency
from regnn.models.baselines.inputs import SelfLoopGraph
from regnn.models.regnn import TypeProjection


def _row_inverse(d: torch.Tensor) -> torch.Tensor:
    """1/d where d > 0, else 0 (a row with no path stays empty, as in the GTN code)."""
    return torch.where(d > 0, 1.0 / d.clamp(min=1e-30), torch.zeros_like(d))


def composite_propagate(adj: Adjacency, edge_weights: list[torch.Tensor], y: torch.Tensor) -> torch.Tensor:
    """D^-1 (M + I) y for the composite adjacency M of the soft selections (each (E,) in CSR order)."""
    if len(edge_weights) < 2:
        raise ValueError("a composite adjacency needs at least two soft selections")
    x = torch.cat([y, torch.ones_like(y[:, :1])], 1)  # the ones column carries the row sums along
    x = adj.spmm(adj.spmm(x, edge_weights[0]), edge_weights[1])
    for w in edge_weights[2:]:
        x = adj.spmm(x * _row_inverse(x[:, -1:]), w)
    return (x[:, :-1] + y) / (x[:, -1:] + 1.0)


class GTN(nn.Module):
    def __init__(self, *, in_dims: dict[str, int], num_classes: int, relation_names: list[str], hidden: int = 64,
                 num_channels: int = 2, num_layers: int = 2, dropout: float = 0.0, select_lr_scale: float = 1.0):
        super().__init__()
        if num_layers < 1 or num_channels < 1:
            raise ValueError(f"num_layers and num_channels must be >= 1, got {num_layers} and {num_channels}")
        self.relation_names = list(relation_names)  # the candidates: relations, then the identity
        num_relations = len(self.relation_names)
        self.proj = TypeProjection(in_dims, hidden)
        if select_lr_scale <= 0:
            raise ValueError(f"select_lr_scale must be > 0, got {select_lr_scale}")
        # Selection logits per (step, channel, candidate), held as scale * s: the GTN code trains them with their
        # own learning rate (lr 0.5, `adaptive_lr`); one optimizer serves every model here, and with Adam the
        # logits then move by about scale x lr per step (RE-GNN's gradient scaling). GTN starts them at a
        # constant 0.1 (a uniform softmax).
        self.select_lr_scale = float(select_lr_scale)
        self.select = nn.Parameter(torch.full((num_layers + 1, num_channels, num_relations), 0.1 / select_lr_scale))
        self.weight = nn.Parameter(torch.empty(hidden, hidden))  # the GCN weight, shared by the channels
        nn.init.xavier_uniform_(self.weight)
        self.linear1 = nn.Linear(num_channels * hidden, hidden)
        self.linear2 = nn.Linear(hidden, num_classes)
        self.dropout = nn.Dropout(dropout)

    @classmethod
    def from_inputs(cls, inputs: SelfLoopGraph, in_dims, num_classes, **kwargs) -> "GTN":
        return cls(in_dims=in_dims, num_classes=num_classes, relation_names=inputs.relation_names, **kwargs)

    def selections(self) -> torch.Tensor:
        """(steps, channels, candidates) soft weights of the relations (and identity, last) per step."""
        return torch.softmax(self.select_lr_scale * self.select, dim=-1)

    def forward(self, inputs: SelfLoopGraph, feats: dict[str, torch.Tensor], embed: bool = False):
        adj = inputs.adj
        xw = self.dropout(self.proj(feats, inputs.ntypes)) @ self.weight
        sel = self.selections()
        outs = []
        for c in range(sel.shape[1]):
            ws = [adj.edge_weights(sel[k, c].unsqueeze(1))[:, 0] for k in range(sel.shape[0])]
            outs.append(F.relu(composite_propagate(adj, ws, xw)))
        t = inputs.target_nodes
        h = F.relu(self.linear1(self.dropout(torch.cat(outs, 1)[t])))
        return self.linear2(h), (h if embed else None)

    def relation_weights(self) -> list[dict]:
        """Per step: {candidate: [weight per channel]}, to read which meta-paths GTN chose (results files)."""
        with torch.no_grad():
            sel = self.selections().cpu()
        return [{n: sel[k, :, i].tolist() for i, n in enumerate(self.relation_names)} for k in range(sel.shape[0])]
