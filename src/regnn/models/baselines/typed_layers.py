"""R-GCN's and HGT's layers on a TypedGraph (regnn.models.baselines.inputs), in torch.

They compute what DGL's RelGraphConv (presorted, self-loop, bias, no layer norm) and HGTConv (presorted) compute,
with the same parameter names, shapes and initialisation order, so a seed gives the same initial weights and a
state dict saved from DGL's modules loads here. What a layer sends along an edge of relation r depends only on r
and the edge's source, so the per-relation maps run once per (relation, source node) pair (TypedGraph.pair_table),
not once per edge; the per-edge work is one aggregation (and HGT's attention scores) on the TypedGraph's Adjacency.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from regnn.core.attention_ops import aggregate_heads

_RELU_GAIN = math.sqrt(2.0)  # nn.init.calculate_gain("relu")


class TypedWeight(nn.Module):
    """One (in_size, out_size) matrix per type. Without bases: W (num_types, in_size, out_size). With a basis
    decomposition (R-GCN's regulariser): W holds num_bases matrices and type t's is sum_b coeff[t, b] W[b]."""

    def __init__(self, in_size: int, out_size: int, num_types: int, num_bases: int | None = None):
        super().__init__()
        self.in_size, self.out_size, self.num_types, self.num_bases = in_size, out_size, num_types, num_bases
        self.W = nn.Parameter(torch.empty(num_types if num_bases is None else num_bases, in_size, out_size))
        if num_bases is not None:
            self.coeff = nn.Parameter(torch.empty(num_types, num_bases))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # torch.nn.Linear's bound on the fan-in; the basis coefficients as R-GCN's other weights (in this order:
        # the random draws then match DGL's TypedLinear)
        with torch.no_grad():
            nn.init.uniform_(self.W, -1 / math.sqrt(self.in_size), 1 / math.sqrt(self.in_size))
            if self.num_bases is not None:
                nn.init.xavier_uniform_(self.coeff, gain=_RELU_GAIN)

    def weight(self) -> torch.Tensor:
        """(num_types, in_size, out_size)."""
        if self.num_bases is None:
            return self.W
        return (self.coeff @ self.W.view(self.num_bases, -1)).view(self.num_types, self.in_size, self.out_size)


def typed_matmul(tg, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """x[v] @ w[type of v] for every node v (the nodes of a type are one block of rows)."""
    return torch.cat([x[a:b] @ w[t] for t, a, b in tg.node_blocks()])


def edge_values(adj, per_edge: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Per-edge values given in edge-id order (E,) or (E, 1) as adj's CSR order, in dtype (at least float32)."""
    v = per_edge.reshape(-1)
    if adj.perm is not None:
        v = v.index_select(0, adj.perm)
    return v.to(torch.promote_types(dtype, torch.float32))


class RelGraphConv(nn.Module):
    """h_v' = sum_r sum_{u in N_r(v)} norm_e h_u W_r + b + h_v W_0 (R-GCN; norm_e = 1/c_{v,r} as given)."""

    def __init__(self, in_feat: int, out_feat: int, num_rels: int, num_bases: int | None = None):
        super().__init__()
        self.linear_r = TypedWeight(in_feat, out_feat, num_rels, num_bases)
        self.h_bias = nn.Parameter(torch.zeros(out_feat))
        self.loop_weight = nn.Parameter(torch.empty(in_feat, out_feat))
        nn.init.xavier_uniform_(self.loop_weight, gain=_RELU_GAIN)

    def forward(self, tg, h: torch.Tensor, norm: torch.Tensor | None = None) -> torch.Tensor:
        """h: (N, in_feat) in tg's node order; norm: (E,) or (E, 1) per edge in tg's edge order, or None (1)."""
        w = self.linear_r.weight()
        table = tg.pair_table(h, lambda r, x: x @ w[r])  # relation r's message from each of its source nodes
        vals = None if norm is None else edge_values(tg.adj, norm, table.dtype)
        return tg.adj.spmm(table, vals) + self.h_bias + h @ self.loop_weight


class HGTConv(nn.Module):
    """HGT's layer (Hu et al., 2020). Per head k, for an edge u -> v of relation r:
    score = <K_{t(u)} h_u Att_{k,r}, Q_{t(v)} h_v> * pri_{k,r} / sqrt(d), softmax over v's in-edges (all relations),
    message V_{t(u)} h_u Msg_{k,r}; then out_v = s * drop(A_{t(v)} sum_e a_e m_e) + (1 - s) * h_v (h_v @ residual_w
    where the sizes differ), s = sigmoid(skip_{t(v)}); layer norm after that where use_norm."""

    def __init__(
        self,
        in_size: int,
        head_size: int,
        num_heads: int,
        num_ntypes: int,
        num_etypes: int,
        dropout: float = 0.2,
        use_norm: bool = False,
    ):
        super().__init__()
        self.in_size, self.head_size, self.num_heads = in_size, head_size, num_heads
        self.sqrt_d = math.sqrt(head_size)
        self.use_norm = use_norm
        out = head_size * num_heads
        self.linear_k = TypedWeight(in_size, out, num_ntypes)
        self.linear_q = TypedWeight(in_size, out, num_ntypes)
        self.linear_v = TypedWeight(in_size, out, num_ntypes)
        self.linear_a = TypedWeight(out, out, num_ntypes)
        self.relation_pri = nn.ParameterList([nn.Parameter(torch.ones(num_etypes)) for _ in range(num_heads)])
        self.relation_att = nn.ModuleList([TypedWeight(head_size, head_size, num_etypes) for _ in range(num_heads)])
        self.relation_msg = nn.ModuleList([TypedWeight(head_size, head_size, num_etypes) for _ in range(num_heads)])
        self.skip = nn.Parameter(torch.ones(num_ntypes))
        self.drop = nn.Dropout(dropout)
        if use_norm:
            self.norm = nn.LayerNorm(out)
        if in_size != out:
            self.residual_w = nn.Parameter(torch.empty(in_size, out))
            nn.init.xavier_uniform_(self.residual_w)

    def forward(self, tg, x: torch.Tensor) -> torch.Tensor:
        """x: (N, in_size) in tg's node order -> (N, num_heads * head_size)."""
        heads, d = self.num_heads, self.head_size
        k = typed_matmul(tg, x, self.linear_k.weight()).view(-1, heads, d)
        q = typed_matmul(tg, x, self.linear_q.weight()).view(-1, heads, d)
        v = typed_matmul(tg, x, self.linear_v.weight()).view(-1, heads, d)
        att = torch.stack([m.weight() for m in self.relation_att], 1)  # (R, heads, d, d)
        msg = torch.stack([m.weight() for m in self.relation_msg], 1)
        pri = torch.stack(list(self.relation_pri), 1)  # (R, heads)
        kw = tg.pair_table(k, lambda r, kr: torch.einsum("nhd,hde->nhe", kr, att[r]))
        mv = tg.pair_table(v, lambda r, vr: torch.einsum("nhd,hde->nhe", vr, msg[r]))
        adj = tg.adj
        score = (adj.gather(kw, "src") * adj.gather(q, "dst")).sum(-1) * adj.gather(pri, "rel") / self.sqrt_d
        h = aggregate_heads(adj, mv, adj.edge_softmax(score)).reshape(-1, heads * d)
        h = self.drop(typed_matmul(tg, h, self.linear_a.weight()))
        s = torch.sigmoid(self.skip[tg.ntype]).unsqueeze(-1)
        skip = x @ self.residual_w if self.in_size != heads * d else x
        h = h * s + skip * (1 - s)
        return self.norm(h) if self.use_norm else h


class HGBHGTLayer(nn.Module):
    """HGB's HGTLayer (THUDM/HGB, NC/benchmark/methods/HGT/model.py), which HGB's HGT results come from. Per node
    type t: k, q, v and a linear maps with biases; per relation r and head: Att_r and Msg_r (d x d, xavier) and a
    prior pri_r. For an edge u -> v of relation r:
        score = <Q_{t(v)} h_v, (K_{t(u)} h_u) Att_r> pri_r / sqrt(d), softmax over v's in-edges *of relation r*;
        m_r(v) = sum_e a_e (V_{t(u)} h_u) Msg_r;   t(v) = mean of m_r(v) over every relation r into v's type (a
        relation without an edge into v gives 0, as DGL's cross-relation mean of HGB's per-relation updates);
        out = drop(LayerNorm_{t(v)}(s A_{t(v)} t(v) + (1 - s) h_v)), s = sigmoid(skip_{t(v)}), norm where use_norm.
    It differs from HGTConv (DGL's) in the softmax per relation and the mean over relations, the biases, the
    per-type layer norms and where dropout sits."""

    def __init__(
        self, dim: int, num_heads: int, num_ntypes: int, num_etypes: int, dropout: float = 0.2, use_norm: bool = False
    ):
        super().__init__()
        if dim % num_heads:
            raise ValueError(f"dim ({dim}) must be a multiple of num_heads ({num_heads})")
        self.num_heads, self.d = num_heads, dim // num_heads
        self.k = nn.ModuleList(nn.Linear(dim, dim) for _ in range(num_ntypes))
        self.q = nn.ModuleList(nn.Linear(dim, dim) for _ in range(num_ntypes))
        self.v = nn.ModuleList(nn.Linear(dim, dim) for _ in range(num_ntypes))
        self.a = nn.ModuleList(nn.Linear(dim, dim) for _ in range(num_ntypes))
        self.norms = nn.ModuleList(nn.LayerNorm(dim) for _ in range(num_ntypes)) if use_norm else None
        self.relation_pri = nn.Parameter(torch.ones(num_etypes, num_heads))
        self.relation_att = nn.Parameter(torch.empty(num_etypes, num_heads, self.d, self.d))
        self.relation_msg = nn.Parameter(torch.empty(num_etypes, num_heads, self.d, self.d))
        self.skip = nn.Parameter(torch.ones(num_ntypes))
        self.drop = nn.Dropout(dropout)
        nn.init.xavier_uniform_(self.relation_att)
        nn.init.xavier_uniform_(self.relation_msg)

    @staticmethod
    def _typed(tg, x, lins) -> torch.Tensor:
        return torch.cat([lins[t](x[a:b]) for t, a, b in tg.node_blocks()])

    def forward(self, tg, x: torch.Tensor) -> torch.Tensor:
        heads, d = self.num_heads, self.d
        k, v = (self._typed(tg, x, m).view(-1, heads, d) for m in (self.k, self.v))
        q = self._typed(tg, x, self.q).view(-1, heads, d)
        kw = tg.pair_table(k, lambda r, kr: torch.einsum("nhd,hde->nhe", kr, self.relation_att[r]))
        mv = tg.pair_table(v, lambda r, vr: torch.einsum("nhd,hde->nhe", vr, self.relation_msg[r]))
        adj = tg.adj
        rel, num_rel = adj.edge_ids("rel"), len(tg.relation_types)
        score = (adj.gather(kw, "src") * adj.gather(q, "dst")).sum(-1) * adj.gather(self.relation_pri, "rel")
        score = score / math.sqrt(d)
        group = adj.edge_ids("dst") * num_rel + rel  # one softmax per (destination, relation)
        size = (adj.num_dst * num_rel, heads)
        top = score.new_full(size, -torch.inf).scatter_reduce(
            0, group[:, None].expand_as(score), score.detach(), "amax"
        )
        e = torch.exp(score - top.index_select(0, group))
        a = e / score.new_zeros(size).index_add(0, group, e).index_select(0, group)
        m = score.new_zeros(adj.num_dst * num_rel, heads, d).index_add(0, group, a[..., None] * adj.gather(mv, "src"))
        into = torch.bincount(torch.tensor([t for _, t in tg.relation_types]), minlength=len(tg.ntypes))
        per_node = into.to(x.device, x.dtype).clamp(min=1).index_select(0, tg.ntype)
        t = m.view(adj.num_dst, num_rel, heads * d).sum(1) / per_node[:, None]
        s = torch.sigmoid(self.skip).index_select(0, tg.ntype)[:, None]
        h = self._typed(tg, t, self.a) * s + x * (1 - s)
        if self.norms is not None:
            h = self._typed(tg, h, self.norms)
        return self.drop(h)
