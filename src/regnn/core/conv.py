"""Homogeneous GNN layers that consume relation weights.

Every layer takes (adj, h, alpha): an `Adjacency`, node features, and the layer's relation weights
(num_relations, heads), or None for the plain layer where every edge and self-loop weighs 1.
Feature dropout is applied by the model to each layer's input, so the layers hold none.
"""
from __future__ import annotations

import dgl
import torch
import torch.nn.functional as F
from dgl.nn.functional import edge_softmax
from torch import nn

from regnn.core.adjacency import Adjacency

ACTIVATIONS = {"elu": F.elu, "relu": F.relu, "none": None}


class REGraphConv(nn.Module):
    """GCN on the weighted graph: act(D^-1/2 A_H D^-1/2 H W + b) (norm="both") or act(D^-1 A_H H W + b) ("right").

    D is the weighted in-degree clamped at 1 (the authors' code). weight=False gives a pure propagation step
    (no W, no bias), as the first and last layers of the authors' RE-GCN.
    """

    def __init__(self, in_dim: int, out_dim: int, weight: bool = True, bias: bool = True, norm: str = "both",
                 activation: str = "none"):
        super().__init__()
        if norm not in ("both", "right", "none"):
            raise ValueError(f"norm must be both, right or none, got {norm!r}")
        if not weight and in_dim != out_dim:
            raise ValueError("a propagation-only layer keeps the dimension: in_dim must equal out_dim")
        self.norm = norm
        self.weight = nn.Parameter(torch.empty(in_dim, out_dim)) if weight else None
        self.bias = nn.Parameter(torch.zeros(out_dim)) if (bias and weight) else None
        self.activation = ACTIVATIONS[activation]
        self.is_linear = self.weight is None and self.activation is None  # a pure propagation step
        if self.weight is not None:
            nn.init.xavier_uniform_(self.weight)

    def forward(self, adj: Adjacency, h: torch.Tensor, alpha: torch.Tensor | None = None) -> torch.Tensor:
        # multiply by W before aggregating when that shrinks the messages
        if self.weight is not None and self.weight.shape[0] > self.weight.shape[1]:
            h = h @ self.weight
        out = adj.normalized_spmm(h, alpha, self.norm)
        if self.weight is not None and self.weight.shape[0] <= self.weight.shape[1]:
            out = out @ self.weight
        if self.bias is not None:
            out = out + self.bias
        return self.activation(out) if self.activation else out


class REGATConv(nn.Module):
    """GAT whose attention logits take the relation weight of the edge, one weight per head.

    relation_mode="mul":  score = LeakyReLU((a_l.Wh_u + a_r.Wh_v) * w_r)  (the authors' released REGATConv)
    relation_mode="add":  score = LeakyReLU(a_l.Wh_u + a_r.Wh_v + w_r)    (REFERENCE.md's description)
    With "mul", RE-GAT at its initial weights (all 1) is exactly the plain GAT. With "add" it is not: the +1
    passes through the LeakyReLU before the softmax. Output: (num_dst, heads, out_dim); the model
    concatenates or averages the heads.
    """

    def __init__(self, in_dim: int, out_dim: int, heads: int = 1, attn_dropout: float = 0.0,
                 negative_slope: float = 0.2, activation: str = "none", relation_mode: str = "mul",
                 bias: bool = False, residual: bool = False):
        super().__init__()
        if relation_mode not in ("add", "mul"):
            raise ValueError(f"relation_mode must be add or mul, got {relation_mode!r}")
        self.heads, self.out_dim, self.relation_mode = heads, out_dim, relation_mode
        self.fc = nn.Linear(in_dim, heads * out_dim, bias=False)
        self.attn_l = nn.Parameter(torch.empty(1, heads, out_dim))
        self.attn_r = nn.Parameter(torch.empty(1, heads, out_dim))
        self.attn_dropout = nn.Dropout(attn_dropout)
        self.negative_slope = negative_slope
        self.bias = nn.Parameter(torch.zeros(heads, out_dim)) if bias else None
        self.res_fc = nn.Linear(in_dim, heads * out_dim, bias=False) if residual else None
        self.activation = ACTIVATIONS[activation]
        gain = nn.init.calculate_gain("relu")
        for p in (self.fc.weight, self.attn_l, self.attn_r) + ((self.res_fc.weight,) if residual else ()):
            nn.init.xavier_normal_(p, gain=gain)

    def forward(self, adj: Adjacency, h: torch.Tensor, alpha: torch.Tensor | None = None) -> torch.Tensor:
        z = self.fc(h).view(-1, self.heads, self.out_dim)
        el = (z * self.attn_l).sum(-1)  # (num_src, heads)
        er = (z[: adj.num_dst] * self.attn_r).sum(-1)  # destinations are the first num_dst sources
        score = dgl.ops.u_add_v(adj.graph, el, er)  # (E, heads), CSR order
        if alpha is not None:
            ew = adj.edge_weights(alpha)
            score = score + ew if self.relation_mode == "add" else score * ew
        a = self.attn_dropout(edge_softmax(adj.graph, F.leaky_relu(score, self.negative_slope)))
        # one contiguous (N, D) slice per head via unbind: its backward stacks the head gradients once, where
        # z[:, k] would zero-fill a gradient of z's full size for every head
        zs, As = z.transpose(0, 1).contiguous().unbind(0), a.t().contiguous().unbind(0)
        out = torch.stack([adj.spmm(zs[k], As[k]) for k in range(self.heads)], 1)
        if self.res_fc is not None:
            out = out + self.res_fc(h[: adj.num_dst]).view(-1, self.heads, self.out_dim)
        if self.bias is not None:
            out = out + self.bias
        return self.activation(out) if self.activation else out
