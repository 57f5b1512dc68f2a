"""Why one node got its class: the share of its last layer's aggregated message that each relation contributed.

In a GCN-style layer (regnn.nn.REGCNConv: RE-GCN and the GCN family) a node's aggregate is a sum over its
in-edges of (relation weight x normalisation x the neighbour's message), a self-loop being the relation
`self:<type>`. Split by relation, the sum is exact: the parts add up to the aggregate. A relation's share is the
norm of its part over the sum of every part's norm, so a node's shares are non-negative and sum to 1: how much of
a node's neighbourhood each relation is, not why it got its class (regnn.pipeline.node_reasons says that). Other
layers (attention, GIN, SAGE) aggregate otherwise and get no shares.
"""

from __future__ import annotations

import torch

from regnn.errors import ConfigError
from regnn.nn import REGCNConv


def gcn_style(model) -> bool:
    """Whether the model's last layer is GCN-style (RE-GCN and the GCN family): its aggregate splits by relation."""
    return isinstance(model.convs[-1] if hasattr(model, "convs") else None, REGCNConv)


def node_shares(model, inputs, feats) -> torch.Tensor:
    """(num target nodes, num relations) shares of every relation in the last layer's aggregate of each target."""
    conv = model.convs[-1] if hasattr(model, "convs") else None
    if not gcn_style(model):
        what = type(conv if conv is not None else model).__name__
        raise ConfigError(
            f"explain=true splits a GCN-style last layer by relation; {what} aggregates otherwise (RE-GCN and the "
            "GCN family only)"
        )
    _, h, adj, alpha = layer_calls(model, inputs, feats, [conv])[-1]
    return relation_shares(conv, h, adj, alpha, len(model.relation_names))[inputs.target_nodes].cpu()


def layer_calls(model, inputs, feats, convs=None) -> list[tuple]:
    """(layer, its input h, its graph, its relation weights) of every call of `convs` (default: every layer of the
    model) in one forward pass, in call order."""
    seen, handles = [], []

    def keep(module, args, kwargs):
        seen.append((module, args[0], args[1], kwargs.get("alpha")))

    for conv in dict.fromkeys(model.convs if convs is None else convs):  # a layer called twice: hooked once
        handles.append(conv.register_forward_pre_hook(keep, with_kwargs=True))
    try:
        with torch.no_grad():
            model(inputs, feats)
    finally:
        for handle in handles:
            handle.remove()
    return seen


def relation_shares(conv, h, adj, alpha, num_relations: int) -> torch.Tensor:
    """(nodes, relations): each relation's part of a GCN-style layer's aggregate of every node (relation weight x
    normalisation x the layer's input from each neighbour), its norm over the sum of every part's norm."""
    h, values = h.float(), edge_values(conv, adj, alpha)
    parts = torch.stack([adj.spmm(h, values * (adj.rel == r)).norm(dim=1) for r in range(num_relations)], 1)
    total = parts.sum(1, keepdim=True)
    return torch.where(total > 0, parts / total.clamp(min=torch.finfo(parts.dtype).tiny), 0.0)


def edge_values(conv, adj, alpha) -> torch.Tensor:
    """A GCN-style layer's normalised edge values, float32, in CSR order: relation weight x normalisation."""
    if alpha is None:
        return adj.normalized_values(conv.norm, torch.float32)[0]
    return adj.weighted_values(alpha[:, :1].float(), conv.norm)[1].detach()
