"""RE-GNN: per-type input projection -> homogeneous GNN layers on the relation-weighted graph -> classes."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import torch
from torch import nn

from regnn.core.adjacency import Adjacency
from regnn.core.backend import Backend
from regnn.core.dropout import HashDropout
from regnn.core.receptive import cached_plan
from regnn.core.relation import Relation, RelationWeights
from regnn.models.backbones import BACKBONES, projected_width
from regnn.models.stack import StackShape
from regnn.nn.projection import TypeProjection

if TYPE_CHECKING:
    from regnn.data.relation_graph import RelationGraph


@dataclass
class RelationInputs:
    """What RE-GNN needs of a dataset, built once per job: the relation-typed graph and where the targets are."""

    adj: Adjacency
    ntypes: list[str]  # order of the node blocks of the homogeneous graph
    target_nodes: torch.Tensor  # homogeneous ids of the target nodes, by local id
    rg: RelationGraph

    @classmethod
    def build(cls, data, device="cpu", backend: Backend | None = None, **_model_options) -> "RelationInputs":
        """backend: how the layers compute (regnn.core.backend); None chooses it for `device`."""
        from regnn.data.relation_graph import build_relation_graph  # regnn.data reads the heterograph with DGL

        rg = build_relation_graph(data).to(device)
        return cls(rg.adjacency(backend), rg.ntypes, rg.nodes_of(data.target).to(device), rg)


class RelationTypes(Protocol):
    """The relation types a graph has (a RelationGraph, or the sampler's graph of the mini-batch trainer)."""

    relation_names: list[str]  # the edge relations, then one self-loop per node type
    num_edge_relations: int


class REGNN(nn.Module):
    """A homogeneous GNN made heterogeneity-aware by one scalar weight per relation type per layer.

    With both relation switches off it is the plain GNN on the same graph (every edge and self-loop weighs 1).
    The graph is an argument of forward, never stored on the model.
    """

    def __init__(
        self,
        *,
        in_dims: dict[str, int],
        num_classes: int,
        relation_types: RelationTypes,
        relation: Relation,
        backbone: str = "gcn",
        hidden: int = 64,
        num_layers: int = 4,
        dropout: float = 0.6,
        double_dropout: bool = False,
        **backbone_kwargs,
    ):
        super().__init__()
        if backbone not in BACKBONES:
            raise ValueError(f"unknown backbone {backbone!r}; known: {sorted(BACKBONES)}")
        self.relation_names = list(relation_types.relation_names)
        num_edge_relations = relation_types.num_edge_relations
        width = projected_width(hidden, backbone_kwargs.get("heads", 1), backbone_kwargs.get("input_width", "head"))
        self.proj = TypeProjection(in_dims, width)  # the first layer's input width (model.input_width)
        stack = BACKBONES[backbone](StackShape(hidden, num_classes, num_layers), **backbone_kwargs)
        self.convs = nn.ModuleList(stack.convs)  # one per call: a layer called twice is held twice
        self.head = stack.head
        self.relation_of = stack.relation_of or list(range(len(stack.convs)))
        num_node_types = len(self.relation_names) - num_edge_relations
        # one RelationWeights per run of consecutive layers with the same number of heads (a GCN or the
        # authors' GAT stack: one for all layers), see layer_alphas
        self.relations = nn.ModuleList(
            RelationWeights(num_edge_relations, num_node_types, relation, heads=k, layers=n)
            for k, n in _runs(stack.relation_heads)
        )
        # The authors' RE-GCN drops features twice before every layer after the first (once in the model, once
        # in the layer): two independent masks keep a feature with probability (1-p)^2, which is one dropout
        # with rate 1-(1-p)^2 (0.84 for p=0.6). A stack may place its masks itself (the released MixHop).
        masks = stack.dropout_masks
        if masks is None:
            masks = [1] + [2 if double_dropout else 1] * (len(stack.convs) - 1)
        elif double_dropout:
            raise ValueError(f"the {backbone} stack places its own dropout: double_dropout must be false")
        if len(masks) != len(stack.convs):
            raise ValueError(f"dropout_masks has {len(masks)} entries for {len(stack.convs)} layer calls")
        # hashed masks (regnn.core.dropout): one pass forward and back, no stored mask; torch's CPU dropout
        # (bernoulli_) is several times slower in current torch than the rest of a GCN layer's elementwise work
        self.dropouts = nn.ModuleList(HashDropout(dropout if k == 1 else 1 - (1 - dropout) ** k) for k in masks)

    @classmethod
    def from_inputs(cls, inputs: RelationInputs, in_dims: dict[str, int], num_classes: int, **kwargs) -> "REGNN":
        return cls(in_dims=in_dims, num_classes=num_classes, relation_types=inputs.rg, **kwargs)

    takes_rows = True  # forward(..., rows=) computes the scores of those targets only

    def forward(
        self,
        inputs: RelationInputs,
        feats: dict[str, torch.Tensor],
        embed: bool = False,
        rows: torch.Tensor | None = None,
    ):
        """(class scores of the target nodes, their representations fed to the output layer or None).

        rows: the targets (their ids among the targets: a split's index tensor, the same object every epoch) whose
        scores alone will be read. Layers that can then run on the rows those scores need
        (regnn.core.receptive): the scores are the same, bit for bit, and the other targets' are not computed."""
        t = inputs.target_nodes
        blocks = None
        if rows is not None and not embed and all(getattr(c, "takes_rows", False) for c in self.convs):
            blocks = cached_plan(inputs.adj, rows, lambda: t.index_select(0, rows), len(self.convs))
        logits, emb = self.propagate(inputs.adj, self.proj(feats, inputs.ntypes), embed, blocks=blocks)
        return logits[t], (emb[t] if emb is not None else None)

    def propagate(self, adj, h, embed: bool = False, dropped: bool = False, blocks: list | None = None):
        """Scores (and representations) of every destination node from projected features h.

        adj: one Adjacency for every layer (full graph) or a list with one per layer (sampled blocks). dropped: the
        first layer's dropout was applied to the input features, before their projection (h may then be a
        ProjectAfterHop for a first layer that takes one). blocks: per layer call, the rows whose output later
        calls read (regnn.core.receptive.plan); None: every row.
        """
        adjs = adj if isinstance(adj, (list, tuple)) else [adj] * len(self.convs)
        last = len(self.convs) - 1
        emb = None
        # every layer's relation weights first, back to back: a few tiny ops each, which cost several times
        # more run one at a time after a layer's large ones (caches then hold the layer's data, not these)
        alphas = self.layer_alphas()
        ahead: dict[tuple, tuple[list, list]] = {}  # (adjacency, norm) -> its layers' weights and call indices
        for i, (conv, alpha, a) in enumerate(zip(self.convs, alphas, adjs)):
            norm = getattr(conv, "prepare_norm", None)
            if alpha is not None and norm is not None:
                group = ahead.setdefault((a, norm), ([], []))  # an Adjacency hashes by identity
                group[0].append(alpha)
                group[1].append(self.relation_of[i])
        # keyed by the layers: the next pass with the same weights (an epoch's evaluation, then the next training
        # step) finds what this one computed, the graph comparing the weights with those it computed from
        for (a, norm), (group, layers) in ahead.items():
            a.prepare(group, norm, key=tuple(layers))
        for i, (conv, alpha, a) in enumerate(zip(self.convs, alphas, adjs)):
            rows = {} if blocks is None else {"rows": blocks[i]}
            if i > 0 or not dropped:
                h = self.dropouts[i](h)
            if i == last and self.head is None:
                emb = h[: a.num_dst] if embed else None
            elif i == last and not embed and getattr(conv, "is_linear", False):
                # a linear propagation followed by a linear head: A (h W) = (A h) W, so aggregate the few class
                # scores instead of the hidden features (same result, a fraction of the cost)
                w, b = self.head.weight, self.head.bias
                out = conv(h @ w.t(), a, alpha=alpha, **rows)
                return (out if b is None else out + b), None
            h = conv(h, a, alpha=alpha, **rows)
        if self.head is not None:
            represent = getattr(self.head, "represent", None)
            emb = (represent(h) if represent is not None else h) if embed else None
            h = self.head(h)
        return h, emb

    def layer_alphas(self) -> list[torch.Tensor | None]:
        """Every conv call's relation weights (num_relations, heads), None for a layer whose weights are all 1;
        a layer called twice gets its one set of weights at both calls."""
        per_layer = [alpha for rw in self.relations for alpha in rw.per_layer()]
        return [per_layer[j] for j in self.relation_of]

    def relation_weights(self) -> list[dict[str, float]]:
        """Per layer: {relation name: weight} (lists per head for attention layers)."""
        return [layer for rw in self.relations for layer in rw.named_values(self.relation_names)]


def _runs(values: list[int]) -> list[tuple[int, int]]:
    """(value, length) of each run of equal consecutive values: [8, 8, 8, 1] -> [(8, 3), (1, 1)]."""
    return [(v, len(list(run))) for v, run in itertools.groupby(values)]


def renamed_from_earlier(state: dict, keys) -> dict:
    """Weights saved before the attention layers concatenated their heads themselves (a wrapper then held each
    layer as `.conv`: convs.0.conv.fc.weight is now convs.0.fc.weight), under the model's names. A name is
    renamed only where dropping one `.conv` gives exactly one of the model's names that the state lacks, and only
    if every unknown name is; any other state is returned as it is, for the loader to refuse."""
    keys = set(keys)
    unknown = [k for k in state if k not in keys]
    if not unknown:
        return state
    renames = {}
    for k in unknown:
        parts = k.split(".")
        found = {".".join(parts[:i] + parts[i + 1 :]) for i, p in enumerate(parts) if p == "conv"}
        found = {n for n in found if n in keys and n not in state}
        if len(found) != 1:
            return state
        renames[k] = found.pop()
    if len(set(renames.values())) != len(renames):
        return state
    return {renames.get(k, k): v for k, v in state.items()}
