"""Backbones whose layers do not pass messages: the features-only MLP, and APPNP (dense layers predict, then
relation-weighted propagation spreads the predictions). Registered in regnn.models.backbones.BACKBONES."""

from __future__ import annotations

from torch import nn

from regnn.models.stack import Stack, StackShape
from regnn.nn import REGCNConv
from regnn.nn.propagation import ACTIVATIONS


class Dense(nn.Module):
    """A layer that ignores the graph: W h + b and the activation on every destination node's own features."""

    def __init__(self, in_dim: int, out_dim: int, activation: str):
        super().__init__()
        self.lin = nn.Linear(in_dim, out_dim)
        self.activation = ACTIVATIONS[activation]

    def forward(self, h, adj, alpha=None):
        h = self.lin(h[: adj.num_dst])
        return self.activation(h) if self.activation else h


def mlp(shape: StackShape, activation: str = "elu") -> Stack:
    """No message passing (model=mlp): after the per-type input projection, num_layers dense layers with the
    activation on each node's own features, then a linear output layer. The features-only baseline a graph model
    has to beat."""
    hidden, num_classes, num_layers = shape
    return Stack(
        [Dense(hidden, hidden, activation) for _ in range(num_layers)], [1] * num_layers, nn.Linear(hidden, num_classes)
    )


class APPNPPropagation(nn.Module):
    """`steps` personalised-PageRank steps on the weighted graph (APPNP, Klicpera et al., ICLR 2019):
    z <- (1 - teleport) A_hat z + teleport h, from z = h, A_hat the relation-weighted normalised adjacency."""

    def __init__(self, dim: int, steps: int, teleport: float, norm: str):
        super().__init__()
        self.prop = REGCNConv(dim, dim, norm=norm, weight=False)
        self.steps, self.teleport = steps, teleport

    @property
    def prepare_norm(self) -> str:
        return self.prop.prepare_norm

    def forward(self, h, adj, alpha=None):
        z = h
        for _ in range(self.steps):
            z = (1 - self.teleport) * self.prop(z, adj, alpha=alpha) + self.teleport * h
        return z


def appnp(
    shape: StackShape,
    activation: str = "elu",
    steps: int = 10,
    teleport: float = 0.1,
    norm: str = "both",
) -> Stack:
    """num_layers dense layers predict from each node's own features, `steps` propagation steps with one set of
    relation weights spread the predictions, a linear layer outputs the classes."""
    hidden, num_classes, num_layers = shape
    convs = [Dense(hidden, hidden, activation) for _ in range(num_layers)] + [
        APPNPPropagation(hidden, steps, teleport, norm)
    ]
    return Stack(convs, [1], nn.Linear(hidden, num_classes), relation_of=[0] * len(convs))
