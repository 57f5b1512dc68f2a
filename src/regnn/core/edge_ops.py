"""Edge-wise operations on an Adjacency's arrays, in torch or on the fused CPU kernels (its backend).

Every per-edge tensor is in CSR order: the edges sorted by destination, each destination's in-edges one segment
of `indptr`. The attention layers' ops (u_add_v, edge_softmax) and the sums of per-edge values by node or
relation (segment_sum) live here; the GCN aggregation's autograd functions are in regnn.core.gcn_aggregate.
"""

from __future__ import annotations

import warnings

import torch

warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta", category=UserWarning)


def full_precision(t: torch.Tensor):
    """Sparse products always run in float32: under bf16 autocast (precision=bf16) only dense layers go lower."""
    return torch.autocast(device_type=t.device.type, enabled=False)


def at_least_fp32(t: torch.Tensor) -> torch.Tensor:
    """bfloat16/float16 (from autocast) -> float32; float32 and float64 stay as they are."""
    return t.float() if t.is_floating_point() and t.element_size() < 4 else t


def csr(indptr, indices, values, shape):
    return torch.sparse_csr_tensor(indptr, indices, values, shape, check_invariants=False)


def csr_mm(indptr, indices, values, shape, dense: torch.Tensor) -> torch.Tensor:
    """CSR(indptr, indices, values) @ dense, written straight into a fresh output (the plain `@` zero-fills
    an output and copies the product into it: two extra passes over a (rows, cols) array)."""
    out = torch.empty(shape[0], dense.shape[1], dtype=dense.dtype, device=dense.device)
    return torch.addmm(out, csr(indptr, indices, values, shape), dense, beta=0, out=out)  # beta=0: out unread


def segment_sum(adj, values: torch.Tensor, by: str, n: int) -> torch.Tensor:
    """Sums of per-edge values (E, ...) in CSR order for every destination (by="dst"), source ("src") or
    relation id ("rel"): (n, ...).

    As the adjacency's backend says: over sorted segments (the edges are already sorted by destination; by source
    and by relation through a permutation kept per graph), deterministic and fast where CUDA's deterministic
    index_add_ is an index_put_ that walks every run of equal indices serially (2.7 ms for one sum over DBLP's 10
    relations on an H100, 89% of an RE-GCN epoch's GPU time); else on CPU one pass of the fused kernels per
    destination or source (each node's sum one thread's), or one index_add_ (by relation, or without kernels)."""
    kernels = adj.backend.kernels
    if (
        kernels is not None
        and by in ("dst", "src")
        and values.device.type == "cpu"
        and values.numel()
        and values.dtype in (torch.float32, torch.float64)
    ):
        indptr, pos = (adj.indptr, adj.indptr.new_empty(0)) if by == "dst" else (adj.t_indptr, adj.t_pos)
        if indptr.shape[0] == n + 1:
            flat = values.reshape(values.shape[0], -1).contiguous()
            return kernels.segment_sum(indptr, pos, flat).view(n, *values.shape[1:])
    if not adj.backend.sorted_sums:
        return torch.zeros(n, *values.shape[1:], dtype=values.dtype, device=values.device).index_add_(
            0, adj.edge_ids(by), values
        )
    order, offsets = adj.segments(by, n)
    v = values if order is None else values.index_select(0, order)
    return torch.segment_reduce(v, "sum", offsets=offsets, axis=0, initial=0)


class GatherEdges(torch.autograd.Function):
    """x[index] per edge (Adjacency.gather), whose backward sums the gradient per row with segment_sum (index_add_
    on CPU, as index_select's own backward, or the kernels' sums; sorted segments elsewhere)."""

    @staticmethod
    def forward(ctx, x, adj, by: str):
        ctx.adj, ctx.by, ctx.n = adj, by, x.shape[0]
        return x.index_select(0, adj.edge_ids(by))

    @staticmethod
    def backward(ctx, grad):
        return segment_sum(ctx.adj, grad.contiguous(), ctx.by, ctx.n), None, None


def edge_softmax(adj, score: torch.Tensor) -> torch.Tensor:
    """Softmax of score (E, ...) over the in-edges of every destination: the fused kernels' one pass per row, or
    torch's segment max and sums (max per destination for stability, exp, sums per destination)."""
    kernels = adj.backend.kernels
    if kernels is not None and score.device.type == "cpu" and score.dtype in (torch.float32, torch.float64):
        return _KernelSoftmax.apply(score, adj, kernels)
    return _TorchSoftmax.apply(score, adj)


class _KernelSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, score, adj, kernels):
        out = kernels.edge_softmax(adj.indptr, score.reshape(score.shape[0], -1).contiguous()).view(score.shape)
        ctx.adj, ctx.kernels = adj, kernels
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        flat = out.view(out.shape[0], -1)
        gs = ctx.kernels.edge_softmax_backward(ctx.adj.indptr, flat, grad.reshape(flat.shape).contiguous())
        return gs.view(out.shape), None, None


class _TorchSoftmax(torch.autograd.Function):
    """out = exp(s - max_v) / sum_v exp(s - max_v) per destination v; grad s = out * (g - sum_v out * g)."""

    @staticmethod
    def forward(ctx, score, adj):
        if score.shape[0] == 0:
            out = score.clone()
        else:
            top = torch.segment_reduce(score, "max", offsets=adj.indptr, axis=0)
            ex = torch.exp(score - top.index_select(0, adj.dst_of))
            out = ex / segment_sum(adj, ex, "dst", adj.num_dst).index_select(0, adj.dst_of)
        ctx.adj = adj
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        adj = ctx.adj
        og = out * grad
        return og - out * segment_sum(adj, og, "dst", adj.num_dst).index_select(0, adj.dst_of), None


def edge_dots(adj, dst_feat: torch.Tensor, src_feat: torch.Tensor) -> torch.Tensor:
    """<dst_feat[v], src_feat[u]> for every edge u->v, in CSR order (an SDDMM).

    On CPU torch's sampled_addmm is the fastest from 8 columns up but ~10x slower below; there the rows are
    gathered per edge and multiplied (E x a few numbers). Elsewhere sampled_addmm throughout.
    """
    if dst_feat.shape[1] < 8 and dst_feat.device.type == "cpu":
        return (dst_feat.index_select(0, adj.dst_of) * src_feat.index_select(0, adj.indices)).sum(1)
    pattern = csr(adj.indptr, adj.indices, adj.ones(dst_feat.dtype, dst_feat.device), (adj.num_dst, adj.num_src))
    return torch.sparse.sampled_addmm(pattern, dst_feat, src_feat.t(), beta=0.0).values()
