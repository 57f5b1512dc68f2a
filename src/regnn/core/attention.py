"""Attention layers (GAT, GATv2) whose attention logits take one relation weight per relation and head.

The weight is added to the logit before the softmax, as the authors' released REGATConv and REGATv2Conv do:
GAT LeakyReLU(a_l.z_u + a_r.z_v + w_r), GATv2 a.LeakyReLU(W_s h_u + W_d h_v) + w_r. A layer given no weights
(alpha None: the plain model) adds the constant 1, which is what the authors' plain GAT (`--no_re`, every weight
held at 1) computes; for GAT this is not the same as adding nothing, since the +1 passes through the LeakyReLU.
Output: (num_dst, heads, out_dim); the model concatenates the heads.
"""

from __future__ import annotations

import torch
from torch import nn

from regnn.core.adjacency import Adjacency, at_least_fp32
from regnn.core.attention_ops import aggregate_heads, attend, gat_attention, head_scores, v2_scores, weigh
from regnn.core.conv import ACTIVATIONS
from regnn.core.dropout import HashDropout


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
            a = gat_attention(adj, el, er, alpha, self.negative_slope)  # (E, heads)
            out = aggregate_heads(adj, z, self.attn_dropout(a))
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
        a = self.attn_dropout(gat_attention(adj, h @ wl, h[: adj.num_dst] @ wr, alpha, self.negative_slope))
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
        score = weigh(v2_scores(adj, zs, zd, self.attn, self.negative_slope), adj, alpha)
        out = attend(adj, zs, score, self.attn_dropout)
        if self.res_fc is not None:
            out = out + self.res_fc(hd).view(-1, self.heads, self.out_dim)
        return self.activation(out) if self.activation else out
