"""RE-GNN as layers for one's own model, called the way PyG layers are: `conv(x, edge_index, edge_type, node_type)`.

A heterogeneous graph made homogeneous (every node type's nodes numbered one after the other, as PyG's
`HeteroData.to_homogeneous()` does) gives what they take: `x` the node features (N, in_channels), `edge_index`
(2, E) source and destination, `edge_type` (E,) relation ids in [0, num_relations), `node_type` (N,) type ids in
[0, num_node_types). Each layer owns its relation weights and adds the typed self-loops itself. They need neither
DGL nor PyG.

    from regnn.nn import REGCNConv
    conv1 = REGCNConv(128, 64, num_relations=6, num_node_types=4)
    h = conv1(x, edge_index, edge_type, node_type).relu()
    conv1.relation_weights()   # {relation id or "self:<type id>": learned weight}: which relation matters
"""

from __future__ import annotations

import torch
from torch import nn

from regnn.core.adjacency import Adjacency
from regnn.core.attention import REGATConv as _GATLayer
from regnn.core.conv import REGraphConv
from regnn.core.relation import Relation, RelationWeights

__all__ = ["REGCNConv", "REGATConv", "typed_adjacency"]

# which relation weights a layer learns (the others stay 1): RE-GNN, its two ablations, the plain layer
LEARN = {"both": (True, True), "edges": (True, False), "self": (False, True), "none": (False, False)}
NEGATIVE_SLOPE = 0.01  # of tau = LeakyReLU (and of RE-GAT's attention logits): the authors' code


def typed_adjacency(
    edge_index: torch.Tensor, edge_type: torch.Tensor, node_type: torch.Tensor, num_relations: int
) -> Adjacency:
    """The graph a layer propagates over: the edges without their self-edges, plus one self-loop per node whose
    relation is num_relations + its node type (RE-GNN's typed self-loops), ordered by destination."""
    src, dst = edge_index[0].long(), edge_index[1].long()
    keep = src != dst
    n = node_type.numel()
    ids = torch.arange(n, device=src.device)
    src, dst = torch.cat([src[keep], ids]), torch.cat([dst[keep], ids])
    rel = torch.cat([edge_type.long()[keep], num_relations + node_type.long()])
    order = torch.argsort(dst * n + src)
    return Adjacency.from_edges(src[order], dst[order], rel[order], n)


class _RELayer(nn.Module):
    """What both layers share: relation weights, their checks, and the graph built once per input graph."""

    def __init__(self, num_relations: int, num_node_types: int, heads: int, scale: float, learn: str):
        super().__init__()
        if num_relations < 1 or num_node_types < 1:
            raise ValueError(f"num_relations and num_node_types must be >= 1, got {num_relations}, {num_node_types}")
        if learn not in LEARN:
            raise ValueError(f"learn must be one of {list(LEARN)}, got {learn!r}")
        self.num_relations, self.num_node_types = num_relations, num_node_types
        edges, loops = LEARN[learn]
        self.relations = RelationWeights(
            num_relations, num_node_types, Relation(edges, loops, scale, NEGATIVE_SLOPE), heads
        )
        self._graph: tuple | None = None

    def adjacency(self, edge_index, edge_type, node_type) -> Adjacency:
        key = tuple((t.data_ptr(), t.shape, t._version, t.device) for t in (edge_index, edge_type, node_type))
        if self._graph is None or self._graph[0] != key:
            if edge_index.dim() != 2 or edge_index.shape[0] != 2 or edge_type.shape != edge_index.shape[1:]:
                raise ValueError(
                    f"edge_index must be (2, E) and edge_type (E,), got {tuple(edge_index.shape)} and "
                    f"{tuple(edge_type.shape)}"
                )
            if edge_type.numel() and (int(edge_type.min()) < 0 or int(edge_type.max()) >= self.num_relations):
                raise ValueError(
                    f"edge_type must lie in [0, {self.num_relations}), got "
                    f"[{int(edge_type.min())}, {int(edge_type.max())}]"
                )
            if node_type.numel() and (int(node_type.min()) < 0 or int(node_type.max()) >= self.num_node_types):
                raise ValueError(
                    f"node_type must lie in [0, {self.num_node_types}), got "
                    f"[{int(node_type.min())}, {int(node_type.max())}]"
                )
            self._graph = (key, typed_adjacency(edge_index, edge_type, node_type, self.num_relations))
        return self._graph[1]

    def relation_weights(self) -> dict:
        """The learned weight of every relation (by id) and node-type self-loop ("self:<type id>")."""
        names = [*range(self.num_relations), *(f"self:{t}" for t in range(self.num_node_types))]
        return self.relations.named_values(names)


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
        self.conv = REGraphConv(in_channels, out_channels, bias=bias, norm=norm)

    def forward(
        self, x: torch.Tensor, edge_index: torch.Tensor, edge_type: torch.Tensor, node_type: torch.Tensor
    ) -> torch.Tensor:
        adj = self.adjacency(edge_index, edge_type, node_type)
        return self.conv(adj, x, None if self.relations.is_constant else self.relations())


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
        self.concat = concat
        self.conv = _GATLayer(
            in_channels, out_channels, heads=heads, attn_dropout=attn_dropout, negative_slope=NEGATIVE_SLOPE, bias=bias
        )

    def forward(
        self, x: torch.Tensor, edge_index: torch.Tensor, edge_type: torch.Tensor, node_type: torch.Tensor
    ) -> torch.Tensor:
        adj = self.adjacency(edge_index, edge_type, node_type)
        out = self.conv(adj, x, None if self.relations.is_constant else self.relations())
        return out.flatten(1) if self.concat else out.mean(1)
