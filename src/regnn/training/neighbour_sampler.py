"""Uniform neighbour sampling on a graph's CSC arrays (in-edges per destination), in torch.

For every destination of a layer: all of its in-edges when it has at most `fanout` of them (or fanout is -1),
otherwise `fanout` distinct in-edges drawn uniformly (a uniformly random subset of that size, without
replacement). A layer gives a `Block`: its sources numbered compactly, the destinations first (in the order
given) and then every other source in the order it first appears among the edges; the edges grouped by
destination, in CSC order where all are kept. That is the layout of DGL's `to_block` over `in_subgraph`
(tests/test_sampler.py pins the whole-neighbourhood case to it), and what the model relies on: a block's
destinations are the first rows of its sources.

Every draw comes from the torch.Generator handed in, and no operation's result depends on how torch splits it
among threads (elementwise, per row, or on integers), so a generator seeded the same way gives the same blocks
in any process, on any number of threads. Nothing loops over nodes in Python: a layer is a few dozen tensor
operations whatever its size.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import torch


@dataclass
class Block:
    """One sampled layer: sampled edge i goes from source edge_src[i] to destination edge_dst[i] (compact ids:
    rows of src_nodes; destination j is source j) and is edge eid[i] of the sampled graph."""

    src_nodes: torch.Tensor  # (num_src,) graph ids of the sources; the first num_dst are the destinations
    num_dst: int
    edge_src: torch.Tensor  # (E,) compact source id of every sampled edge, grouped by destination
    edge_dst: torch.Tensor  # (E,) compact destination id
    eid: torch.Tensor  # (E,) edge id in the sampled graph (position in its CSC arrays)

    @property
    def num_src(self) -> int:
        return self.src_nodes.numel()

    @property
    def dst_nodes(self) -> torch.Tensor:
        return self.src_nodes[: self.num_dst]


def _ranges(starts: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """starts[i], starts[i] + 1, ..., starts[i] + counts[i] - 1 for every i, concatenated."""
    total = int(counts.sum())
    ends = counts.cumsum(0)
    return torch.repeat_interleave(starts - (ends - counts), counts, output_size=total) + torch.arange(total)


def distinct_draws(bound: torch.Tensor, count: int, generator: torch.Generator) -> torch.Tensor:
    """(M, count) int64: row i a uniformly random subset of `count` values of [0, bound[i]) (2 count <= bound[i]).

    Every slot draws uniformly; a slot whose value another slot of its row holds draws again (of two equal
    first draws, one), until none does. Each redraw clashes with probability below count / bound <= 1/2. The
    procedure treats all values of [0, bound) alike (relabelling them relabels the result), so every subset of
    the size is equally likely."""
    m = bound.numel()
    b = bound.view(-1, 1)
    vals = (torch.rand(m, count, dtype=torch.float64, generator=generator) * b).to(torch.int64)
    vals = vals.sort(dim=1).values  # equal values side by side
    r, c = (vals[:, 1:] == vals[:, :-1]).nonzero(as_tuple=True)
    again = r * count + c + 1  # flat positions of the later of two equal values
    flat = vals.view(-1)
    while again.numel():
        rows = torch.div(again, count, rounding_mode="floor")
        fresh = (torch.rand(again.numel(), dtype=torch.float64, generator=generator) * bound.index_select(0, rows)).to(
            torch.int64
        )
        flat.index_copy_(0, again, fresh)
        held = (vals.index_select(0, rows) == fresh.view(-1, 1)).sum(1)  # 1: the slot itself alone
        again = again.masked_select(held > 1)
    return vals


def smallest_keys(bound: torch.Tensor, count: int, width: int, generator: torch.Generator) -> torch.Tensor:
    """(M, count) int64: row i a uniformly random subset of `count` values of [0, bound[i]) (count <= bound[i] <=
    width): the positions of the `count` smallest of bound[i] uniform keys, a uniformly random order's first."""
    key = torch.rand(bound.numel(), width, dtype=torch.float64, generator=generator)
    key.masked_fill_(torch.arange(width) >= bound.view(-1, 1), 2.0)  # past the row's end: never among the smallest
    return key.topk(count, dim=1, largest=False, sorted=False).indices


class CscGraph:
    """A graph as CSC arrays: the in-edges of destination v are positions indptr[v]:indptr[v+1], from sources
    indices[...]; a position is the edge's id."""

    def __init__(self, indptr: torch.Tensor, indices: torch.Tensor, num_nodes: int):
        self.indptr, self.indices, self.num_nodes = indptr, indices, num_nodes
        self._scratch = threading.local()  # per thread: node-sized arrays reused by every block (see _compact)

    @classmethod
    def from_sorted_edges(cls, src: torch.Tensor, dst: torch.Tensor, num_nodes: int) -> "CscGraph":
        """From edge arrays sorted by destination: edge ids stay their positions."""
        if dst.numel() and bool((dst.diff() < 0).any()):
            raise ValueError("CscGraph.from_sorted_edges needs the edges sorted by destination")
        counts = torch.bincount(dst, minlength=num_nodes)
        indptr = torch.cat([counts.new_zeros(1), counts.cumsum(0)])
        return cls(indptr, src.contiguous(), num_nodes)

    @property
    def num_edges(self) -> int:
        return self.indices.numel()

    def in_degrees(self, nodes: torch.Tensor) -> torch.Tensor:
        return self.indptr.index_select(0, nodes + 1) - self.indptr.index_select(0, nodes)

    def in_edges(self, nodes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(edge ids, position in `nodes` of the destination) of every in-edge of `nodes`, per node in CSC order."""
        start = self.indptr.index_select(0, nodes)
        deg = self.indptr.index_select(0, nodes + 1) - start
        eid = _ranges(start, deg)
        return eid, torch.repeat_interleave(torch.arange(nodes.numel()), deg, output_size=eid.numel())

    def sample_edges(
        self, dst: torch.Tensor, fanout: int, generator: torch.Generator | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(edge ids, position in `dst` of the destination) of the sampled in-edges of the nodes `dst`, grouped by
        destination: all of them in CSC order where there are at most `fanout` (or fanout < 0), else `fanout`
        distinct ones drawn uniformly, in the order drawn."""
        if fanout < 0:
            return self.in_edges(dst)
        start = self.indptr.index_select(0, dst)
        deg = self.indptr.index_select(0, dst + 1) - start
        take = deg.clamp(max=fanout)
        eid = _ranges(start, take)  # the first `take` in-edges; the sampled rows are overwritten below
        ptr = take.cumsum(0) - take
        # fanout < deg < 2 fanout: the smallest of deg random keys; deg >= 2 fanout: draws, rarely repeated
        some = torch.nonzero((deg > fanout) & (deg < 2 * fanout)).view(-1)
        if some.numel():
            self._put(
                eid, ptr, start, some, smallest_keys(deg.index_select(0, some), fanout, 2 * fanout - 1, generator)
            )
        many = torch.nonzero(deg >= 2 * fanout).view(-1)
        if many.numel():
            self._put(eid, ptr, start, many, distinct_draws(deg.index_select(0, many), fanout, generator))
        return eid, torch.repeat_interleave(torch.arange(dst.numel()), take, output_size=eid.numel())

    @staticmethod
    def _put(eid, ptr, start, rows, offsets) -> None:
        """eid's slots of `rows` (each as many as offsets has columns) := their first in-edge + offsets."""
        k = offsets.shape[1]
        at = ptr.index_select(0, rows).view(-1, 1) + torch.arange(k)
        eid.index_copy_(0, at.view(-1), (start.index_select(0, rows).view(-1, 1) + offsets).view(-1))

    def block(self, dst: torch.Tensor, fanout: int = -1, generator: torch.Generator | None = None) -> Block:
        """The block of the sampled in-edges of the distinct nodes `dst` (fanout -1: every in-edge)."""
        eid, edge_dst = self.sample_edges(dst, fanout, generator)
        src_nodes, edge_src = self._compact(dst, self.indices.index_select(0, eid))
        return Block(src_nodes, dst.numel(), edge_src, edge_dst, eid)

    def sample_blocks(self, seeds: torch.Tensor, fanouts: list[int], generator: torch.Generator | None) -> list[Block]:
        """One block per layer, the input layer first (fanouts: input layer first; the last one samples the
        seeds' in-edges); each block's destinations are the sources of the block above."""
        if torch.unique(seeds).numel() != seeds.numel():
            raise ValueError("sample_blocks needs distinct seeds")
        blocks, dst = [], seeds
        for fanout in reversed(fanouts):
            b = self.block(dst, int(fanout), generator)
            blocks.append(b)
            dst = b.src_nodes
        return blocks[::-1]

    def _compact(self, dst: torch.Tensor, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(source nodes: dst, then the other sources in order of first appearance in `src`; compact id of every
        entry of src). Node-sized scratch arrays of this thread are reused and restored, so a block costs the
        size of its edges, not of the graph."""
        sc = self._scratch
        if getattr(sc, "local", None) is None:
            sc.local = torch.full((self.num_nodes,), -1, dtype=torch.int64)  # graph id -> compact id
            sc.first = torch.full((self.num_nodes,), torch.iinfo(torch.int64).max, dtype=torch.int64)
        local, first = sc.local, sc.first
        nd = dst.numel()
        try:
            local.index_copy_(0, dst, torch.arange(nd))
            cand = src.masked_select(local.index_select(0, src) < 0)
            pos = torch.arange(cand.numel())
            first.scatter_reduce_(0, cand, pos, "amin")  # the first position of every new source
            new = cand.masked_select(first.index_select(0, cand) == pos)
            first.index_fill_(0, new, torch.iinfo(torch.int64).max)
            local.index_copy_(0, new, torch.arange(nd, nd + new.numel()))
            compact = local.index_select(0, src)
            local.index_fill_(0, dst, -1)
            local.index_fill_(0, new, -1)
        except BaseException:  # the arrays may be half written: fresh ones next time
            sc.local = None
            raise
        return torch.cat([dst, new]), compact
