"""Simple-HGN (Lv et al., KDD 2021, the HGB paper): GAT with edge-type attention, residuals and L2 output.

Differences from GAT, as the HGB paper describes them:
- edge-type embeddings r_psi (edge_dim wide, one per relation plus one for the self-loops) enter the attention
  logit: e_uv = LeakyReLU(a_l.W h_u + a_r.W h_v + a_e.W_r r_psi(uv));
- residual attention: a_uv = (1 - beta) a_uv + beta a_uv(previous layer) in the hidden layers from the second on
  (not in the output layer, which has one head: HGB's myGAT calls it with res_attn=None);
- node residual connections (a linear map where the width changes) from the second layer on;
- the output (class scores, one head) is L2-normalised before the softmax.
Attention scores and aggregation use the same code as RE-GAT (head_scores, aggregate_heads: the fused CPU kernels
where built), so speed comparisons are fair.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from regnn.core.adjacency import Adjacency
from regnn.core.attention_ops import aggregate_heads, head_scores
from regnn.models.baselines.inputs import SelfLoopGraph
from regnn.models.stack import StackShape
from regnn.nn.projection import TypeProjection


class EdgeTypeGATConv(nn.Module):
    """One Simple-HGN layer; returns (num_dst, heads, out_dim) and the attention (E, heads) for the next layer."""

    def __init__(
        self,
        in_dim: int,
        out_dim: int,
        heads: int,
        num_etypes: int,
        edge_dim: int,
        attn_dropout: float,
        negative_slope: float,
        residual: bool,
        beta: float,
    ):
        super().__init__()
        if not 0 <= beta <= 1:
            raise ValueError(f"beta (residual attention weight) must be in [0, 1], got {beta}")
        self.heads, self.out_dim, self.beta, self.negative_slope = heads, out_dim, beta, negative_slope
        self.fc = nn.Linear(in_dim, heads * out_dim, bias=False)
        self.edge_emb = nn.Embedding(num_etypes, edge_dim)
        self.fc_e = nn.Linear(edge_dim, heads * edge_dim, bias=False)
        self.attn_l = nn.Parameter(torch.empty(1, heads, out_dim))
        self.attn_r = nn.Parameter(torch.empty(1, heads, out_dim))
        self.attn_e = nn.Parameter(torch.empty(1, heads, edge_dim))
        self.attn_dropout = nn.Dropout(attn_dropout)
        self.res_fc = None
        if residual:
            self.res_fc = nn.Identity() if in_dim == heads * out_dim else nn.Linear(in_dim, heads * out_dim, bias=False)
        gain = nn.init.calculate_gain("relu")
        for p in (self.fc.weight, self.fc_e.weight, self.attn_l, self.attn_r, self.attn_e):
            nn.init.xavier_normal_(p, gain=gain)
        if isinstance(self.res_fc, nn.Linear):
            nn.init.xavier_normal_(self.res_fc.weight, gain=gain)

    def forward(self, adj: Adjacency, h: torch.Tensor, prev_attn: torch.Tensor | None = None):
        z = self.fc(h).view(-1, self.heads, self.out_dim)
        el, er = head_scores(z, self.attn_l, self.attn_r, adj.num_dst)
        # one logit term per edge type and head, gathered onto the edges (few types, many edges)
        e_type = self.fc_e(self.edge_emb.weight).view(-1, self.heads, self.attn_e.shape[-1])
        ee = adj.edge_weights((e_type * self.attn_e).sum(-1))
        score = adj.u_add_v(el, er) + ee  # (E, heads), CSR order
        a = self.attn_dropout(adj.edge_softmax(F.leaky_relu(score, self.negative_slope)))
        if prev_attn is not None and self.beta > 0:
            a = a * (1 - self.beta) + prev_attn * self.beta
        out = aggregate_heads(adj, z, a)
        if self.res_fc is not None:
            out = out + self.res_fc(h).view(-1, self.heads, self.out_dim)
        return out, a.detach()


class SimpleHGN(nn.Module):
    def __init__(
        self,
        in_dims: dict[str, int],
        shape: StackShape,
        *,
        num_etypes: int,
        heads: int,
        dropout: float,
        residual: bool,
        **attention,
    ):
        """attention: EdgeTypeGATConv's edge_dim, attn_dropout, negative_slope and beta, the same in every layer."""
        super().__init__()
        hidden, num_classes, num_layers = shape
        if num_layers < 1:
            raise ValueError(f"num_layers must be >= 1 (hidden layers before the output layer), got {num_layers}")
        self.proj = TypeProjection(in_dims, hidden)
        kw = dict(num_etypes=num_etypes, **attention)
        self.convs = nn.ModuleList(
            EdgeTypeGATConv(hidden if i == 0 else hidden * heads, hidden, heads, residual=residual and i > 0, **kw)
            for i in range(num_layers)
        )
        self.out = EdgeTypeGATConv(hidden * heads, num_classes, 1, residual=residual, **kw)
        self.dropout = nn.Dropout(dropout)

    @classmethod
    def from_inputs(cls, inputs: SelfLoopGraph, in_dims, num_classes, hidden, num_layers, **kwargs) -> "SimpleHGN":
        return cls(in_dims, StackShape(hidden, num_classes, num_layers), num_etypes=inputs.num_relations, **kwargs)

    def forward(self, inputs: SelfLoopGraph, feats: dict[str, torch.Tensor], embed: bool = False):
        h = self.proj(feats, inputs.ntypes)
        attn = None
        for conv in self.convs:
            h, attn = conv(inputs.adj, self.dropout(h), attn)
            h = F.elu(h.flatten(1))
        logits, _ = self.out(inputs.adj, self.dropout(h))  # HGB's output layer takes no residual attention
        logits = logits.mean(1)[inputs.target_nodes]
        out = logits / logits.norm(dim=1, keepdim=True).clamp(min=1e-12)
        # the representation is the output, as for R-GCN: the output layer propagates too, and HGB's model
        # returns nothing else
        return out, (out if embed else None)
