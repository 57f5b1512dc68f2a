"""The attention layers (GAT, GATv2) whose attention logits take one relation weight per relation and head.

The weight is added to the logit before the softmax, as the authors' released REGATConv and REGATv2Conv do:
GAT LeakyReLU(a_l.z_u + a_r.z_v + w_r), GATv2 a.LeakyReLU(W_s h_u + W_d h_v) + w_r. A layer given no weights
(the plain layer) adds the constant 1, which is what the authors' plain GAT (`--no_re`, every weight held at 1)
computes; for GAT this is not the same as adding nothing, since the +1 passes through the LeakyReLU.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from regnn.core.adjacency import Adjacency, at_least_fp32
from regnn.core.attention_ops import aggregate_heads, attend, gat_attention, head_scores, v2_scores, weigh
from regnn.core.dropout import HashDropout
from regnn.names import ATTN_INITS
from regnn.nn.layer import NEGATIVE_SLOPE, RELayer
from regnn.nn.propagation import ACTIVATIONS


@dataclass(frozen=True)
class AttentionOptions:
    """What an attention layer of the authors' released stack sets beyond a layer's usual arguments."""

    bias: bool | None = None  # a learnable bias after the aggregation (None: GAT's yes; GATv2 has none)
    negative_slope: float = NEGATIVE_SLOPE  # of the attention's LeakyReLU (the authors' 0.01, also tau's)
    activation: str = "none"  # after the bias, per head: none | elu | relu
    residual: bool = False  # add a linear map of the input (the released layer's residual)
    weight: bool = True  # False: no W, the input split into heads (in_channels = heads * out_channels), as the
    # last attention layer of the released stack
    attn_init: str = "xavier"  # the attention vectors' start: xavier (the authors') | zeros (a new layer's
    # attention is then the softmax of its relation weights alone: a relation-weighted mean)

    def __post_init__(self) -> None:
        if not isinstance(
            self.residual, bool
        ):  # a config's "auto" is settled by the dataset first (ModelSpec.for_data)
            raise ValueError(f"residual must be true or false here, got {self.residual!r}")
        if self.attn_init not in ATTN_INITS:
            raise ValueError(f"attn_init must be one of {list(ATTN_INITS)}, got {self.attn_init!r}")


class _Heads(RELayer):
    """What the attention layers share: their options (REGATConv's), heads of out_channels concatenated or
    averaged, and the check of a layer without W. A subclass builds its parameters in `_parameters_of`."""

    def _build(
        self,
        *,
        heads: int = 1,
        concat: bool = True,
        attn_dropout: float = 0.0,
        options: AttentionOptions = AttentionOptions(),
    ) -> None:
        in_channels, out_channels = self.in_channels, self.out_channels
        if not options.weight and in_channels != heads * out_channels:
            raise ValueError(
                f"an attention layer without W splits its input into heads: in_channels ({in_channels}) "
                f"must be heads * out_channels ({heads} * {out_channels})"
            )
        self.attn_init = options.attn_init
        self.heads, self.concat = heads, concat
        self.attn_dropout = HashDropout(attn_dropout)  # on (E, heads): torch 2.15's CPU mask draw is ~10x torch 2.2's
        self.negative_slope = options.negative_slope
        self.activation = ACTIVATIONS[options.activation]
        self._parameters_of(options)

    def _parameters_of(self, options: AttentionOptions) -> None:
        raise NotImplementedError

    def _output(self, out: torch.Tensor) -> torch.Tensor:
        """(N, heads, out_channels) -> (N, heads * out_channels) concatenated, or (N, out_channels) averaged."""
        return out.flatten(1) if self.concat else out.mean(1)

    def extra_repr(self) -> str:
        init = f", attn_init={self.attn_init}" if self.attn_init != "xavier" else ""
        return f"{super().extra_repr()}, heads={self.heads}, concat={self.concat}{init}"

    def _start_attention(self, *vectors: nn.Parameter) -> None:
        """attn_init=zeros: the attention vectors (drawn first, so that every other parameter is drawn as with
        xavier) start at 0."""
        if self.attn_init == "zeros":
            for v in vectors:
                nn.init.zeros_(v)


class REGATConv(_Heads):
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
        attn_dropout: dropout on the attention coefficients.
        scale, learn: as REGCNConv ("both": RE-GAT, "none": a plain GAT layer).
        options: bias (default yes), the attention's negative slope, activation, residual map, no W
            (AttentionOptions).
    """

    def _parameters_of(self, options: AttentionOptions) -> None:
        heads, out_channels = self.heads, self.out_channels
        self.fc = nn.Linear(self.in_channels, heads * out_channels, bias=False) if options.weight else None
        self.attn_l = nn.Parameter(torch.empty(1, heads, out_channels))
        self.attn_r = nn.Parameter(torch.empty(1, heads, out_channels))
        self.bias = nn.Parameter(torch.zeros(heads, out_channels)) if options.bias is not False else None
        self.res_fc = nn.Linear(self.in_channels, heads * out_channels, bias=False) if options.residual else None
        self._init()

    def _init(self) -> None:
        gain = nn.init.calculate_gain("relu")
        inits = [self.attn_l, self.attn_r] + [m.weight for m in (self.fc, self.res_fc) if m is not None]
        for p in inits:
            nn.init.xavier_normal_(p, gain=gain)
        self._start_attention(self.attn_l, self.attn_r)

    def reset_parameters(self) -> None:
        """W, the attention vectors and the residual map xavier-normal (ReLU gain; the attention vectors 0 with
        attn_init=zeros), b 0 and every relation weight 1, as a new layer starts."""
        self._init()
        if self.bias is not None:
            nn.init.zeros_(self.bias)
        self._reset_relations()

    def propagate(self, adj: Adjacency, h: torch.Tensor, alpha: torch.Tensor | None = None, rows=None):
        if self._transform_after(adj, h):
            out = self._aggregate_then_transform(adj, h, alpha)
        else:
            z = self.fc(h) if self.fc is not None else h
            z = at_least_fp32(z).view(-1, self.heads, self.out_channels)  # attention in float32 (bf16: fc only)
            el, er = head_scores(z, self.attn_l, self.attn_r, adj.num_dst)  # destinations: the first num_dst sources
            a = gat_attention(adj, el, er, alpha, self.negative_slope)  # (E, heads)
            out = aggregate_heads(adj, z, self.attn_dropout(a))
        if self.res_fc is not None:
            out = out + self.res_fc(h[: adj.num_dst]).view(-1, self.heads, self.out_channels)
        if self.bias is not None:
            out = out + self.bias
        return self._output(self.activation(out) if self.activation else out)

    def _transform_after(self, adj: Adjacency, h: torch.Tensor) -> bool:
        """Whether to aggregate h and apply W to the destinations only: on a sampled block (far more sources than
        destinations) whose input is no wider than a head, W h for every source costs more than the aggregation
        itself. The same numbers up to rounding; float32/64 only (under bf16 autocast fc runs in bf16)."""
        return (
            self.fc is not None
            and adj.num_src > 2 * adj.num_dst
            and h.shape[1] <= self.out_channels
            and h.dtype in (torch.float32, torch.float64)
            and not torch.is_autocast_enabled()
        )

    def _aggregate_then_transform(self, adj: Adjacency, h: torch.Tensor, alpha) -> torch.Tensor:
        """sum_u a_uv,k W_k h_u = W_k (sum_u a_uv,k h_u): the attention vectors are folded into W
        (a_l,k . W_k h_u = h_u . W_k^T a_l,k), the aggregation reads h (one row for every head) and W_k maps the
        destinations' aggregates."""
        w = self.fc.weight.view(self.heads, self.out_channels, -1)  # (H, D, in)
        wl = torch.einsum("hdi,hd->ih", w, self.attn_l[0])
        wr = torch.einsum("hdi,hd->ih", w, self.attn_r[0])
        a = self.attn_dropout(gat_attention(adj, h @ wl, h[: adj.num_dst] @ wr, alpha, self.negative_slope))
        agg = aggregate_heads(adj, h.unsqueeze(1), a)  # (num_dst, H, in)
        return torch.bmm(agg.transpose(0, 1), w.transpose(1, 2)).transpose(0, 1)  # (num_dst, H, D)


class REGATv2Conv(_Heads):
    """GATv2 with relation weights: score = a . LeakyReLU(W_s h_u + W_d h_v) + w_r, softmax over in-edges,
    messages W_s h_u. Linear layers with bias, as the authors' REGATv2Conv; weight=False: no W_s, W_d (both the
    identity, as the last attention layer of the authors' stack). Arguments as REGATConv's; no bias beside the
    linear maps' (the released layer has none)."""

    def _parameters_of(self, options: AttentionOptions) -> None:
        if options.bias is not None:
            raise ValueError("GATv2 has no bias of its own (its linear maps have theirs): leave options.bias None")
        width = self.heads * self.out_channels
        self.fc_src = nn.Linear(self.in_channels, width) if options.weight else None
        self.fc_dst = nn.Linear(self.in_channels, width) if options.weight else None
        self.res_fc = nn.Linear(self.in_channels, width) if options.residual else None  # with bias, as released
        self.attn = nn.Parameter(torch.empty(1, self.heads, self.out_channels))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """The linear maps and the attention vector xavier-normal (ReLU gain), their biases 0, every relation
        weight 1."""
        gain = nn.init.calculate_gain("relu")
        for lin in (self.fc_src, self.fc_dst, self.res_fc):
            if lin is not None:
                nn.init.xavier_normal_(lin.weight, gain=gain)
                nn.init.zeros_(lin.bias)
        nn.init.xavier_normal_(self.attn, gain=gain)
        self._start_attention(self.attn)
        self._reset_relations()

    def propagate(self, adj: Adjacency, h: torch.Tensor, alpha: torch.Tensor | None = None, rows=None):
        hd = h[: adj.num_dst]
        zs = self.fc_src(h) if self.fc_src is not None else h
        zd = self.fc_dst(hd) if self.fc_dst is not None else hd
        zs = at_least_fp32(zs).view(-1, self.heads, self.out_channels)
        zd = at_least_fp32(zd).view(-1, self.heads, self.out_channels)
        score = weigh(v2_scores(adj, zs, zd, self.attn, self.negative_slope), adj, alpha)
        out = attend(adj, zs, score, self.attn_dropout)
        if self.res_fc is not None:
            out = out + self.res_fc(hd).view(-1, self.heads, self.out_channels)
        return self._output(self.activation(out) if self.activation else out)
