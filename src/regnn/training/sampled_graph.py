"""The graph a mini-batch trainer samples from, and the blocks RE-GNN layers run on.

Sampling runs on the relation graph *without* self-loops (uniform over a node's in-edges of every relation, as a
homogeneous GNN sees them; regnn.training.neighbour_sampler); every sampled block then gets one self-loop per
destination node, typed by its node type, so a node always keeps its own representation, whatever the fanout.

Normalisation on blocks: with norm="right", the weighted mean over the sampled in-edges (plus the self-loop),
D^-1 A_w, a sample of `k` of a node's in-edges estimates the same mean the full graph gives, so training on
samples and exact full-neighbour inference (regnn.training.block_inference) use one operator. The symmetric
norm="both" needs every source node's weighted degree in the whole graph: a SampledGraph made with
whole_graph_degrees=True gives each block the whole graph's in-edge counts per relation of its sources
(Adjacency.source_counts), from which the layer weighs the degrees with its relation weights. On blocks of every
neighbour (fanout -1) that is the full graph's product exactly. Where a destination's k in-edges were drawn of
its n, each drawn edge also counts n / k times (Adjacency.edge_scale): the draw is uniform without replacement,
so every in-edge is drawn with probability k / n and the scaled sum is an unbiased estimate of the whole graph's
sum, with the whole graph's normalisation (the importance-sampling estimator of sampled GCNs). The released
GraphSAGE's sum is scaled the same way.
"""

from __future__ import annotations


import torch

from regnn.core.adjacency import Adjacency, segment_offsets
from regnn.data.dataset import HeteroDataset
from regnn.data.relation_graph import build_relation_graph
from regnn.training.neighbour_sampler import Block, CscGraph


class SampledGraph:
    """The relation graph of a dataset for sampling: homogeneous ids, CSC arrays, relation id per edge, node type
    per node."""

    def __init__(self, data: HeteroDataset, whole_graph_degrees: bool = False):
        """whole_graph_degrees: give every block its sources' in-edge counts per relation in the whole graph, with
        their self-loop (what norm="both" needs; num_nodes x num_relations numbers held here)."""
        rg = build_relation_graph(data, self_loops=False)  # sorted by destination: CSC positions are edge ids
        self.csc = CscGraph.from_sorted_edges(rg.src, rg.dst, rg.num_nodes)
        self.rel = rg.rel
        self.node_type = rg.node_type
        self.ntypes, self.offsets = rg.ntypes, rg.offsets
        self.num_edge_relations = rg.num_edge_relations
        self.relation_names = rg.relation_names + [f"self:{t}" for t in rg.ntypes]
        self.target_offset = rg.offsets[data.target]
        self.in_counts = None
        if whole_graph_degrees:
            n, r = rg.num_nodes, len(self.relation_names)
            dst = torch.repeat_interleave(torch.arange(n), self.csc.indptr.diff())
            counts = torch.zeros(n, r, dtype=torch.float32)
            counts.index_put_((dst, self.rel), torch.ones(dst.numel()), accumulate=True)
            counts[torch.arange(n), self.num_edge_relations + self.node_type] += 1  # the block's typed self-loop
            self.in_counts = counts

    @property
    def num_nodes(self) -> int:
        return self.csc.num_nodes

    @property
    def num_edges(self) -> int:
        return self.csc.num_edges

    def seeds(self, local_ids: torch.Tensor) -> torch.Tensor:
        """Homogeneous ids of target nodes given by their target-local ids."""
        return local_ids + self.target_offset

    def sample_blocks(self, seeds: torch.Tensor, fanouts: list[int], generator: torch.Generator | None) -> list[Block]:
        """The sampled blocks of `seeds`, input layer first (fanouts: input layer first; -1 = all)."""
        return self.csc.sample_blocks(seeds, fanouts, generator)

    def batch(self, blocks: list[Block], device="cpu") -> tuple[torch.Tensor, list[Adjacency]]:
        """(input node ids, one Adjacency per block) of a sampled batch, the first block's sources after its
        destinations grouped by node type (in their order within a type): the input projection then writes and
        reads each type's rows as one slice (regnn.models.sampled._Projection)."""
        input_nodes, nd = blocks[0].src_nodes, blocks[0].num_dst
        types = self.node_type.index_select(0, input_nodes[nd:])
        order = torch.cat(
            [torch.arange(nd)] + [nd + torch.nonzero(types == t).view(-1) for t in range(len(self.ntypes))]
        )
        pos = torch.empty_like(order).index_copy_(0, order, torch.arange(order.numel()))
        adjs = [self.adjacency(blocks[0], device, pos)] + [self.adjacency(b, device) for b in blocks[1:]]
        return input_nodes.index_select(0, order), adjs

    def adjacency(self, block: Block, device="cpu", src_pos: torch.Tensor | None = None) -> Adjacency:
        """A sampled block with a typed self-loop on every destination, as an Adjacency on `device`: in CSR order
        every destination's self-loop, then its sampled in-edges in the block's order. src_pos: the new position
        of every source (its destinations keep theirs)."""
        n_dst, n_src, e = block.num_dst, block.num_src, block.eid.numel()
        u = block.edge_src if src_pos is None else src_pos.index_select(0, block.edge_src)
        loop = torch.arange(n_dst)
        counts = torch.bincount(block.edge_dst, minlength=n_dst) + 1
        indptr = torch.cat([counts.new_zeros(1), counts.cumsum(0)])
        at_loop, at_edge = indptr[:-1], torch.arange(e) + block.edge_dst + 1  # CSR positions
        src = torch.empty(e + n_dst, dtype=torch.int64).index_copy_(0, at_loop, loop).index_copy_(0, at_edge, u)
        rel = torch.empty(e + n_dst, dtype=torch.int64)
        rel.index_copy_(0, at_loop, self.num_edge_relations + self.node_type.index_select(0, block.dst_nodes))
        rel.index_copy_(0, at_edge, self.rel.index_select(0, block.eid))
        dst = torch.repeat_interleave(loop, counts, output_size=e + n_dst)
        by_src = torch.sort(src.to(torch.int32), stable=True).indices  # the CSC view: per source, in CSR order
        adj = Adjacency.from_arrays(
            n_dst,
            n_src,
            indptr,
            src,
            torch.arange(e + n_dst),
            segment_offsets(src, n_src),
            dst.index_select(0, by_src),
            by_src,
            rel,
        )
        if self.in_counts is not None:
            nodes = (
                block.src_nodes
                if src_pos is None
                else torch.empty_like(block.src_nodes).index_copy_(0, src_pos, block.src_nodes)
            )
            adj.source_counts = self.in_counts.index_select(0, nodes)
            whole = self.csc.in_degrees(block.dst_nodes)
            drawn = counts - 1
            if not torch.equal(whole, drawn):  # k of n drawn: each drawn in-edge stands for n / k of them
                ratio = whole.to(torch.float64) / drawn.clamp(min=1)
                adj.edge_scale = torch.ones(e + n_dst, dtype=torch.float32).index_copy_(
                    0, at_edge, ratio.index_select(0, block.edge_dst).to(torch.float32)
                )
        return adj if torch.device(device).type == "cpu" else adj.to(device)

    def full_block(self, dst: torch.Tensor) -> Block:
        """Every in-edge of the nodes `dst` as a block (destinations first among the sources)."""
        return self.csc.block(dst, -1)

    def in_neighbours(self, nodes: torch.Tensor) -> torch.Tensor:
        """The sources of every in-edge of `nodes` (with repeats)."""
        return self.csc.indices.index_select(0, self.csc.in_edges(nodes)[0])
