"""Propagation-based layers (GCN, GraphSAGE, GIN, MixHop) that consume relation weights.

Every layer takes (adj, h, alpha): an `Adjacency`, node features, and the layer's relation weights
(num_relations, 1), or None for the plain layer where every edge and self-loop weighs 1. The relation weights
enter through the weighted adjacency A_w and its weighted degrees (Adjacency.normalized_spmm), or, in the
released MixHop, through the degrees alone.
Feature dropout on a layer's input is applied by the model, so the layers hold none (GIN's MLP excepted).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from regnn.core.adjacency import Adjacency
from regnn.core.receptive import RowBlock, gcn_rows_layer

ACTIVATIONS = {"elu": F.elu, "relu": F.relu, "none": None}


@dataclass
class ProjectAfterHop:
    """A layer's input h = Z W, given as its two factors so that the layer aggregates Z and projects after:
    A (Z W) = (A Z) W, on the destination rows only. Z (sources x k) holds each source's input features in its
    node type's block of columns, with a 1 for the type's bias; W (k x hidden) stacks every type's projection
    and bias (regnn.models.sampled.SampledREGNN with trainer.input_dropout=features)."""

    z: torch.Tensor
    weight: torch.Tensor


class REGraphConv(nn.Module):
    """GCN on the weighted graph: act(D^-1/2 A_H D^-1/2 H W + b) (norm="both") or act(D^-1 A_H H W + b) ("right").

    D is the weighted in-degree clamped at 1 (the authors' code). weight=False gives a pure propagation step
    (no W, no bias), as the first and last layers of the authors' RE-GCN.
    """

    def __init__(
        self,
        in_dim: int,
        out_dim: int,
        weight: bool = True,
        bias: bool = True,
        norm: str = "both",
        activation: str = "none",
    ):
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

    takes_factors = True  # forward takes a ProjectAfterHop for h
    takes_rows = True  # forward can compute only the rows later layers read (regnn.core.receptive)

    def forward(
        self, adj: Adjacency, h, alpha: torch.Tensor | None = None, rows: RowBlock | None = None
    ) -> torch.Tensor:
        """rows: compute the output on these rows only (0 elsewhere) where the fused path allows it; the rest of
        the graph's rows are computed too where it does not."""
        if rows is not None and not isinstance(h, ProjectAfterHop):
            # the rows path aggregates first; a layer that multiplies by W first (in > out) runs whole
            if self.weight is None or self.weight.shape[0] <= self.weight.shape[1]:
                out = gcn_rows_layer(adj, h, alpha, self.norm, rows, self.weight, self.bias, self.activation)
                if out is not None:
                    return out
        if isinstance(h, ProjectAfterHop):  # the input projection after the aggregation, on the destinations
            # (A Z) (W_in W): the two weights multiplied first, a (k x out) product, not one per destination row
            w = h.weight if self.weight is None else h.weight @ self.weight
            out = adj.normalized_spmm(h.z, alpha, self.norm) @ w
        else:
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
    """The authors' released RESAGEConv (layer/RESAGEConv.py at 2e297ef; their RE-GraphSAGE is their REGCN with
    it): act((sum_{u->v} w_e h_u / d_u + h_v) W + b), d_u the weighted in-degree of the *source* u clamped at 1,
    one W for a node and its neighbours (xavier-uniform), a zero-initialised bias.

    weight=False: sum_{u->v} w_e h_u / d_u + h_v with no W and no bias, the propagation-only first and last layers
    of the authors' layout. The released layer also allocates a `weight_root` that its forward never reads; it is
    not built here. On a sampled block the source degrees are the whole graph's (Adjacency.source_degree).
    """

    def __init__(self, in_dim: int, out_dim: int, weight: bool = True, bias: bool = True, activation: str = "none"):
        super().__init__()
        if not weight and in_dim != out_dim:
            raise ValueError("a propagation-only layer keeps the dimension: in_dim must equal out_dim")
        self.weight = nn.Parameter(torch.empty(in_dim, out_dim)) if weight else None
        self.bias = nn.Parameter(torch.zeros(out_dim)) if (bias and weight) else None
        if self.weight is not None:
            nn.init.xavier_uniform_(self.weight)
        self.activation = ACTIVATIONS[activation]
        self.is_linear = not weight and self.activation is None

    def forward(self, adj: Adjacency, h: torch.Tensor, alpha: torch.Tensor | None = None) -> torch.Tensor:
        alpha = None if alpha is None else alpha[:, :1].to(h.dtype)
        deg = adj.source_degree(alpha, h.dtype).clamp(min=1).unsqueeze(-1)
        w = adj.scaled_edge_weights(alpha, h.dtype)  # on a sampled block, scaled to estimate the whole sum
        # (A_w D_src^-1 h + h) W equals the released A_w D_src^-1 (h W) + h W: one product with W instead of two
        out = adj.spmm(h / deg, w) + h[: adj.num_dst]
        if self.weight is not None:
            out = out @ self.weight
        if self.bias is not None:
            out = out + self.bias
        return self.activation(out) if self.activation else out


class REGINConv(nn.Module):
    """The authors' released REGINConv with its MLP (layer/REGINConv.py, model/REGIN.py at 2e297ef): the weighted
    mean D^-1 A_w h over the in-edges (D the relation-weighted in-degree, clamped at 1; the typed self-loops
    stand in for GIN's (1 + eps) h_v, whose eps term the authors commented out), then the "MLP" the authors run:
    dropout and one linear layer without bias (their first linear is built but commented out of forward), then
    the activation. weight=False: the weighted mean alone, as the stack's last layer."""

    def __init__(
        self, in_dim: int, out_dim: int, activation: str = "elu", mlp_dropout: float = 0.0, weight: bool = True
    ):
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
    """The authors' released REMixHopConv (layer/REMixHopConv.py at 2e297ef): concat over powers j of
    W_j (S A S)^j h, A the unweighted adjacency (self-loops included) and S = D_w^-1/2, D_w the relation-weighted
    in-degree clamped at 1: the relation weights enter the normalisation only. Then the activation. The
    released layer's dropout after the activation is the model's (the mixhop stack's dropout placement)."""

    def __init__(self, in_dim: int, out_dim: int, powers: tuple[int, ...] = (0, 1, 2), activation: str = "elu"):
        super().__init__()
        self.powers = tuple(sorted(powers))
        self.lins = nn.ModuleList(nn.Linear(in_dim, out_dim, bias=False) for _ in self.powers)
        self.activation = ACTIVATIONS[activation]

    def forward(self, adj: Adjacency, h: torch.Tensor, alpha: torch.Tensor | None = None) -> torch.Tensor:
        if adj.num_src != adj.num_dst:
            raise ValueError("MixHop's powers of the adjacency need the whole graph, not a sampled block")
        alpha = None if alpha is None else alpha[:, :1].to(h.dtype)
        s = adj.source_degree(alpha, h.dtype).clamp(min=1).pow(-0.5).unsqueeze(-1)
        outs, x, j = [], h, 0
        for p, lin in zip(self.powers, self.lins):
            while j < p:
                x, j = s * adj.spmm(s * x), j + 1
            outs.append(lin(x))
        out = torch.cat(outs, dim=1)
        return self.activation(out) if self.activation else out
