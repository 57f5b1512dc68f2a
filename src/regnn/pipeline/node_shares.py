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
    seen = {}

    def keep(module, args, kwargs):
        seen["h"], seen["adj"], seen["alpha"] = args[0], args[1], kwargs.get("alpha")

    handle = conv.register_forward_pre_hook(keep, with_kwargs=True)
    try:
        with torch.no_grad():
            model(inputs, feats)
    finally:
        handle.remove()
    adj, h, alpha = seen["adj"], seen["h"].float(), seen["alpha"]
    if alpha is None:
        values = adj.normalized_values(conv.norm, h.dtype)[0]
    else:
        values = adj.weighted_values(alpha[:, :1].float(), conv.norm)[1]
    num_relations = len(model.relation_names)
    parts = torch.stack([adj.spmm(h, values * (adj.rel == r)).norm(dim=1) for r in range(num_relations)], 1)
    total = parts.sum(1, keepdim=True)
    shares = torch.where(total > 0, parts / total.clamp(min=torch.finfo(parts.dtype).tiny), 0.0)
    return shares[inputs.target_nodes].cpu()
