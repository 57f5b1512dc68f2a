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


# -- meta-path baselines: HAN's GAT layer and model ------------------------------------------------------------

def _han_dgl_gatconv(in_dim, out_dim, heads, **options):
    """DGL's GATConv with HAN's options (han.py builds its own GATConv with the same arguments)."""
    import torch.nn.functional as F
    from dgl.nn import GATConv
    return GATConv(in_dim, out_dim, heads, **{"activation": F.elu, **options}, allow_zero_in_degree=True)


def _float32_init(build):
    """build() with seed 0 and weights drawn as in training (float32; DGL's GATConv makes attn_l and attn_r
    float32 whatever the default), so that they are the initial weights the trainer gets; the fixtures then
    compute in float64."""
    torch.set_default_dtype(torch.float32)
    try:
        torch.manual_seed(0)
        return build()
    finally:
        torch.set_default_dtype(torch.float64)


@maker
def make_han_gatconv():
    """DGL's GATConv as HAN uses it: the float32 initial weights of seed 0; in float64, the output and the
    gradients of a fixed loss with other fixed weights (a random graph with a node without in-edges and a
    parallel edge)."""
    import dgl
    u, v = random_graph(7, 7, 18, seed=11)
    u, v = torch.cat([u, u[:1]]), torch.cat([v, v[:1]])  # a parallel edge
    g = dgl.graph((u, v), num_nodes=7)
    in_dim, out_dim, heads = 6, 4, 3
    conv = _float32_init(lambda: _han_dgl_gatconv(in_dim, out_dim, heads))
    init = {f"init_{k.replace('.', '_')}": w.clone() for k, w in conv.state_dict().items()}
    conv.double()
    gen = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for p in conv.parameters():
            p.copy_(torch.randn(p.shape, generator=gen))
    h = torch.randn(7, in_dim, generator=gen).requires_grad_()
    out = conv(g, h)
    r = torch.randn(out.shape, generator=gen)
    (out * r).sum().backward()
    return arrays(src=u, dst=v, h=h, r=r, out=out, grad_h=h.grad, **init,
                  **{k.replace(".", "_"): w for k, w in conv.state_dict().items()},
                  **{f"grad_{k.replace('.', '_')}": w.grad for k, w in conv.named_parameters()})


def _academic_edges() -> dict:
    """A small academic heterograph: 6 authors (author 5 without papers), 7 papers, 2 venues, with a parallel
    author-paper edge."""
    gen = torch.Generator().manual_seed(3)
    ap = [(a, p) for a in range(5) for p in range(7) if torch.rand((), generator=gen) < 0.35] + [(0, 0), (0, 0)]
    pv = [(p, int(torch.randint(0, 2, (), generator=gen))) for p in range(7)]
    t = lambda pairs, i: torch.tensor([x[i] for x in pairs])  # noqa: E731
    return {("author", "author->paper", "paper"): (t(ap, 0), t(ap, 1)),
            ("paper", "paper->author", "author"): (t(ap, 1), t(ap, 0)),
            ("paper", "paper->venue", "venue"): (t(pv, 0), t(pv, 1)),
            ("venue", "venue->paper", "paper"): (t(pv, 1), t(pv, 0))}


HAN_METAPATHS = {"APA": ["author->paper", "paper->author"],
                 "APVPA": ["author->paper", "paper->venue", "venue->paper", "paper->author"]}


@maker
def make_han_model():
    """The HAN model as committed (regnn's HAN with DGL's GATConv on DGL graphs of the same meta-path edges),
    two layers: the float32 initial weights of seed 0; in float64, the logits, embeddings, semantic attention and the
    gradients of a fixed loss with other fixed weights (evaluation mode)."""
    import dgl

    from regnn.data.hetero import HeteroGraph
    from regnn.models.baselines import han as han_module
    from regnn.models.baselines.metapath import metapath_edges
    edges = _academic_edges()
    num_nodes = {"author": 6, "paper": 7, "venue": 2}
    hg = HeteroGraph(edges, num_nodes)
    graphs = {m: dgl.graph(metapath_edges(hg, rels, m), num_nodes=6) for m, rels in HAN_METAPATHS.items()}
    ours = han_module.GATConv
    han_module.GATConv = _han_dgl_gatconv  # the committed construction: DGL's layer, same arguments
    try:
        net = _float32_init(lambda: han_module.HAN(in_dim=5, target="author", num_classes=3, hidden=3, heads=2,
                                                   metapath_names=list(HAN_METAPATHS), num_layers=2, dropout=0.6,
                                                   semantic_dim=4))
    finally:
        han_module.GATConv = ours
    init = {f"init.{k}": w.clone() for k, w in net.state_dict().items()}
    net.double()
    gen = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.5)
    x = torch.randn(6, 5, generator=gen).requires_grad_()
    net.eval()
    logits, emb = net(han_module.MetapathGraphs(graphs, "author"), {"author": x}, embed=True)
    r1, r2 = torch.randn(logits.shape, generator=gen), torch.randn(emb.shape, generator=gen)
    ((logits * r1).sum() + (emb * r2).sum()).backward()
    beta = torch.stack([b for b in net._beta])
    named = dict(net.named_parameters())
    return arrays(**{f"edges.{c[1]}.{i}": e[i] for c, e in edges.items() for i in (0, 1)}, x=x, r1=r1, r2=r2,
                  logits=logits, emb=emb, beta=beta, grad_x=x.grad, **init,
                  **{f"param.{k}": w for k, w in named.items()}, **{f"grad.{k}": w.grad for k, w in named.items()})


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
