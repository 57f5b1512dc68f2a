"""Fast weighted aggregation over a DGL graph or sampled block: out[v] = sum over edges u->v of w_e * h[u].

DGL's CPU kernel for u_mul_e_sum with a broadcast edge weight is ~8x slower than its unweighted copy_u_sum,
which would make RE-GNN pay for every edge weight. Here the graph is held as CSR (rows = destinations) and
aggregation is torch's sparse CSR matmul, whose cost does not depend on the values. The backward pass gives
the gradient of h by the transposed CSR matmul and the gradient of the edge weights by one sampled dense
product (SDDMM). Relation weights reach the edges through `edge_weights`, whose backward sums per relation
with bincount instead of a scatter over every edge.
"""
from __future__ import annotations

import warnings

import dgl
import torch

warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta", category=UserWarning)


class Adjacency:
    """CSR (destination rows) and CSC views of a graph or block, plus the relation id of every edge.

    Every per-edge tensor here is in CSR order, and `graph` is the same graph with its edges in that order, so
    DGL's edge-wise ops (edge_softmax, u_add_v) on `graph` line up with them.
    """

    def __init__(self, g: dgl.DGLGraph, rel: torch.Tensor | None = None):
        self.num_dst, self.num_src = g.num_dst_nodes(), g.num_src_nodes()
        indptr, indices, eid = g.adj_tensors("csc")  # for every destination: its in-edges
        t_indptr, t_indices, t_eid = g.adj_tensors("csr")  # for every source: its out-edges
        self.indptr, self.indices = indptr, indices
        self.t_indptr, self.t_indices = t_indptr, t_indices
        e = g.num_edges()
        self.perm = None if torch.equal(eid, torch.arange(e, device=eid.device)) else eid  # csr position -> edge id
        pos = torch.empty_like(eid)
        pos[eid] = torch.arange(e, device=eid.device)
        self.t_pos = pos[t_eid]  # csc position -> csr position
        self.dst_of = torch.repeat_interleave(torch.arange(self.num_dst, device=indptr.device), indptr.diff())
        self.in_degree = indptr.diff().to(torch.float32).unsqueeze(-1)
        rel = g.edata["rel"] if rel is None and "rel" in g.edata else rel
        self.rel = None if rel is None else (rel if self.perm is None else rel[self.perm])  # csr order
        if self.perm is None:
            self.graph = g
        elif g.is_block:
            self.graph = dgl.create_block((indices, self.dst_of), num_src_nodes=self.num_src,
                                          num_dst_nodes=self.num_dst)
        else:
            self.graph = dgl.graph((indices, self.dst_of), num_nodes=self.num_dst)
        self._rel_counts = None

    # -- relation weights -> edges and degrees ------------------------------------------------------------
    def edge_weights(self, alpha: torch.Tensor) -> torch.Tensor:
        """(E, heads) weight of every edge in CSR order from the (num_relations, heads) relation weights."""
        return _GatherRows.apply(alpha, self.rel)

    def weighted_in_degree(self, alpha: torch.Tensor) -> torch.Tensor:
        """(num_dst, heads) sum of incoming edge weights: counts of in-edges per relation @ alpha."""
        return self.relation_counts(alpha.shape[0], alpha.dtype) @ alpha

    # -- aggregation --------------------------------------------------------------------------------------
    def spmm(self, h: torch.Tensor, w: torch.Tensor | None = None) -> torch.Tensor:
        """sum_{u->v} w_e h[u] for every destination v; w in CSR order (E,) or None for all ones."""
        with full_precision(h):
            return _CsrSpmm.apply(at_least_fp32(h), None if w is None else at_least_fp32(w), self)

    def normalized_spmm(self, h: torch.Tensor, alpha: torch.Tensor | None, norm: str = "both") -> torch.Tensor:
        """GCN aggregation D^-1/2 A_w D^-1/2 h ("both"), D^-1 A_w h ("right") or A_w h ("none").

        A_w holds the relation weight alpha[rel(e)] on every edge (all ones when alpha is None) and D its
        weighted in-degree, clamped at 1. One fused autograd op: the gradients of alpha through the edge weights
        and through the degrees come from one SDDMM and two node-wise dot products, with no per-edge scatter.
        """
        if norm == "both" and self.num_src != self.num_dst:
            raise ValueError("norm='both' needs the source degrees of the whole graph; on sampled blocks use "
                             "norm='right' (mean over the weighted in-edges)")
        with full_precision(h):
            return _GcnAggregate.apply(at_least_fp32(h), None if alpha is None else at_least_fp32(alpha[:, :1]), self,
                                       norm)

    def _ones(self, dtype, device) -> torch.Tensor:
        if getattr(self, "_ones_cache", None) is None or self._ones_cache.dtype != dtype:
            self._ones_cache = torch.ones(self.indices.shape[0], dtype=dtype, device=device)
        return self._ones_cache

    def relation_counts(self, num_relations: int, dtype=torch.float32) -> torch.Tensor:
        """(num_dst, num_relations) number of in-edges of each relation at every destination."""
        if self._rel_counts is None or self._rel_counts.shape[1] != num_relations:
            c = torch.zeros(self.num_dst, num_relations, dtype=dtype, device=self.indptr.device)
            c.index_put_((self.dst_of, self.rel), torch.ones_like(self.rel, dtype=dtype), accumulate=True)
            self._rel_counts = c
        return self._rel_counts

    def to(self, device) -> "Adjacency":
        return Adjacency(self.graph.to(device), None if self.rel is None else self.rel.to(device))


def full_precision(t: torch.Tensor):
    """Sparse products always run in float32: under bf16 autocast (precision=bf16) only dense layers go lower."""
    return torch.autocast(device_type=t.device.type, enabled=False)


def at_least_fp32(t: torch.Tensor) -> torch.Tensor:
    """bfloat16/float16 (from autocast) -> float32; float32 and float64 stay as they are."""
    return t.float() if t.is_floating_point() and t.element_size() < 4 else t


def _csr(indptr, indices, values, shape):
    return torch.sparse_csr_tensor(indptr, indices, values, shape)


class _CsrSpmm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, h, w, adj: Adjacency):
        vals = w if w is not None else torch.ones(adj.indices.shape[0], dtype=h.dtype, device=h.device)
        ctx.adj = adj
        ctx.save_for_backward(h, vals)
        return _csr(adj.indptr, adj.indices, vals, (adj.num_dst, adj.num_src)) @ h

    @staticmethod
    def backward(ctx, grad):
        h, vals = ctx.saved_tensors
        adj = ctx.adj
        grad = grad.contiguous()
        gh = gw = None
        if ctx.needs_input_grad[0]:
            at = _csr(adj.t_indptr, adj.t_indices, vals[adj.t_pos], (adj.num_src, adj.num_dst))
            gh = at @ grad
        if ctx.needs_input_grad[1]:
            gw = _edge_dots(adj, grad, h)
        return gh, gw, None


def _edge_dots(adj: Adjacency, dst_feat: torch.Tensor, src_feat: torch.Tensor) -> torch.Tensor:
    """<dst_feat[v], src_feat[u]> for every edge u->v, in CSR order (an SDDMM).

    torch's sampled_addmm is the fastest here from 8 columns up but ~10x slower below; DGL's u_dot_v wins there.
    """
    if dst_feat.shape[1] < 8:
        return dgl.ops.u_dot_v(adj.graph, src_feat, dst_feat)[:, 0]
    pattern = _csr(adj.indptr, adj.indices, adj._ones(dst_feat.dtype, dst_feat.device), (adj.num_dst, adj.num_src))
    return torch.sparse.sampled_addmm(pattern, dst_feat, src_feat.t(), beta=0.0).values()


def _scales(deg: torch.Tensor, norm: str):
    """Destination scale a, source scale b and their derivatives in the (clamped) degree."""
    d = deg.clamp(min=1)
    live = (deg >= 1).to(deg.dtype)  # the clamp passes no gradient
    if norm == "both":
        a = d.pow(-0.5)
        return a, a, -0.5 * a / d * live, -0.5 * a / d * live
    if norm == "right":
        a = 1.0 / d
        return a, None, -a * a * live, None
    return None, None, None, None


class _GcnAggregate(torch.autograd.Function):
    """out = a * (A_w (b * h)) with a, b functions of the weighted in-degree (see Adjacency.normalized_spmm)."""

    @staticmethod
    def forward(ctx, h, alpha, adj: Adjacency, norm: str):
        if alpha is None:
            w, deg = adj._ones(h.dtype, h.device), adj.in_degree[:, 0]
        else:
            w, deg = alpha[adj.rel, 0], (adj.relation_counts(alpha.shape[0], h.dtype) @ alpha)[:, 0]
        a, b, da, db = _scales(deg, norm)
        hb = h * b.unsqueeze(-1) if b is not None else h
        agg = _csr(adj.indptr, adj.indices, w, (adj.num_dst, adj.num_src)) @ hb
        out = agg * a.unsqueeze(-1) if a is not None else agg
        ctx.adj, ctx.num_relations = adj, (0 if alpha is None else alpha.shape[0])
        ctx.save_for_backward(h, hb, agg, w, a, b, da, db)
        return out

    @staticmethod
    def backward(ctx, grad):
        h, hb, agg, w, a, b, da, db = ctx.saved_tensors
        adj = ctx.adj
        grad = grad.contiguous()
        g1 = grad * a.unsqueeze(-1) if a is not None else grad  # gradient of agg
        wt = adj._ones(w.dtype, w.device) if ctx.num_relations == 0 else w[adj.t_pos]  # weights, CSC order
        ghb = _csr(adj.t_indptr, adj.t_indices, wt, (adj.num_src, adj.num_dst)) @ g1
        gh = ghb * b.unsqueeze(-1) if b is not None else ghb
        galpha = None
        if ctx.needs_input_grad[1]:
            ge = _edge_dots(adj, g1, hb)  # dL/dw per edge
            counts = adj.relation_counts(ctx.num_relations, grad.dtype)
            galpha = torch.bincount(adj.rel, weights=ge, minlength=ctx.num_relations).to(grad.dtype)
            gdeg = torch.zeros_like(agg[:, 0])
            if da is not None:
                gdeg = gdeg + (grad * agg).sum(-1) * da
            if db is not None:
                gdeg = gdeg + (ghb * h).sum(-1) * db
            galpha = (galpha + counts.t() @ gdeg).unsqueeze(-1)
        return (gh if ctx.needs_input_grad[0] else None), galpha, None, None


class _GatherRows(torch.autograd.Function):
    """alpha[idx] whose backward sums the gradient per row with bincount (much faster than index_put on CPU)."""

    @staticmethod
    def forward(ctx, alpha, idx):
        ctx.save_for_backward(idx)
        ctx.n = alpha.shape[0]
        return alpha.index_select(0, idx)

    @staticmethod
    def backward(ctx, grad):
        (idx,) = ctx.saved_tensors
        cols = [torch.bincount(idx, weights=grad[:, k], minlength=ctx.n) for k in range(grad.shape[1])]
        return torch.stack(cols, 1).to(grad.dtype), None
