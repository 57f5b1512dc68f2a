"""The neighbour sampler (regnn.training.neighbour_sampler) and its loader (regnn.training.sampling): whole-
neighbourhood blocks equal DGL's, draws are uniform subsets, and batches repeat for a seed in every process,
thread count and sampling mode."""

import math
import subprocess
import sys
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from itertools import combinations

import pytest
import torch

from conftest import REPO
from dgl_fixtures import load_fixture
from regnn.data import make_synthetic
from regnn.training.neighbour_sampler import CscGraph, distinct_draws, smallest_keys
from regnn.runtime.perf import one_openmp_thread
from regnn.training.sampling import SampledGraph, sampled_loader


def test_whole_neighbourhood_blocks_equal_dgls():
    """in_subgraph + to_block over two layers: the same sources in the same order (destinations first, then
    first appearance), the same edges in the same order, the same edge ids."""
    f = load_fixture("sampler_blocks")
    csc = CscGraph.from_sorted_edges(f["src"], f["dst"], int(f["num_nodes"]))
    blocks = csc.sample_blocks(f["seeds"], [-1, -1], None)
    for layer, b in enumerate(blocks):
        assert torch.equal(b.src_nodes, f[f"src_nodes_{layer}"]), layer
        assert torch.equal(b.edge_src, f[f"edge_src_{layer}"]) and torch.equal(b.edge_dst, f[f"edge_dst_{layer}"])
        assert torch.equal(b.eid, f[f"eid_{layer}"])
    assert torch.equal(blocks[1].dst_nodes, f["seeds"]) and torch.equal(blocks[0].dst_nodes, blocks[1].src_nodes)


def stars(num: int, deg: int) -> CscGraph:
    """`num` destinations (ids 0..num-1) with `deg` in-edges each, from their own sources."""
    src = torch.arange(num, num + num * deg)
    dst = torch.arange(num).repeat_interleave(deg)
    return CscGraph.from_sorted_edges(src, dst, num + num * deg)


@pytest.mark.parametrize("deg,fanout", [(3, 2), (5, 3), (5, 2), (6, 3), (9, 4)])
def test_sampled_in_edges_are_a_uniform_subset(deg, fanout):
    """Every subset of `fanout` in-edges equally often, over many destinations of one draw (deg < 2 fanout: the
    smallest random keys; deg >= 2 fanout: draws, repeats drawn again)."""
    num = 30000
    g = stars(num, deg)
    eid, at = g.sample_edges(torch.arange(num), fanout, torch.Generator().manual_seed(1))
    assert eid.numel() == num * fanout and torch.equal(at, torch.arange(num).repeat_interleave(fanout))
    offsets = (eid - g.indptr[at]).view(num, fanout).sort(1).values
    counts = Counter(map(tuple, offsets.tolist()))
    subsets = list(combinations(range(deg), fanout))
    assert set(counts) == set(subsets)  # all distinct, all in range, every subset drawn
    expected = num / len(subsets)
    assert max(abs(c - expected) for c in counts.values()) < 5 * math.sqrt(expected), counts


@pytest.mark.parametrize("deg", [40, 60, 5000])
def test_every_in_edge_is_drawn_as_often_over_seeds(deg):
    """One destination sampled with 600 generator seeds: each in-edge in about fanout / deg of them."""
    g, fanout, runs = stars(1, deg), 25, 600
    hits = torch.zeros(deg)
    for s in range(runs):
        eid, _ = g.sample_edges(torch.tensor([0]), fanout, torch.Generator().manual_seed(s))
        assert eid.unique().numel() == fanout
        hits[eid] += 1
    p = fanout / deg
    chi2 = float(((hits - runs * p) ** 2 / (runs * p * (1 - p))).sum())
    assert chi2 < deg + 5 * math.sqrt(2 * deg), chi2  # chi-square with ~deg degrees of freedom


def test_draw_helpers_give_distinct_values_in_range():
    gen = torch.Generator().manual_seed(0)
    bound = torch.tensor([50, 51, 1000, 10**7])
    d = distinct_draws(bound, 25, gen)
    assert all(row.unique().numel() == 25 for row in d) and (d >= 0).all() and (d < bound.view(-1, 1)).all()
    k = smallest_keys(torch.tensor([26, 30, 49]), 25, 49, gen)
    assert all(row.unique().numel() == 25 for row in k) and (k < torch.tensor([[26], [30], [49]])).all()


def test_fanout_keeps_every_in_edge_of_small_degrees_in_csc_order():
    g = CscGraph.from_sorted_edges(
        torch.tensor([1, 2, 3, 0, 2, 0, 1, 3, 4]), torch.tensor([0, 0, 0, 1, 1, 2, 2, 2, 2]), 5
    )
    eid, at = g.sample_edges(torch.tensor([2, 0, 1]), 3, torch.Generator().manual_seed(0))
    assert at.tolist() == [0, 0, 0, 1, 1, 1, 2, 2] and eid[3:].tolist() == [0, 1, 2, 3, 4]  # degrees 3 and 2: all
    assert set(eid[:3].tolist()) < {5, 6, 7, 8} and eid[:3].unique().numel() == 3
    with pytest.raises(ValueError, match="distinct seeds"):
        g.sample_blocks(torch.tensor([0, 0]), [2], None)


@pytest.fixture(scope="module")
def sg():
    return SampledGraph(make_synthetic(num_items=300, num_sources=150, num_tags=20, seed=0))


def batches(loader) -> list[list[torch.Tensor]]:
    """Every batch of an epoch as its input nodes, seeds and adjacency arrays."""
    return [
        [b.input_nodes, b.seeds]
        + [t for a in b.adjs for t in (a.indptr, a.indices, a.rel, a.t_indptr, a.t_indices, a.t_pos)]
        for b in loader
    ]


def same(a, b) -> bool:
    return len(a) == len(b) and all(len(x) == len(y) and all(map(torch.equal, x, y)) for x, y in zip(a, b))


def test_epochs_cover_every_seed_once_in_a_new_order_that_a_seed_repeats(sg):
    seeds = torch.arange(0, 300, 2) + sg.target_offset
    loader = sampled_loader(sg, seeds, [4, 3], 32, shuffle=True, seed=5)
    e0, e1 = batches(loader), batches(loader)
    for e in (e0, e1):
        assert torch.equal(torch.cat([b[1] for b in e]).sort().values, seeds)
    assert not torch.equal(torch.cat([b[1] for b in e0]), torch.cat([b[1] for b in e1]))
    again = sampled_loader(sg, seeds, [4, 3], 32, shuffle=True, seed=5)
    assert same(batches(again), e0) and same(batches(again), e1)  # epoch by epoch
    assert not same(batches(sampled_loader(sg, seeds, [4, 3], 32, shuffle=True, seed=6)), e0)


def test_parallel_sampling_gives_the_deterministic_batches(sg):
    seeds = sg.seeds(torch.arange(300))
    want = batches(sampled_loader(sg, seeds, [5, 5], 16, shuffle=True, seed=1))
    for workers in (1, 3):
        got = batches(
            sampled_loader(sg, seeds, [5, 5], 16, shuffle=True, seed=1, sampling="parallel", num_workers=workers)
        )
        assert same(got, want), workers


def test_a_parallel_loader_left_early_leaves_no_sampling_thread(sg):
    loader = sampled_loader(
        sg, sg.seeds(torch.arange(300)), [5, 5], 8, shuffle=True, sampling="parallel", num_workers=2
    )
    for i, _ in enumerate(loader):
        if i == 2:
            break
    assert not [t for t in threading.enumerate() if t.name.startswith("sampler")]


def test_sampling_threads_run_torch_on_one_thread_and_leave_the_callers_count(set_threads):
    set_threads(2)
    with ThreadPoolExecutor(1, initializer=one_openmp_thread) as pool:
        assert pool.submit(torch.get_num_threads).result() == 1
    assert torch.get_num_threads() == 2


def test_processes_take_disjoint_shards_padded_to_one_length(sg):
    from regnn.training.sampling import NeighbourLoader

    seeds = sg.seeds(torch.arange(101))
    shards = [
        torch.cat([b.seeds for b in NeighbourLoader(sg, seeds, [3], 16, True, rank=r, world_size=2)]) for r in (0, 1)
    ]
    assert shards[0].numel() == 51 and shards[1].numel() == 51  # 50 seeds + one repeated
    assert shards[1].unique().numel() == 50 and set(shards[0].tolist()).isdisjoint(shards[1].tolist())
    assert torch.equal(torch.cat(shards).unique(), seeds)


REPEAT = r"""
import hashlib, sys, torch
from regnn.data import make_synthetic
from regnn.training.neighbour_sampler import CscGraph
from regnn.training.sampling import SampledGraph, sampled_loader
threads, mode = int(sys.argv[1]), sys.argv[2]
torch.set_num_threads(threads)
h = hashlib.sha1()
def add(*ts):
    for t in ts:
        h.update(t.contiguous().numpy().tobytes())
# blocks large enough for torch to split its ops among threads (~100,000 edges): 30,000 nodes, 300,000 edges
g = torch.Generator().manual_seed(0)
n, e = 30000, 300000
dst = torch.randint(0, n, (e,), generator=g).sort().values
big = CscGraph.from_sorted_edges(torch.randint(0, n, (e,), generator=g), dst, n)
for b in big.sample_blocks(torch.randperm(n, generator=g)[:1024], [25, 20], torch.Generator().manual_seed(7)):
    add(b.src_nodes, b.edge_src, b.edge_dst, b.eid)
sg = SampledGraph(make_synthetic(num_items=300, num_sources=150, num_tags=20, seed=0))
loader = sampled_loader(sg, sg.seeds(torch.arange(300)), [10, 10], 64, shuffle=True, sampling=mode, seed=3)
for epoch in range(2):
    for b in loader:
        add(b.input_nodes, b.seeds, *[t for a in b.adjs for t in (a.indptr, a.indices, a.rel, a.t_indices, a.t_pos)])
print(h.hexdigest())
"""


def test_a_seed_samples_the_same_blocks_in_every_process_thread_count_and_mode():
    runs = [("1", "deterministic"), ("2", "parallel")]  # the modes agree in one process (test above)
    digests = {
        subprocess.run(
            [sys.executable, "-c", REPEAT, *r], cwd=REPO, capture_output=True, text=True, check=True, timeout=300
        ).stdout.strip()
        for r in runs
    }
    assert len(digests) == 1, digests
