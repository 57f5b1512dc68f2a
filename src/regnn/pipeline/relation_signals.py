"""Quantities read off a trained RE model that might say which relation groups matter, per run and group, to be
checked against the retrained ablation (regnn.experiments.weight_study measures how well each tracks it):

- mean_weight: the group's learned weights, mean over the layers and both directions (the paper's Figure 7);
- last_into_target: the last layer's weights of the group's relations into the target type (0 for a group with
  none: it reaches the targets only through other types);
- last_share: each relation's part of the targets' last-layer aggregate (weight x normalisation x the layer's
  input from each neighbour, before the layer's W), its norm over the sum of every part's norm, mean over the
  targets (RE-GCN's REGCNConv layers only);
- flow_share: the same share at every layer, each node's weighted by how much of the targets' aggregates flows
  from it through the later layers (so a relation that reaches the targets through another type counts;
  REGCNConv layers only);
- taylor: the first-order change of the validation loss if the group's weights went to 0: -sum(w * dL/dw) over
  its relations and layers (every model with relation weights);
- gradient: sum(|dL/dw|) over its relations and layers, how sensitive the validation loss is to the group's
  weights.

Higher: the group matters more, for every quantity.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from regnn.models.regnn import REGNN
from regnn.nn import REGCNConv
from regnn.pipeline.node_shares import edge_values, layer_calls, relation_shares

QUANTITIES = ("mean_weight", "last_into_target", "last_share", "flow_share", "taylor", "gradient")


def weight_quantities(weights, groups: dict[str, tuple[str, ...]], target: str) -> dict[str, dict[str, float]]:
    """mean_weight and last_into_target of one run from its weight rows (layer, relation, destination, weight)."""
    last = weights[weights.layer == weights.layer.max()]
    into = last[last.destination == target]
    out = {"mean_weight": {}, "last_into_target": {}}
    for name, members in groups.items():
        out["mean_weight"][name] = float(weights[weights.relation.isin(members)].weight.mean())
        mine = into[into.relation.isin(members)]
        out["last_into_target"][name] = float(mine.weight.mean()) if len(mine) else 0.0
    return out


def share_quantities(model, inputs, feats, groups: dict[str, tuple[str, ...]]) -> dict[str, dict[str, float]]:
    """last_share and flow_share of one run (empty where a layer is not GCN-style: its aggregate does not split
    by relation)."""
    calls = layer_calls(model, inputs, feats)
    if not calls or not all(isinstance(c, REGCNConv) and not isinstance(a, list) for c, _, a, _ in calls):
        return {}
    names = list(model.relation_names)
    targets = inputs.target_nodes.cpu()  # the sums here are small: on the CPU, whatever device the model is on
    mass = torch.zeros(calls[-1][2].num_dst, dtype=torch.float64)
    mass[targets] = 1.0 / len(targets)
    flow = torch.zeros(len(names), dtype=torch.float64)
    last = None
    for conv, h, adj, alpha in reversed(calls):
        share = relation_shares(conv, h, adj, alpha, len(names)).double().cpu()
        if last is None:
            last = share[targets].mean(0)
        flow += (mass[: share.shape[0], None] * share).sum(0)
        # what flows into this layer's destinations came from its sources, in proportion to the edge values
        back = torch.zeros(adj.num_src, dtype=torch.float64)
        src, dst = adj.edge_ids("src").cpu(), adj.edge_ids("dst").cpu()
        back.index_add_(0, src, edge_values(conv, adj, alpha).abs().double().cpu() * mass[dst])
        mass = back / back.sum().clamp(min=torch.finfo(torch.float64).tiny)
    flow /= len(calls)
    index = {n: i for i, n in enumerate(names)}
    return {
        "last_share": {g: float(sum(last[index[r]] for r in m if r in index)) for g, m in groups.items()},
        "flow_share": {g: float(sum(flow[index[r]] for r in m if r in index)) for g, m in groups.items()},
    }


def gradient_quantities(model, inputs, feats, labels, val, groups) -> dict[str, dict[str, float]]:
    """taylor and gradient of one run: the validation loss's derivatives in every layer's relation weights (the
    weights of a layer with several heads summed over its heads)."""
    params = [(rw, p) for rw in model.relations for p in (rw.edge, rw.self_loop) if p is not None]
    if not params or len(val) == 0:
        return {}
    model.zero_grad(set_to_none=True)
    with torch.enable_grad():
        logits = model(inputs, feats)[0].float()
        F.cross_entropy(logits[val], labels[val]).backward()
    names = list(model.relation_names)
    taylor = torch.zeros(len(names), dtype=torch.float64)
    slope = torch.zeros(len(names), dtype=torch.float64)
    for rw, p in params:
        g = p.grad if p.grad is not None else torch.zeros_like(p)
        e = p.detach()
        offset = 0 if p is rw.edge else rw.num_edge_relations
        # w = LeakyReLU(scale * e) is linear on each side of 0, so w * dL/dw = e * dL/de there
        dw = g / (rw.scale * torch.where(e > 0, 1.0, rw.negative_slope))
        per_rel_t = (e * g).double().reshape(-1, e.shape[-2], e.shape[-1]).sum((0, 2)).cpu()
        per_rel_g = dw.abs().double().reshape(-1, e.shape[-2], e.shape[-1]).sum((0, 2)).cpu()
        taylor[offset : offset + len(per_rel_t)] += per_rel_t
        slope[offset : offset + len(per_rel_g)] += per_rel_g
    model.zero_grad(set_to_none=True)
    index = {n: i for i, n in enumerate(names)}
    return {
        "taylor": {g: -float(sum(taylor[index[r]] for r in m if r in index)) for g, m in groups.items()},
        "gradient": {g: float(sum(slope[index[r]] for r in m if r in index)) for g, m in groups.items()},
    }


def signal_rows(p, run: str, model, groups: dict[str, tuple[str, ...]], weights) -> list[dict]:
    """The rows (run, group, quantity, value) of one run of the cell p (regnn.pipeline.predict.Predicted): its
    loaded model on the whole graph, its weight rows among `weights` (regnn.pipeline.explain.weight_rows)."""
    job = p.job
    found = weight_quantities(weights[weights.run == run], groups, p.data.target)
    if isinstance(model, REGNN):  # the meta-path baselines' relation weights (HAN, ...) give the mean weight only
        found |= share_quantities(model, job.inputs, job.feats, groups)
        found |= gradient_quantities(model, job.inputs, job.feats, job.labels, p.data.splits["val"], groups)
    return [
        {"run": run, "group": g, "quantity": q, "value": v} for q, values in found.items() for g, v in values.items()
    ]
