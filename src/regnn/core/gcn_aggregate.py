"""The relation-weighted GCN aggregation's autograd functions (Adjacency.spmm and normalized_spmm).

Torch path: the graph is held as CSR (rows = destinations) and aggregation is torch's sparse CSR matmul, whose
cost does not depend on the values (DGL's CPU kernel for u_mul_e_sum with a broadcast edge weight is ~8x slower
than its unweighted copy_u_sum). GCN's degree scalings go into the edge values (a pass over the edges, not two
over the node features). The backward pass gives the gradient of h by the transposed CSR matmul and the gradient
of the edge weights by one sampled dense product (SDDMM); per-relation and per-node sums of edge quantities are
segment sums (regnn.core.edge_ops.segment_sum).

Fused path: on CPU, where the fused C++ kernels are the adjacency's backend (regnn.core.backend), the
relation-weighted aggregation runs on them instead (GcnAggregateFused): no per-edge arrays per step, and the
relation-weight gradient comes out of the pass that computes the gradient of h.
"""

from __future__ import annotations

import torch

from regnn.core.edge_ops import csr_mm, edge_dots, segment_sum


class CsrSpmm(torch.autograd.Function):
    """Adjacency.spmm: sum over in-edges of w_e h[u]; backward by the transposed product and an SDDMM."""

    @staticmethod
    def forward(ctx, h, w, adj):
        vals = w if w is not None else adj.ones(h.dtype, h.device)
        ctx.adj = adj
        ctx.save_for_backward(h, vals)
        return csr_mm(adj.indptr, adj.indices, vals, (adj.num_dst, adj.num_src), h)

    @staticmethod
    def backward(ctx, grad):
        h, vals = ctx.saved_tensors
        adj = ctx.adj
        grad = grad.contiguous()
        gh = gw = None
        if ctx.needs_input_grad[0]:
            gh = csr_mm(adj.t_indptr, adj.t_indices, vals.index_select(0, adj.t_pos), (adj.num_src, adj.num_dst), grad)
        if ctx.needs_input_grad[1]:
            gw = edge_dots(adj, grad, h)
        return gh, gw, None


def scales(deg: torch.Tensor, norm: str):
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


def edge_scales(adj, a: torch.Tensor | None, b: torch.Tensor | None) -> torch.Tensor | None:
    """a[v] * b[u] for every edge u->v (CSR order); None when there is no normalisation."""
    if a is None:
        return None
    ab = a.index_select(0, adj.dst_of)  # index_select: ~2.5x faster than a[idx] on CPU
    return ab * b.index_select(0, adj.indices) if b is not None else ab


class GcnAggregate(torch.autograd.Function):
    """out = a * (A_w (b * h)) with a, b functions of the weighted in-degree (see Adjacency.normalized_spmm).

    The scales go into the edge values (one pass over E numbers instead of two over the (N, d) features):
    out = A_n h with A_n[v, u] = a_v w_e b_u. Backward: grad h = A_n^T grad, and from one SDDMM
    s_e = <grad_v, h_u>: dL/dw_e = a_v b_u s_e, dL/da_v = sum_e w_e b_u s_e, dL/db_u = sum_e w_e a_v s_e
    (both sums of the same per-edge product over rows and over columns), so the relation weights' gradient
    costs one SDDMM and a few passes over the edges, never a pass over the features.
    """

    @staticmethod
    def forward(ctx, h, alpha, adj, norm: str):
        shape = (adj.num_dst, adj.num_src)
        ctx.adj, ctx.num_relations = adj, (0 if alpha is None else alpha.shape[0])
        if alpha is None:  # the plain graph: constant normalised values, built once per graph
            vals, vals_t = adj.normalized_values(norm, h.dtype)
            ctx.save_for_backward(vals_t)
            return csr_mm(adj.indptr, adj.indices, vals, shape, h)
        w, vals, ab, a, b, da, db = adj.weighted_values(alpha, norm)
        ctx.save_for_backward(h, w, vals, ab, a, b, da, db)
        return csr_mm(adj.indptr, adj.indices, vals, shape, h)

    @staticmethod
    def backward(ctx, grad):
        adj = ctx.adj
        grad = grad.contiguous()
        shape_t = (adj.num_src, adj.num_dst)
        if ctx.num_relations == 0:
            (vals_t,) = ctx.saved_tensors
            gh = csr_mm(adj.t_indptr, adj.t_indices, vals_t, shape_t, grad) if ctx.needs_input_grad[0] else None
            return gh, None, None, None
        h, w, vals, ab, a, b, da, db = ctx.saved_tensors
        gh = None
        if ctx.needs_input_grad[0]:
            gh = csr_mm(adj.t_indptr, adj.t_indices, vals.index_select(0, adj.t_pos), shape_t, grad)
        galpha = None
        if ctx.needs_input_grad[1]:
            s = edge_dots(adj, grad, h)  # <grad_v, h_u> per edge
            gw = s * ab if ab is not None else s  # dL/dw_e
            galpha = segment_sum(adj, gw, "rel", ctx.num_relations)
            if a is not None:
                ws = vals * s  # w_e a_v b_u s_e: divided by a_v (b_u) it is the edge's share of dL/da_v (dL/db_u)
                gdeg = segment_sum(adj, ws, "dst", adj.num_dst) / a * da
                if b is not None:
                    gdeg = gdeg + segment_sum(adj, ws, "src", adj.num_src) / b * db
                galpha = galpha + adj.relation_counts(ctx.num_relations, grad.dtype).t() @ gdeg
            galpha = galpha.unsqueeze(-1)
        return gh, galpha, None, None


NORM_CODES = {"none": 0, "right": 1, "both": 2}
_EVERY_SOURCE = torch.empty(0, dtype=torch.uint8)  # the fused backward's `active`: no source skipped


class GcnAggregateFused(torch.autograd.Function):
    """Adjacency.normalized_spmm with relation weights on the fused CPU kernels (regnn.core.kernels).

    The forward computes each edge's value alpha[rel] a_v b_u on the fly while aggregating (no per-step edge
    arrays). The backward needs, besides grad h = A_n^T G, the sums of s_e = <G_v, h_u> that GcnAggregate gets
    from an SDDMM: per relation sum a_v b_u s_e, and per node the in- and out-sums of w_e a_v b_u s_e (through
    the degrees). One pass over the edges by source accumulates a_v G_v per run of one relation, from which come
    grad h, the relation sums and the out-sums (a dot per source and relation); the in-sums are <G_v, out_v>
    with the forward's output; the degree part is added up in the same call. About the cost of the plain
    transposed product, where the torch path adds an SDDMM and three scatter-adds over the edges.
    """

    @staticmethod
    def forward(ctx, h, alpha, adj, norm: str, kernels):
        al, a, b, ka, kb = adj.node_scales(alpha, norm, kernels)
        out = kernels.forward(adj.indptr, adj.indices, adj.kernel_rel, al, a, b, h.contiguous())
        ctx.adj, ctx.kernels, ctx.norm = adj, kernels, norm
        ctx.save_for_backward(h, out, al, a, b, ka, kb)
        return out

    @staticmethod
    def backward(ctx, grad):
        h, out, *scales = ctx.saved_tensors
        need = (ctx.needs_input_grad[0], ctx.needs_input_grad[1])
        gh, galpha = fused_backward(ctx.adj, ctx.kernels, ctx.norm, scales, grad, h.contiguous(), out, need)
        return gh, galpha, None, None, None


def fused_backward(adj, kernels, norm: str, scales, grad, h, out, need: tuple[bool, bool], active=_EVERY_SOURCE):
    """(gradient of h, of the relation weights (R, 1)), each None where `need` (h, alpha) says it is not needed,
    of the fused aggregation whose output was `out` for input h, from its output's gradient; scales: what
    Adjacency.node_scales gave (al, a, b, ka, kb). active: the fused backward's sources with something to add
    (uint8 per source; empty: every source)."""
    al, a, b, ka, kb = scales
    need_h, need_alpha = need
    gh, galpha = kernels.backward(
        adj.t_indptr,
        *adj.kernel_csc(),
        al,
        a,
        b,
        grad.contiguous(),
        h,
        out,
        adj.relation_counts(al.shape[0], al.dtype),
        ka,
        kb,
        norm != "none",
        norm == "both",
        need_h,
        need_alpha,
        active,
    )
    return (gh if need_h else None), (galpha.unsqueeze(-1) if need_alpha else None)
