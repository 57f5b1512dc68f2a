"""Neighbour sampling on the relation-typed homogeneous graph, and the blocks RE-GNN layers run on.

Sampling runs on the relation graph *without* self-loops (uniform over a node's in-edges of every relation, as a
homogeneous GNN sees them; regnn.training.neighbour_sampler); every sampled block then gets one self-loop per
destination node, typed by its node type, so a node always keeps its own representation, whatever the fanout.

Every batch draws from its own torch.Generator, seeded from (the run's seed, training or evaluation, epoch,
process rank, batch number): a seed gives the same blocks in every process, on any number of threads, and
whether each batch is sampled when the step asks for it (sampling=deterministic) or ahead of it in worker
threads (sampling=parallel).

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

import collections
import hashlib
import math
import time
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import torch

from regnn.core.adjacency import Adjacency, segment_offsets
from regnn.core.backend import choose_backend
from regnn.data.dataset import HeteroDataset
from regnn.data.relation_graph import build_relation_graph
from regnn.perf import one_openmp_thread
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

    def sample_blocks(self, seeds: torch.Tensor, fanouts: list[int], generator: torch.Generator | None
                      ) -> list[Block]:
        """The sampled blocks of `seeds`, input layer first (fanouts: input layer first; -1 = all)."""
        return self.csc.sample_blocks(seeds, fanouts, generator)

    def batch(self, blocks: list[Block], device="cpu") -> tuple[torch.Tensor, list[Adjacency]]:
        """(input node ids, one Adjacency per block) of a sampled batch, the first block's sources after its
        destinations grouped by node type (in their order within a type): the input projection then writes and
        reads each type's rows as one slice (regnn.models.sampled._Projection)."""
        input_nodes, nd = blocks[0].src_nodes, blocks[0].num_dst
        types = self.node_type.index_select(0, input_nodes[nd:])
        order = torch.cat([torch.arange(nd)]
                          + [nd + torch.nonzero(types == t).view(-1) for t in range(len(self.ntypes))])
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
        adj = Adjacency.from_arrays(n_dst, n_src, indptr, src, torch.arange(e + n_dst), segment_offsets(src, n_src),
                                    dst.index_select(0, by_src), by_src, rel)
        if self.in_counts is not None:
            nodes = block.src_nodes if src_pos is None else \
                torch.empty_like(block.src_nodes).index_copy_(0, src_pos, block.src_nodes)
            adj.source_counts = self.in_counts.index_select(0, nodes)
            whole = self.csc.in_degrees(block.dst_nodes)
            drawn = counts - 1
            if not torch.equal(whole, drawn):  # k of n drawn: each drawn in-edge stands for n / k of them
                ratio = whole.to(torch.float64) / drawn.clamp(min=1)
                adj.edge_scale = torch.ones(e + n_dst, dtype=torch.float32).index_copy_(
                    0, at_edge, ratio.index_select(0, block.edge_dst).to(torch.float32))
        return adj if torch.device(device).type == "cpu" else adj.to(device)

    def full_block(self, dst: torch.Tensor) -> Block:
        """Every in-edge of the nodes `dst` as a block (destinations first among the sources)."""
        return self.csc.block(dst, -1)

    def in_neighbours(self, nodes: torch.Tensor) -> torch.Tensor:
        """The sources of every in-edge of `nodes` (with repeats)."""
        return self.csc.indices.index_select(0, self.csc.in_edges(nodes)[0])


SAMPLING_MODES = ("deterministic", "parallel")


class SampledBatch(NamedTuple):
    input_nodes: torch.Tensor  # graph ids of the first block's sources: its destinations, then the rest by node type
    seeds: torch.Tensor  # the batch's output nodes (the last block's destinations)
    adjs: list  # one Adjacency per layer, input layer first, on the CPU (sources in input_nodes' order)
    blocks: list  # the sampled Blocks behind them


def stream_seed(*parts) -> int:
    """A 63-bit generator seed from integers and names: the same parts give the same seed in every process."""
    return int.from_bytes(hashlib.blake2b(repr(parts).encode(), digest_size=8).digest(), "little") >> 1


class NeighbourLoader:
    """Batches of `seeds` (shuffled every epoch when shuffle=True) with their sampled blocks and adjacencies.

    Each iteration is one epoch. Batch i of epoch e samples with a generator seeded from (seed, stream, e, rank,
    i), so its blocks do not depend on what ran before it, on which thread samples it, or on the thread count.
    Batches are sampled in threads whose torch ops run on one OpenMP thread (one_openmp_thread): workers=0 in one
    such thread, each batch when it is asked for; workers > 0 up to 2 x workers batches ahead in that many
    threads (torch releases the GIL in its ops), the same batches.

    rank/world_size (torch.distributed): each process takes a contiguous shard of the seeds, ceil(n / world_size)
    long, the last one padded with its own first seeds of the epoch, so every process steps equally often.
    """

    def __init__(self, sg: SampledGraph, seeds: torch.Tensor, fanouts: list[int], batch_size: int, shuffle: bool,
                 seed: int = 0, stream: str = "train", rank: int = 0, world_size: int = 1, workers: int = 0):
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self.sg, self.fanouts, self.batch_size, self.shuffle = sg, [int(f) for f in fanouts], batch_size, shuffle
        self.seed, self.stream, self.rank, self.workers = int(seed), stream, rank, workers
        per = math.ceil(seeds.numel() / world_size)
        self.shard_size = per
        self.mine = seeds[rank * per:(rank + 1) * per]
        self.epoch = 0

    def __len__(self) -> int:
        return math.ceil(self.shard_size / self.batch_size)

    def order(self, epoch: int) -> torch.Tensor:
        """This process's seeds in epoch `epoch`'s order, padded to the shard size."""
        mine = self.mine
        if self.shuffle:
            g = torch.Generator().manual_seed(stream_seed(self.seed, self.stream, "order", epoch, self.rank))
            mine = mine[torch.randperm(mine.numel(), generator=g)]
        pad = self.shard_size - mine.numel()
        return torch.cat([mine, mine[:pad]]) if pad and mine.numel() else mine

    def generator(self, epoch: int, index: int) -> torch.Generator:
        return torch.Generator().manual_seed(stream_seed(self.seed, self.stream, epoch, self.rank, index))

    def make(self, seeds: torch.Tensor, generator: torch.Generator) -> SampledBatch:
        if self.shard_size != self.mine.numel():  # padding may repeat a seed within the (only) batch
            seeds = seeds[_first_occurrences(seeds)]
        blocks = self.sg.sample_blocks(seeds, self.fanouts, generator)
        input_nodes, adjs = self.sg.batch(blocks)
        return SampledBatch(input_nodes, seeds, adjs, blocks)

    def __iter__(self):
        epoch, self.epoch = self.epoch, self.epoch + 1
        chunks = self.order(epoch).split(self.batch_size)
        choose_backend("cpu")  # the fused kernels load (or build) here, once, not in a sampling thread
        ahead, most = collections.deque(), max(1, 2 * self.workers)  # 1: the batch asked for, nothing ahead
        with ThreadPoolExecutor(max(1, self.workers), thread_name_prefix="sampler",
                                initializer=one_openmp_thread) as pool:
            try:
                for i in range(len(chunks)):
                    while len(ahead) < most and i + len(ahead) < len(chunks):
                        j = i + len(ahead)
                        ahead.append(pool.submit(self.make, chunks[j], self.generator(epoch, j)))
                    yield ahead.popleft().result()
            finally:  # a consumer that stops early (max_batches) leaves no batch running behind it
                for f in ahead:
                    f.cancel()


def _first_occurrences(x: torch.Tensor) -> torch.Tensor:
    """Positions of the first occurrence of every value of x, in order."""
    s = torch.sort(x, stable=True)
    first = torch.ones(x.numel(), dtype=torch.bool)
    first[1:] = s.values[1:] != s.values[:-1]
    return s.indices[first].sort().values


def sampled_loader(sg: SampledGraph, seeds: torch.Tensor, fanouts: list[int], batch_size: int, shuffle: bool,
                   use_ddp: bool = False, num_workers: int = 0, sampling: str = "deterministic", seed: int = 0,
                   stream: str = "train") -> NeighbourLoader:
    """A NeighbourLoader over `seeds` with uniform neighbour sampling (fanouts: input layer first; -1 = all). Its
    adjacencies are on the CPU: the trainer moves them to its device.

    sampling: deterministic (each batch sampled when it is asked for, on one thread) or parallel (batches sampled
    ahead in num_workers threads, default the torch thread count). Both give the same blocks for a seed.
    use_ddp: this process's shard of the seeds (torch.distributed's rank and world size)."""
    if sampling not in SAMPLING_MODES:
        raise ValueError(f"sampling must be one of {SAMPLING_MODES}, got {sampling!r}")
    rank, world = 0, 1
    if use_ddp:
        import torch.distributed as tdist
        rank, world = tdist.get_rank(), tdist.get_world_size()
    workers = 0 if sampling == "deterministic" else (num_workers or torch.get_num_threads())
    return NeighbourLoader(sg, seeds, fanouts, batch_size, shuffle, seed=seed, stream=stream, rank=rank,
                           world_size=world, workers=workers)


def to_device(adjs: list[Adjacency], device) -> list[Adjacency]:
    """A batch's adjacencies (built on the CPU by the loader) on `device`."""
    return adjs if torch.device(device).type == "cpu" else [a.to(device) for a in adjs]


def sampling_rate(sg: SampledGraph, seeds: torch.Tensor, fanouts: list[int], batch_size: int, sampling: str,
                  threads: int, batches: int = 20, num_workers: int = 0) -> dict:
    """Seeds per second of the loader alone (sampling, blocks and their adjacencies: what a training step waits
    for, see trainer.sampling) with `threads` torch threads, over `batches` batches from the start of an epoch,
    after a warm-up epoch of one batch."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        loader = sampled_loader(sg, seeds, fanouts, batch_size, shuffle=True, sampling=sampling,
                                num_workers=num_workers)
        next(iter(loader))  # warm-up: kernels loaded, scratch arrays allocated
        t0, n, done = time.perf_counter(), 0, 0
        for b in loader:
            n, done = n + b.seeds.numel(), done + 1
            if done == batches:
                break
        dt = time.perf_counter() - t0
    finally:
        torch.set_num_threads(before)
    return {"sampling": sampling, "threads": threads, "num_workers": loader.workers, "batches": done,
            "seeds_per_s": n / dt, "batches_per_s": done / dt, "s_per_batch": dt / max(1, done)}
