"""What every RE layer shares: the two ways to call it, its own relation weights or the caller's, the checks of the
inputs, the graph kept between calls, and the call in the parameters' dtype.

A layer is called `conv(x, edge_index, edge_type, node_type)` (PyG's way: the layer builds the typed graph, keeps
it for the next call on equal inputs, regnn.nn.graph) or `conv(x, graph)` with a graph prepared once for every
layer (`typed_adjacency`, or the model's own: no copy, no comparison). `alpha=` gives the relation weights
(num_relations + num_node_types, heads) from outside, as PyG layers take `edge_weight`: the RE-GNN model holds
every layer's weights in one tensor (regnn.core.relation) and passes each layer its own.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.func import functional_call

from regnn.core.adjacency import Adjacency
from regnn.core.relation import Relation, RelationWeights
from regnn.nn.graph import GraphCache, check_graph, check_inputs, check_nodes, typed_adjacency

# which relation weights a layer learns (the others stay 1): RE-GNN, its two ablations, the plain layer
LEARN = {"both": (True, True), "edges": (True, False), "self": (False, True), "none": (False, False)}
NEGATIVE_SLOPE = 0.01  # of tau = LeakyReLU (and of RE-GAT's attention logits): the authors' code
# dtypes a layer computes in float32 and returns in: the sparse products and attention run in float32 at least
# (regnn.core.edge_ops.at_least_fp32), so the parameters are taken to float32 for the call, not the sums down
LOW_PRECISION = (torch.float16, torch.bfloat16)


class RELayer(nn.Module):
    """Base of the RE layers, and their one constructor: `Layer(in_channels, out_channels, num_relations,
    num_node_types, scale=, learn=, **options)`. A subclass builds its parameters from its own keyword options in
    `_build(**options)` (setting `heads` where it has several) and implements `propagate(adj, x, alpha, rows)`.

    Args:
        in_channels, out_channels: feature sizes.
        num_relations, num_node_types: the relation weights the layer learns, one per relation (edge type) and
            one per node type's self-loop; without them it has none (it is called on a prepared graph, with the
            caller's weights as alpha or every weight 1).
        scale: the weights are tau(scale * w) (the authors' R, 100).
        learn: which weights are learned: "both" (RE-GNN), "edges" or "self" (the ablations), "none" (every
            weight 1: the plain layer).
    """

    num_relations: int | None = None
    num_node_types: int | None = None
    learn: str = "none"
    heads: int = 1  # relation weights per relation (one per attention head)
    takes_rows = False  # propagate computes only the rows given (regnn.core.receptive), else every row

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        num_relations: int | None = None,
        num_node_types: int | None = None,
        *,
        scale: float = 100.0,
        learn: str = "both",
        **options,
    ):
        super().__init__()
        self.relations: RelationWeights | None = None
        self._graph = GraphCache()  # not state: neither in state_dict nor in a copy of the layer
        self.in_channels, self.out_channels = in_channels, out_channels
        self._build(**options)
        self._own_relations(num_relations, num_node_types, self.heads, scale, learn)

    def _build(self) -> None:
        """The subclass's parameters, from its keyword options (a layer with none has nothing to build)."""

    @property
    def fixed_width(self) -> bool:
        """Whether x must have in_channels columns: a propagation step without W takes any width (the model
        propagates class scores through its last one)."""
        return True

    def _own_relations(self, num_relations, num_node_types, heads: int, scale: float, learn: str) -> None:
        """The layer's relation weights; without num_relations and num_node_types it has none (a graph is then
        given prepared, with the caller's weights as alpha or every weight 1)."""
        if num_relations is None and num_node_types is None:
            return
        if num_relations is None or num_node_types is None or num_relations < 1 or num_node_types < 1:
            raise ValueError(f"num_relations and num_node_types must be >= 1, got {num_relations}, {num_node_types}")
        if learn not in LEARN:
            raise ValueError(f"learn must be one of {list(LEARN)}, got {learn!r}")
        self.num_relations, self.num_node_types, self.learn = num_relations, num_node_types, learn
        edges, loops = LEARN[learn]
        self.relations = RelationWeights(
            num_relations, num_node_types, Relation(edges, loops, scale, NEGATIVE_SLOPE), heads
        )

    def graph(self, edge_index, edge_type=None, node_type=None) -> Adjacency:
        """The typed graph of these inputs (built, after its checks, only where they differ from the last call's),
        or edge_index itself where it is a prepared graph."""
        if isinstance(edge_index, Adjacency):
            if edge_type is not None or node_type is not None:
                raise ValueError("a prepared graph carries its relations: pass neither edge_type nor node_type")
            built_for = getattr(edge_index, "num_relations", None)
            if built_for is not None and self.num_relations is not None and built_for != self.num_relations:
                raise ValueError(
                    f"the prepared graph was built for {built_for} relations (typed_adjacency(..., num_relations="
                    f"{built_for})) but this layer has {self.num_relations}: its self-loops would take other "
                    "relations' weights; build the graph with the layer's num_relations"
                )
            return edge_index
        if self.num_relations is None:
            raise ValueError(
                "this layer was built without num_relations and num_node_types: give it a prepared graph "
                "(regnn.nn.typed_adjacency), or build it with both to call it on edge_index, edge_type, node_type"
            )
        if edge_type is None or node_type is None:
            raise ValueError("edge_index needs edge_type (E,) and node_type (N,) beside it")

        def build():
            check_graph(edge_index, edge_type, node_type, self.num_relations, self.num_node_types)
            return typed_adjacency(edge_index, edge_type, node_type, self.num_relations)

        return self._graph.get(edge_index, edge_type, node_type, build)

    def forward(self, x, edge_index, edge_type=None, node_type=None, *, alpha=None, rows=None):
        """x (N, in_channels) -> (N, out_channels) (attention: (N, heads * out_channels) concatenated, or
        (N, out_channels) averaged). alpha: relation weights (num_relations + num_node_types, heads) instead of
        the layer's own; rows: the destination rows later layers read (layers with takes_rows)."""
        first = next(self.parameters(), None)
        dtype = None if first is None else first.dtype
        if isinstance(x, torch.Tensor):  # (a layer of the model may take its input as a ProjectAfterHop)
            check_inputs(x, self.in_channels if self.fixed_width else None, dtype)
            if not isinstance(edge_index, Adjacency):
                check_nodes(node_type, x.shape[0])
        adj = self.graph(edge_index, edge_type, node_type)
        if isinstance(x, torch.Tensor) and x.shape[0] != adj.num_src:
            raise ValueError(f"x has {x.shape[0]} rows but the graph {adj.num_src} (source) nodes")
        own = alpha is None and self.relations is not None and not self.relations.is_constant
        if dtype not in LOW_PRECISION or torch.is_autocast_enabled(x.device.type):
            return self.propagate(adj, x, self.relations() if own else alpha, rows)
        # float32 copies of the parameters, differentiable: gradients reach the half-precision parameters
        up = {k: v.float() for k, v in self.named_parameters()}
        if own:
            alpha = functional_call(self.relations, _under(up, "relations."), ())
        alpha = None if alpha is None else alpha.float()
        return functional_call(self, up, (x.float(), adj), {"alpha": alpha, "rows": rows}).to(dtype)

    def _apply(self, fn, *args, **kwargs):
        self._graph.clear()  # .to(device), .half(): the next call builds the graph where its inputs are
        return super()._apply(fn, *args, **kwargs)

    def _reset_relations(self) -> None:
        if self.relations is not None:
            with torch.no_grad():
                for p in self.relations.parameters():
                    p.fill_(1.0 / self.relations.scale)

    def extra_repr(self) -> str:
        out = f"{self.in_channels}, {self.out_channels}"
        if self.num_relations is not None:
            out += f", num_relations={self.num_relations}, num_node_types={self.num_node_types}, learn={self.learn!r}"
        return out

    def relation_weights(self) -> dict:
        """The learned weight of every relation (by id) and node-type self-loop ("self:<type id>")."""
        if self.relations is None:
            raise ValueError("this layer was built without relation weights of its own (its caller passes them)")
        names = [*range(self.num_relations), *(f"self:{t}" for t in range(self.num_node_types))]
        return self.relations.named_values(names)


def _under(params: dict, prefix: str) -> dict:
    return {k[len(prefix) :]: v for k, v in params.items() if k.startswith(prefix)}
