"""Propagation-based layers (GCN, GraphSAGE, GIN, MixHop) that consume relation weights.

Every layer takes (adj, h, alpha): an `Adjacency`, node features, and the layer's relation weights
(num_relations, 1), or None for the plain layer where every edge and self-loop weighs 1. The relation weights
enter through the weighted adjacency A_w and its weighted degrees (Adjacency.normalized_spmm).
Feature dropout on a layer's input is applied by the model, so the layers hold none (GIN's MLP excepted).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
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

    @property
    def prepare_norm(self) -> str:
        """The norm under which forward(adj, ., alpha) aggregates: REGNN.propagate has adj prepare the relation
        weights of every such layer ahead, all at once (Adjacency.prepare)."""
        return self.norm

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


class RESAGEConv(nn.Module):
    """GraphSAGE (mean aggregator) on the weighted graph: act(W_self h_v + W_neigh (D^-1 A_w h)_v + b). This
    repository's layer, not the authors' released RESAGEConv (which divides by the source's weighted degree and
    shares one W between a node and its neighbours).

    The weighted mean runs over the in-edges, the typed self-loop included, so its relation weight decides how
    much of the node's own state enters the neighbourhood summary. weight=False gives h_v + (D^-1 A_w h)_v,
    the propagation-only layers of the authors' layout.
    """

    def __init__(self, in_dim: int, out_dim: int, weight: bool = True, bias: bool = True, activation: str = "none"):
        super().__init__()
        if not weight and in_dim != out_dim:
            raise ValueError("a propagation-only layer keeps the dimension: in_dim must equal out_dim")
        self.lin_self = nn.Linear(in_dim, out_dim, bias=bias) if weight else None
        self.lin_neigh = nn.Linear(in_dim, out_dim, bias=False) if weight else None
        self.activation = ACTIVATIONS[activation]
        self.is_linear = not weight and self.activation is None

    def forward(self, adj: Adjacency, h: torch.Tensor, alpha: torch.Tensor | None = None) -> torch.Tensor:
        if self.lin_neigh is None:
            out = h[: adj.num_dst] + adj.normalized_spmm(h, alpha, "right")
        else:
            out = self.lin_self(h[: adj.num_dst]) + adj.normalized_spmm(self.lin_neigh(h), alpha, "right")
        return self.activation(out) if self.activation else out


class REGINConv(nn.Module):
    """The authors' released REGINConv with its MLP (layer/REGINConv.py, model/REGIN.py at 2e297ef): the weighted
    mean D^-1 A_w h over the in-edges (D the relation-weighted in-degree, clamped at 1; the typed self-loops
    stand in for GIN's (1 + eps) h_v, whose eps term the authors commented out), then the "MLP" the authors run:
    dropout and one linear layer without bias (their first linear is built but commented out of forward), then
    the activation. weight=False: the weighted mean alone, as the stack's last layer."""

    def __init__(self, in_dim: int, out_dim: int, activation: str = "elu", mlp_dropout: float = 0.0,
                 weight: bool = True):
        super().__init__()
        self.lin = nn.Linear(in_dim, out_dim, bias=False) if weight else None
        self.dropout = nn.Dropout(mlp_dropout)
        self.activation = ACTIVATIONS[activation]

    @property
    def prepare_norm(self) -> str:
        return "right"

    def forward(self, adj: Adjacency, h: torch.Tensor, alpha: torch.Tensor | None = None) -> torch.Tensor:
        out = adj.normalized_spmm(h, alpha, "right")
        if self.lin is not None:
            out = self.lin(self.dropout(out))
        return self.activation(out) if self.activation else out


class REMixHopConv(nn.Module):
    """MixHop: concat over powers j of W_j (A_hat^j h), with A_hat = D^-1/2 A_w D^-1/2 the weighted,
    normalised adjacency of this layer (one set of relation weights shared by all powers)."""

    def __init__(self, in_dim: int, out_dim: int, powers: tuple[int, ...] = (0, 1, 2), activation: str = "elu"):
        super().__init__()
        self.powers = tuple(sorted(powers))
        self.lins = nn.ModuleList(nn.Linear(in_dim, out_dim, bias=False) for _ in self.powers)
        self.activation = ACTIVATIONS[activation]

    def forward(self, adj: Adjacency, h: torch.Tensor, alpha: torch.Tensor | None = None) -> torch.Tensor:
        outs, x, j = [], h, 0
        for p, lin in zip(self.powers, self.lins):
            while j < p:
                x, j = adj.normalized_spmm(x, alpha, "both"), j + 1
            outs.append(lin(x))
        out = torch.cat(outs, dim=1)
        return self.activation(out) if self.activation else out
