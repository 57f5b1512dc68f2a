"""Relation embeddings: one learnable scalar per relation type and per node-type self-loop (per head).

alpha = tau(lambda * e) with tau = LeakyReLU and e initialised to 1/lambda, so every weight starts at exactly 1.
lambda (`scale`) multiplies the gradient reaching e: with Adam one step moves alpha by about lambda * lr, with
SGD by lambda^2 times the unscaled step (paper, appendix A). A part that is switched off is the constant 1
and owns no parameters, so GCN-E, GCN-S and plain GCN are this module with switches off.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class RelationWeights(nn.Module):
    def __init__(self, num_edge_relations: int, num_node_types: int, scale: float = 100.0, heads: int = 1,
                 edge_embeddings: bool = True, self_loop_embeddings: bool = True, negative_slope: float = 0.01):
        super().__init__()
        if scale <= 0:
            raise ValueError(f"relation scale (lambda) must be > 0, got {scale}")
        self.scale = float(scale)
        self.negative_slope = negative_slope
        self.num_edge_relations = num_edge_relations
        self.num_node_types = num_node_types
        self.heads = heads
        self.register_buffer("_anchor", torch.zeros(0), persistent=False)  # follows .to(device)
        self.edge = self._part(num_edge_relations, heads, edge_embeddings)
        self.self_loop = self._part(num_node_types, heads, self_loop_embeddings)

    def _part(self, n: int, heads: int, learn: bool) -> nn.Parameter | None:
        # None means the constant 1: no parameter, nothing to learn.
        return nn.Parameter(torch.full((n, heads), 1.0 / self.scale)) if learn and n else None

    @property
    def is_constant(self) -> bool:
        return self.edge is None and self.self_loop is None

    def _alpha(self, e: nn.Parameter | None, n: int, device) -> torch.Tensor:
        if e is None:
            return torch.ones(n, self.heads, device=device)
        return F.leaky_relu(self.scale * e, self.negative_slope)

    def forward(self, rel: torch.Tensor | None = None) -> torch.Tensor:
        """Weights per relation (num_relations, heads), or per edge (E, heads) when `rel` ids are given."""
        if self.edge is not None and self.self_loop is not None:  # both learnt: one scaling and activation
            alpha = F.leaky_relu(self.scale * torch.cat([self.edge, self.self_loop]), self.negative_slope)
        else:
            device = self._anchor.device
            alpha = torch.cat([self._alpha(self.edge, self.num_edge_relations, device),
                               self._alpha(self.self_loop, self.num_node_types, device)])
        return alpha if rel is None else alpha[rel]

    def named_values(self, names: list[str]) -> dict[str, float | list[float]]:
        """{relation name: weight} (a list per head when heads > 1), for reading after training."""
        with torch.no_grad():
            a = self.forward().cpu()
        return {n: (a[i, 0].item() if self.heads == 1 else a[i].tolist()) for i, n in enumerate(names)}
