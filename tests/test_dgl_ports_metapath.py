"""The meta-path baselines' ports pinned to DGL (fixtures from tests/make_dgl_fixtures.py): HAN's GAT layer
and the whole HAN against DGL's GATConv, Metapath2vec's skip-gram (initial tables, loss, gradients, negative-sampling
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
from regnn.models.baselines.metapath2vec import (
    SkipGram,
    WalkInputs,
    context_pairs,
    metapath_walk,
    negative_distribution,
    relation_csr,
)
from regnn.models.stack import StackShape

BACKENDS = [TORCH] + [b for b in [choose_backend("cpu")] if b.kernels is not None]
HAN_METAPATHS = {
    "APA": ["author->paper", "paper->author"],
    "APVPA": ["author->paper", "paper->venue", "venue->paper", "paper->author"],
}
M2V_WALK = ["author->paper", "paper->venue", "venue->paper", "paper->author"] * 2


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
    ends = {
        "author->paper": ("author", "paper"),
        "paper->author": ("paper", "author"),
        "paper->venue": ("paper", "venue"),
        "venue->paper": ("venue", "paper"),
    }
    return HeteroGraph(
        {(ends[r][0], r, ends[r][1]): (fx[f"{prefix}.{r}.0"], fx[f"{prefix}.{r}.1"]) for r in rels}, num_nodes
    )


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
    return HAN(
        "author", 5, StackShape(3, 3, 2), metapath_names=list(HAN_METAPATHS), heads=2, dropout=0.6, semantic_dim=4
    )


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


# -- Metapath2vec ------------------------------------------------------------------------------------------------


def _m2v_inputs(fx, prefix="edges", num_nodes=None):
    num_nodes = num_nodes or {"author": 6, "paper": 7, "venue": 2}
    data = SimpleNamespace(graph=hetero(fx, prefix, num_nodes), target="author")
    return WalkInputs.build(data, metapaths={"APVPA": M2V_WALK[:4]}, metapath="APVPA", walk_length=8)


def test_skipgram_draws_dgls_initial_tables_and_numbers_nodes_as_dgl():
    fx = load_fixture("metapath2vec_loss")
    inputs = _m2v_inputs(fx)
    assert inputs.walk == M2V_WALK and inputs.node_types == ["author", "paper", "venue", "paper"] * 2 + ["author"]
    with float64():
        torch.manual_seed(0)
        sg = SkipGram(inputs, 3, 4, 2)
    assert list(sg.offsets.values()) == fx["offsets"].tolist()
    assert list(sg.state_dict()) == ["node_embed.weight", "context_embed.weight"]
    assert_close(sg.node_embed.weight, fx["init_node"], "initial node_embed", tol=0.0)
    assert_close(sg.context_embed.weight, fx["init_context"], "initial context_embed", tol=0.0)
    assert sg.neg_prob.dtype == torch.float64 and sg.neg_prob.sum().item() == pytest.approx(1.0)


def test_negative_distribution_of_dgls_walks_equals_dgls():
    """The constructor's walks (one from every author, one of them ending at once) give DGL's distribution."""
    fx = load_fixture("metapath2vec_loss")
    inputs = _m2v_inputs(fx)
    with float64():
        sg = SkipGram(inputs, 3, 4, 2)
    last = torch.tensor([inputs.num_nodes[t] - 1 for t in inputs.node_types])
    assert (fx["traces"] < 0).any()
    prob = negative_distribution(fx["traces"], sg.walk_offset, last, 15, torch.float64)
    assert_close(prob, fx["neg_prob"], "negative-sampling distribution")


def test_skipgram_loss_and_gradients_equal_dgls():
    """Fixed tables (some scores past the +-10 clamp), DGL's own pairs and negatives: loss and both gradients."""
    fx = load_fixture("metapath2vec_loss")
    with float64():
        sg = SkipGram(_m2v_inputs(fx), 3, 4, 2)
    with torch.no_grad():
        sg.node_embed.weight.copy_(fx["node"])
        sg.context_embed.weight.copy_(fx["context"])
    loss = sg(fx["pos_u"], fx["pos_v"], fx["neg_v"])
    assert_close(loss, fx["loss"], "loss")
    loss.backward()
    assert sg.node_embed.weight.grad.is_sparse  # SparseAdam's input, as DGL's sparse=True
    assert_close(sg.node_embed.weight.grad.to_dense(), fx["grad_node"], "gradient of node_embed")
    assert_close(sg.context_embed.weight.grad.to_dense(), fx["grad_context"], "gradient of context_embed")


def test_context_pairs_are_every_pair_of_valid_walk_nodes_within_the_window():
    traces = load_fixture("metapath2vec_loss")["traces"]  # DGL's walks, one ending at its start
    for window in (1, 3, 8):
        u, v = context_pairs(traces, traces >= 0, window)
        want = sorted(
            (int(t[i]), int(t[j]))
            for t in traces
            for i in range(len(t))
            for j in range(len(t))
            if i != j and abs(i - j) <= window and t[i] >= 0 and t[j] >= 0
        )
        assert sorted(zip(u.tolist(), v.tolist())) == want


def test_skipgram_negatives_follow_the_negative_distribution():
    fx = load_fixture("metapath2vec_loss")
    torch.manual_seed(0)
    sg = SkipGram(_m2v_inputs(fx), 3, 4, 2)
    u, v, neg = sg.sample(torch.arange(6).repeat(400))
    assert neg.shape == (u.numel(), 2) and u.shape == v.shape
    freq = torch.bincount(neg.flatten(), minlength=15).double() / neg.numel()
    p = sg.neg_prob.double()
    assert (freq[p == 0] == 0).all()
    assert ((freq - p).abs() <= 5 * (p * (1 - p) / neg.numel()).sqrt() + 1e-12).all()


# -- the meta-path walk ------------------------------------------------------------------------------------------


def test_determined_walks_and_dead_ends_equal_dgls():
    """At most one out-edge per node and relation: every trace is determined, and must be DGL's, -1 padding
    after a paper without venue (author 3) and from an author without paper (author 4) included."""
    fx = load_fixture("metapath_walk")
    inputs = _m2v_inputs(fx, "fixed", {"author": 6, "paper": 5, "venue": 2})
    for seed in (0, 1):
        traces = metapath_walk(inputs.steps, torch.arange(6), torch.Generator().manual_seed(seed))
        assert torch.equal(traces, fx["traces"])
    assert (fx["traces"][3, 2:] == -1).all() and (fx["traces"][4, 1:] == -1).all()


def test_walk_steps_are_uniform_over_out_edges_as_dgls():
    """Author 0's out-edges go to papers 0, 1 and 1 again: paper 1 is drawn twice as often, as by DGL."""
    fx = load_fixture("metapath_walk")
    inputs = _m2v_inputs(fx, "branching", {"author": 6, "paper": 5, "venue": 2})
    n = 30000
    ours = torch.bincount(
        metapath_walk(inputs.steps[:1], torch.zeros(n, dtype=torch.int64), torch.Generator().manual_seed(0))[:, 1],
        minlength=5,
    )
    theirs = fx["first_steps"]
    assert ours[2:].sum() == 0 and theirs[2:].sum() == 0 and ours.sum() == theirs.sum() == n
    p_ours, p_theirs = ours[1].item() / n, theirs[1].item() / n
    sd = (2 / 3 * 1 / 3 / n) ** 0.5
    assert abs(p_ours - 2 / 3) < 5 * sd and abs(p_theirs - 2 / 3) < 5 * sd and abs(p_ours - p_theirs) < 7 * sd


def test_walks_follow_edges_of_each_steps_relation_and_end_only_at_dead_ends():
    fx = load_fixture("metapath2vec_loss")
    inputs = _m2v_inputs(fx)
    traces = metapath_walk(inputs.steps, torch.arange(6).repeat(50), torch.Generator().manual_seed(3))
    g = hetero(fx, "edges", {"author": 6, "paper": 7, "venue": 2})
    assert traces.shape == (300, len(M2V_WALK) + 1)
    for i, rel in enumerate(M2V_WALK):
        here, there = traces[:, i], traces[:, i + 1]
        edges = set(zip(*(x.tolist() for x in g.edges(etype=rel))))
        alive = here >= 0
        assert (there[~alive] == -1).all()  # once ended, always ended
        steps = set(zip(here[alive & (there >= 0)].tolist(), there[alive & (there >= 0)].tolist()))
        assert steps <= edges
        degree = g.out_degrees(rel)
        assert torch.equal(there[alive] < 0, degree[here[alive]] == 0)  # it ends exactly at dead ends
    assert (traces[:, 1:] == -1).any() and (traces[:, -1] >= 0).any()


def test_walks_repeat_for_a_seed_and_differ_between_seeds():
    inputs = _m2v_inputs(load_fixture("metapath2vec_loss"))
    starts = torch.arange(6).repeat(20)
    walk = lambda seed: metapath_walk(inputs.steps, starts, torch.Generator().manual_seed(seed))  # noqa: E731
    assert torch.equal(walk(5), walk(5)) and not torch.equal(walk(5), walk(6))
    torch.manual_seed(2)
    a = SkipGram(inputs, 3, 4, 2)
    torch.manual_seed(2)
    b = SkipGram(inputs, 3, 4, 2)
    assert torch.equal(a.neg_prob, b.neg_prob)
    assert all(torch.equal(x, y) for x, y in zip(a.sample(starts), b.sample(starts)))


def test_relation_csr_keeps_parallel_edges():
    g = HeteroGraph({("a", "ab", "b"): (torch.tensor([2, 0, 2, 2]), torch.tensor([1, 0, 1, 0]))}, {"a": 4, "b": 2})
    indptr, indices = relation_csr(g, "ab")
    assert indptr.tolist() == [0, 1, 1, 4, 4] and indices.tolist() == [0, 1, 1, 0]
