"""The attention layers' operations on an Adjacency: GAT's head scores and attention coefficients, GATv2's logits,
the multi-head aggregation by attention coefficients; each on the fused CPU kernels where the adjacency's backend
has them (regnn.core.kernels), else in torch.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from regnn.core.adjacency import Adjacency


def weigh(score: torch.Tensor, adj: Adjacency, alpha: torch.Tensor | None) -> torch.Tensor:
    """score + w_r of every edge's relation; + 1 where the layer has no relation weights (all held at 1)."""
    return score + 1.0 if alpha is None else score + adj.edge_weights(alpha)


def head_scores(z: torch.Tensor, attn_l: torch.Tensor, attn_r: torch.Tensor, num_dst: int):
    """(a_l . z_u per head for every source, a_r . z_v per head for every destination) as one (N, H*D) x (H*D, 2H)
    product with the attention vectors laid out block-diagonally: two elementwise products and sums over the
    (N, H, D) features (and their backward) cost ~10x more on CPU."""
    heads, dim = attn_l.shape[1:]
    eye = torch.eye(heads, dtype=z.dtype, device=z.device)[:, None, :]  # (H, 1, H)
    blocks = torch.cat([(eye * a[0][:, :, None]).reshape(heads * dim, heads) for a in (attn_l, attn_r)], 1)
    s = z.reshape(z.shape[0], heads * dim) @ blocks.to(z.dtype)
    return s[:, :heads], s[:num_dst, heads:]


def gat_attention(
    adj: Adjacency, el: torch.Tensor, er: torch.Tensor, alpha: torch.Tensor | None, negative_slope: float
) -> torch.Tensor:
    """GAT's attention coefficients (E, heads) in CSR order: softmax over every destination's in-edges of
    LeakyReLU(el[u] + er[v] + w_r) (+ 1 for w_r where alpha is None). On the fused kernels one pass per destination
    and its backward, the same numbers as the gathers, sums, LeakyReLU and softmax of the torch path."""
    kernels = adj.backend.kernels if el.device.type == "cpu" else None
    if (
        kernels is None
        or el.dtype not in (torch.float32, torch.float64)
        or (alpha is not None and alpha.dtype != el.dtype)
    ):
        return adj.edge_softmax(F.leaky_relu(weigh(adj.u_add_v(el, er), adj, alpha), negative_slope))
    w = None if alpha is None else adj.edge_weights(alpha)
    return _GATSoftmax.apply(el, er, w, adj, float(negative_slope), kernels)


class _GATSoftmax(torch.autograd.Function):
    """gat_attention on the fused CPU kernels; w None: the constant 1 in every logit."""

    @staticmethod
    def forward(ctx, el, er, w, adj: Adjacency, slope: float, kernels):
        el, er = el.contiguous(), er.contiguous()
        w = el.new_empty(0) if w is None else w.contiguous()
        c = 0.0 if w.numel() else 1.0
        a = kernels.gat_softmax(adj.indptr, adj.indices, el, er, w, c, slope)
        ctx.adj, ctx.slope, ctx.c, ctx.kernels = adj, slope, c, kernels
        ctx.save_for_backward(el, er, w, a)
        return a

    @staticmethod
    def backward(ctx, grad):
        el, er, w, a = ctx.saved_tensors
        adj, need = ctx.adj, ctx.needs_input_grad
        gel, ger, gw = ctx.kernels.gat_softmax_backward(
            adj.indptr,
            adj.indices,
            adj.t_indptr,
            adj.t_pos,
            el,
            er,
            w,
            ctx.c,
            ctx.slope,
            a,
            grad.contiguous(),
            need[0],
            need[1],
            need[2],
        )
        return (gel if need[0] else None), (ger if need[1] else None), (gw if need[2] else None), None, None, None


def attend(adj: Adjacency, z: torch.Tensor, score: torch.Tensor, dropout: nn.Module) -> torch.Tensor:
    """sum over in-edges of softmax(score) * z[u], per head: (num_dst, heads, dim)."""
    return aggregate_heads(adj, z, dropout(adj.edge_softmax(score)))


def aggregate_heads(adj: Adjacency, z: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
    """out[v, k] = sum over in-edges e = (u -> v) of a[e, k] z[u, k]: z (num_src, heads, dim), or (num_src, 1, dim)
    for one z shared by every head, a (E, heads) in CSR order. On the fused kernels (the adjacency's backend)
    one pass for every head; else one CSR product per head."""
    kernels = adj.backend.kernels if z.device.type == "cpu" and z.dtype == a.dtype else None
    if kernels is not None:
        return _HeadsAggregate.apply(z, a, adj, kernels)
    # one contiguous (N, D) slice per head via unbind: its backward stacks the head gradients once, where
    # z[:, k] would zero-fill a gradient of z's full size for every head
    zs, As = z.transpose(0, 1).contiguous().unbind(0), a.t().contiguous().unbind(0)
    return torch.stack([adj.spmm(zs[k if len(zs) > 1 else 0], As[k]) for k in range(a.shape[1])], 1)


class _HeadsAggregate(torch.autograd.Function):
    """attend's aggregation on the fused CPU kernels: every head in one pass over the edges; the backward takes one
    pass by destinations for the attention coefficients' gradient and one by sources for z's."""

    @staticmethod
    def forward(ctx, z, a, adj: Adjacency, kernels):
        z, a = z.contiguous(), a.contiguous()
        ctx.adj, ctx.kernels = adj, kernels
        ctx.save_for_backward(z, a)
        return kernels.heads_forward(adj.indptr, adj.indices, a, z)

    @staticmethod
    def backward(ctx, grad):
        z, a = ctx.saved_tensors
        adj = ctx.adj
        gz, ga = ctx.kernels.heads_backward(
            adj.indptr,
            adj.indices,
            adj.t_indptr,
            adj.t_indices,
            adj.t_pos,
            a,
            grad.contiguous(),
            z,
            ctx.needs_input_grad[0],
            ctx.needs_input_grad[1],
        )
        return (gz if ctx.needs_input_grad[0] else None), (ga if ctx.needs_input_grad[1] else None), None, None


def v2_scores(
    adj: Adjacency, zs: torch.Tensor, zd: torch.Tensor, attn: torch.Tensor, negative_slope: float
) -> torch.Tensor:
    """GATv2 logits (E, heads) in CSR order: attn . LeakyReLU(zs[u] + zd[v]) per edge u -> v and head.

    On the fused kernels (the adjacency's backend) they are computed edge by edge without the (E, heads, dim)
    intermediate, in the forward and in the backward; without them Adjacency.u_add_v and torch's elementwise ops
    do."""
    kernels = adj.backend.kernels if zs.device.type == "cpu" and zs.dtype == zd.dtype == attn.dtype else None
    if kernels is not None:
        return _V2Scores.apply(zs, zd, attn, adj, float(negative_slope), kernels)
    e = F.leaky_relu(adj.u_add_v(zs, zd), negative_slope)  # (E, heads, dim)
    return (e * attn).sum(-1)


class _V2Scores(torch.autograd.Function):
    """v2_scores on the fused CPU kernels: forward by destinations; backward by destinations (zd's and attn's
    gradients) and by sources (zs's), each recomputing LeakyReLU(zs[u] + zd[v]) instead of reading it back."""

    @staticmethod
    def forward(ctx, zs, zd, attn, adj: Adjacency, slope: float, kernels):
        zs, zd = zs.contiguous(), zd.contiguous()
        a = attn.reshape(attn.shape[-2], attn.shape[-1]).contiguous()
        ctx.adj, ctx.slope, ctx.kernels, ctx.attn_shape = adj, slope, kernels, attn.shape
        ctx.save_for_backward(zs, zd, a)
        return kernels.v2_scores(adj.indptr, adj.indices, zs, zd, a, slope)

    @staticmethod
    def backward(ctx, grad):
        zs, zd, a = ctx.saved_tensors
        adj = ctx.adj
        need = ctx.needs_input_grad
        gzs, gzd, ga = ctx.kernels.v2_scores_backward(
            adj.indptr,
            adj.indices,
            adj.t_indptr,
            adj.t_indices,
            adj.t_pos,
            zs,
            zd,
            a,
            grad.contiguous(),
            ctx.slope,
            need[0],
            need[1],
            need[2],
        )
        return (
            (gzs if need[0] else None),
            (gzd if need[1] else None),
            (ga.reshape(ctx.attn_shape) if need[2] else None),
            None,
            None,
            None,
        )
