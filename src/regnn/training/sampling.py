"""Neighbour sampling on the relation-typed homogeneous graph, and the blocks RE-GNN layers run on.

Sampling runs on the relation graph *without* self-loops (uniform over a node's in-edges of every relation, as a
homogeneous GNN sees them); every sampled block then gets one self-loop per destination node, typed by its node
type, so a node always keeps its own representation, whatever the fanout.

Normalisation on blocks: the mini-batch layouts use RE-GCN with norm="right", the weighted mean over the sampled
in-edges (plus the self-loop), D^-1 A_w. Sampling `k` of a node's in-edges gives an estimate of the same mean the
full graph gives, so training on samples and exact full-neighbour inference (`layerwise_logits`) use one
operator. The symmetric norm="both" would need every source node's weighted degree in the whole graph and a
rescaling of the sampled sum; it is refused on blocks (Adjacency.normalized_spmm says so).
"""
from __future__ import annotations

import contextlib
import time
import warnings

import dgl
import torch

from regnn.core.adjacency import Adjacency
from regnn.data.dataset import HeteroDataset
from regnn.data.relation_graph import build_relation_graph
from regnn.training.device import to_device_adjacency

# DGL suggests pinning sampler threads to cores (enable_cpu_affinity); with worker processes only, not here
warnings.filterwarnings("ignore", message="Dataloader CPU affinity opt is not enabled")


class SampledGraph:
    """The relation graph of a dataset for sampling: homogeneous ids, relation id per edge, node type per node."""

    def __init__(self, data: HeteroDataset):
        rg = build_relation_graph(data, self_loops=False)
        self.graph = rg.graph.formats(["csc"])  # in-edge sampling needs CSC only
        self.graph.create_formats_()
        self.rel = rg.rel
        self.node_type = rg.node_type
        self.ntypes, self.offsets = rg.ntypes, rg.offsets
        self.num_edge_relations = rg.num_edge_relations
        self.relation_names = rg.relation_names + [f"self:{t}" for t in rg.ntypes]
        self.target_offset = rg.offsets[data.target]

    @property
    def num_nodes(self) -> int:
        return self.graph.num_nodes()

    def seeds(self, local_ids: torch.Tensor) -> torch.Tensor:
        """Homogeneous ids of target nodes given by their target-local ids."""
        return local_ids + self.target_offset

    def batch(self, input_nodes: torch.Tensor, blocks: list, device="cpu") -> tuple[torch.Tensor, list[Adjacency]]:
        """(input node ids, one Adjacency per block) of a sampled batch, the first block's sources after its
        destinations grouped by node type (a stable sort): the input projection then writes and reads each type's
        rows as one slice (node_inputs._Projection)."""
        nd = blocks[0].num_dst_nodes()
        order = torch.cat([torch.arange(nd), nd + torch.sort(self.node_type[input_nodes[nd:]], stable=True).indices])
        pos = torch.empty_like(order)
        pos[order] = torch.arange(order.numel())
        adjs = [self.adjacency(blocks[0], device, pos)] + [self.adjacency(b, device) for b in blocks[1:]]
        return input_nodes[order], adjs

    def adjacency(self, block: dgl.DGLGraph, device="cpu", src_pos: torch.Tensor | None = None) -> Adjacency:
        """A sampled block (on the CPU) with typed self-loops on its destinations, in CSR order, as an Adjacency
        on `device`: the block's arrays move there, not the block (a CPU-only DGL cannot move it). src_pos: the
        new position of every source (its destinations keep theirs)."""
        u, v = block.edges()
        if src_pos is not None:
            u = src_pos[u]
        rel = self.rel[block.edata[dgl.EID]]
        n_dst, n_src = block.num_dst_nodes(), block.num_src_nodes()
        loop = torch.arange(n_dst)
        loop_rel = self.num_edge_relations + self.node_type[block.dstdata[dgl.NID]]
        u, v = torch.cat([u, loop]), torch.cat([v, loop])
        rel = torch.cat([rel, loop_rel])
        order = torch.argsort(v * n_src + u)  # destination-major: the Adjacency needs no edge permutation
        b = dgl.create_block((u[order], v[order]), num_src_nodes=n_src, num_dst_nodes=n_dst)
        return to_device_adjacency(b, device, rel[order])

    def full_block(self, dst: torch.Tensor) -> dgl.DGLGraph:
        """Every in-edge of the nodes `dst` as a block (destinations first among the sources)."""
        with one_thread():  # to_block numbers the sources through a concurrent map (see one_thread)
            frontier = dgl.in_subgraph(self.graph, dst)
            block = dgl.to_block(frontier, dst_nodes=dst)
        block.edata[dgl.EID] = frontier.edata[dgl.EID][block.edata[dgl.EID]]  # ids in the whole graph
        return block


@contextlib.contextmanager
def one_thread():
    """Runs the block with DGL's OpenMP thread count at 1 and restores it after.

    DGL's CPU neighbour sampling draws from one random stream per OpenMP thread and numbers the sampled nodes
    through a concurrent map, so with several threads the same seed gives other blocks in every run (and other
    trained weights). Sampling is a small part of a step. (Where torch and DGL share one OpenMP runtime, as with
    the wheels pinned here, torch's count follows for the duration.)
    """
    before = dgl.utils.get_num_threads()
    if before == 1:
        yield
        return
    dgl.utils.set_num_threads(1)
    try:
        yield
    finally:
        dgl.utils.set_num_threads(before)


class RepeatableNeighborSampler(dgl.dataloading.NeighborSampler):
    """DGL's uniform neighbour sampler, sampling in one thread so that a seed gives the same blocks every run."""

    def sample_blocks(self, g, seed_nodes, exclude_eids=None):
        with one_thread():
            return super().sample_blocks(g, seed_nodes, exclude_eids)


def layer_step(regnn, i: int, adj: Adjacency, h: torch.Tensor, alphas: list | None = None) -> torch.Tensor:
    """Layer i of an REGNN in evaluation mode (the same computation as REGNN.propagate with dropout off);
    alphas: regnn.layer_alphas(), computed once by a caller that steps many batches."""
    return regnn.convs[i](adj, h, (regnn.layer_alphas() if alphas is None else alphas)[i])


@torch.no_grad()
def layerwise_logits(model, sg: SampledGraph, seeds: torch.Tensor, batch_size: int = 4096,
                     device="cpu") -> torch.Tensor:
    """Exact class scores of `seeds` with every neighbour (no sampling), one layer at a time.

    Layer l is computed only for the nodes the layers above need: the seeds at the top, and each layer below adds
    the in-neighbours of the layer above. Each layer's output is held for those nodes only (memory: nodes x
    hidden floats of the widest layer); inputs of the first layer are projected batch by batch.
    """
    regnn = model.regnn
    num_layers = len(regnn.convs)
    needed = [seeds]
    for _ in range(num_layers - 1):  # needed[k]: nodes whose output of layer L-k is used
        u, _ = sg.graph.in_edges(needed[-1])
        needed.append(torch.unique(torch.cat([needed[-1], u])))
    needed = needed[::-1]  # needed[l]: nodes whose layer-l output is computed (l = 0 .. L-1)
    prev, pos = None, torch.full((sg.num_nodes,), -1, dtype=torch.int64)
    alphas = regnn.layer_alphas()
    for layer, nodes in enumerate(needed):
        out = None
        for start in range(0, nodes.numel(), batch_size):
            dst = nodes[start:start + batch_size]
            block = sg.full_block(dst)
            src = block.srcdata[dgl.NID]
            h = model.input_rows(src.to(device)) if layer == 0 else prev[pos[src]].to(device)
            y = layer_step(regnn, layer, sg.adjacency(block, device), h, alphas)
            if out is None:
                out = torch.empty(nodes.numel(), y.shape[1], dtype=y.dtype)
            out[start:start + dst.numel()] = y.cpu()
        pos.fill_(-1)
        pos[nodes] = torch.arange(nodes.numel())
        prev = out
    h = prev[pos[seeds]].to(device)
    return (regnn.head(h) if regnn.head is not None else h).cpu()


SAMPLING_MODES = ("deterministic", "parallel")


def sampled_loader(sg: SampledGraph, seeds: torch.Tensor, fanouts: list[int], batch_size: int, shuffle: bool,
                   use_ddp: bool = False, num_workers: int = 0, sampling: str = "deterministic"):
    """DGL's DataLoader over `seeds` with uniform neighbour sampling (fanouts: input layer first; -1 = all). Its
    blocks stay on the CPU on every device: SampledGraph.adjacency moves their arrays.

    sampling: deterministic (one thread: a seed gives the same blocks every run) or parallel (DGL's sampler on all
    of its OpenMP threads: faster, but the blocks, and so the trained weights, differ from run to run)."""
    if sampling not in SAMPLING_MODES:
        raise ValueError(f"sampling must be one of {SAMPLING_MODES}, got {sampling!r}")
    cls = RepeatableNeighborSampler if sampling == "deterministic" else dgl.dataloading.NeighborSampler
    sampler = cls([int(f) for f in fanouts])
    extra = {"worker_init_fn": _seed_worker, "persistent_workers": True} if num_workers else {}
    return dgl.dataloading.DataLoader(sg.graph, seeds, sampler, batch_size=batch_size, shuffle=shuffle,
                                      drop_last=False, use_ddp=use_ddp, num_workers=num_workers, device="cpu",
                                      **extra)


def _seed_worker(worker_id: int) -> None:
    """DGL's random stream of a loader worker from torch's seed of that worker (the main process's seed plus the
    worker's number): the forked workers would otherwise all continue one copied stream."""
    dgl.seed(torch.initial_seed() % 2**31)


@torch.no_grad()
def sampled_logits(model, sg: SampledGraph, seeds: torch.Tensor, fanouts: list[int], batch_size: int,
                   device="cpu", sampling: str = "deterministic") -> torch.Tensor:
    """Class scores of `seeds` (in their order) with sampled neighbourhoods."""
    out = []
    for input_nodes, _, blocks in sampled_loader(sg, seeds, fanouts, batch_size, shuffle=False, sampling=sampling):
        out.append(model(*sg.batch(input_nodes, blocks, device)).cpu())
    return torch.cat(out)


def sampling_rate(sg: SampledGraph, seeds: torch.Tensor, fanouts: list[int], batch_size: int, sampling: str,
                  threads: int, batches: int = 20, num_workers: int = 0) -> dict:
    """Seeds per second of the loader alone (DGL's sampling and blocks: what a training step waits for, see
    trainer.sampling) with `threads` threads, over `batches` batches after one warm-up batch."""
    before = (torch.get_num_threads(), dgl.utils.get_num_threads())
    torch.set_num_threads(threads)
    dgl.utils.set_num_threads(threads)
    try:
        it = iter(sampled_loader(sg, seeds, fanouts, batch_size, shuffle=True, sampling=sampling,
                                 num_workers=num_workers))
        for _ in range(max(1, num_workers)):  # warm-up: the workers' first batches
            next(it)
        t0, n, done = time.perf_counter(), 0, 0
        for _, out, _ in it:
            n, done = n + out.numel(), done + 1
            if done == batches:
                break
        dt = time.perf_counter() - t0
    finally:
        torch.set_num_threads(before[0])
        dgl.utils.set_num_threads(before[1])
    return {"sampling": sampling, "threads": threads, "num_workers": num_workers, "batches": done, "seeds_per_s": n / dt,
            "s_per_batch": dt / max(1, done)}
