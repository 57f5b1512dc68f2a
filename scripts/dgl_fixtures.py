"""Writes the float64 fixtures that pin regnn's array ports to DGL's own modules (tests/fixtures/dgl/*.npz).

Run it where DGL is installed (DGL 2.1 on Python 3.11 with torch 2.2 and numpy < 2; `pip install dgl==2.1.0
torch==2.2.1 "numpy<2" scipy`):

    PYTHONPATH=src python scripts/dgl_fixtures.py            # every fixture
    PYTHONPATH=src python scripts/dgl_fixtures.py rgcn hgt   # some of them

Each maker builds a small graph and inputs from a fixed seed, runs DGL's module or op in float64 with fixed
weights, and saves the inputs, the weights, the outputs and the gradients of a fixed loss with respect to the inputs
and weights. The tests (tests/test_dgl_ports.py and beside it) load the same file, run regnn's port on the same
arrays and compare, so every CI run checks the equivalence without DGL.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "dgl"
MAKERS: dict = {}  # name -> function returning {array name: array}


def maker(fn):
    MAKERS[fn.__name__.removeprefix("make_")] = fn
    return fn


def random_graph(n_src: int, n_dst: int, num_edges: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Edges of a small random graph without duplicates; one destination (the last) gets no in-edge, so the ports
    are checked on an empty segment too."""
    g = torch.Generator().manual_seed(seed)
    u = torch.randint(0, n_src, (num_edges,), generator=g)
    v = torch.randint(0, max(n_dst - 1, 1), (num_edges,), generator=g)
    pairs = torch.unique(torch.stack([u, v], 1), dim=0)
    return pairs[:, 0].contiguous(), pairs[:, 1].contiguous()


def arrays(**named) -> dict[str, np.ndarray]:
    """Tensors (or numbers) as float64 / int64 numpy arrays, for np.savez."""
    out = {}
    for k, v in named.items():
        t = torch.as_tensor(v).detach().cpu()
        out[k] = t.numpy().astype(np.float64 if t.is_floating_point() else np.int64)
    return out


# -- sampler_blocks: whole-neighbourhood blocks (regnn.training.neighbour_sampler) ------------------------------------
@maker
def make_sampler_blocks():
    """DGL's blocks of every in-edge (in_subgraph + to_block, what layer-wise inference ran on) for two layers
    over a small relation-typed graph whose edges are sorted by destination, some node pairs joined by two
    relations: per layer the source ids (destinations first), the block's edges (compact ids) and edge ids."""
    import dgl
    n, g = 40, torch.Generator().manual_seed(3)
    u, v = torch.randint(0, n, (160,), generator=g), torch.randint(0, n, (160,), generator=g)
    u, v = torch.cat([u, u[:12]]), torch.cat([v, v[:12]])  # 12 pairs again, with another relation
    rel = torch.cat([torch.randint(0, 3, (160,), generator=g), torch.full((12,), 3)])
    keep = u != v
    u, v, rel = u[keep], v[keep], rel[keep]
    order = torch.sort(v * n + u, stable=True).indices
    u, v, rel = u[order], v[order], rel[order]
    graph = dgl.graph((u, v), num_nodes=n)
    seeds = torch.tensor([17, 3, 29, 8, 0, 35])
    out = {"src": u, "dst": v, "rel": rel, "num_nodes": n, "seeds": seeds}
    dst = seeds
    for layer in (1, 0):  # the seeds' layer first, as sampling goes
        frontier = dgl.in_subgraph(graph, dst)
        block = dgl.to_block(frontier, dst_nodes=dst)
        bu, bv = block.edges()
        out |= {f"src_nodes_{layer}": block.srcdata[dgl.NID], f"edge_src_{layer}": bu, f"edge_dst_{layer}": bv,
                f"eid_{layer}": frontier.edata[dgl.EID][block.edata[dgl.EID]]}
        dst = block.srcdata[dgl.NID]
    return arrays(**out)


def main(names: list[str]) -> None:
    import dgl  # noqa: F401  (fail here, with a plain ImportError, where DGL is absent)
    torch.set_default_dtype(torch.float64)
    OUT.mkdir(parents=True, exist_ok=True)
    for name in names or sorted(MAKERS):
        if name not in MAKERS:
            raise SystemExit(f"no fixture {name!r}; known: {sorted(MAKERS)}")
        torch.manual_seed(0)
        data = MAKERS[name]()
        np.savez(OUT / f"{name}.npz", **data)
        print(f"{OUT / name}.npz: {len(data)} arrays (dgl {sys.modules['dgl'].__version__})")


if __name__ == "__main__":
    main(sys.argv[1:])
