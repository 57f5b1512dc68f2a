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


# -- typed layers (R-GCN, HGT) and the compute core's GAT layer and edge ops ---------------------------------------

TYPED_NODES = {"a": 4, "b": 5, "c": 3}
# node a3 is the destination of no edge, node c2 is on no edge at all; "bb" joins a type to itself
TYPED_RELATIONS = [("b", "ba", "a"), ("a", "ab", "b"), ("b", "bb", "b"), ("c", "cb", "b"), ("b", "bc", "c")]


def typed_graph_arrays() -> dict:
    """A small heterograph (three node types, five relations, a repeated edge, edges in no sorted order) and DGL's
    `to_homogeneous` of it: `nodes.<type>`, `edges.<src>.<rel>.<dst>.src/.dst`, `homo.*`. Also returns the DGL
    graphs for the makers."""
    import dgl
    g = torch.Generator().manual_seed(7)
    limit = {"a": 3, "b": 5, "c": 2}  # a3 and c2 excluded as destinations, c2 as a source
    edges = {}
    for s, e, d in TYPED_RELATIONS:
        n = 7
        u = torch.randint(0, limit[s], (n,), generator=g)
        v = torch.randint(0, limit[d], (n,), generator=g)
        u, v = torch.cat([u, u[:1]]), torch.cat([v, v[:1]])  # one edge twice
        order = torch.randperm(n + 1, generator=g)
        edges[(s, e, d)] = (u[order], v[order])
    hg = dgl.heterograph(edges, num_nodes_dict=TYPED_NODES)
    if list(hg.ntypes) != sorted(TYPED_NODES) or list(hg.canonical_etypes) != sorted(edges):
        raise SystemExit("DGL no longer sorts node and edge types by name: the fixtures' ids would differ")
    homo = dgl.to_homogeneous(hg)
    out = {f"nodes.{t}": n for t, n in TYPED_NODES.items()}
    for (s, e, d), (u, v) in edges.items():
        out[f"edges.{s}.{e}.{d}.src"], out[f"edges.{s}.{e}.{d}.dst"] = u, v
    hs, hd = homo.edges()
    out.update({"homo.src": hs, "homo.dst": hd, "homo.ntype": homo.ndata[dgl.NTYPE], "homo.nid": homo.ndata[dgl.NID],
                "homo.etype": homo.edata[dgl.ETYPE], "homo.eid": homo.edata[dgl.EID]})
    key = hd * len(edges) + homo.edata[dgl.ETYPE]
    out["homo.norm"] = (1.0 / torch.bincount(key)[key].to(torch.float32)).unsqueeze(1)  # R-GCN's 1/c_{v,r}
    return out, hg, homo


def float32_init(build) -> dict:
    """The state dict of the module build() makes under torch.manual_seed(0) with float32 parameters."""
    torch.set_default_dtype(torch.float32)
    try:
        torch.manual_seed(0)
        module = build()
    finally:
        torch.set_default_dtype(torch.float64)
    return module, {f"init.{k}": v for k, v in module.state_dict().items()}


def module_check(module, run, inputs: dict, seed: int) -> dict:
    """Every parameter of the (float64) module set to seeded normal values; run(**inputs) and the gradients of
    sum(out * G) with respect to every input and parameter."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64) * 0.5 + (1.0 if p.dim() == 1 else 0.0))
    inputs = {k: v.clone().requires_grad_() for k, v in inputs.items()}
    out = run(**inputs)
    G = torch.randn(out.shape, generator=gen, dtype=torch.float64)
    (out * G).sum().backward()
    res = {"out": out, "G": G}
    for k, v in inputs.items():
        res[f"in.{k}"], res[f"grad.{k}"] = v, v.grad
    for k, p in module.named_parameters():
        res[f"param.{k}"], res[f"grad.param.{k}"] = p, p.grad
    return res


def _rgcn_layer(num_bases):
    import dgl
    from dgl.nn import RelGraphConv
    graph, _, homo = typed_graph_arrays()
    reg = None if num_bases is None else "basis"
    conv, init = float32_init(lambda: RelGraphConv(4, 3, len(TYPED_RELATIONS), regularizer=reg, num_bases=num_bases,
                                                   self_loop=True))
    conv = conv.double()
    norm = graph["homo.norm"].double()
    x = torch.randn(homo.num_nodes(), 4, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    res = module_check(conv, lambda x: conv(homo, x, homo.edata[dgl.ETYPE], norm, presorted=True), {"x": x}, 2)
    return arrays(**graph, **init, **res)


@maker
def make_typed_graph():
    """The small heterograph and DGL's to_homogeneous of it (node and edge ids, types, R-GCN's norm)."""
    return arrays(**typed_graph_arrays()[0])


@maker
def make_rgcn_layer():
    """DGL's RelGraphConv (a full matrix per relation, self-loop, bias) on the small typed graph."""
    return _rgcn_layer(None)


@maker
def make_rgcn_layer_basis():
    """DGL's RelGraphConv with the basis decomposition (2 bases for 5 relations)."""
    return _rgcn_layer(2)


def _hgt_layer(in_size, use_norm):
    import dgl
    from dgl.nn import HGTConv
    graph, _, homo = typed_graph_arrays()
    conv, init = float32_init(lambda: HGTConv(in_size, 3, 2, len(TYPED_NODES), len(TYPED_RELATIONS), dropout=0.2,
                                              use_norm=use_norm))
    conv = conv.double().eval()
    x = torch.randn(homo.num_nodes(), in_size, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    res = module_check(conv, lambda x: conv(homo, x, homo.ndata[dgl.NTYPE], homo.edata[dgl.ETYPE], presorted=True),
                       {"x": x}, 2)
    return arrays(**graph, **init, **res)


@maker
def make_hgt_layer():
    """DGL's HGTConv (2 heads of 3, input size 6: the skip connection adds the input) on the small typed graph."""
    return _hgt_layer(6, False)


@maker
def make_hgt_layer_norm():
    """DGL's HGTConv with layer norm and an input size (5) other than heads * head size (its residual_w)."""
    return _hgt_layer(5, True)


def _typed_model(kind: str):
    """The R-GCN or HGT baseline as regnn built it on DGL's modules, on the small typed graph: its initial
    weights under seed 0 (float32) and its eval-mode logits in float64."""
    import dgl
    import torch.nn.functional as F
    from dgl.nn import HGTConv, RelGraphConv
    from torch import nn

    from regnn.models.regnn import TypeProjection
    graph, hg, homo = typed_graph_arrays()
    ntypes, num_rel = list(hg.ntypes), len(hg.canonical_etypes)
    dims = {"a": 3, "b": 4, "c": 2}
    nt = homo.ndata[dgl.NTYPE]
    target = torch.nonzero(nt == ntypes.index("b")).squeeze(1)
    target = target[torch.argsort(homo.ndata[dgl.NID][target])]
    norm = graph["homo.norm"].double()

    class DGLRGCN(nn.Module):
        def __init__(self, hidden=8, num_classes=3):
            super().__init__()
            self.proj = TypeProjection(dims, hidden)
            self.convs = nn.ModuleList(RelGraphConv(hidden, num_classes if i == 1 else hidden, num_rel, self_loop=True)
                                       for i in range(2))
            self.dropout = nn.Dropout(0.5)

        def forward(self, feats):
            h = self.proj(feats, ntypes)
            for i, conv in enumerate(self.convs):
                h = conv(homo, self.dropout(h), homo.edata[dgl.ETYPE], norm, presorted=True)
                h = F.relu(h) if i == 0 else h
            return h[target]

    class DGLHGT(nn.Module):
        def __init__(self, hidden=8, heads=2, num_classes=3):
            super().__init__()
            self.proj = TypeProjection(dims, hidden)
            self.convs = nn.ModuleList(HGTConv(hidden, hidden // heads, heads, len(ntypes), num_rel, dropout=0.2,
                                               use_norm=True) for _ in range(2))
            self.dropout = nn.Dropout(0.2)
            self.head = nn.Linear(hidden, num_classes)

        def forward(self, feats):
            h = self.dropout(F.gelu(self.proj(feats, ntypes)))
            for conv in self.convs:
                h = F.gelu(conv(homo, h, nt, homo.edata[dgl.ETYPE], presorted=True))
            return self.head(h[target])

    model, init = float32_init(DGLRGCN if kind == "rgcn" else DGLHGT)
    model = model.double().eval()
    gen = torch.Generator().manual_seed(3)
    feats = {t: torch.randn(TYPED_NODES[t], d, generator=gen, dtype=torch.float64) for t, d in dims.items()}
    with torch.no_grad():
        logits = model(feats)
    return arrays(**graph, **init, **{f"feat.{t}": x for t, x in feats.items()}, logits=logits, target=target)


@maker
def make_rgcn_model():
    """regnn's R-GCN baseline on DGL's RelGraphConv (hidden 8, 2 layers, 3 classes, target type b)."""
    return _typed_model("rgcn")


@maker
def make_hgt_model():
    """regnn's HGT baseline on DGL's HGTConv (hidden 8, 2 heads, 2 layers with layer norm, 3 classes)."""
    return _typed_model("hgt")


def core_graph(n, e, num_rel, seed, shuffle=True):
    """tests/test_layers.py's random multigraph: (src, dst, rel), sorted by (dst, src) unless shuffle."""
    g_ = torch.Generator().manual_seed(seed)
    src, dst = torch.randint(0, n, (e,), generator=g_), torch.randint(0, n, (e,), generator=g_)
    rel = torch.randint(0, num_rel, (e,), generator=g_)
    if not shuffle:
        order = torch.argsort(dst * n + src)
        src, dst, rel = src[order], dst[order], rel[order]
    return src, dst, rel


@maker
def make_gatconv():
    """DGL's GATConv (3 heads of 5, no bias, zero in-degree allowed) on a random multigraph of 15 nodes."""
    import dgl
    from dgl.nn import GATConv
    src, dst, rel = core_graph(15, 60, 2, seed=6)
    g = dgl.graph((src, dst), num_nodes=15)
    conv = GATConv(7, 5, num_heads=3, negative_slope=0.2, bias=False, allow_zero_in_degree=True).double()
    h = torch.randn(15, 7, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    res = module_check(conv, lambda h: conv(g, h), {"h": h}, 2)
    return arrays(src=src, dst=dst, rel=rel, **res)


@maker
def make_edge_ops():
    """dgl.ops.u_add_v and edge_softmax (of 3 * the sum), with 1 and 3 heads, on a multigraph sorted by destination
    whose last node (13) has no in-edges; gradients of sum(softmax * go)."""
    import dgl
    from dgl.nn.functional import edge_softmax
    src, dst, _ = core_graph(14, 50, 4, seed=12, shuffle=False)
    keep = dst != 13
    src, dst = src[keep], dst[keep]
    g = dgl.graph((src, dst), num_nodes=14)
    out = {"src": src, "dst": dst}
    gen = torch.Generator().manual_seed(1)
    for heads in (1, 3):
        el, er = (torch.randn(14, heads, dtype=torch.float64, generator=gen).requires_grad_() for _ in range(2))
        go = torch.randn(g.num_edges(), heads, dtype=torch.float64, generator=gen)
        s = dgl.ops.u_add_v(g, el, er)
        a = edge_softmax(g, 3 * s)
        (a * go).sum().backward()
        out.update({f"h{heads}.el": el, f"h{heads}.er": er, f"h{heads}.go": go, f"h{heads}.s": s, f"h{heads}.a": a,
                    f"h{heads}.grad_el": el.grad, f"h{heads}.grad_er": er.grad})
    return arrays(**out)


# -- meta-path baselines: HAN's GAT layer and model, Metapath2vec's skip-gram and walks -------------------------

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


M2V_WALK = ["author->paper", "paper->venue", "venue->paper", "paper->author"] * 2


def _dgl_hetero(edges, num_nodes):
    import dgl
    return dgl.heterograph(edges, num_nodes)


@maker
def make_metapath2vec_loss():
    """DGL's MetaPath2Vec, float64: the initial tables of seed 0; the walks its constructor took (one from every
    author, DGL seed 0, one thread) and the negative-sampling distribution it made of them; its loss and the
    gradients of both tables for fixed weights (some scores beyond the clamp at +-10) and the pairs and
    negatives of one of its own `sample` batches."""
    import contextlib
    import io

    import dgl
    from dgl.nn import MetaPath2Vec
    edges, num_nodes = _academic_edges(), {"author": 6, "paper": 7, "venue": 2}
    g = _dgl_hetero(edges, num_nodes)
    dgl.utils.set_num_threads(1)
    dgl.seed(0)
    torch.manual_seed(0)
    with contextlib.redirect_stderr(io.StringIO()):
        m2v = MetaPath2Vec(g, M2V_WALK, window_size=3, emb_dim=4, negative_size=2)
    init_node, init_context = m2v.node_embed.weight.detach().clone(), m2v.context_embed.weight.detach().clone()
    dgl.seed(0)  # the constructor's walks again: one per author, in order
    traces = torch.cat([dgl.sampling.random_walk(m2v.hg, [i], metapath=M2V_WALK)[0]
                        for i in range(num_nodes["author"])])
    freq = torch.zeros(sum(num_nodes.values()))
    for tr in traces.numpy():  # DGL's own count, to make sure these are the walks it counted
        freq[torch.LongTensor([m2v.local_to_global_nid[m2v.node_metapath[i]][x] for i, x in enumerate(tr)])] += 1
    assert torch.equal(freq.pow(0.75) / freq.pow(0.75).sum(), m2v.neg_prob), "the constructor's walks differ"
    assert (traces < 0).any(), "the fixture graph should have a walk that ends early"
    pos_u, pos_v, neg_v = m2v.sample(torch.arange(num_nodes["author"]))
    gen = torch.Generator().manual_seed(9)
    with torch.no_grad():
        m2v.node_embed.weight.copy_(torch.randn(m2v.node_embed.weight.shape, generator=gen))
        m2v.context_embed.weight.copy_(torch.randn(m2v.context_embed.weight.shape, generator=gen))
        m2v.node_embed.weight[:3] *= 6.0  # scores past the clamp
    loss = m2v(pos_u, pos_v, neg_v)
    loss.backward()
    return arrays(init_node=init_node, init_context=init_context, traces=traces, neg_prob=m2v.neg_prob,
                  offsets=torch.tensor([int(m2v.local_to_global_nid[t][0]) for t in g.ntypes]),
                  node=m2v.node_embed.weight, context=m2v.context_embed.weight, pos_u=pos_u, pos_v=pos_v,
                  neg_v=torch.as_tensor(neg_v), loss=loss, grad_node=m2v.node_embed.weight.grad.to_dense(),
                  grad_context=m2v.context_embed.weight.grad.to_dense(),
                  **{f"edges.{c[1]}.{i}": e[i] for c, e in edges.items() for i in (0, 1)})


@maker
def make_metapath_walk():
    """DGL's random_walk along APVPA twice: on a graph where every node has at most one out-edge per relation
    (the walks are determined; author 3's ends at a paper without venue, author 4 has no paper), every author's
    trace; on one where author 0 has out-edges to papers 0, 1 and 1 again, the first steps of 30000 walks from
    it (one thread, DGL seed 0)."""
    import dgl
    t = torch.tensor
    fixed = {("author", "author->paper", "paper"): (t([0, 1, 2, 3, 5]), t([0, 1, 2, 3, 4])),
             ("paper", "paper->author", "author"): (t([0, 1, 2, 3, 4]), t([0, 1, 2, 3, 5])),
             ("paper", "paper->venue", "venue"): (t([0, 1, 2, 4]), t([0, 1, 0, 1])),
             ("venue", "venue->paper", "paper"): (t([0, 1]), t([2, 4]))}
    num_nodes = {"author": 6, "paper": 5, "venue": 2}
    dgl.utils.set_num_threads(1)
    dgl.seed(0)
    traces, _ = dgl.sampling.random_walk(_dgl_hetero(fixed, num_nodes), torch.arange(6), metapath=M2V_WALK)
    branching = dict(fixed)
    branching[("author", "author->paper", "paper")] = (t([0, 0, 0, 1, 2, 3, 5]), t([0, 1, 1, 1, 2, 3, 4]))
    many, _ = dgl.sampling.random_walk(_dgl_hetero(branching, num_nodes), torch.zeros(30000, dtype=torch.int64),
                                       metapath=M2V_WALK[:1])
    return arrays(traces=traces, first_steps=torch.bincount(many[:, 1], minlength=num_nodes["paper"]),
                  **{f"fixed.{c[1]}.{i}": e[i] for c, e in fixed.items() for i in (0, 1)},
                  **{f"branching.{c[1]}.{i}": e[i] for c, e in branching.items() for i in (0, 1)})


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
