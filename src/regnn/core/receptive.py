"""GCN layers computed only on the rows a loss reads, with the whole graph's numbers.

A full-batch step whose loss reads a few hundred target nodes needs the last layer's output on those nodes
only, the layer before on their in-neighbours, and so on back to the input (DBLP's 400 training authors: 400,
2290, 5382 and 17820 of 26128 rows for the four layers of RE-GCN). `plan` finds those row sets once per set of
loss rows; `gcn_rows_layer` computes a GCN layer (the aggregation, relation-weighted on the fused kernels or
plain, then W, bias and the activation) on its rows and leaves the other rows 0.

Every number that reaches the loss is the same, bit for bit, as the whole layer's:
- forward, each row is computed as before: the aggregation sums a row's in-edges in the same order with
  the same node scales (the whole graph's degrees), a matrix product gives a row the same numbers whatever other
  rows it is given with (BLAS kernels do not mix rows; a product of few rows may take other kernels, so a
  layer with W and fewer than FEWEST_ROWS rows runs whole), and the bias and activation are elementwise. One
  exception: torch's elementwise kernels compute the last (length mod 32) elements of each thread's share
  without vector instructions, and for the ELU those give other last bits; a share of whole 64-wide rows has
  none, which holds at 1 and 2 threads (at more threads it depends on how the row count divides, on the whole
  graph and on the rows alike);
- backward, the gradient is 0 outside the rows (the loss does not read them), so sums over rows (W's and the
  bias's gradients, the aggregation backward's relation and degree sums) are taken over the whole graph as before,
  with those zeros in place of the values the skipped rows would have had: x + 0 = x, so every sum is the same.
  Only the per-row work (the activation's derivative, the gradient through W) is cut to the rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from regnn.core.edge_ops import csr_mm
from regnn.core.gcn_aggregate import fused_backward


@dataclass(frozen=True)
class RowBlock:
    """One layer's rows (sorted homogeneous ids) and their in-edges: CSR over those rows, with the whole
    graph's source ids and relation ids (int32, the fused kernels')."""

    rows: torch.Tensor
    indptr: torch.Tensor
    indices: torch.Tensor
    rel: torch.Tensor
    sources: torch.Tensor  # uint8 per node of the graph: 1 where it has an out-edge to one of the rows
    pos: torch.Tensor  # where each of those edges is in the graph's CSR order


def _in_edges(adj, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(CSR offsets over `rows`, positions in adj's CSR of their in-edges, row by row)."""
    starts = adj.indptr.index_select(0, rows)
    counts = adj.indptr.index_select(0, rows + 1) - starts
    indptr = torch.cat([counts.new_zeros(1), counts.cumsum(0)])
    pos = torch.arange(int(indptr[-1]), device=rows.device) + torch.repeat_interleave(starts - indptr[:-1], counts)
    return indptr, pos


def _block(adj, rows: torch.Tensor) -> RowBlock:
    indptr, pos = _in_edges(adj, rows)
    indices = adj.indices.index_select(0, pos)
    sources = torch.zeros(adj.num_src, dtype=torch.uint8, device=rows.device)
    sources[indices] = 1
    return RowBlock(rows, indptr, indices, adj.kernel_rel.index_select(0, pos), sources, pos)


def plan(adj, last_rows: torch.Tensor, calls: int) -> list[RowBlock]:
    """Per layer call, first to last: the rows whose output the next calls read, for a loss on `last_rows`
    (homogeneous ids) after `calls` layers on the whole graph `adj`."""
    blocks = [_block(adj, torch.unique(last_rows))]  # sorted: each row's output lands in order
    for _ in range(calls - 1):
        blocks.append(_block(adj, blocks[-1].sources.nonzero().squeeze(1)))
    return blocks[::-1]


def cached_plan(adj, key: torch.Tensor, last_rows, calls: int) -> list[RowBlock]:
    """plan(adj, last_rows(), calls), kept on adj for the tensor `key` (a split's index tensor: the same object
    every epoch), so that each split's rows are found once per graph."""
    slot = ("receptive", id(key), calls)
    hit = adj._derived.get(slot)
    if hit is None or hit[0] is not key:  # holding key keeps its id unique while the entry lives
        hit = (key, plan(adj, last_rows(), calls))
        adj._derived[slot] = hit
    return hit[1]


ELU = F.elu
# a layer whose rows are more than this share of the graph runs whole: the rows save it little, and the rows
# path pays for moving them in and out of the graph-sized tensors (DBLP's first layer, 68% of the nodes, is
# faster whole; its later layers, 21% and fewer, several times faster on their rows)
WHOLE_ABOVE = 0.5
# a product of fewer rows may take other BLAS kernels than the same rows among the whole graph's (small-matrix
# kernels; the inner dimension split between threads), which round differently; scripts/checks/blas_rows.py
# finds the row counts where that happens (results/blas_rows.md)
FEWEST_ROWS = 512


class GcnRowsLayer(torch.autograd.Function):
    """act(A_n h W + b) on block.rows (0 elsewhere); weight None: A_n h alone. See the module docstring.
    alpha None: the plain graph (every weight 1), aggregated as GcnAggregate does (torch's CSR product on the
    normalised values), else the relation-weighted aggregation on the fused kernels."""

    @staticmethod
    def forward(ctx, h, alpha, weight, bias, adj, norm: str, kernels, block: RowBlock, elu: bool):
        ctx.adj, ctx.norm, ctx.kernels, ctx.block, ctx.elu = adj, norm, kernels, block, elu
        rows, h = block.rows, h.contiguous()
        if alpha is None:
            vals = adj.normalized_values(norm, h.dtype)[0].index_select(0, block.pos)
            agg = csr_mm(block.indptr, block.indices, vals, (rows.numel(), adj.num_src), h)
            scales = ()
        else:
            scales = adj.node_scales(alpha, norm, kernels)  # al, a, b, ka, kb
            al, a, b = scales[:3]
            agg = kernels.forward(block.indptr, block.indices, block.rel, al, a.index_select(0, rows), b, h)
        pre = agg if weight is None else agg.mm(weight)
        pre = pre if bias is None else pre + bias
        y = F.elu(pre) if elu else pre
        ctx.save_for_backward(h, agg, pre, weight, bias, *scales)
        return _spread(y, rows, adj.num_dst)

    @staticmethod
    def backward(ctx, grad):
        h, agg, pre, weight, bias, *scales = ctx.saved_tensors
        adj, rows = ctx.adj, ctx.block.rows
        g = grad.index_select(0, rows)
        if ctx.elu:
            g = torch.ops.aten.elu_backward(g, 1.0, 1, 1, False, pre)
        out = _borrow(adj, agg, rows)  # the whole layer's aggregation output, 0 off the rows
        whole = _borrow(adj, g, rows)  # sums over every row, as the whole layer's autograd takes them
        gw = gb = None
        if bias is not None and ctx.needs_input_grad[3]:
            gb = whole.sum_to_size(bias.shape)
        if weight is not None:
            gw = out.t().mm(whole) if ctx.needs_input_grad[2] else None
            whole.index_copy_(0, rows, g.mm(weight.t()))  # now the gradient of the aggregation
        gh, galpha = _aggregation_backward(ctx, whole, h, out, scales)
        _give_back(adj, out, rows)
        _give_back(adj, whole, rows)
        return gh, galpha, gw, gb, None, None, None, None, None


def _aggregation_backward(ctx, grad, h, out, scales) -> tuple:
    """(gradient of h, of the relation weights) from the aggregation's output gradient over the whole graph."""
    adj, need_h, need_alpha = ctx.adj, ctx.needs_input_grad[0], ctx.needs_input_grad[1]
    if not scales:  # the plain graph: GcnAggregate's backward
        vals_t = adj.normalized_values(ctx.norm, h.dtype)[1]
        return (csr_mm(adj.t_indptr, adj.t_indices, vals_t, (adj.num_src, adj.num_dst), grad) if need_h else None), None
    return fused_backward(adj, ctx.kernels, ctx.norm, scales, grad, h, out, (need_h, need_alpha), ctx.block.sources)


def _spread(x: torch.Tensor, rows: torch.Tensor, n: int) -> torch.Tensor:
    """x's rows at `rows` of an (n, ...) tensor of zeros."""
    return x.new_zeros((n, *x.shape[1:])).index_copy_(0, rows, x)


def _pool(adj, x: torch.Tensor) -> list:
    return adj._derived.setdefault(("receptive scratch", x.dtype, x.device, tuple(x.shape[1:])), [])


def _borrow(adj, x: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """_spread(x, rows, adj.num_dst) in a zero tensor kept on adj for the backward's temporaries: a fresh one
    of the graph's size each time costs more than the layer's work on its rows (the memory is handed back to
    the system and faulted in again on every step)."""
    pool = _pool(adj, x)
    buf = pool.pop() if pool else x.new_zeros((adj.num_dst, *x.shape[1:]))
    return buf.index_copy_(0, rows, x)


def _give_back(adj, buf: torch.Tensor, rows: torch.Tensor) -> None:
    """Zeroes the rows _borrow wrote and keeps the tensor for the next step; nothing else holds it."""
    _pool(adj, buf).append(buf.index_fill_(0, rows, 0))


def gcn_rows_layer(adj, h, alpha, norm: str, block: RowBlock, weight, bias, activation) -> torch.Tensor | None:
    """The layer on block.rows (see GcnRowsLayer), or None where this path does not apply and the whole layer
    must run: relation weights without the fused kernels, another activation than ELU, mixed or low precision,
    another device than the CPU, a sampled block, rows that are most of the graph (WHOLE_ABOVE), or few rows
    for W (FEWEST_ROWS: their product may take other BLAS kernels than the same rows among the whole graph's; a
    single row for the aggregation alone)."""
    rows, fewest = block.rows.numel(), (2 if weight is None else FEWEST_ROWS)  # no W: no product to guard
    if activation not in (None, ELU) or adj.num_src != adj.num_dst or not fewest <= rows <= WHOLE_ABOVE * adj.num_dst:
        return None
    if torch.is_autocast_enabled() or h.dtype not in (torch.float32, torch.float64) or h.device.type != "cpu":
        return None
    params = [p for p in (weight, bias) if p is not None]
    if any(p.dtype != h.dtype for p in params):
        return None
    kernels = None
    if alpha is not None:
        alpha = alpha if alpha.shape[1] == 1 else alpha[:, :1]
        kernels = adj.fused_kernels(h)
        if kernels is None or alpha.dtype != h.dtype or adj.num_relations_seen > alpha.shape[0]:
            return None
    return GcnRowsLayer.apply(h, alpha, weight, bias, adj, norm, kernels, block, activation is ELU)
