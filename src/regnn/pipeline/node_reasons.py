"""Why one node got its class, as a counterfactual: for every relation group (a relation with its reverse), the
change in the probability of the node's predicted class when the group's edges are removed from the graph (from
every node's receptive field at once: a node's output depends on its receptive field only), and whether the
predicted class then changes. The top relation of a node is the group whose removal lowers that probability most.

It asks the trained model itself, one forward pass per group, so it holds for every model that predicts on the
whole graph (GCN, GAT, GIN, SAGE, MixHop, their RE versions and the baselines), where the relation shares of
regnn.pipeline.node_shares only split a GCN-style last layer. The fidelity of these reasons (does removing a node's
top relation change its prediction more often than removing another?) is measured by
regnn.experiments.node_reasons_study.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from regnn.data.pruning import relation_groups, without
from regnn.errors import ConfigError
from regnn.pipeline.from_config import prepare_inputs
from regnn.pipeline.trained_model import loaded_model
from regnn.training.trainer import autocast


@dataclass
class Reasons:
    groups: list[str]  # group names ("a + b")
    pred: torch.Tensor  # (nodes,) the predicted class with every relation
    drop: torch.Tensor  # (nodes, groups) probability of the predicted class lost without the group
    flips: torch.Tensor  # (nodes, groups) whether the predicted class changes without the group

    def top(self) -> list[str]:
        """Per node: the group whose removal lowers its predicted class's probability most."""
        return [self.groups[i] for i in self.drop.argmax(1).tolist()]


def group_name(group: tuple[str, ...]) -> str:
    return " + ".join(group)


def logits(model, inputs, job, tcfg) -> torch.Tensor:
    with torch.no_grad(), autocast(str(tcfg.get("precision", "fp32")), job.labels.device):
        return model(inputs, job.feats)[0].float().cpu()


def masked_inputs(job, tcfg, groups) -> dict:
    """Each group's model inputs: the graph with the group's relations kept as relations without edges (every
    other relation keeps its id, as a trained model reads the graph by relation id)."""
    out = {}
    for g in groups:
        data = dataclasses.replace(job.data, graph=without(job.data.graph, g, keep_slots=True))
        out[g] = prepare_inputs(tcfg.model, data, job.device)
    return out


def reasons(job, tcfg, run_dirs, inference: str = "auto") -> Reasons:
    """The counterfactual reasons of the mean prediction of run_dirs' models (an ensemble's, or one run's)."""
    groups = relation_groups(job.data.graph)
    variants = masked_inputs(job, tcfg, groups)
    full, masked = 0.0, {g: 0.0 for g in groups}
    for run_dir in run_dirs:
        model, sg = loaded_model(job, tcfg, run_dir, "fullbatch" if inference == "auto" else inference)
        if sg is not None:
            raise ConfigError(
                f"{run_dir} computes layer by layer; the per-node reasons remove relations from the whole graph: "
                "pass inference=fullbatch"
            )
        full = full + logits(model, job.inputs, job, tcfg).softmax(1) / len(run_dirs)
        for g, inputs in variants.items():
            masked[g] = masked[g] + logits(model, inputs, job, tcfg).softmax(1) / len(run_dirs)
    pred = full.argmax(1)
    rows = torch.arange(len(pred))
    drop = torch.stack([full[rows, pred] - masked[g][rows, pred] for g in groups], 1)
    flips = torch.stack([masked[g].argmax(1) != pred for g in groups], 1)
    return Reasons([group_name(g) for g in groups], pred, drop, flips)


def explain_columns(df, data, shares, why: Reasons | None) -> None:
    """predictions.csv's explain=true columns: top_relation (the group whose removal lowers the predicted class's
    probability most), flips_without (the groups whose removal changes the predicted class), drop_<group> (the
    probability lost without it), and for GCN-style models share_<relation> (the relation's share of the node's
    last-layer aggregate: how much of its neighbourhood it is, not a reason)."""
    from regnn.data.relation_graph import relation_ends

    if why is not None:
        df["top_relation"] = why.top()
        df["flips_without"] = [";".join(g for g, f in zip(why.groups, row) if f) for row in why.flips.tolist()]
        for k, g in enumerate(why.groups):
            df[f"drop_{g}"] = why.drop[:, k].numpy()
    if shares is not None:
        rels, values = shares
        ends = relation_ends(data.graph)
        for j, r in enumerate(rels):
            if ends.get(r, (None, None))[1] == data.target:
                df[f"share_{r}"] = values[:, j].numpy()
