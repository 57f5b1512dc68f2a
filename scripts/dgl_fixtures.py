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
