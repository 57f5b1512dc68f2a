"""Relation embeddings: one learnable scalar per relation type and per node-type self-loop (per head).

alpha = tau(lambda * e) with tau = LeakyReLU and e initialised to 1/lambda, so every weight starts at exactly 1.
lambda (`scale`) multiplies the gradient reaching e: with Adam one step moves alpha by about lambda * lr, with
SGD by lambda^2 times the unscaled step (paper, appendix A). A part that is switched off is the constant 1
and owns no parameters, so GCN-E, GCN-S and plain GCN are this module with switches off.

One module can hold the weights of several layers (`layers=L`: one (L, n, heads) tensor per part instead of L
tensors): a model then computes all of them in one scaling and activation, and the optimiser, the gradient
accumulation and zero_grad handle two tensors instead of 2L. Every number is the same (all of it is
elementwise), with one exception no shipped layout meets: a layer that never uses its weights gets zero
gradients for them (Adam's weight decay then moves them), where a tensor of its own would get none.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class Relation:
    """How relations are weighed: the model.relation block of a config (its values live there, in
    conf/backbone/ and conf/relation/; regnn.spec reads them into this). Switched-off parts weigh 1."""

    edge_embeddings: bool  # one learnt weight per edge relation type
    self_loop_embeddings: bool  # one learnt weight per node type's self-loop
    scale: float  # lambda: alpha = tau(lambda * e), e initialised to 1 / lambda
    negative_slope: float  # slope of tau = LeakyReLU

    def __post_init__(self):
        if not self.scale > 0:
            raise ValueError(f"relation scale (lambda) must be > 0, got {self.scale}")


class RelationWeights(nn.Module):
    def __init__(
        self,
        num_edge_relations: int,
        num_node_types: int,
        relation: Relation,
        heads: int = 1,
        layers: int | None = None,
    ):
        super().__init__()
        if layers is not None and layers < 1:
            raise ValueError(f"layers must be >= 1 (or None for one layer without that axis), got {layers}")
        self.scale = float(relation.scale)
        self.negative_slope = relation.negative_slope
        self.num_edge_relations = num_edge_relations
        self.num_node_types = num_node_types
        self.heads = heads
        self.layers = layers  # None: weights (num_relations, heads); L: (L, num_relations, heads)
        self.register_buffer("_anchor", torch.zeros(0), persistent=False)  # follows .to(device)
        self.edge = self._part(num_edge_relations, relation.edge_embeddings)
        self.self_loop = self._part(num_node_types, relation.self_loop_embeddings)

    def _shape(self, n: int) -> tuple[int, ...]:
        return (n, self.heads) if self.layers is None else (self.layers, n, self.heads)

    def _part(self, n: int, learn: bool) -> nn.Parameter | None:
        # None means the constant 1: no parameter, nothing to learn.
        return nn.Parameter(torch.full(self._shape(n), 1.0 / self.scale)) if learn and n else None

    @property
    def is_constant(self) -> bool:
        return self.edge is None and self.self_loop is None

    def _alpha(self, e: nn.Parameter | None, n: int, device) -> torch.Tensor:
        if e is None:
            return torch.ones(self._shape(n), device=device)
        return F.leaky_relu(self.scale * e, self.negative_slope)

    def forward(self, rel: torch.Tensor | None = None) -> torch.Tensor:
        """Weights per relation (num_relations, heads) ((layers, num_relations, heads) for several layers), or
        per edge (E, heads) when `rel` ids are given (one layer only)."""
        if rel is not None and self.layers is not None:
            raise ValueError("per-edge weights need one layer's relation weights; index the layer first")
        if self.edge is not None and self.self_loop is not None:  # both learnt: one scaling and activation
            alpha = F.leaky_relu(self.scale * torch.cat([self.edge, self.self_loop], dim=-2), self.negative_slope)
        else:
            device = self._anchor.device
            alpha = torch.cat(
                [
                    self._alpha(self.edge, self.num_edge_relations, device),
                    self._alpha(self.self_loop, self.num_node_types, device),
                ],
                dim=-2,
            )
        return alpha if rel is None else alpha[rel]

    def per_layer(self) -> list[torch.Tensor | None]:
        """Each layer's weights (num_relations, heads), or None per layer where all are the constant 1."""
        n = 1 if self.layers is None else self.layers
        if self.is_constant:
            return [None] * n
        alpha = self.forward()
        return [alpha] if self.layers is None else list(alpha.unbind(0))

    def named_values(self, names: list[str]) -> dict[str, float | list[float]] | list[dict]:
        """{relation name: weight} (a list per head when heads > 1), for reading after training; with layers=L a
        list of L such dicts."""
        with torch.no_grad():
            a = self.forward().cpu()

        def named(x):
            return {n: (x[i, 0].item() if self.heads == 1 else x[i].tolist()) for i, n in enumerate(names)}

        return named(a) if self.layers is None else [named(x) for x in a]
