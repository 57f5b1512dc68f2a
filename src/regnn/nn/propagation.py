"""The propagation layers (GCN, GraphSAGE, GIN, MixHop) with relation weights.

The relation weights enter through the weighted adjacency A_w and its weighted degrees
(Adjacency.normalized_spmm), or, in the released MixHop, through the degrees alone. A layer given no weights (none
of its own, no alpha) is the plain layer: every edge and self-loop weighs 1. Feature dropout on a layer's input is
the caller's (the RE-GNN model applies it), so the layers hold none (GIN's MLP excepted).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from regnn.core.adjacency import Adjacency
from regnn.core.receptive import RowBlock, gcn_rows_layer
from regnn.nn.layer import RELayer

ACTIVATIONS = {"elu": F.elu, "relu": F.relu, "none": None}


@dataclass
class ProjectAfterHop:
    """A layer's input h = Z W, given as its two factors so that the layer aggregates Z and projects after:
    A (Z W) = (A Z) W, on the destination rows only. Z (sources x k) holds each source's input features in its
    node type's block of columns, with a 1 for the type's bias; W (k x hidden) stacks every type's projection
    and bias (regnn.models.sampled.SampledREGNN with trainer.input_dropout=features)."""

    z: torch.Tensor
    weight: torch.Tensor


def _dims(in_channels: int, out_channels: int, weight: bool) -> None:
    if not weight and in_channels != out_channels:
        raise ValueError("a propagation-only layer keeps the dimension: in_channels must equal out_channels")


class _Weighted(RELayer):
    """What GCN and the released GraphSAGE share after their aggregation: an optional W (xavier-uniform) and bias
    (zero-initialised), then the activation; weight=False: a pure propagation step, with neither."""

    def _build(self, *, bias: bool = True, weight: bool = True, activation: str = "none") -> None:
        in_channels, out_channels = self.in_channels, self.out_channels
        _dims(in_channels, out_channels, weight)
        self.weight = nn.Parameter(torch.empty(in_channels, out_channels)) if weight else None
        self.bias = nn.Parameter(torch.zeros(out_channels)) if (bias and weight) else None
        self.activation = ACTIVATIONS[activation]
        self.is_linear = self.weight is None and self.activation is None  # a pure propagation step
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """W xavier-uniform, b 0 and every relation weight 1, as a new layer starts."""
        if self.weight is not None:
            nn.init.xavier_uniform_(self.weight)
        if self.bias is not None:
            nn.init.zeros_(self.bias)
        self._reset_relations()

    @property
    def fixed_width(self) -> bool:
        return self.weight is not None

    def _bias_activation(self, out: torch.Tensor) -> torch.Tensor:
        if self.bias is not None:
            out = out + self.bias
        return self.activation(out) if self.activation else out


class REGCNConv(_Weighted):
    r"""The RE-GCN layer (Wang et al., "Enabling Homogeneous GNNs to Handle Heterogeneous Graphs via Relation
    Embedding"): GCN on the graph whose every edge weighs its relation's learned weight,

    .. math::
        \mathbf{X}' = \hat{\mathbf{D}}^{-1/2} \mathbf{A}_\alpha \hat{\mathbf{D}}^{-1/2} \mathbf{X} \mathbf{W}
        + \mathbf{b}, \qquad \alpha_r = \mathrm{LeakyReLU}(\lambda e_r)

    with :math:`\mathbf{A}_\alpha` holding :math:`\alpha_r` for an edge of relation r and
    :math:`\alpha_{\mathrm{self}:t}` on the self-loop of a node of type t, and :math:`\hat{\mathbf{D}}` its
    weighted in-degrees clamped at 1 (the authors' code). Every weight starts at 1 (:math:`e_r = 1/\lambda`);
    :math:`\lambda` scales its gradient.

    Args:
        in_channels, out_channels: feature sizes.
        num_relations: relation types (edge_type ids); num_node_types: node types (node_type ids). Both None: no
            relation weights of its own (regnn.nn.layer).
        The others are keyword-only.
        norm: "both" (as above), "right" (:math:`\hat{\mathbf{D}}^{-1} \mathbf{A}_\alpha`) or "none".
        bias: add a learnable bias. scale: :math:`\lambda` (the paper's default 100).
        learn: which weights are learnt, the others staying 1: "both" (RE-GCN), "edges" (GCN-E), "self" (GCN-S)
            or "none" (a plain GCN layer).
        weight: False for a pure propagation step (no W, no bias), as the first and last layers of the authors'
            RE-GCN. activation: "none", "elu" or "relu" after the bias.
    Shapes: x (N, in_channels), edge_index (2, E), edge_type (E,), node_type (N,) -> (N, out_channels).
    """

    takes_factors = True  # forward takes a ProjectAfterHop for x
    takes_rows = True

    def _build(self, *, norm: str = "both", **options) -> None:
        if norm not in ("both", "right", "none"):
            raise ValueError(f"norm must be both, right or none, got {norm!r}")
        self.norm = norm
        super()._build(**options)

    @property
    def prepare_norm(self) -> str:
        """The norm under which the layer aggregates: the model has the graph prepare the relation weights of every
        such layer ahead, all at once (Adjacency.prepare)."""
        return self.norm

    def propagate(self, adj: Adjacency, h, alpha: torch.Tensor | None = None, rows: RowBlock | None = None):
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
        return self._bias_activation(out)

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, norm={self.norm!r}" + ("" if self.weight is not None else ", weight=False")


class RESAGEConv(_Weighted):
    """The authors' released RESAGEConv (layer/RESAGEConv.py at 2e297ef; their RE-GraphSAGE is their REGCN with
    it): act((sum_{u->v} w_e h_u / d_u + h_v) W + b), d_u the weighted in-degree of the *source* u clamped at 1,
    one W for a node and its neighbours (xavier-uniform), a zero-initialised bias.

    weight=False: sum_{u->v} w_e h_u / d_u + h_v with no W and no bias, the propagation-only first and last layers
    of the authors' layout. The released layer also allocates a `weight_root` that its forward never reads; it is
    not built here. On a sampled block the source degrees are the whole graph's (Adjacency.source_degree).
    Arguments as REGCNConv's, without norm.
    """

    def propagate(self, adj: Adjacency, h: torch.Tensor, alpha: torch.Tensor | None = None, rows=None):
        alpha = None if alpha is None else alpha[:, :1].to(h.dtype)
        deg = adj.source_degree(alpha, h.dtype).clamp(min=1).unsqueeze(-1)
        w = adj.scaled_edge_weights(alpha, h.dtype)  # on a sampled block, scaled to estimate the whole sum
        # (A_w D_src^-1 h + h) W equals the released A_w D_src^-1 (h W) + h W: one product with W instead of two
        out = adj.spmm(h / deg, w) + h[: adj.num_dst]
        if self.weight is not None:
            out = out @ self.weight
        return self._bias_activation(out)


class REGINConv(RELayer):
    """The authors' released REGINConv with its MLP (layer/REGINConv.py, model/REGIN.py at 2e297ef): the weighted
    mean D^-1 A_w h over the in-edges (D the relation-weighted in-degree, clamped at 1; the typed self-loops
    stand in for GIN's (1 + eps) h_v, whose eps term the authors commented out), then the "MLP" the authors run:
    dropout and one linear layer without bias (their first linear is built but commented out of forward), then
    the activation. weight=False: the weighted mean alone, as the stack's last layer. Arguments in_channels to
    learn as REGCNConv's; then activation, mlp_dropout (the dropout before the linear layer) and weight."""

    def _build(self, *, activation: str = "elu", mlp_dropout: float = 0.0, weight: bool = True) -> None:
        _dims(self.in_channels, self.out_channels, weight)
        self.lin = nn.Linear(self.in_channels, self.out_channels, bias=False) if weight else None
        self.dropout = nn.Dropout(mlp_dropout)
        self.activation = ACTIVATIONS[activation]

    def reset_parameters(self) -> None:
        if self.lin is not None:
            self.lin.reset_parameters()
        self._reset_relations()

    @property
    def fixed_width(self) -> bool:
        return self.lin is not None

    @property
    def prepare_norm(self) -> str:
        return "right"

    def propagate(self, adj: Adjacency, h: torch.Tensor, alpha: torch.Tensor | None = None, rows=None):
        out = adj.normalized_spmm(h, alpha, "right")
        if self.lin is not None:
            out = self.lin(self.dropout(out))
        return self.activation(out) if self.activation else out


class REMixHopConv(RELayer):
    """The authors' released REMixHopConv (layer/REMixHopConv.py at 2e297ef): concat over powers j of
    W_j (S A S)^j h, A the unweighted adjacency (self-loops included) and S = D_w^-1/2, D_w the relation-weighted
    in-degree clamped at 1: the relation weights enter the normalisation only. Then the activation. The
    released layer's dropout after the activation is the model's (the mixhop stack's dropout placement).
    Output: (N, len(powers) * out_channels). Arguments in_channels to learn as REGCNConv's; then powers and
    activation."""

    def _build(self, *, powers: tuple[int, ...] = (0, 1, 2), activation: str = "elu") -> None:
        self.powers = tuple(sorted(powers))
        self.lins = nn.ModuleList(nn.Linear(self.in_channels, self.out_channels, bias=False) for _ in self.powers)
        self.activation = ACTIVATIONS[activation]

    def reset_parameters(self) -> None:
        for lin in self.lins:
            lin.reset_parameters()
        self._reset_relations()

    def propagate(self, adj: Adjacency, h: torch.Tensor, alpha: torch.Tensor | None = None, rows=None):
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
