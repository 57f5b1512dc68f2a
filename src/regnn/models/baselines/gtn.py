"""GTN (Yun et al., NeurIPS 2019) as the GTN code's final version has it (seongjunyun/Graph_Transformer_Networks at
0df0c69, `model_gtn.py` and `gcn.py`), with the products kept sparse.

Each of `num_channels` channels learns num_layers + 1 soft selections S_k = sum_r softmax(w_k)_r A_r over the
relation matrices and the identity (the last candidate, so shorter meta-paths stay reachable). The first GT layer
multiplies two of them and each further layer one more on the right, and every layer row-normalises its product;
row scalings on the left commute with the products that follow, so the result is N = D^-1 S_0 S_1 ... S_L with D
the row sums of the whole product. One GCN layer per channel follows, the GTN code's `GCNConv`: self-loops added
to N and rows normalised again, ((N + I) / 2) X W + b on a row with a path, X W + b on one without; a GCN weight
and bias shared by the channels, ReLU, the channels concatenated at the target nodes, and one linear output layer.
The concatenation is the representation Table 3 clusters.

The GTN code multiplies one feature matrix by the GCN weight; node types here have features of different widths,
so the GCN weight is one bias-free matrix per node type (the same map where the widths agree and the weights
do). Dropout (none in the GTN code) is optional, on X W and before the output layer.

N is never formed: N Y = S_0(S_1(... S_L Y)) is a chain of sparse matmuls over the union graph, and D comes from
the same chain applied to a column of ones. DBLP's 2-hop products through terms and venues would hold tens of
millions of entries; this chain costs a few SpMMs per channel.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from regnn.core.adjacency import Adjacency
from regnn.models.baselines.inputs import SelfLoopGraph
from regnn.models.stack import StackShape
from regnn.nn.projection import TypeProjection


def _row_inverse(d: torch.Tensor) -> torch.Tensor:
    """1/d where d > 0, else 0 (a row with no path stays empty, as in the GTN code)."""
    return torch.where(d > 0, 1.0 / d.clamp(min=1e-30), torch.zeros_like(d))


def composite_propagate(adj: Adjacency, edge_weights: list[torch.Tensor], y: torch.Tensor) -> torch.Tensor:
    """((N + I) / (rowsum(N) + 1)) y, N = D^-1 S_0 ... S_L, the soft selections S_k given as (E,) edge weights in
    CSR order: the GTN code's normalised product through its GCN's self-loops and row normalisation."""
    if len(edge_weights) < 2:
        raise ValueError("a composite adjacency needs at least two soft selections")
    x = torch.cat([y, torch.ones_like(y[:, :1])], 1)  # the ones column carries the row sums along
    for w in reversed(edge_weights):
        x = adj.spmm(x, w)
    inv = _row_inverse(x[:, -1:])
    return (x[:, :-1] * inv + y) / (x[:, -1:] * inv + 1.0)


class GTN(nn.Module):
    def __init__(
        self,
        in_dims: dict[str, int],
        shape: StackShape,
        *,
        relation_names: list[str],
        num_channels: int,
        dropout: float,
        select_lr_scale: float,
    ):
        super().__init__()
        hidden, num_classes, num_layers = shape
        if num_layers < 1 or num_channels < 1:
            raise ValueError(f"num_layers and num_channels must be >= 1, got {num_layers} and {num_channels}")
        self.relation_names = list(relation_names)  # the candidates: relations, then the identity
        num_relations = len(self.relation_names)
        self.gcn = TypeProjection(in_dims, hidden, bias=False)  # X W, W split by node type
        for lin in self.gcn.lins.values():
            nn.init.xavier_uniform_(lin.weight)  # GTN's glorot
        self.gcn_bias = nn.Parameter(torch.zeros(hidden))
        if select_lr_scale <= 0:
            raise ValueError(f"select_lr_scale must be > 0, got {select_lr_scale}")
        # Selection logits per (step, channel, candidate), held as scale * s: the GTN code trains them with their
        # own learning rate in some settings (`adaptive_lr`); one optimizer serves every model here, and with Adam
        # the logits then move by about scale x lr per step (RE-GNN's gradient scaling). GTN draws them from
        # N(0, 0.01^2).
        self.select_lr_scale = float(select_lr_scale)
        self.select = nn.Parameter(torch.randn(num_layers + 1, num_channels, num_relations) * (0.01 / select_lr_scale))
        self.linear = nn.Linear(num_channels * hidden, num_classes)
        self.dropout = nn.Dropout(dropout)

    @classmethod
    def from_inputs(cls, inputs: SelfLoopGraph, in_dims, num_classes, hidden, num_layers, **kwargs) -> "GTN":
        shape = StackShape(hidden, num_classes, num_layers)
        return cls(in_dims, shape, relation_names=inputs.relation_names, **kwargs)

    def selections(self) -> torch.Tensor:
        """(steps, channels, candidates) soft weights of the relations (and identity, last) per step."""
        return torch.softmax(self.select_lr_scale * self.select, dim=-1)

    def forward(self, inputs: SelfLoopGraph, feats: dict[str, torch.Tensor], embed: bool = False):
        adj = inputs.adj
        xw = self.dropout(self.gcn(feats, inputs.ntypes))
        sel = self.selections()
        outs = []
        for c in range(sel.shape[1]):
            ws = [adj.edge_weights(sel[k, c].unsqueeze(1))[:, 0] for k in range(sel.shape[0])]
            outs.append(F.relu(composite_propagate(adj, ws, xw) + self.gcn_bias))
        h = torch.cat(outs, 1)[inputs.target_nodes]
        return self.linear(self.dropout(h)), (h if embed else None)

    def relation_weights(self) -> list[dict]:
        """Per step: {candidate: [weight per channel]}, to read which meta-paths GTN chose (results files)."""
        with torch.no_grad():
            sel = self.selections().cpu()
        return [{n: sel[k, :, i].tolist() for i, n in enumerate(self.relation_names)} for k in range(sel.shape[0])]
