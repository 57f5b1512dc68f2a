"""Neighbour sampling on the relation-typed homogeneous graph (regnn.training.sampled_graph): seeded batches of
blocks, sampled when needed or ahead in threads.

Every batch draws from its own torch.Generator, seeded from (the run's seed, training or evaluation, epoch,
process rank, batch number): a seed gives the same blocks in every process, on any number of threads, and
whether each batch is sampled when the step asks for it (sampling=deterministic) or ahead of it in worker
threads (sampling=parallel).
"""

from __future__ import annotations

import collections
import hashlib
import math
import time
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import torch

from regnn.core.adjacency import Adjacency
from regnn.core.backend import choose_backend
from regnn.names import SAMPLING_MODES
from regnn.runtime.perf import one_openmp_thread
from regnn.training.sampled_graph import SampledGraph

__all__ = [
    "SAMPLING_MODES",
    "NeighbourLoader",
    "SampledBatch",
    "SampledGraph",
    "sampled_loader",
    "sampling_rate",
    "stream_seed",
    "to_device",
]


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

    def __init__(
        self,
        sg: SampledGraph,
        seeds: torch.Tensor,
        fanouts: list[int],
        batch_size: int,
        shuffle: bool,
        seed: int = 0,
        stream: str = "train",
        rank: int = 0,
        world_size: int = 1,
        workers: int = 0,
    ):
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self.sg, self.fanouts, self.batch_size, self.shuffle = sg, [int(f) for f in fanouts], batch_size, shuffle
        self.seed, self.stream, self.rank, self.workers = int(seed), stream, rank, workers
        per = math.ceil(seeds.numel() / world_size)
        self.shard_size = per
        self.mine = seeds[rank * per : (rank + 1) * per]
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
        with ThreadPoolExecutor(
            max(1, self.workers), thread_name_prefix="sampler", initializer=one_openmp_thread
        ) as pool:
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


def sampled_loader(
    sg: SampledGraph,
    seeds: torch.Tensor,
    fanouts: list[int],
    batch_size: int,
    shuffle: bool,
    use_ddp: bool = False,
    num_workers: int = 0,
    sampling: str = "deterministic",
    seed: int = 0,
    stream: str = "train",
) -> NeighbourLoader:
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
    return NeighbourLoader(
        sg, seeds, fanouts, batch_size, shuffle, seed=seed, stream=stream, rank=rank, world_size=world, workers=workers
    )


def to_device(adjs: list[Adjacency], device) -> list[Adjacency]:
    """A batch's adjacencies (built on the CPU by the loader) on `device`."""
    return adjs if torch.device(device).type == "cpu" else [a.to(device) for a in adjs]


def sampling_rate(
    sg: SampledGraph,
    seeds: torch.Tensor,
    fanouts: list[int],
    batch_size: int,
    sampling: str,
    threads: int,
    batches: int = 20,
    num_workers: int = 0,
) -> dict:
    """Seeds per second of the loader alone (sampling, blocks and their adjacencies: what a training step waits
    for, see trainer.sampling) with `threads` torch threads, over `batches` batches from the start of an epoch,
    after a warm-up epoch of one batch."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        loader = sampled_loader(
            sg, seeds, fanouts, batch_size, shuffle=True, sampling=sampling, num_workers=num_workers
        )
        next(iter(loader))  # warm-up: kernels loaded, scratch arrays allocated
        t0, n, done = time.perf_counter(), 0, 0
        for b in loader:
            n, done = n + b.seeds.numel(), done + 1
            if done == batches:
                break
        dt = time.perf_counter() - t0
    finally:
        torch.set_num_threads(before)
    return {
        "sampling": sampling,
        "threads": threads,
        "num_workers": loader.workers,
        "batches": done,
        "seeds_per_s": n / dt,
        "batches_per_s": done / dt,
        "s_per_batch": dt / max(1, done),
    }
