"""The RE layers against dense hand computations, and the compute core against float64 fixtures written from
DGL's GATConv and edge ops (tests/make_dgl_fixtures.py)."""

import numpy as np
import pytest
import torch

from dgl_fixtures import assert_close, load_fixture
from dgl_fixtures import random_multigraph as random_graph
from regnn.core.adjacency import Adjacency
from regnn.core.backend import TORCH, Backend, choose_backend
from regnn.nn import REGATConv, REGCNConv
from regnn.nn.attention import AttentionOptions


def without_in_edges_of(node, src, dst, rel):
    keep = dst != node
    return src[keep], dst[keep], rel[keep]


def csc_csr_arrays(src, dst, num_src, num_dst):
    """CSC (in-edges of every destination) and CSR (out-edges of every source) arrays with edge ids, each node's
    edges by increasing id, computed apart from Adjacency.from_edges (numpy's lexsort)."""
    out = []
    for key, other, n in ((dst, src, num_dst), (src, dst, num_src)):
        eid = torch.from_numpy(np.lexsort((np.arange(key.numel()), key.numpy())))
        indptr = torch.cat([torch.zeros(1, dtype=torch.long), torch.bincount(key, minlength=n).cumsum(0)])
        out += [indptr, other[eid], eid]
    return out


def adjacency_from_arrays(src, dst, rel, n, backend=None):
    """The Adjacency of the graph (src, dst, rel) on n nodes built from its CSC/CSR arrays."""
    return Adjacency.from_arrays(n, n, *csc_csr_arrays(src, dst, n, n), rel, backend=backend)


def dense(n, src, dst, w):
    a = torch.zeros(n, n, dtype=w.dtype)
    a.index_put_((dst, src), w, accumulate=True)  # a[v, u]: weight of u -> v (parallel edges add up)
    return a


@pytest.mark.parametrize("dim", [3, 5, 16, 64])  # torch path: gathered rows below 8 columns, an SDDMM from 8;
@pytest.mark.parametrize("shuffle", [False, True])  # kernels: compile-time widths (3, 16, 64), runtime width (5)
@pytest.mark.parametrize("norm", ["both", "right", "none"])
def test_weighted_normalisation_matches_dense_computation(norm, shuffle, dim, backend):
    n = 12
    src, dst, rel = random_graph(n=n, shuffle=shuffle)
    adj = Adjacency.from_edges(src, dst, rel, n, backend=backend)
    # weights below and above 1 so that some degrees fall under the clamp at 1
    alpha = torch.tensor([[0.05], [0.3], [1.7], [2.5]], dtype=torch.float64, requires_grad=True)
    h = torch.randn(n, dim, dtype=torch.float64, requires_grad=True)

    def reference(h, alpha):
        a = dense(n, src, dst, alpha[rel, 0])
        d = a.sum(1).clamp(min=1)
        if norm == "both":
            return d.pow(-0.5)[:, None] * (a @ (d.pow(-0.5)[:, None] * h))
        if norm == "right":
            return (a @ h) / d[:, None]
        return a @ h

    got = adj.normalized_spmm(h, alpha, norm)
    want = reference(h, alpha)
    torch.testing.assert_close(got, want)
    go = torch.randn_like(want)
    g_got = torch.autograd.grad(got, (h, alpha), go)
    g_want = torch.autograd.grad(want, (h, alpha), go)
    for a, b in zip(g_got, g_want):
        torch.testing.assert_close(a, b)
    # the edge values are kept per alpha: other weights (one changed) must not reuse them
    alpha2 = alpha.detach() * torch.tensor([[1.0], [1.0], [1.0], [1.5]], dtype=torch.float64)
    for a_ in (alpha2, alpha.detach(), alpha2):
        torch.testing.assert_close(adj.normalized_spmm(h, a_, norm), reference(h, a_))


def test_unweighted_path_equals_all_ones_weights(backend):
    adj = Adjacency.from_edges(*random_graph(seed=4), 12, backend=backend)
    h = torch.randn(12, 3)
    torch.testing.assert_close(adj.normalized_spmm(h, None), adj.normalized_spmm(h, torch.ones(4, 1)))


def test_gcn_layer_with_weight_matches_dense(backend):
    n = 10
    src, dst, rel = random_graph(n=n, e=30, num_rel=3, seed=5)
    layer = REGCNConv(6, 4, activation="elu")
    torch.nn.init.normal_(layer.bias)
    alpha = torch.rand(3, 1) + 0.5
    h = torch.randn(n, 6)
    a = dense(n, src, dst, alpha[rel, 0])
    d = a.sum(1).clamp(min=1).pow(-0.5)[:, None]
    want = torch.nn.functional.elu(d * (a @ (d * h)) @ layer.weight + layer.bias)
    torch.testing.assert_close(layer(h, Adjacency.from_edges(src, dst, rel, n, backend=backend), alpha=alpha), want)


def test_gat_layer_with_zero_relation_weights_equals_dgl_gatconv(backend):
    """With every relation weight 0 the RE-GAT layer is DGL's GATConv (no bias, zero in-degree allowed): output
    and gradients (features and every parameter) in float64, from the gatconv fixture."""
    fx = load_fixture("gatconv")
    adj = Adjacency.from_edges(fx["src"], fx["dst"], fx["rel"], 15, backend=backend)
    ours = REGATConv(7, 5, heads=3, options=AttentionOptions(False, 0.2)).double()
    with torch.no_grad():
        for name, p in ours.named_parameters():
            p.copy_(fx[f"param.{name}"])
    h = fx["in.h"].clone().requires_grad_()
    out = ours(h, adj, alpha=torch.zeros(2, 3, dtype=torch.float64)).view(-1, 3, 5)
    assert_close(out, fx["out"], "output")
    (out * fx["G"]).sum().backward()
    assert_close(h.grad, fx["grad.h"], "gradient of h")
    for name, p in ours.named_parameters():
        assert_close(p.grad, fx[f"grad.param.{name}"], f"gradient of {name}")
    # the plain layer (no weights) holds every weight at 1, as the authors' --no_re: + 1 before the LeakyReLU
    with torch.no_grad():
        plain = ours(h, adj).view(-1, 3, 5)
        torch.testing.assert_close(plain, ours(h, adj, alpha=torch.ones(2, 3, dtype=torch.float64)).view(-1, 3, 5))
    assert not torch.allclose(plain, fx["out"], rtol=1e-3, atol=1e-4)


def test_gat_relation_weights_are_added_to_the_logits(backend):
    n = 8
    src, dst, rel = random_graph(n=n, e=30, num_rel=2, seed=7, shuffle=False)
    conv = REGATConv(4, 3, heads=2, options=AttentionOptions(False, 0.2))
    h = torch.randn(n, 4)
    alpha = torch.tensor([[0.5, 2.0], [3.0, 0.1]])
    z = conv.fc(h).view(n, 2, 3)
    el, er = (z * conv.attn_l).sum(-1), (z * conv.attn_r).sum(-1)
    s = torch.nn.functional.leaky_relu(el[src] + er[dst] + alpha[rel], 0.2)
    want = torch.zeros(n, 2, 3)
    for v in range(n):
        m = dst == v
        if m.any():
            a = torch.softmax(s[m], 0)  # (in-edges, heads)
            want[v] = (a[:, :, None] * z[src[m]]).sum(0)
    torch.testing.assert_close(
        conv(h, Adjacency.from_edges(src, dst, rel, n, backend=backend), alpha=alpha).view(n, 2, 3),
        want,
        rtol=1e-5,
        atol=1e-6,
    )


def kernels_or_skip():
    kernels = choose_backend("cpu", kernels=True).kernels
    if kernels is None:
        pytest.skip("the fused kernels could not be built here")
    return kernels


def random_graph_or_block(block: bool, seed: int, n_src=20, e=90):
    """A random graph of n_src nodes, or a block with n_src sources and 8 destinations; its Adjacency; a generator."""
    g_ = torch.Generator().manual_seed(seed)
    n_dst = 8 if block else n_src
    src, dst = torch.randint(0, n_src, (e,), generator=g_), torch.randint(0, n_dst, (e,), generator=g_)
    return Adjacency.from_edges(src, dst, torch.zeros(e, dtype=torch.long), n_src, n_dst), n_dst, g_


@pytest.mark.parametrize("dim,learn_alpha", [(64, True), (5, True), (64, False)])  # compile-time/runtime width
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("block,norm", [(False, "both"), (False, "right"), (True, "right"), (True, "none")])
def test_gcn_aggregation_kernels_match_the_torch_path(block, norm, threads, dim, learn_alpha, set_threads):
    """Output and gradients (features and relation weights, the degree terms included) of the weighted GCN
    aggregation, fused kernels vs the torch path, in float64, on a graph and on a block with more sources than
    destinations, at one and two threads (each thread adds up its own pieces); also with fixed weights."""
    kernels = kernels_or_skip()
    adj, n_dst, g_ = random_graph_or_block(block, seed=5, e=120)
    adj.rel = torch.randint(0, 4, adj.indices.shape, generator=g_)  # four relations (before kernel arrays exist)
    h0 = torch.randn(adj.num_src, dim, dtype=torch.float64, generator=g_)
    alpha0 = torch.rand(4, 1, dtype=torch.float64, generator=g_) * 1.5  # degrees on both sides of the clamp at 1
    G = torch.randn(n_dst, dim, dtype=torch.float64, generator=g_)
    set_threads(threads)
    results = []
    for use_kernels in (True, False):
        adj.backend = Backend(kernels) if use_kernels else TORCH
        h, alpha = h0.clone().requires_grad_(), alpha0.clone().requires_grad_(learn_alpha)
        out = adj.normalized_spmm(h, alpha, norm)
        (out * G).sum().backward()
        results.append((out.detach(), h.grad, alpha.grad if learn_alpha else torch.ones(1)))
    for got, want in zip(*results):
        torch.testing.assert_close(got, want)
    assert results[0][2].abs().min() > 0  # every relation has a gradient
    assert results[0][1][n_dst:].abs().sum() > 0 or not block


# runtime widths below and beyond the dot product's 8 lanes, and a compile-time width
@pytest.mark.parametrize("dim", [5, 12, 64])
@pytest.mark.parametrize("block", [False, True])
def test_attention_aggregation_kernels_match_the_torch_path(dim, block):
    """Output and gradients (features and attention scores) of the multi-head aggregation, fused kernels vs the
    per-head CSR products, in float64, on a graph and on a block with more sources than destinations."""
    from regnn.core import attention_ops

    kernels = kernels_or_skip()
    adj, n_dst, g_ = random_graph_or_block(block, seed=9)
    n_src, e, heads = 20, 90, 3
    z0 = torch.randn(n_src, heads, dim, dtype=torch.float64, generator=g_)
    s0 = torch.randn(e, heads, dtype=torch.float64, generator=g_)
    G = torch.randn(n_dst, heads, dim, dtype=torch.float64, generator=g_)
    results = []
    for use_kernels in (True, False):
        adj.backend = Backend(kernels) if use_kernels else TORCH
        z, s = z0.clone().requires_grad_(), s0.clone().requires_grad_()
        out = attention_ops.attend(adj, z, s, torch.nn.Identity())
        (out * G).sum().backward()
        results.append((out.detach(), z.grad, s.grad))
    for got, want in zip(*results):
        torch.testing.assert_close(got, want)
    assert results[0][1][n_dst:].abs().sum() > 0 or not block  # sources beyond the destinations get gradients


def test_float32_softmax_kernel_is_as_close_as_float32_allows():
    """The float32 softmax (its polynomial exponential, its sums, its division) against the float64 softmax of
    the same logits, over rows of 1 to 3000 in-edges: logits are multiples of 2^-10 in [-100, 100], so that
    subtracting the row's maximum is exact in float32 and what is left is the kernel's own error. Every
    coefficient over 1e-30 within 5e-7 of its value relatively (4 float32 ulp); the smaller ones, near float32's
    underflow (the polynomial gives 0 below e^-87.3), within 1e-30."""
    kernels = kernels_or_skip()
    g_ = torch.Generator().manual_seed(3)
    deg = torch.cat([torch.arange(1, 40), torch.tensor([3000])])
    indptr = torch.cat([torch.zeros(1, dtype=torch.long), deg.cumsum(0)])
    score = torch.randint(-100 * 1024, 100 * 1024, (int(deg.sum()), 3), generator=g_).float() / 1024
    got = kernels.edge_softmax(indptr, score).double()
    want = kernels.edge_softmax(indptr, score.double())
    normal = want > 1e-30
    assert ((got - want).abs()[normal] <= 5e-7 * want[normal]).all()
    assert ((got - want).abs()[~normal] <= 1e-30).all()
    assert normal.sum() > 0.2 * got.numel() and (~normal).sum() > 0.2 * got.numel()  # the range was exercised


@pytest.mark.parametrize("relations", [False, True])
@pytest.mark.parametrize("block", [False, True])
def test_gat_attention_kernel_gives_the_unfused_numbers(block, relations):
    """GAT's attention softmax(LeakyReLU(el[u] + er[v] + w_r)) in one fused pass: the same numbers, bit for bit, as
    the gathers, sums, LeakyReLU and softmax kernel it replaces, for the coefficients and the gradients of el, er
    and the relation weights (or the constant 1 without them); close to the torch path; in float32 and float64,
    on a graph and on a block, with logits on both sides of the LeakyReLU."""
    from regnn.core import attention_ops

    kernels = kernels_or_skip()
    adj, n_dst, g_ = random_graph_or_block(block, seed=11)
    adj.rel = torch.randint(0, 3, adj.indices.shape, generator=g_)
    heads = 3
    for dtype in (torch.float64, torch.float32):
        el0 = torch.randn(adj.num_src, heads, dtype=dtype, generator=g_)
        er0 = torch.randn(n_dst, heads, dtype=dtype, generator=g_)
        alpha0 = torch.rand(3, heads, dtype=dtype, generator=g_) if relations else None
        G = torch.randn(adj.indices.shape[0], heads, dtype=dtype, generator=g_)
        results = []
        for way in ("fused", "unfused", "torch"):
            adj.backend = TORCH if way == "torch" else Backend(kernels)
            el, er = el0.clone().requires_grad_(), er0.clone().requires_grad_()
            alpha = None if alpha0 is None else alpha0.clone().requires_grad_()
            if way == "unfused":
                score = attention_ops.weigh(adj.u_add_v(el, er), adj, alpha)
                a = adj.edge_softmax(torch.nn.functional.leaky_relu(score, 0.2))
            else:
                a = attention_ops.gat_attention(adj, el, er, alpha, 0.2)
            (a * G).sum().backward()
            results.append([a.detach(), el.grad, er.grad] + ([] if alpha is None else [alpha.grad]))
        fused, unfused, by_torch = results
        for got, same, close in zip(fused, unfused, by_torch):
            assert torch.equal(got, same)
            torch.testing.assert_close(got, close)
        assert fused[1].abs().sum() > 0 and fused[2].abs().sum() > 0


@pytest.mark.parametrize("dim", [5, 64])
@pytest.mark.parametrize("block", [False, True])
def test_gatv2_score_kernels_match_the_torch_path(dim, block):
    """GATv2 logits attn . LeakyReLU(zs[u] + zd[v]) and their gradients (zs, zd, attn): fused kernels (no
    per-edge feature intermediate) vs DGL's u_add_v and torch's elementwise ops, in float64, on a graph and on a
    block; values straddle 0 so both sides of the LeakyReLU are exercised."""
    from regnn.core import attention_ops

    kernels = kernels_or_skip()
    adj, n_dst, g_ = random_graph_or_block(block, seed=11)
    n_src, e, heads = 20, 90, 3
    zs0 = torch.randn(n_src, heads, dim, dtype=torch.float64, generator=g_)
    zd0 = torch.randn(n_dst, heads, dim, dtype=torch.float64, generator=g_)
    a0 = torch.randn(1, heads, dim, dtype=torch.float64, generator=g_)
    G = torch.randn(e, heads, dtype=torch.float64, generator=g_)
    results = []
    for use_kernels in (True, False):
        adj.backend = Backend(kernels) if use_kernels else TORCH
        zs, zd, a = (x.clone().requires_grad_() for x in (zs0, zd0, a0))
        s = attention_ops.v2_scores(adj, zs, zd, a, 0.2)
        (s * G).sum().backward()
        results.append((s.detach(), zs.grad, zd.grad, a.grad))
    for got, want in zip(*results):
        torch.testing.assert_close(got, want)
    # the hand formula on a few edges (CSR order)
    u, v = adj.indices, adj.dst_of
    t = torch.nn.functional.leaky_relu(zs0[u[:5]] + zd0[v[:5]], 0.2)
    torch.testing.assert_close(results[0][0][:5], (t * a0).sum(-1))


def aggregation_results(adjs):
    results = []
    for a in adjs:
        h = torch.randn(14, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0)).requires_grad_()
        alpha = torch.tensor([[0.5], [2.0], [1.5], [0.3]], dtype=torch.float64, requires_grad=True)
        out = a.normalized_spmm(h, alpha, "both")
        out.pow(2).sum().backward()
        results.append((out.detach(), h.grad, alpha.grad))
    for other in results[1:]:
        for got, want in zip(other, results[0]):
            torch.testing.assert_close(got, want)


def test_adjacencies_from_arrays_and_from_edges_agree(backend):
    """from_arrays (CSC/CSR arrays) and from_edges (edge arrays in any order) give the same aggregation and
    gradients, including the narrow SDDMM of the torch path."""
    src, dst, rel = random_graph(n=14, e=50, seed=11)
    aggregation_results(
        (Adjacency.from_edges(src, dst, rel, 14, backend=backend), adjacency_from_arrays(src, dst, rel, 14, backend))
    )


def test_an_adjacency_from_a_dgl_graph_agrees_with_one_from_edges(backend):
    """An Adjacency still takes a DGL graph (custom graphs in DGL's format): the same as from its edge arrays."""
    dgl = pytest.importorskip("dgl", reason="builds an Adjacency from a DGL graph; DGL is optional")
    src, dst, rel = random_graph(n=14, e=50, seed=11)
    g = dgl.graph((src, dst), num_nodes=14)
    g.edata["rel"] = rel
    aggregation_results((Adjacency.from_edges(src, dst, rel, 14, backend=backend), Adjacency(g, backend=backend)))


@pytest.mark.parametrize("heads", [1, 3])
def test_edge_ops_equal_dgls(heads, backend):
    """u_add_v and edge_softmax (torch's segment ops or the fused kernels) equal DGL's ops (the edge_ops fixture),
    values and gradients, in float64, on a multigraph with a node that has no in-edges (its softmax row is empty)."""
    fx = load_fixture("edge_ops")
    adj = Adjacency.from_edges(fx["src"], fx["dst"], None, 14, backend=backend)
    assert adj.perm is None  # edges sorted by destination: DGL's edge order is the CSR order
    el, er = (fx[f"h{heads}.{k}"].clone().requires_grad_() for k in ("el", "er"))
    s = adj.u_add_v(el, er)
    a = adj.edge_softmax(3 * s)
    (a * fx[f"h{heads}.go"]).sum().backward()
    for got, what in ((s, "s"), (a, "a"), (el.grad, "grad_el"), (er.grad, "grad_er")):
        assert_close(got, fx[f"h{heads}.{what}"], what)
    total = torch.zeros(14, heads, dtype=torch.float64).index_add_(0, adj.dst_of, a.detach())
    torch.testing.assert_close(total[:13], torch.ones(13, heads, dtype=torch.float64))


@pytest.mark.parametrize("layer", ["gat", "gatv2"])
def test_attention_layers_agree_on_kernels_and_torch(layer):
    """An attention layer's output and every gradient (features, parameters, relation weights) are the same on
    the fused kernels and on torch alone, in float64, on a multigraph with a node that has no in-edges."""
    from regnn.nn import REGATv2Conv

    kernels = kernels_or_skip()
    graph = without_in_edges_of(13, *random_graph(n=14, e=50, seed=12))  # its row of the softmax is empty
    results = []
    for backend in (Backend(kernels), TORCH):
        adj = adjacency_from_arrays(*graph, 14, backend)
        torch.manual_seed(3)
        conv = (REGATConv(6, 5, heads=3) if layer == "gat" else REGATv2Conv(6, 5, heads=3)).double()
        h = torch.randn(14, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(1)).requires_grad_()
        alpha = torch.tensor(
            [[0.5, 2.0, 1.0], [1.5, 0.3, 1.0], [1.0, 1.0, 0.2], [3.0, 0.7, 1.1]],
            dtype=torch.float64,
            requires_grad=True,
        )
        out = conv(h, adj, alpha=alpha)
        out.pow(2).sum().backward()
        results.append([out.detach(), h.grad, alpha.grad] + [p.grad for p in conv.parameters()])
    assert results[0][0][13].abs().sum() == 0 and results[0][0][:13].abs().sum() > 0
    for got, want in zip(results[1], results[0]):
        torch.testing.assert_close(got, want)


def test_sorted_segment_sums_equal_index_add_and_the_kernels():
    """Off CPU the sums of per-edge values by destination, source and relation run over sorted segments (CUDA's
    deterministic index_add_ is very slow), on CPU by index_add_ or the fused kernels' sums: the backends give the
    same, alone and inside the gradients of the weighted GCN aggregation and of an RE-GAT layer, with a relation
    id that no edge has and a node without in-edges."""
    graph = without_in_edges_of(13, *random_graph(n=14, e=60, seed=14))
    gen = torch.Generator().manual_seed(4)
    vals = torch.randn(graph[0].numel(), 3, dtype=torch.float64, generator=gen)
    h0 = torch.randn(14, 6, dtype=torch.float64, generator=gen)
    alpha0 = torch.rand(5, 1, dtype=torch.float64, generator=gen) + 0.5  # relation 4: on no edge
    att_alpha0 = torch.rand(5, 2, dtype=torch.float64, generator=gen) + 0.5
    backends = [TORCH, Backend(sorted_sums=True)]
    kernels = choose_backend("cpu", kernels=True).kernels
    if kernels is not None:
        backends.append(Backend(kernels))
    results = []
    for backend in backends:
        adj = adjacency_from_arrays(*graph, 14, backend)
        sums = [adj.segment_sum(vals, by, n) for by, n in (("dst", 14), ("src", 14), ("rel", 5), ("rel", 7))]
        h, alpha = h0.clone().requires_grad_(), alpha0.clone().requires_grad_()
        adj.normalized_spmm(h, alpha, "both").pow(2).sum().backward()
        torch.manual_seed(0)
        conv = REGATConv(6, 4, heads=2, options=AttentionOptions(bias=False)).double()
        h2, att_alpha = h0.clone().requires_grad_(), att_alpha0.clone().requires_grad_()
        conv(h2, adj, alpha=att_alpha).pow(2).sum().backward()
        results.append([*sums, h.grad, alpha.grad, h2.grad, att_alpha.grad, conv.fc.weight.grad])
    for other in results[1:]:
        for got, want in zip(other, results[0]):
            torch.testing.assert_close(got, want)
    assert results[1][2][4].abs().sum() == 0 and results[1][3].shape == (7, 3) and results[1][0][13].abs().sum() == 0
    assert results[1][5][:4].abs().min() > 0  # every relation on an edge has a gradient


@pytest.mark.parametrize("case", ["block", "no_edges"])
def test_sorted_segment_sums_on_blocks_and_empty_graphs(case):
    """The sorted segment sums (and the kernels') on a block (more sources than destinations, segments by source
    of another length) and on a graph without edges, also for more segments than nodes: equal to index_add_."""
    if case == "block":
        adj, n_dst, g_ = random_graph_or_block(True, seed=15)
        adj.rel = torch.randint(0, 3, adj.indices.shape, generator=g_)
    else:
        none = torch.zeros(0, dtype=torch.long)
        adj = Adjacency.from_edges(none, none, none, 4)
    vals = torch.randn(adj.indices.shape[0], 2, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    wanted = [
        ("dst", adj.num_dst),
        ("dst", adj.num_dst + 3),
        ("src", adj.num_src),
        ("src", adj.num_src + 2),
        ("rel", 4),
    ]
    results = []
    for backend in (TORCH, Backend(sorted_sums=True), choose_backend("cpu", kernels=True)):
        adj.backend = backend
        adj._derived.clear()
        results.append([adj.segment_sum(vals, by, n) for by, n in wanted])
    for other in results[1:]:
        for got, want, (by, n) in zip(other, results[0], wanted):
            assert got.shape == (n, 2)
            torch.testing.assert_close(got, want)
    assert case == "no_edges" or results[1][2].abs().sum() > 0


def test_an_adjacency_from_arrays_moves_to_a_device(backend):
    """Adjacency.to keeps its arrays and aggregates as before, on the backend chosen there (the kernels stay off
    where they were off)."""
    adj = adjacency_from_arrays(*random_graph(n=14, e=50, seed=16), 14, backend)
    h = torch.randn(14, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(6))
    alpha = torch.tensor([[0.5], [2.0], [1.5], [0.3]], dtype=torch.float64)
    want = adj.normalized_spmm(h, alpha, "both")
    moved = adj.to("cpu")
    assert moved is not adj and torch.equal(moved.t_pos, adj.t_pos) and moved.backend.name == backend.name
    torch.testing.assert_close(moved.normalized_spmm(h, alpha, "both"), want)


def test_sparse_products_keep_float64_and_lift_bfloat16():
    """The bf16 path lifts low-precision inputs to float32; float64 (the gradient checks) must stay float64."""
    src, dst = torch.tensor([0, 1, 2, 2]), torch.tensor([0, 0, 1, 2])
    adj = Adjacency.from_edges(src, dst, torch.zeros(4, dtype=torch.long), 3)
    h64 = torch.randn(3, 5, dtype=torch.float64)
    assert adj.spmm(h64).dtype == torch.float64
    assert adj.normalized_spmm(h64, torch.ones(4, 1, dtype=torch.float64)).dtype == torch.float64
    out = adj.spmm(h64.to(torch.bfloat16))
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, adj.spmm(h64.to(torch.bfloat16).float()))
    conv = REGATConv(5, 2, heads=2).double()
    assert conv(h64, adj).dtype == torch.float64


def test_fused_kernels_build_where_a_compiler_exists():
    """The fused kernels are what make RE-GCN cost about what GCN costs; where a C++ compiler and ninja exist (CI,
    this machine) a failed build is a bug, not a silent fallback."""
    import shutil
    from regnn.core.kernels import enabled, load_kernels

    if not enabled() or shutil.which("c++") is None or shutil.which("ninja") is None:
        pytest.skip("kernels turned off, or no compiler / ninja here")
    assert load_kernels() is not None


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("norm", [0, 1, 2])
def test_node_scales_of_several_layers_in_one_call_equal_one_call_each(dtype, norm):
    """kernels.scales with the weights of 3 layers (3, R) gives, bitwise, each row's own call: 5001 nodes,
    so the parallel pieces cross from one layer into the next."""
    from regnn.core.kernels import load_kernels

    kernels = load_kernels()
    if kernels is None:
        pytest.skip("the fused kernels could not be built here")
    g = torch.Generator().manual_seed(0)
    counts = torch.randint(0, 5, (5001, 7), generator=g).to(dtype)
    counts[::9] = 0  # nodes without in-edges: the clamp at 1
    alphas = (torch.rand(3, 7, generator=g, dtype=dtype) * 2.5 - 0.05).contiguous()
    together = kernels.scales(counts, alphas, norm)
    assert all(t.shape == (3, 5001) for t in together)
    for layer in range(3):
        alone = kernels.scales(counts, alphas[layer].contiguous(), norm)
        for x, y in zip(alone, together):
            assert x.shape == (5001,) and torch.equal(x, y[layer])
    with pytest.raises(RuntimeError, match="one weight per column"):
        kernels.scales(counts, alphas[:, :6].contiguous(), norm)


@pytest.mark.parametrize("norm", ["both", "right"])
def test_fused_and_torch_paths_agree_on_a_real_graph(imdb_relation_graph, norm):
    """IMDB's relation graph in float32: both paths give the same output and gradients (to float rounding), with
    relation weights on both sides of the degree clamp."""
    if imdb_relation_graph.backend.kernels is None:
        pytest.skip("the fused kernels could not be built here")
    num_rel = int(imdb_relation_graph.rel.max()) + 1
    g = torch.Generator().manual_seed(0)
    h0 = torch.randn(imdb_relation_graph.num_src, 64, generator=g)
    alpha0 = (torch.rand(num_rel, 1, generator=g) * 2).requires_grad_()
    go = torch.randn(imdb_relation_graph.num_dst, 64, generator=g)
    results = []
    for adj in (imdb_relation_graph, imdb_relation_graph.to("cpu", backend=TORCH)):
        h, alpha = h0.clone().requires_grad_(), alpha0.detach().clone().requires_grad_()
        out = adj.normalized_spmm(h, alpha, norm)
        results.append((out, *torch.autograd.grad(out, (h, alpha), go)))
    for got, want in zip(*results):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


def test_a_failed_kernel_build_falls_back_with_one_warning(monkeypatch, caplog):
    from regnn.core import kernels

    tries = []

    def no_compiler():
        tries.append(1)
        raise RuntimeError("Ninja is required to load C++ extensions")

    monkeypatch.setattr(kernels, "_build", no_compiler)
    monkeypatch.setattr(kernels, "_FAILED", [])
    with caplog.at_level("WARNING", logger="regnn"):
        assert all(kernels.load_kernels() is None for _ in range(3))
    warnings = [r.getMessage() for r in caplog.records if "pure-torch path" in r.getMessage()]
    assert len(warnings) == 1 and "Ninja is required" in warnings[0]
    assert len(tries) == 1  # a failed build is not retried on every aggregation
    monkeypatch.setenv("REGNN_KERNELS", "0")
    assert kernels.load_kernels() is None


def test_one_adjacency_serves_float32_and_float64(backend):
    src, dst, rel = random_graph(seed=9)
    adj = Adjacency.from_edges(src, dst, rel, 12, backend=backend)
    for dtype in (torch.float32, torch.float64, torch.float32):
        alpha = torch.tensor([[0.5], [1.5], [2.0], [0.2]], dtype=dtype)
        h = torch.randn(12, 8, dtype=dtype)
        out = adj.normalized_spmm(h, alpha)
        a = dense(12, src, dst, alpha[rel, 0])
        d = a.sum(1).clamp(min=1).pow(-0.5)[:, None]
        assert out.dtype == dtype
        torch.testing.assert_close(out, d * (a @ (d * h)))


def test_kernels_build_from_a_copy_at_a_path_no_checkout_owns(tmp_path):
    """The build records its sources' paths: compiled from the checkout, every other checkout rebuilt (~40 s).
    stable_source gives the build folder's own copy, written once, rewritten only if it differs."""
    from regnn.core import kernels

    dst = kernels.stable_source(tmp_path)
    assert dst.parent == tmp_path and dst.read_bytes() == kernels.SOURCE.read_bytes()
    before = dst.stat().st_mtime_ns
    assert kernels.stable_source(tmp_path) == dst and dst.stat().st_mtime_ns == before  # not written again
    dst.write_text("// damaged")
    assert kernels.stable_source(tmp_path).read_bytes() == kernels.SOURCE.read_bytes()
    assert [p.name for p in tmp_path.iterdir()] == [kernels.SOURCE.name]  # no temporary file left behind
