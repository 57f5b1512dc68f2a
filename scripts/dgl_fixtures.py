"""Writes the float64 fixtures that pin regnn's array ports to DGL's own modules (tests/fixtures/dgl_*.npz).

Run it where DGL is installed (DGL 2.1 on Python 3.11 with torch 2.2 and numpy < 2; `pip install dgl==2.1.0
torch==2.2.1 "numpy<2" scipy`):

    PYTHONPATH=src python scripts/dgl_fixtures.py            # every fixture
    PYTHONPATH=src python scripts/dgl_fixtures.py rgcn hgt   # some of them
    HGB_HGT_DIR=<THUDM/HGB>/NC/benchmark/methods/HGT PYTHONPATH=src python scripts/dgl_fixtures.py hgb_hgt_model

Each maker builds a small graph and inputs from a fixed seed, runs DGL's module or op in float64 with fixed
weights, and saves the inputs, the weights, the outputs and the gradients of a fixed loss with respect to the inputs
and weights. The tests (tests/test_dgl_ports_*.py) load the same file, run regnn's port on the same
arrays and compare, so every CI run checks the equivalence without DGL.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
sys.path.insert(0, str(OUT.parent))  # the tests' random multigraph, so fixtures and tests build the same graphs
from dgl_fixtures import random_multigraph  # noqa: E402
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


def _hgb_hgt_module():
    """HGB's model.py (THUDM/HGB NC/benchmark/methods/HGT), from the checkout named by HGB_HGT_DIR."""
    import importlib.util
    import os
    path = os.environ.get("HGB_HGT_DIR")
    if not path:
        raise SystemExit("hgb_hgt_model needs HGB_HGT_DIR: a THUDM/HGB checkout's NC/benchmark/methods/HGT")
    spec = importlib.util.spec_from_file_location("hgb_hgt_model", os.path.join(path, "model.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@maker
def make_hgb_hgt_model():
    """HGB's own HGT (model.py's HGT and HGTLayer, unchanged; hidden 8, 2 heads, 2 layers with layer norm, 3
    classes) on the small typed graph: its parameters (float32 init under seed 0, then float64), eval-mode
    logits of type b's nodes and the gradients of sum(logits * G) for every parameter."""
    graph, hg, _ = typed_graph_arrays()
    hgb = _hgb_hgt_module()
    dims = {"a": 3, "b": 4, "c": 2}
    hg.node_dict = {t: i for i, t in enumerate(hg.ntypes)}
    hg.edge_dict = {e: i for i, e in enumerate(hg.etypes)}
    for e, i in hg.edge_dict.items():
        hg.edges[e].data["id"] = torch.full((hg.num_edges(e),), i, dtype=torch.long)
    model, init = float32_init(lambda: hgb.HGT(hg, n_inps=[dims[t] for t in hg.ntypes], n_hid=8, n_out=3,
                                               n_layers=2, n_heads=2, use_norm=True))
    model = model.double().eval()
    gen = torch.Generator().manual_seed(3)
    feats = {t: torch.randn(TYPED_NODES[t], d, generator=gen, dtype=torch.float64) for t, d in dims.items()}
    for t, x in feats.items():
        hg.nodes[t].data["inp"] = x
    logits = model(hg, "b")
    weights = torch.randn(logits.shape, generator=gen, dtype=torch.float64)
    (logits * weights).sum().backward()
    grads = {f"grad.{k}": p.grad for k, p in model.named_parameters() if p.grad is not None}  # see the test
    return arrays(**graph, **init, **{f"feat.{t}": x for t, x in feats.items()}, logits=logits.detach(), G=weights,
                  **grads)


@maker
def make_gatconv():
    """DGL's GATConv (3 heads of 5, no bias, zero in-degree allowed) on a random multigraph of 15 nodes."""
    import dgl
    from dgl.nn import GATConv
    src, dst, rel = random_multigraph(15, 60, 2, seed=6)
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
    src, dst, _ = random_multigraph(14, 50, 4, seed=12, shuffle=False)
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


# -- MAGNN-AC and R-HGNN (regnn.models.baselines.magnn_ac, .rhgnn) ------------------------------------------------
# The small heterographs below are restated in tests/test_dgl_ports_magnn.py, which rebuilds them from the saved
# edge arrays (e{i}_src, e{i}_dst, in the order of the relation list).

RHGNN_COUNTS = {"a": 6, "b": 5, "c": 4, "d": 3}
RHGNN_RELATIONS = [("a", "a->b", "b"), ("a", "a->c", "c"), ("b", "b->a", "a"), ("b", "b->c", "c"),
                   ("c", "c->a", "a"), ("d", "d->a", "a")]  # b->c has no reverse; nothing ends at d
MAGNN_COUNTS = {"author": 8, "paper": 10, "venue": 3}
MAGNN_METAPATHS = {"APA": ["author->paper", "paper->author"],
                   "APVPA": ["author->paper", "paper->venue", "venue->paper", "paper->author"]}


def magnn_edges() -> dict:
    """Authors -> papers (the last paper has no author), each paper at one venue, and both reversed."""
    u, v = random_graph(MAGNN_COUNTS["author"], MAGNN_COUNTS["paper"], 18, seed=11)
    gen = torch.Generator().manual_seed(12)
    venue = torch.randint(0, MAGNN_COUNTS["venue"], (MAGNN_COUNTS["paper"],), generator=gen)
    papers = torch.arange(MAGNN_COUNTS["paper"])
    return {("author", "author->paper", "paper"): (u, v), ("paper", "paper->author", "author"): (v, u),
            ("paper", "paper->venue", "venue"): (papers, venue), ("venue", "venue->paper", "paper"): (venue, papers)}


def _edge_arrays(edges: dict, relations: list) -> dict:
    return {f"e{i}_{end}": x for i, cet in enumerate(relations) for end, x in zip(("src", "dst"), edges[cet])}


class _patched:
    """Sets obj.name = value inside the block (the DGL reference of one op in a regnn module)."""

    def __init__(self, obj, name: str, value):
        self.obj, self.name, self.value = obj, name, value

    def __enter__(self):
        self.old = getattr(self.obj, self.name)
        setattr(self.obj, self.name, self.value)

    def __exit__(self, *exc):
        setattr(self.obj, self.name, self.old)


class _torch_backend:
    """regnn's Adjacency without its fused kernels here (they would be compiled for this interpreter first)."""

    def __enter__(self):
        import os
        self.old = os.environ.get("REGNN_KERNELS")
        os.environ["REGNN_KERNELS"] = "0"

    def __exit__(self, *exc):
        import os
        if self.old is None:
            os.environ.pop("REGNN_KERNELS", None)
        else:
            os.environ["REGNN_KERNELS"] = self.old


def _dgl_relation_attention(g, ws, el, er, negative_slope):
    """R-HGNN's relation attention as the DGL version computed it: (N_s, H, 1) and (N_t, H, 1) logits."""
    import dgl
    import torch.nn.functional as F
    from dgl.nn.functional import edge_softmax
    alpha = edge_softmax(g, F.leaky_relu(dgl.ops.u_add_v(g, el.unsqueeze(-1), er.unsqueeze(-1)), negative_slope))
    return dgl.ops.u_mul_e_sum(g, ws, alpha)


def _bipartite(u, v, num_src: int, num_dst: int):
    import dgl
    return dgl.heterograph({("s", "to", "d"): (torch.as_tensor(u), torch.as_tensor(v))}, {"s": num_src, "d": num_dst})


def _grads(loss, named: dict) -> dict:
    """{g_<name>: d loss / d tensor} for the tensors that received a gradient."""
    ts = list(named.values())
    gs = torch.autograd.grad(loss, ts, allow_unused=True)
    return {f"g_{k}": (g if g is not None else torch.zeros_like(t)) for (k, t), g in zip(named.items(), gs)}


@maker
def make_rhgnn_relation_attention():
    """edge_softmax over u_add_v logits, then u_mul_e_sum, on a bipartite graph (6 sources, 5 destinations, the
    last without in-edges): output, the attention (DGL's edge order) and the gradients of a fixed loss."""
    import dgl
    import torch.nn.functional as F
    from dgl.nn.functional import edge_softmax
    u, v = random_graph(6, 5, 14, seed=1)
    g = _bipartite(u, v, 6, 5)
    ws = torch.randn(6, 3, 4, requires_grad=True)
    el = torch.randn(6, 3, requires_grad=True)
    er = torch.randn(5, 3, requires_grad=True)
    alpha = edge_softmax(g, F.leaky_relu(dgl.ops.u_add_v(g, el.unsqueeze(-1), er.unsqueeze(-1)), 0.2))
    out = dgl.ops.u_mul_e_sum(g, ws, alpha)
    w_out, w_alpha = torch.randn(out.shape), torch.randn(alpha.shape[:2])
    loss = (out * w_out).sum() + (alpha[..., 0] * w_alpha).sum()
    return arrays(src=u, dst=v, ws=ws, el=el, er=er, out=out, alpha=alpha[..., 0], w_out=w_out, w_alpha=w_alpha,
                  **_grads(loss, {"ws": ws, "el": el, "er": er}))


@maker
def make_rhgnn_model():
    """regnn's RHGNN (2 layers, residual, layer norm) with each relation's attention on DGL's ops and its own DGL
    graph: 4 node types, a relation without a reverse, a type no relation ends at, three relations fused at the
    target. Weights p{i} in named_parameters order; logits, representation and every gradient of a fixed loss."""
    from types import SimpleNamespace

    from regnn.data.hetero import HeteroGraph
    from regnn.models.baselines import rhgnn
    edges = {cet: random_graph(RHGNN_COUNTS[cet[0]], RHGNN_COUNTS[cet[2]], 9, seed=20 + i)
             for i, cet in enumerate(RHGNN_RELATIONS)}
    with _torch_backend():
        inputs = rhgnn.RelationGraphs.build(SimpleNamespace(graph=HeteroGraph(edges, RHGNN_COUNTS), target="a"))
    inputs.graphs = {r: _bipartite(*edges[(s, r, t)], RHGNN_COUNTS[s], RHGNN_COUNTS[t]) for s, r, t in RHGNN_RELATIONS}
    feats = {t: torch.randn(n, 3 + i, requires_grad=True) for i, (t, n) in enumerate(RHGNN_COUNTS.items())}
    model = rhgnn.RHGNN(inputs, in_dims={t: x.shape[1] for t, x in feats.items()}, num_classes=3, hidden=4, heads=2,
                        relation_dim=3, num_layers=2, dropout=0.5, residual=True, norm=True).eval()
    params = dict(model.named_parameters())
    with _patched(rhgnn, "relation_attention", _dgl_relation_attention):
        logits, z = model(inputs, feats, embed=True)
    w_logits, w_z = torch.randn(logits.shape), torch.randn(z.shape)
    loss = (logits * w_logits).sum() + (z * w_z).sum()
    named = {**{f"x_{t}": x for t, x in feats.items()}, **{f"p{i}": p for i, p in enumerate(params.values())}}
    return arrays(**_edge_arrays(edges, RHGNN_RELATIONS), logits=logits, z=z, w_logits=w_logits, w_z=w_z,
                  **named, **_grads(loss, named))


def _dgl_complete(module, graph, emb_src, emb_dst, x_src):
    """HGNN-AC's completion attention as the DGL version computed it (graph: a DGL graph of the pairs)."""
    import dgl
    import torch.nn.functional as F
    k_src = torch.einsum("nd,kdh->nkh", emb_src, module.u)
    q_dst = torch.einsum("nkh,khj->nkj", torch.einsum("nd,kdh->nkh", emb_dst, module.u), module.v)
    score = F.leaky_relu(dgl.ops.u_dot_v(graph, k_src, q_dst), 0.2)  # (E, heads, 1)
    if module.training and module.dropout > 0:
        keep = torch.rand(score.shape[0], device=score.device) >= module.dropout
        score = torch.where(keep.view(-1, 1, 1), score, torch.full_like(score, -1e9))
    a = dgl.ops.edge_softmax(graph, score)
    return F.elu(dgl.ops.u_mul_e_sum(graph, x_src.unsqueeze(1), a)).mean(1)


def _dgl_magnn_ac_project(model, inputs, feats):
    """MAGNNAC.project as the DGL version computed it, on inputs.dgl_graphs and inputs.dgl_rebuild."""
    import dgl
    h = {t: model.proj.project(t, feats[t]) for t in model.proj.lins}
    for t, s in inputs.sources.items():
        h[t] = _dgl_complete(model.complete, inputs.dgl_graphs[t], inputs.emb[s], inputs.emb[t], h[s])
    model._aux = None
    if model.training and inputs.rebuild is not None and model.loss_lambda > 0 and model.feats_drop_rate > 0:
        s, g = inputs.rebuild_source, inputs.dgl_rebuild
        hidden = torch.rand(g.num_nodes("s"), device=h[s].device) < model.feats_drop_rate
        src, dst = g.edges()
        sub = dgl.edge_subgraph(g, ~hidden[src] & hidden[dst], relabel_nodes=False)
        rebuilt = _dgl_complete(model.complete, sub, inputs.emb[s], inputs.emb[s], h[s])
        has = sub.in_degrees() > 0
        if has.any():
            model._aux = model.loss_lambda * (h[s][has] - rebuilt[has]).norm(dim=1).mean()
    return h


@maker
def make_magnn_ac_completion():
    """The completion attention (u_dot_v logits, edge dropout drawn in edge order, edge_softmax, u_mul_e_sum) on
    a bipartite graph (7 sources, 6 destinations, the last without in-edges), in training mode after
    torch.manual_seed(7); keep: the edges the dropout kept (edge order). Width 8 (regnn's sampled product)."""
    from regnn.models.baselines.magnn_ac import AttributeCompletion
    u, v = random_graph(7, 6, 20, seed=2)
    module = AttributeCompletion(emb_dim=5, hidden=8, heads=3, dropout=0.4).train()
    emb_src, emb_dst = torch.randn(7, 5, requires_grad=True), torch.randn(6, 5, requires_grad=True)
    x_src = torch.randn(7, 4, requires_grad=True)
    torch.manual_seed(7)
    out = _dgl_complete(module, _bipartite(u, v, 7, 6), emb_src, emb_dst, x_src)
    torch.manual_seed(7)
    keep = torch.rand(u.numel()) >= module.dropout
    w_out = torch.randn(out.shape)
    named = {"emb_src": emb_src, "emb_dst": emb_dst, "x_src": x_src, "u": module.u, "v": module.v}
    return arrays(src=u, dst=v, out=out, keep=keep, w_out=w_out, **named, **_grads((out * w_out).sum(), named))


@maker
def make_magnn_ac_model():
    """regnn's MAGNNAC with its completion and rebuild term on DGL's ops (the graphs as DGL graphs, the rebuild's
    pairs by dgl.edge_subgraph): authors, papers and featureless venues (completed from papers, the rebuild
    through venues). Eval mode: logits, representation, gradients; training mode after torch.manual_seed(5):
    the same and the rebuild term (aux), with the edge dropout at 0.3 and the nn.Dropout layers off (their
    masks come from torch's bernoulli, which draws other masks from the same seed on later torch versions; the
    completion's draws are torch.rand's, which do not change). Weights p{i} in named_parameters order,
    topological embeddings emb_<type>."""
    from types import SimpleNamespace

    from regnn.data.hetero import HeteroGraph
    from regnn.models.baselines import magnn_ac
    edges = magnn_edges()
    relations = list(edges)
    feats = {"author": torch.randn(8, 5), "paper": torch.randn(10, 6), "venue": torch.zeros(3, 4)}
    data = SimpleNamespace(graph=HeteroGraph(edges, MAGNN_COUNTS), target="author", features=feats)
    with _torch_backend():
        inputs = magnn_ac.CompletionInputs.build(data, "cpu", metapaths=MAGNN_METAPATHS, emb_dim=6)
    inputs.emb = {t: e.double() for t, e in inputs.emb.items()}
    inputs.dgl_graphs = {}
    for t, s in inputs.sources.items():  # the pairs as the DGL version built them
        u = torch.cat([edges[c][0] for c in relations if c[0] == s and c[2] == t])
        v = torch.cat([edges[c][1] for c in relations if c[0] == s and c[2] == t])
        pairs = np.unique(torch.stack([u, v], 1).numpy(), axis=0)
        inputs.dgl_graphs[t] = _bipartite(pairs[:, 0], pairs[:, 1], MAGNN_COUNTS[s], MAGNN_COUNTS[t])
    n = MAGNN_COUNTS[inputs.rebuild_source]
    inputs.dgl_rebuild = _bipartite(*inputs.rebuild, n, n)
    model = magnn_ac.MAGNNAC.from_inputs(inputs, {t: x.shape[1] for t, x in feats.items()}, 3, hidden=4, heads=2,
                                        attn_vec_dim=5, dropout=0.3, emb_dim=6, feats_drop_rate=0.4)
    for m in model.modules():  # torch's dropout masks changed after torch 2.2: only the completion's draws stay
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    x = {t: f.clone().requires_grad_(t != "venue") for t, f in feats.items()}
    params = dict(model.named_parameters())
    named = {**{f"x_{t}": x[t] for t in ("author", "paper")}, **{f"p{i}": p for i, p in enumerate(params.values())}}
    out = {}
    with _patched(magnn_ac.MAGNNAC, "project", _dgl_magnn_ac_project):
        for mode in ("eval", "train"):
            model.train(mode == "train")
            torch.manual_seed(5)
            logits, z = model(inputs, x, embed=True)
            aux = model.auxiliary_loss()
            w_logits, w_z = torch.randn(logits.shape), torch.randn(z.shape)
            loss = (logits * w_logits).sum() + (z * w_z).sum() + (aux if aux is not None else 0.0)
            out.update({f"{mode}_logits": logits, f"{mode}_z": z, f"{mode}_w_logits": w_logits, f"{mode}_w_z": w_z},
                       **{f"{mode}_{k}": g for k, g in _grads(loss, named).items()})
            if aux is not None:
                out[f"{mode}_aux"] = aux
    assert "train_aux" in out and "eval_aux" not in out
    return arrays(**_edge_arrays(edges, relations), **named, **out,
                  **{f"emb_{t}": e for t, e in inputs.emb.items()})


@maker
def make_magnn_ac_homogeneous():
    """dgl.to_homogeneous of the MAGNN graph: its edges (src, dst), every node's type id and local id; and the
    topological embedding the DGL version computed from it (emb_<type>, float32 values)."""
    import dgl
    import scipy.sparse as sp
    from sklearn.utils.extmath import randomized_svd
    edges = magnn_edges()
    g = dgl.heterograph(edges, MAGNN_COUNTS)
    hg = dgl.to_homogeneous(g)
    u, v = hg.edges()
    n = hg.num_nodes()
    a = sp.coo_matrix((np.ones(u.numel()), (u.numpy(), v.numpy())), shape=(n, n)).tocsr()
    a = ((a + a.T) > 0).astype(np.float64)
    d = np.asarray(a.sum(1)).ravel()
    inv = sp.diags(np.where(d > 0, 1.0 / np.sqrt(np.maximum(d, 1e-12)), 0.0))
    left, s, _ = randomized_svd(inv @ a @ inv, 6, random_state=0)
    emb = np.zeros((n, 6), dtype=np.float32)
    emb[:, :6] = left * np.sqrt(s)
    ntype, nid = hg.ndata[dgl.NTYPE].numpy(), hg.ndata[dgl.NID].numpy()
    per_type = {}
    for i, t in enumerate(g.ntypes):
        rows = np.flatnonzero(ntype == i)
        per_type[f"emb_{t}"] = torch.from_numpy(emb[rows[np.argsort(nid[rows])]].astype(np.float64))
    return arrays(**_edge_arrays(edges, list(edges)), src=u, dst=v, ntype=hg.ndata[dgl.NTYPE],
                  nid=hg.ndata[dgl.NID], **per_type)


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
        np.savez(OUT / f"dgl_{name}.npz", **data)
        print(f"{OUT}/dgl_{name}.npz: {len(data)} arrays (dgl {sys.modules['dgl'].__version__})")


if __name__ == "__main__":
    main(sys.argv[1:])
