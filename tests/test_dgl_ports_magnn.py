"""R-HGNN's relation attention and MAGNN-AC's attribute completion (and their whole models) against DGL's own ops,
in float64, from the fixtures tests/make_dgl_fixtures.py writes with DGL (tests/fixtures/dgl_*.npz): outputs
and the gradients of a fixed loss with respect to the inputs and every parameter agree to 1e-10, on the torch path and
on the fused kernels where they are built. The per-edge tensors of an Adjacency are in destination order; the
attention and the edge dropout are checked in DGL's edge order too."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from dgl_fixtures import assert_close, load_fixture
from regnn.core.adjacency import Adjacency
from regnn.core.backend import TORCH, choose_backend
from regnn.data.hetero import HeteroGraph
from regnn.models.baselines.spectral import canonical_basis
from regnn.models.stack import StackShape

# the graphs of the fixtures (tests/make_dgl_fixtures.py: RHGNN_*, MAGNN_*), rebuilt from their edge arrays
RHGNN_COUNTS = {"a": 6, "b": 5, "c": 4, "d": 3}
RHGNN_RELATIONS = [
    ("a", "a->b", "b"),
    ("a", "a->c", "c"),
    ("b", "b->a", "a"),
    ("b", "b->c", "c"),
    ("c", "c->a", "a"),
    ("d", "d->a", "a"),
]
MAGNN_COUNTS = {"author": 8, "paper": 10, "venue": 3}
MAGNN_RELATIONS = [
    ("author", "author->paper", "paper"),
    ("paper", "paper->author", "author"),
    ("paper", "paper->venue", "venue"),
    ("venue", "venue->paper", "paper"),
]
MAGNN_METAPATHS = {
    "APA": ["author->paper", "paper->author"],
    "APVPA": ["author->paper", "paper->venue", "venue->paper", "paper->author"],
}

KERNELS = choose_backend("cpu")
BACKENDS = [
    pytest.param(TORCH, id="torch"),
    pytest.param(
        KERNELS, id="kernels", marks=pytest.mark.skipif(KERNELS.kernels is None, reason="fused kernels not built here")
    ),
]


@pytest.fixture
def float64():
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)  # as the fixtures were made: random draws included
    yield
    torch.set_default_dtype(before)


@pytest.fixture(params=["0", "1"], ids=["torch", "kernels"])
def kernels_env(request, monkeypatch):
    """REGNN_KERNELS for the graphs a model's inputs build."""
    if request.param == "1" and KERNELS.kernels is None:
        pytest.skip("fused kernels not built here")
    monkeypatch.setenv("REGNN_KERNELS", request.param)


def hetero(fx, relations, counts) -> HeteroGraph:
    return HeteroGraph({cet: (fx[f"e{i}_src"], fx[f"e{i}_dst"]) for i, cet in enumerate(relations)}, counts)


def leaf(t: torch.Tensor) -> torch.Tensor:
    return t.clone().requires_grad_(True)


def load_params(model, fx, prefix="p"):
    params = list(model.parameters())
    assert f"{prefix}{len(params)}" not in fx and f"{prefix}{len(params) - 1}" in fx, "parameter count differs"
    with torch.no_grad():
        for i, p in enumerate(params):
            assert p.shape == fx[f"{prefix}{i}"].shape, f"parameter {i}: {tuple(p.shape)}"
            p.copy_(fx[f"{prefix}{i}"])
    return params


def in_edge_order(adj: Adjacency, per_edge: torch.Tensor) -> torch.Tensor:
    """CSR-ordered per-edge values back in the order the edges were given (DGL's edge ids)."""
    if adj.perm is None:
        return per_edge
    out = torch.empty_like(per_edge)
    out[adj.perm] = per_edge
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_rhgnn_relation_attention_matches_dgl(backend, float64):
    from regnn.models.baselines.rhgnn import relation_attention

    fx = load_fixture("rhgnn_relation_attention")
    adj = Adjacency.from_edges(fx["src"], fx["dst"], None, 6, 5, backend=backend)
    assert adj.perm is not None  # the given order is not the destination order: the mapping is exercised
    ws, el, er = leaf(fx["ws"]), leaf(fx["el"]), leaf(fx["er"])
    out = relation_attention(adj, ws, el, er, 0.2)
    alpha = in_edge_order(adj, adj.edge_softmax(F.leaky_relu(adj.u_add_v(el, er), 0.2)))
    assert_close(out, fx["out"], "output")
    assert_close(alpha, fx["alpha"], "attention (DGL's edge order)")
    assert not out[-1].any()  # the destination without in-edges
    loss = (out * fx["w_out"]).sum() + (alpha * fx["w_alpha"]).sum()
    for name, g in zip(("ws", "el", "er"), torch.autograd.grad(loss, [ws, el, er])):
        assert_close(g, fx[f"g_{name}"], f"d loss / d {name}")


def test_rhgnn_model_matches_dgl(kernels_env, float64):
    from regnn.models.baselines.rhgnn import RHGNN, RelationGraphs

    fx = load_fixture("rhgnn_model")
    inputs = RelationGraphs.build(SimpleNamespace(graph=hetero(fx, RHGNN_RELATIONS, RHGNN_COUNTS), target="a"))
    assert inputs.source_key["b->c"] is None and not inputs.into("d")  # the fallbacks are covered
    feats = {t: leaf(fx[f"x_{t}"]) for t in RHGNN_COUNTS}
    in_dims = {t: x.shape[1] for t, x in feats.items()}
    model = RHGNN(inputs, in_dims, StackShape(4, 3, 2), heads=2, relation_dim=3, dropout=0.5, residual=True, norm=True)
    model = model.eval()
    params = load_params(model, fx)
    logits, z = model(inputs, feats, embed=True)
    assert_close(logits, fx["logits"], "logits")
    assert_close(z, fx["z"], "representation")
    loss = (logits * fx["w_logits"]).sum() + (z * fx["w_z"]).sum()
    names = [f"x_{t}" for t in feats] + [f"p{i}" for i in range(len(params))]
    for name, g in zip(names, torch.autograd.grad(loss, list(feats.values()) + params, allow_unused=True)):
        assert_close(g if g is not None else torch.zeros_like(fx[name]), fx[f"g_{name}"], f"d loss / d {name}")


@pytest.mark.parametrize("backend", BACKENDS)
def test_magnn_ac_completion_matches_dgl(backend, float64):
    from regnn.models.baselines.magnn_ac import AttributeCompletion

    fx = load_fixture("magnn_ac_completion")
    adj = Adjacency.from_edges(fx["src"], fx["dst"], None, 7, 6, backend=backend)
    assert adj.perm is not None
    module = AttributeCompletion(emb_dim=5, hidden=8, heads=3, dropout=0.4).train()
    load_params(module, {"p0": fx["u"], "p1": fx["v"]})
    torch.manual_seed(7)
    keep = torch.rand(adj.indices.numel()) >= module.dropout
    assert torch.equal(keep, fx["keep"].bool()), "torch's generator draws other numbers than when the fixture was made"
    assert 0 < int(keep.sum()) < keep.numel()
    emb_src, emb_dst, x_src = leaf(fx["emb_src"]), leaf(fx["emb_dst"]), leaf(fx["x_src"])
    torch.manual_seed(7)
    out = module(adj, emb_src, emb_dst, x_src)
    assert_close(out, fx["out"], "completed vectors")
    loss = (out * fx["w_out"]).sum()
    named = {"emb_src": emb_src, "emb_dst": emb_dst, "x_src": x_src, "u": module.u, "v": module.v}
    for (name, _), g in zip(named.items(), torch.autograd.grad(loss, list(named.values()))):
        assert_close(g, fx[f"g_{name}"], f"d loss / d {name}")


def test_magnn_ac_model_matches_dgl(kernels_env, float64):
    """Both modes: eval (no randomness) and training, where the completion's edge dropout, the hidden nodes, the
    rebuild's pairs and its edge dropout must be drawn as the DGL version drew them (torch.rand, whose numbers
    from a seed are the same on every torch here; nn.Dropout's are not, so those layers are off)."""
    from regnn.models.baselines.magnn_ac import MAGNNAC, CompletionInputs

    fx = load_fixture("magnn_ac_model")
    feats = {"author": fx["x_author"], "paper": fx["x_paper"], "venue": torch.zeros(3, 4)}
    data = SimpleNamespace(graph=hetero(fx, MAGNN_RELATIONS, MAGNN_COUNTS), target="author", features=feats)
    inputs = CompletionInputs.build(data, "cpu", metapaths=MAGNN_METAPATHS, emb_dim=6)
    assert inputs.sources == {"venue": "paper"} and inputs.rebuild_source == "paper"
    inputs.emb = {t: fx[f"emb_{t}"] for t in MAGNN_COUNTS}  # the SVD's, as computed beside DGL
    model = MAGNNAC.from_inputs(
        inputs,
        {t: x.shape[1] for t, x in feats.items()},
        3,
        hidden=4,
        num_layers=1,
        heads=2,
        attn_vec_dim=5,
        dropout=0.3,
        emb_dim=6,
        feats_drop_rate=0.4,
        loss_lambda=0.5,
        encoder="rotate",
    )
    for m in model.modules():  # as in the fixture: torch's dropout masks differ between torch versions
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    assert model.complete.dropout == 0.3
    params = load_params(model, fx)
    x = {t: leaf(f) if t != "venue" else f for t, f in feats.items()}
    names = ["x_author", "x_paper"] + [f"p{i}" for i in range(len(params))]
    for mode in ("eval", "train"):
        model.train(mode == "train")
        torch.manual_seed(5)
        logits, z = model(inputs, x, embed=True)
        aux = model.auxiliary_loss()
        assert_close(logits, fx[f"{mode}_logits"], f"{mode} logits")
        assert_close(z, fx[f"{mode}_z"], f"{mode} representation")
        assert (aux is not None) == (mode == "train")
        loss = (logits * fx[f"{mode}_w_logits"]).sum() + (z * fx[f"{mode}_w_z"]).sum()
        if aux is not None:
            assert_close(aux, fx["train_aux"], "rebuild term")
            loss = loss + aux
        grads = torch.autograd.grad(loss, [x["author"], x["paper"]] + params, allow_unused=True)
        for name, g in zip(names, grads):
            want = fx[f"{mode}_g_{name}"]
            assert_close(g if g is not None else torch.zeros_like(want), want, f"{mode}: d loss / d {name}")


def test_homogeneous_numbering_is_dgls():
    from regnn.models.baselines.magnn_ac import homogeneous_edges, topological_embedding

    fx = load_fixture("magnn_ac_homogeneous")
    g = hetero(fx, MAGNN_RELATIONS, MAGNN_COUNTS)
    src, dst, offsets = homogeneous_edges(g)
    assert torch.equal(src, fx["src"]) and torch.equal(dst, fx["dst"])
    ids = torch.tensor([offsets[g.ntypes[t]] + i for t, i in zip(fx["ntype"].tolist(), fx["nid"].tolist())])
    assert torch.equal(ids, torch.arange(g.num_nodes()))  # DGL's node i is (ntype[i], nid[i])
    emb = topological_embedding(g, 6, 0)
    ours = torch.cat([emb[t] for t in g.ntypes]).double()
    theirs = torch.cat([fx[f"emb_{t}"] for t in g.ntypes])
    assert ours.shape == theirs.shape
    # what the SVD defines (U S U^T) is the DGL version's; its basis was the machine's, ours is the canonical one
    assert torch.allclose(ours @ ours.T, theirs @ theirs.T, atol=1e-5)
    u = theirs.numpy() / np.linalg.norm(theirs.numpy(), axis=0)  # U (unit columns) and S
    s = np.linalg.norm(theirs.numpy(), axis=0) ** 2
    groups = [(0, 4), (4, 6)]  # two components, bipartite: singular values 1 (four times) and 0.874 (twice)
    assert all(np.allclose(s[a:b], s[a], atol=1e-6) for a, b in groups) and s[3] - s[4] > 0.1
    canonical = np.concatenate([canonical_basis(u[:, a:b]) * np.sqrt(s[a:b].mean()) for a, b in groups], axis=1)
    assert np.allclose(ours.numpy(), canonical, atol=1e-5)
