"""The meta-path baselines' ports pinned to DGL (fixtures from scripts/dgl_fixtures.py): HAN's GAT layer and the
whole HAN against DGL's GATConv, Metapath2vec's skip-gram (initial tables, loss, gradients, negative-sampling
distribution) against dgl.nn.MetaPath2Vec, and the meta-path walk against dgl.sampling.random_walk (the same
traces where they are determined, the same step distribution, valid steps, repeatable seeds)."""
from contextlib import contextmanager
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F

from dgl_fixtures import assert_close, load_fixture
from regnn.core.adjacency import Adjacency
from regnn.core.backend import TORCH, choose_backend
from regnn.data.hetero import HeteroGraph
from regnn.models.baselines.han import HAN, GATConv, MetapathGraphs

BACKENDS = [TORCH] + [b for b in [choose_backend("cpu")] if b.kernels is not None]
HAN_METAPATHS = {"APA": ["author->paper", "paper->author"],
                 "APVPA": ["author->paper", "paper->venue", "venue->paper", "paper->author"]}


@contextmanager
def float64():
    """Weights drawn and computed in float64, as the fixtures were."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(before)


def hetero(fx, prefix, num_nodes) -> HeteroGraph:
    rels = {k.split(".")[1] for k in fx if k.startswith(prefix + ".")}
    ends = {"author->paper": ("author", "paper"), "paper->author": ("paper", "author"),
            "paper->venue": ("paper", "venue"), "venue->paper": ("venue", "paper")}
    return HeteroGraph({(ends[r][0], r, ends[r][1]): (fx[f"{prefix}.{r}.0"], fx[f"{prefix}.{r}.1"]) for r in rels},
                       num_nodes)


# -- HAN ---------------------------------------------------------------------------------------------------------

def test_han_gatconv_draws_dgls_initial_weights_under_its_names():
    fx = load_fixture("han_gatconv")
    torch.manual_seed(0)
    state = GATConv(6, 4, 3, activation=F.elu).state_dict()
    assert list(state) == ["attn_l", "attn_r", "bias", "fc.weight"]  # DGL's GATConv's, in its order
    for k, w in state.items():
        assert_close(w, fx[f"init_{k.replace('.', '_')}"], f"initial {k}", tol=0.0)


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.name)
def test_han_gatconv_output_and_gradients_equal_dgls(backend):
    fx = load_fixture("han_gatconv")
    conv = GATConv(6, 4, 3, activation=F.elu).double()
    with torch.no_grad():
        for k, p in conv.named_parameters():
            p.copy_(fx[k.replace(".", "_")])
    adj = Adjacency.from_edges(fx["src"], fx["dst"], None, 7, backend=backend)
    assert int(adj.in_degree[-1]) == 0  # a node without in-edges: activation(bias), as DGL with zero in-degree
    h = fx["h"].clone().requires_grad_()
    out = conv(adj, h)
    assert_close(out, fx["out"], "output")
    (out * fx["r"]).sum().backward()
    assert_close(h.grad, fx["grad_h"], "gradient of h")
    for k, p in conv.named_parameters():
        assert_close(p.grad, fx[f"grad_{k.replace('.', '_')}"], f"gradient of {k}")


def test_han_gatconv_draws_dgls_dropout_masks():
    """Feature dropout, then attention dropout over the edges in edge-id order: a seed gives the masks of DGL's
    GATConv (on destination-sorted edges, as HAN's meta-path graphs, whose edge ids are CSR positions). torch
    draws other masks from one version to the next, so this compares with DGL in the same process, where it is
    installed."""
    dgl = pytest.importorskip("dgl")
    from dgl.nn import GATConv as DGLGATConv
    src, dst = torch.tensor([0, 2, 3, 1, 1, 0, 4, 2, 3]), torch.tensor([0, 0, 0, 1, 2, 3, 3, 4, 4])
    torch.manual_seed(0)
    theirs = DGLGATConv(6, 4, 3, feat_drop=0.5, attn_drop=0.5, activation=F.elu, allow_zero_in_degree=True)
    torch.manual_seed(0)
    ours = GATConv(6, 4, 3, feat_drop=0.5, attn_drop=0.5, activation=F.elu)
    h = torch.randn(6, 6)
    torch.manual_seed(1)
    want = theirs.train()(dgl.graph((src, dst), num_nodes=6), h)
    torch.manual_seed(1)
    got = ours.train()(Adjacency.from_edges(src, dst, None, 6), h)
    assert torch.allclose(got, want, atol=1e-6)
    torch.manual_seed(1)
    assert not torch.allclose(ours.eval()(Adjacency.from_edges(src, dst, None, 6), h), got)  # masks dropped some


def _han_data():
    fx = load_fixture("han_model")
    return fx, SimpleNamespace(graph=hetero(fx, "edges", {"author": 6, "paper": 7, "venue": 2}), target="author")


def _han():
    torch.manual_seed(0)
    return HAN(in_dim=5, target="author", num_classes=3, metapath_names=list(HAN_METAPATHS), hidden=3, heads=2,
               num_layers=2, dropout=0.6, semantic_dim=4)


def test_han_draws_the_committed_models_initial_weights():
    """A seed gives the weights of HAN as it was built on DGL's GATConv, under the same names."""
    fx, _ = _han_data()
    state = _han().state_dict()
    assert list(state) == [k.removeprefix("init.") for k in fx if k.startswith("init.")]
    for k, w in state.items():
        assert_close(w, fx[f"init.{k}"], f"initial {k}", tol=0.0)


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.name)
def test_han_outputs_and_gradients_equal_the_committed_models(backend):
    fx, data = _han_data()
    net = _han().double().eval()
    with torch.no_grad():
        for k, p in net.named_parameters():
            p.copy_(fx[f"param.{k}"])
    graphs = MetapathGraphs.build(data, "cpu", metapaths=HAN_METAPATHS)
    graphs.graphs = {m: g.to("cpu", backend=backend) for m, g in graphs.graphs.items()}
    assert all(g.perm is None for g in graphs.graphs.values())  # destination-major: edge ids are CSR positions
    x = fx["x"].clone().requires_grad_()
    logits, emb = net(graphs, {"author": x}, embed=True)
    assert_close(logits, fx["logits"], "logits")
    assert_close(emb, fx["emb"], "embeddings")
    assert_close(torch.stack(net._beta), fx["beta"], "semantic attention")
    ((logits * fx["r1"]).sum() + (emb * fx["r2"]).sum()).backward()
    assert_close(x.grad, fx["grad_x"], "gradient of the features")
    for k, p in net.named_parameters():
        assert_close(p.grad, fx[f"grad.{k}"], f"gradient of {k}")
