"""Attention layers (GAT, GATv2) whose attention logits take one relation weight per relation and head.

The weight is added to the logit before the softmax, as the authors' released REGATConv and REGATv2Conv do:
GAT LeakyReLU(a_l.z_u + a_r.z_v + w_r), GATv2 a.LeakyReLU(W_s h_u + W_d h_v) + w_r. A layer given no weights
(alpha None: the plain model) adds the constant 1, which is what the authors' plain GAT (`--no_re`, every weight
held at 1) computes; for GAT this is not the same as adding nothing, since the +1 passes through the LeakyReLU.
Output: (num_dst, heads, out_dim); the model concatenates the heads.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from regnn.core.adjacency import Adjacency, at_least_fp32
from regnn.core.conv import ACTIVATIONS
from regnn.core.dropout import HashDropout


def _weigh(score: torch.Tensor, adj: Adjacency, alpha: torch.Tensor | None) -> torch.Tensor:
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


def _attend(adj: Adjacency, z: torch.Tensor, score: torch.Tensor, dropout: nn.Module) -> torch.Tensor:
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
    """_attend's aggregation on the fused CPU kernels: every head in one pass over the edges, forward and
    backward (the gradient of the attention coefficients comes from the pass that gives the gradient of z)."""

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


def _check_without_w(weight: bool, in_dim: int, heads: int, out_dim: int) -> None:
    if not weight and in_dim != heads * out_dim:
        raise ValueError(
            f"an attention layer without W splits its input into heads: in_dim ({in_dim}) must "
            f"be heads * out_dim ({heads} * {out_dim})"
        )


class REGATConv(nn.Module):
    """GAT: score = LeakyReLU(a_l.z_u + a_r.z_v + w_r), softmax over in-edges, messages z_u, with z = W h.

    weight=False: no W (z is h split into heads: in_dim must be heads * out_dim), as the last attention layer of
    the authors' released stack.
    """

    def __init__(
        self,
        in_dim: int,
        out_dim: int,
        heads: int = 1,
        attn_dropout: float = 0.0,
        negative_slope: float = 0.01,
        activation: str = "none",
        bias: bool = False,
        residual: bool = False,
        weight: bool = True,
    ):
        super().__init__()
        _check_without_w(weight, in_dim, heads, out_dim)
        self.heads, self.out_dim = heads, out_dim
        self.fc = nn.Linear(in_dim, heads * out_dim, bias=False) if weight else None
        self.attn_l = nn.Parameter(torch.empty(1, heads, out_dim))
        self.attn_r = nn.Parameter(torch.empty(1, heads, out_dim))
        self.attn_dropout = HashDropout(attn_dropout)  # on (E, heads): torch 2.15's CPU mask draw is ~10x torch 2.2's
        self.negative_slope = negative_slope
        self.bias = nn.Parameter(torch.zeros(heads, out_dim)) if bias else None
        self.res_fc = nn.Linear(in_dim, heads * out_dim, bias=False) if residual else None
        self.activation = ACTIVATIONS[activation]
        gain = nn.init.calculate_gain("relu")
        inits = [self.attn_l, self.attn_r] + [m.weight for m in (self.fc, self.res_fc) if m is not None]
        for p in inits:
            nn.init.xavier_normal_(p, gain=gain)

    def forward(self, adj: Adjacency, h: torch.Tensor, alpha: torch.Tensor | None = None) -> torch.Tensor:
        if self._transform_after(adj, h):
            out = self._aggregate_then_transform(adj, h, alpha)
        else:
            z = self.fc(h) if self.fc is not None else h
            z = at_least_fp32(z).view(-1, self.heads, self.out_dim)  # attention in float32 (bf16 autocast: fc only)
            el, er = head_scores(z, self.attn_l, self.attn_r, adj.num_dst)  # destinations: the first num_dst sources
            score = _weigh(adj.u_add_v(el, er), adj, alpha)  # (E, heads)
            out = _attend(adj, z, F.leaky_relu(score, self.negative_slope), self.attn_dropout)
        if self.res_fc is not None:
            out = out + self.res_fc(h[: adj.num_dst]).view(-1, self.heads, self.out_dim)
        if self.bias is not None:
            out = out + self.bias
        return self.activation(out) if self.activation else out

    def _transform_after(self, adj: Adjacency, h: torch.Tensor) -> bool:
        """Whether to aggregate h and apply W to the destinations only: on a sampled block (far more sources than
        destinations) whose input is no wider than a head, W h for every source costs more than the aggregation
        itself. The same numbers up to rounding; float32/64 only (under bf16 autocast fc runs in bf16)."""
        return (
            self.fc is not None
            and adj.num_src > 2 * adj.num_dst
            and h.shape[1] <= self.out_dim
            and h.dtype in (torch.float32, torch.float64)
            and not torch.is_autocast_enabled()
        )

    def _aggregate_then_transform(self, adj: Adjacency, h: torch.Tensor, alpha) -> torch.Tensor:
        """sum_u a_uv,k W_k h_u = W_k (sum_u a_uv,k h_u): the attention vectors are folded into W
        (a_l,k . W_k h_u = h_u . W_k^T a_l,k), the aggregation reads h (one row for every head) and W_k maps the
        destinations' aggregates."""
        w = self.fc.weight.view(self.heads, self.out_dim, -1)  # (H, D, in)
        wl = torch.einsum("hdi,hd->ih", w, self.attn_l[0])
        wr = torch.einsum("hdi,hd->ih", w, self.attn_r[0])
        score = _weigh(adj.u_add_v(h @ wl, h[: adj.num_dst] @ wr), adj, alpha)
        a = self.attn_dropout(adj.edge_softmax(F.leaky_relu(score, self.negative_slope)))
        agg = aggregate_heads(adj, h.unsqueeze(1), a)  # (num_dst, H, in)
        return torch.bmm(agg.transpose(0, 1), w.transpose(1, 2)).transpose(0, 1)  # (num_dst, H, D)


class REGATv2Conv(nn.Module):
    """GATv2: score = a . LeakyReLU(W_s h_u + W_d h_v) + w_r, softmax over in-edges, messages W_s h_u. Linear
    layers with bias, as the authors' REGATv2Conv; weight=False: no W_s, W_d (both the identity, as the last
    attention layer of the authors' stack)."""

    def __init__(
        self,
        in_dim: int,
        out_dim: int,
        heads: int = 1,
        attn_dropout: float = 0.0,
        negative_slope: float = 0.01,
        activation: str = "none",
        weight: bool = True,
        residual: bool = False,
    ):
        super().__init__()
        _check_without_w(weight, in_dim, heads, out_dim)
        self.heads, self.out_dim = heads, out_dim
        self.fc_src = nn.Linear(in_dim, heads * out_dim) if weight else None
        self.fc_dst = nn.Linear(in_dim, heads * out_dim) if weight else None
        self.res_fc = nn.Linear(in_dim, heads * out_dim) if residual else None  # with bias, as the released layer
        self.attn = nn.Parameter(torch.empty(1, heads, out_dim))
        self.attn_dropout = HashDropout(attn_dropout)  # on (E, heads): torch 2.15's CPU mask draw is ~10x torch 2.2's
        self.negative_slope = negative_slope
        self.activation = ACTIVATIONS[activation]
        gain = nn.init.calculate_gain("relu")
        for lin in (self.fc_src, self.fc_dst, self.res_fc):
            if lin is not None:
                nn.init.xavier_normal_(lin.weight, gain=gain)
                nn.init.zeros_(lin.bias)
        nn.init.xavier_normal_(self.attn, gain=gain)

    def forward(self, adj: Adjacency, h: torch.Tensor, alpha: torch.Tensor | None = None) -> torch.Tensor:
        hd = h[: adj.num_dst]
        zs = self.fc_src(h) if self.fc_src is not None else h
        zd = self.fc_dst(hd) if self.fc_dst is not None else hd
        zs = at_least_fp32(zs).view(-1, self.heads, self.out_dim)
        zd = at_least_fp32(zd).view(-1, self.heads, self.out_dim)
        score = _weigh(v2_scores(adj, zs, zd, self.attn, self.negative_slope), adj, alpha)
        out = _attend(adj, zs, score, self.attn_dropout)
        if self.res_fc is not None:
            out = out + self.res_fc(hd).view(-1, self.heads, self.out_dim)
        return self.activation(out) if self.activation else out
