"""HAN (Wang et al., WWW 2019): node-level attention per meta-path graph (DGL's GATConv), semantic attention
across the meta-paths, a linear classifier.

Only the target type's features are used, as in HAN. They pass one linear projection first (they are sparse
bag-of-words here and GATConv's own linear map takes dense input; HGB's HAN projects the same way).
"""
from __future__ import annotations

from dataclasses import dataclass

import dgl
import torch
import torch.nn.functional as F
from dgl.nn import GATConv
from torch import nn

from regnn.models.baselines.metapath import metapath_graphs
from regnn.models.regnn import TypeProjection


@dataclass
class MetapathGraphs:
    graphs: dict[str, dgl.DGLGraph]  # meta-path name -> graph of the target nodes (one self-loop on each)
    target: str

    @classmethod
    def build(cls, data, device="cpu", metapaths=None, **_model_options) -> "MetapathGraphs":
        graphs = metapath_graphs(data, metapaths, self_loops=True)
        for g in graphs.values():
            g.create_formats_()
        return cls({k: g.to(device) for k, g in graphs.items()}, data.target)


class SemanticAttention(nn.Module):
    """beta_m = softmax_m(mean over nodes of q . tanh(W z_m + b)); returns sum_m beta_m z_m and beta."""

    def __init__(self, in_dim: int, hidden: int = 128):
        super().__init__()
        self.project = nn.Sequential(nn.Linear(in_dim, hidden), nn.Tanh(), nn.Linear(hidden, 1, bias=False))

    def forward(self, z: torch.Tensor):  # z: (N, M, D)
        beta = torch.softmax(self.project(z).mean(0), dim=0)  # (M, 1)
        return (beta.unsqueeze(0) * z).sum(1), beta[:, 0]


class HAN(nn.Module):
    def __init__(self, *, in_dim: int, target: str, num_classes: int, metapath_names: list[str], hidden: int = 8,
                 heads: int = 8, num_layers: int = 1, dropout: float = 0.6, semantic_dim: int = 128):
        super().__init__()
        if not metapath_names:
            raise ValueError("HAN needs at least one meta-path")
        self.target, self.metapath_names = target, list(metapath_names)
        self.relation_names = self.metapath_names  # recorded in results.json
        self.proj = TypeProjection({target: in_dim}, hidden * heads)
        self.gats = nn.ModuleList()
        self.semantic = nn.ModuleList()
        for _ in range(num_layers):
            self.gats.append(nn.ModuleList(
                GATConv(hidden * heads, hidden, heads, feat_drop=dropout, attn_drop=dropout, activation=F.elu,
                        allow_zero_in_degree=True)
                for _ in self.metapath_names))
            self.semantic.append(SemanticAttention(hidden * heads, semantic_dim))
        self.head = nn.Linear(hidden * heads, num_classes)
        self._beta: list[torch.Tensor] = []

    @classmethod
    def from_inputs(cls, inputs: MetapathGraphs, in_dims, num_classes, metapaths=None, **kwargs) -> "HAN":
        return cls(in_dim=in_dims[inputs.target], target=inputs.target, num_classes=num_classes,
                   metapath_names=list(inputs.graphs), **kwargs)

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
