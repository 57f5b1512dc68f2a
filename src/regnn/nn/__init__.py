"""RE-GNN as layers for one's own model, called the way PyG layers are: `conv(x, edge_index, edge_type, node_type)`.

A heterogeneous graph made homogeneous (every node type's nodes numbered one after the other, as PyG's
`HeteroData.to_homogeneous()` does) gives what they take: `x` the node features (N, in_channels), `edge_index`
(2, E) source and destination, `edge_type` (E,) relation ids in [0, num_relations), `node_type` (N,) type ids in
[0, num_node_types). Each layer owns its relation weights and adds the typed self-loops itself. They need neither
DGL nor PyG.

A layer keeps the graph it built for the next call on inputs of the same content (compared with a copy, never
found by address: regnn.nn.graph), checks every input (ValueError naming it), and runs in its parameters' dtype:
half and bfloat16 layers compute in float32 and return their own dtype. The kept graph is no state: copies and
saved layers build their own.

    from regnn.nn import REGCNConv
    conv1 = REGCNConv(128, 64, num_relations=6, num_node_types=4)
    h = conv1(x, edge_index, edge_type, node_type).relu()
    conv1.relation_weights()   # {relation id or "self:<type id>": learned weight}: which relation matters
"""

from __future__ import annotations

import torch
from torch import nn
from torch.func import functional_call

from regnn.core.attention import REGATConv as _GATLayer
from regnn.core.conv import REGraphConv
from regnn.core.relation import Relation, RelationWeights
from regnn.nn.graph import GraphCache, check_graph, check_inputs, typed_adjacency

__all__ = ["REGCNConv", "REGATConv", "typed_adjacency"]

# which relation weights a layer learns (the others stay 1): RE-GNN, its two ablations, the plain layer
LEARN = {"both": (True, True), "edges": (True, False), "self": (False, True), "none": (False, False)}
NEGATIVE_SLOPE = 0.01  # of tau = LeakyReLU (and of RE-GAT's attention logits): the authors' code
# dtypes a layer computes in float32 and returns in: the sparse products and attention run in float32 at least
# (regnn.core.edge_ops.at_least_fp32), so the parameters are taken to float32 for the call, not the sums down
LOW_PRECISION = (torch.float16, torch.bfloat16)


class _RELayer(nn.Module):
    """What both layers share: relation weights, the checks of the inputs, the graph kept between calls on the
    same inputs (regnn.nn.graph), and the call in the parameters' dtype."""

    def __init__(self, num_relations: int, num_node_types: int, heads: int, scale: float, learn: str):
        super().__init__()
        if num_relations < 1 or num_node_types < 1:
            raise ValueError(f"num_relations and num_node_types must be >= 1, got {num_relations}, {num_node_types}")
        if learn not in LEARN:
            raise ValueError(f"learn must be one of {list(LEARN)}, got {learn!r}")
        self.num_relations, self.num_node_types, self.learn = num_relations, num_node_types, learn
        edges, loops = LEARN[learn]
        self.relations = RelationWeights(
            num_relations, num_node_types, Relation(edges, loops, scale, NEGATIVE_SLOPE), heads
        )
        self._graph = GraphCache()  # not state: neither in state_dict nor in a copy of the layer

    def adjacency(self, edge_index, edge_type, node_type):
        """The graph of these inputs (built, after its checks, only where they differ from the last call's)."""

        def build():
            check_graph(edge_index, edge_type, node_type, self.num_relations, self.num_node_types)
            return typed_adjacency(edge_index, edge_type, node_type, self.num_relations)

        return self._graph.get(edge_index, edge_type, node_type, build)

    def _propagate(self, x, edge_index, edge_type, node_type) -> tuple[torch.Tensor, torch.dtype | None]:
        """(self.conv's output, the dtype to return it in: None for as it is). Half and bfloat16 layers compute in
        float32; under autocast the layer computes as autocast has it."""
        dtype = next(self.conv.parameters()).dtype
        check_inputs(x, node_type, self.in_channels, dtype)
        adj = self.adjacency(edge_index, edge_type, node_type)
        if dtype not in LOW_PRECISION or torch.is_autocast_enabled(x.device.type):
            return self.conv(adj, x, None if self.relations.is_constant else self.relations()), None
        # float32 copies of the parameters, differentiable: gradients reach the half-precision parameters
        up = {k: v.float() for k, v in self.named_parameters()}
        alpha = None
        if not self.relations.is_constant:
            alpha = functional_call(self.relations, _under(up, "relations."), ())
        return functional_call(self.conv, _under(up, "conv."), (adj, x.float(), alpha)), dtype

    def _apply(self, fn, *args, **kwargs):
        self._graph.clear()  # .to(device), .half(): the next call builds the graph where its inputs are
        return super()._apply(fn, *args, **kwargs)

    def _reset_relations(self) -> None:
        with torch.no_grad():
            for p in self.relations.parameters():
                p.fill_(1.0 / self.relations.scale)

    def extra_repr(self) -> str:
        return (
            f"{self.in_channels}, {self.out_channels}, num_relations={self.num_relations}, "
            f"num_node_types={self.num_node_types}, learn={self.learn!r}"
        )

    def relation_weights(self) -> dict:
        """The learned weight of every relation (by id) and node-type self-loop ("self:<type id>")."""
        names = [*range(self.num_relations), *(f"self:{t}" for t in range(self.num_node_types))]
        return self.relations.named_values(names)


def _under(params: dict, prefix: str) -> dict:
    return {k[len(prefix) :]: v for k, v in params.items() if k.startswith(prefix)}


class REGCNConv(_RELayer):
    r"""The RE-GCN layer of "Relation Embedding based Graph Neural Networks for Handling Heterogeneous Graphs"
    (Wang et al.): GCN on the graph whose every edge weighs its relation's learned weight,

    .. math::
        \mathbf{X}' = \hat{\mathbf{D}}^{-1/2} \mathbf{A}_\alpha \hat{\mathbf{D}}^{-1/2} \mathbf{X} \mathbf{W}
        + \mathbf{b}, \qquad \alpha_r = \mathrm{LeakyReLU}(\lambda e_r)

    with :math:`\mathbf{A}_\alpha` holding :math:`\alpha_r` for an edge of relation r and
    :math:`\alpha_{\mathrm{self}:t}` on the self-loop of a node of type t, and :math:`\hat{\mathbf{D}}` its
    weighted in-degrees (at least 1). Every weight starts at 1 (:math:`e_r = 1/\lambda`); :math:`\lambda` scales
    its gradient.

    Args:
        in_channels, out_channels: feature sizes.
        num_relations: relation types (edge_type ids); num_node_types: node types (node_type ids).
        norm: "both" (as above) or "right" (:math:`\hat{\mathbf{D}}^{-1} \mathbf{A}_\alpha`).
        bias: add a learnable bias. scale: :math:`\lambda` (the paper's default 100).
        learn: which weights are learnt, the others staying 1: "both" (RE-GCN), "edges" (GCN-E), "self" (GCN-S)
            or "none" (a plain GCN layer).
    Shapes: x (N, in_channels), edge_index (2, E), edge_type (E,), node_type (N,) -> (N, out_channels).
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        num_relations: int,
        num_node_types: int,
        norm: str = "both",
        bias: bool = True,
        scale: float = 100.0,
        learn: str = "both",
    ):
        super().__init__(num_relations, num_node_types, 1, scale, learn)
        self.in_channels, self.out_channels = in_channels, out_channels
        self.conv = REGraphConv(in_channels, out_channels, bias=bias, norm=norm)

    def forward(
        self, x: torch.Tensor, edge_index: torch.Tensor, edge_type: torch.Tensor, node_type: torch.Tensor
    ) -> torch.Tensor:
        out, dtype = self._propagate(x, edge_index, edge_type, node_type)
        return out if dtype is None else out.to(dtype)

    def reset_parameters(self) -> None:
        """W xavier-uniform, b 0 and every relation weight 1, as a new layer starts."""
        nn.init.xavier_uniform_(self.conv.weight)
        if self.conv.bias is not None:
            nn.init.zeros_(self.conv.bias)
        self._reset_relations()

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, norm={self.conv.norm!r}"


class REGATConv(_RELayer):
    r"""The RE-GAT layer (Wang et al.): GAT whose attention logits gain the learned weight of the edge's relation
    (or of the node type's self-loop),

    .. math::
        e_{uv} = \mathrm{LeakyReLU}(\mathbf{a}_l^\top \mathbf{W}\mathbf{x}_u + \mathbf{a}_r^\top \mathbf{W}
        \mathbf{x}_v + \alpha_{r(u,v)}), \qquad \mathbf{x}'_v = \sum_{u} \mathrm{softmax}_u(e_{uv})\,
        \mathbf{W}\mathbf{x}_u

    per head, with one relation weight per relation and head.

    Args:
        in_channels, out_channels: feature sizes (out_channels per head).
        num_relations, num_node_types: as REGCNConv. heads: attention heads. concat: concatenate the heads
            (N, heads * out_channels), else average them (N, out_channels).
        attn_dropout: dropout on the attention coefficients. bias: a learnable bias.
        scale, learn: as REGCNConv ("both": RE-GAT, "none": a plain GAT layer). Both LeakyReLUs have slope 0.01.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        num_relations: int,
        num_node_types: int,
        heads: int = 1,
        concat: bool = True,
        attn_dropout: float = 0.0,
        bias: bool = True,
        scale: float = 100.0,
        learn: str = "both",
    ):
        super().__init__(num_relations, num_node_types, heads, scale, learn)
        self.in_channels, self.out_channels, self.heads, self.concat = in_channels, out_channels, heads, concat
        self.conv = _GATLayer(
            in_channels, out_channels, heads=heads, attn_dropout=attn_dropout, negative_slope=NEGATIVE_SLOPE, bias=bias
        )

    def forward(
        self, x: torch.Tensor, edge_index: torch.Tensor, edge_type: torch.Tensor, node_type: torch.Tensor
    ) -> torch.Tensor:
        out, dtype = self._propagate(x, edge_index, edge_type, node_type)
        out = out.flatten(1) if self.concat else out.mean(1)
        return out if dtype is None else out.to(dtype)

    def reset_parameters(self) -> None:
        """W and the attention vectors xavier-normal (ReLU gain), b 0 and every relation weight 1, as a new layer
        starts."""
        gain = nn.init.calculate_gain("relu")
        for p in (self.conv.fc.weight, self.conv.attn_l, self.conv.attn_r):
            nn.init.xavier_normal_(p, gain=gain)
        if self.conv.bias is not None:
            nn.init.zeros_(self.conv.bias)
        self._reset_relations()

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, heads={self.heads}, concat={self.concat}"
