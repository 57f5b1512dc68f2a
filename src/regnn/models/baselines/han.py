"""HAN (Wang et al., WWW 2019): node-level attention per meta-path graph (a GAT layer), semantic attention
across the meta-paths, a linear classifier.

Only the target type's features are used, as in HAN. They pass one linear projection first (they are sparse
bag-of-words here and the GAT layer's linear map takes dense input; HGB's HAN projects the same way).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from regnn.core.adjacency import Adjacency
from regnn.core.attention_ops import aggregate_heads, head_scores
from regnn.models.baselines.metapath import metapath_graphs
from regnn.models.stack import StackShape
from regnn.nn.projection import TypeProjection


@dataclass
class MetapathGraphs:
    graphs: dict[str, Adjacency]  # meta-path name -> graph of the target nodes (one self-loop on each)
    target: str

    @classmethod
    def build(cls, data, device="cpu", metapaths=None, **_model_options) -> "MetapathGraphs":
        graphs = metapath_graphs(data, metapaths, self_loops=True)
        return cls({k: g.to(device) for k, g in graphs.items()}, data.target)


class GATConv(nn.Module):
    """GAT (Velickovic et al.): z = W dropout(h) split into heads, e_uv = LeakyReLU(a_l . z_u + a_r . z_v),
    a = dropout(softmax of e over the in-edges of v), out_v = activation(sum_u a_uv z_u + b).

    DGL's GATConv as HAN builds it (no residual, a bias, zero-in-degree nodes allowed: they get activation(b)):
    the same parameters (fc.weight, attn_l, attn_r, bias), drawn in the same order, and the dropout masks drawn
    in the same order over tensors of the same sizes, so a seed gives the same weights and masks.
    """

    def __init__(
        self,
        in_dim: int,
        out_dim: int,
        heads: int,
        feat_drop: float = 0.0,
        attn_drop: float = 0.0,
        negative_slope: float = 0.2,
        activation=None,
    ):
        super().__init__()
        self.heads, self.out_dim = heads, out_dim
        self.fc = nn.Linear(in_dim, heads * out_dim, bias=False)
        self.attn_l = nn.Parameter(torch.empty(1, heads, out_dim))
        self.attn_r = nn.Parameter(torch.empty(1, heads, out_dim))
        self.bias = nn.Parameter(torch.empty(heads * out_dim))
        self.feat_drop = nn.Dropout(feat_drop)
        self.attn_drop = nn.Dropout(attn_drop)
        self.negative_slope = negative_slope
        self.activation = activation
        gain = nn.init.calculate_gain("relu")
        for p in (self.fc.weight, self.attn_l, self.attn_r):
            nn.init.xavier_normal_(p, gain=gain)
        nn.init.zeros_(self.bias)

    def forward(self, adj: Adjacency, h: torch.Tensor) -> torch.Tensor:
        """(num_dst, heads, out_dim) for a graph whose first num_dst sources are its destinations."""
        z = self.fc(self.feat_drop(h)).view(-1, self.heads, self.out_dim)
        el, er = head_scores(z, self.attn_l, self.attn_r, adj.num_dst)
        score = F.leaky_relu(adj.u_add_v(el, er), self.negative_slope)  # (E, heads), CSR order
        out = aggregate_heads(adj, z, self.attn_drop(adj.edge_softmax(score)))
        out = out + self.bias.view(self.heads, self.out_dim)
        return self.activation(out) if self.activation is not None else out


class SemanticAttention(nn.Module):
    """beta_m = softmax_m(mean over nodes of q . tanh(W z_m + b)); returns sum_m beta_m z_m and beta."""

    def __init__(self, in_dim: int, hidden: int = 128):
        super().__init__()
        self.project = nn.Sequential(nn.Linear(in_dim, hidden), nn.Tanh(), nn.Linear(hidden, 1, bias=False))

    def forward(self, z: torch.Tensor):  # z: (N, M, D)
        beta = torch.softmax(self.project(z).mean(0), dim=0)  # (M, 1)
        return (beta.unsqueeze(0) * z).sum(1), beta[:, 0]


class HAN(nn.Module):
    def __init__(
        self,
        target: str,
        in_dim: int,
        shape: StackShape,
        *,
        metapath_names: list[str],
        heads: int,
        dropout: float,
        semantic_dim: int,
    ):
        """target: the node type classified, in_dim: its feature width; hidden: units per head."""
        super().__init__()
        hidden, num_classes, num_layers = shape
        if not metapath_names:
            raise ValueError("HAN needs at least one meta-path")
        self.target, self.metapath_names = target, list(metapath_names)
        self.relation_names = self.metapath_names  # recorded in results.json
        self.proj = TypeProjection({target: in_dim}, hidden * heads)
        self.gats = nn.ModuleList()
        self.semantic = nn.ModuleList()
        for _ in range(num_layers):
            self.gats.append(
                nn.ModuleList(
                    GATConv(hidden * heads, hidden, heads, feat_drop=dropout, attn_drop=dropout, activation=F.elu)
                    for _ in self.metapath_names
                )
            )
            self.semantic.append(SemanticAttention(hidden * heads, semantic_dim))
        self.head = nn.Linear(hidden * heads, num_classes)
        self._beta: list[torch.Tensor] = []

    @classmethod
    def from_inputs(
        cls, inputs: MetapathGraphs, in_dims, num_classes, hidden, num_layers, metapaths=None, **kwargs
    ) -> "HAN":
        shape = StackShape(hidden, num_classes, num_layers)
        return cls(inputs.target, in_dims[inputs.target], shape, metapath_names=list(inputs.graphs), **kwargs)

    def forward(self, inputs: MetapathGraphs, feats: dict[str, torch.Tensor], embed: bool = False):
        h = self.proj(feats, [self.target])
        betas = []
        for gats, semantic in zip(self.gats, self.semantic):
            z = torch.stack([gat(inputs.graphs[m], h).flatten(1) for gat, m in zip(gats, self.metapath_names)], 1)
            h, beta = semantic(z)
            betas.append(beta.detach())
        self._beta = betas
        return self.head(h), (h if embed else None)

    def relation_weights(self) -> list[dict[str, float]]:
        """Per layer: {meta-path: semantic attention weight} of the last forward pass (results files)."""
        return [{m: float(b[i]) for i, m in enumerate(self.metapath_names)} for b in self._beta]
