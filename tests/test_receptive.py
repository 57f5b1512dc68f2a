"""GCN layers on the rows a loss reads (regnn.core.receptive) against the whole layers: the same numbers, bit for
bit, forward and backward, and a full-batch training step on the loss's rows against the whole step."""

import copy

import pytest
import torch

from conftest import fullbatch, real_dataset_dir, relation
from dgl_fixtures import random_multigraph

import regnn.core.receptive as receptive
from regnn.core.adjacency import Adjacency
from regnn.core.backend import choose_backend
from regnn.nn import REGCNConv
from regnn.data import load_dataset
from regnn.models import REGNN, RelationInputs
from regnn.training.trainer import FullBatchStep


def kernels_or_skip():
    kernels = choose_backend("cpu", kernels=True).kernels
    if kernels is None:
        pytest.skip("the fused kernels could not be built here")
    return kernels


def typed_graph(n=400, e=1600, relations=5, seed=0):
    """A random relation-typed graph with a self-loop on every node (as RE-GNN's graphs have), fused backend."""
    src, dst, rel = random_multigraph(n, e, relations - 1, seed)  # the edges; the last relation: self-loops
    src, dst = torch.cat([src, torch.arange(n)]), torch.cat([dst, torch.arange(n)])
    rel = torch.cat([rel, torch.full((n,), relations - 1)])
    order = torch.sort(dst, stable=True).indices
    return Adjacency.from_edges(
        src[order], dst[order], rel[order], n, backend=choose_backend("cpu", kernels=True)
    ), relations


def test_the_plan_holds_each_layers_in_neighbourhood_of_the_next():
    kernels_or_skip()
    adj, _ = typed_graph(n=300, e=500)
    dense = torch.zeros(300, 300, dtype=torch.bool)
    dense[adj.dst_of, adj.indices] = True  # dense[v, u]: an edge u -> v
    last = torch.tensor([7, 3, 250, 3])
    blocks = receptive.plan(adj, last, 3)
    want = torch.zeros(300, dtype=torch.bool)
    want[last] = True
    for block in reversed(blocks):
        assert torch.equal(block.rows, want.nonzero().squeeze(1))  # sorted, no repeats
        edges = adj.indptr[block.rows + 1] - adj.indptr[block.rows]
        assert torch.equal(block.indptr.diff(), edges)
        assert torch.equal(block.sources.bool(), dense[block.rows].any(0))
        want = dense[want].any(0)
    assert blocks[0].rows.numel() < 300  # the first layer's rows are not the whole graph here


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("norm", ["both", "right"])
@pytest.mark.parametrize("kind", ["weight_elu", "propagation", "weight_no_activation", "plain_graph"])
def test_a_layer_on_its_rows_gives_the_whole_layers_numbers(kind, norm, threads, dtype, set_threads):
    """Output on the rows, and the gradients of h, the relation weights, W and b for a loss that reads only those
    rows: equal to the whole layer's, bit for bit (not merely close), in float64 and float32; also on the plain
    graph (no relation weights: plain GCN's aggregation)."""
    kernels_or_skip()
    set_threads(threads)
    adj, relations = typed_graph(n=1600, e=6400)  # room for FEWEST_ROWS rows under half the graph
    torch.manual_seed(1)
    conv = REGCNConv(
        64,
        64,
        weight=kind != "propagation",
        norm=norm,
        activation="elu" if kind in ("weight_elu", "plain_graph") else "none",
    ).to(dtype)
    if conv.bias is not None:
        torch.nn.init.normal_(conv.bias)
    n, k = 1600, receptive.FEWEST_ROWS + 88
    h = torch.randn(n, 64, dtype=dtype, requires_grad=True)
    alpha = (torch.rand(relations, 1, dtype=dtype) + 0.5).requires_grad_(True) if kind != "plain_graph" else None
    rows = torch.randperm(n)[:k].sort().values
    block = receptive.plan(adj, rows, 1)[0]
    weights = torch.randn(k, 64, dtype=dtype)

    def run(**kw):
        out = conv(h, adj, alpha=alpha, **kw)
        params = [h, *([] if alpha is None else [alpha]), *conv.parameters()]
        return out, torch.autograd.grad((out[rows] * weights).sum(), params)

    fast, fast_grads = run(rows=block)
    whole, whole_grads = run()
    assert torch.equal(fast[rows], whole[rows])
    others = torch.ones(n, dtype=torch.bool)
    others[rows] = False
    assert not fast[others].any()  # the rows path computed nothing else
    assert whole[others].any()
    for a, b in zip(fast_grads, whole_grads):
        assert torch.equal(a, b)


def test_the_rows_path_stands_aside_where_it_would_not_give_the_same_numbers(monkeypatch):
    """Fewer rows than FEWEST_ROWS for a layer with W (BLAS may take other kernels for a small product), a single
    row for a propagation, another activation, rows that are most of the graph: the layer runs whole (every row
    computed)."""
    kernels_or_skip()
    n = 1600
    adj, relations = typed_graph(n=n, e=6400)
    h, alpha = torch.randn(n, 64), torch.rand(relations, 1) + 0.5
    one = receptive.plan(adj, torch.tensor([5]), 1)[0]
    few = receptive.plan(adj, torch.arange(0, receptive.FEWEST_ROWS - 1), 1)[0]
    some = receptive.plan(adj, torch.arange(0, n, 2), 1)[0]
    gcn = REGCNConv(64, 64, activation="elu")
    propagation = REGCNConv(64, 64, weight=False)

    def rows_computed(out):
        return int(out.any(1).sum())

    assert rows_computed(gcn(h, adj, alpha=alpha, rows=some)) == some.rows.numel()  # the rows path runs here
    assert rows_computed(propagation(h, adj, alpha=alpha, rows=few)) == few.rows.numel()  # no W: few rows are fine
    assert rows_computed(gcn(h, adj, alpha=alpha, rows=few)) == n
    assert rows_computed(propagation(h, adj, alpha=alpha, rows=one)) == n
    assert rows_computed(REGCNConv(64, 64, activation="relu")(h, adj, alpha=alpha, rows=some)) == n
    monkeypatch.setattr(receptive, "WHOLE_ABOVE", some.rows.numel() / n - 0.01)
    assert rows_computed(gcn(h, adj, alpha=alpha, rows=some)) == n


def test_the_fused_backward_skips_inactive_sources_without_changing_a_bit():
    """The fused backward told which sources can have a nonzero sum (`active`) gives the same gradients, bit for
    bit, as the one that visits every source, when the gradient is 0 off the rows."""
    kernels = kernels_or_skip()
    adj, relations = typed_graph()
    torch.manual_seed(2)
    block = receptive.plan(adj, torch.arange(0, 400, 11), 1)[0]
    alpha = torch.rand(relations, 1) + 0.5
    al, a, b, ka, kb = adj.node_scales(alpha, "both", kernels)
    h, out, grad = torch.randn(400, 64), torch.randn(400, 64), torch.zeros(400, 64)
    grad[block.rows] = torch.randn(block.rows.numel(), 64)
    counts = adj.relation_counts(relations)

    def backward(active):
        csc = adj.kernel_csc()
        return kernels.backward(
            adj.t_indptr, *csc, al, a, b, grad, h, out, counts, ka, kb, True, True, True, True, active
        )

    gh, galpha = backward(block.sources)
    gh_all, galpha_all = backward(torch.empty(0, dtype=torch.uint8))
    assert torch.equal(gh, gh_all) and torch.equal(galpha, galpha_all)
    assert block.sources.sum() < 400  # some sources were skipped
    with pytest.raises(RuntimeError, match="active must be empty or one uint8 per source"):
        backward(torch.ones(3, dtype=torch.uint8))


class Whole(torch.nn.Module):
    """The model without its rows path: every target's scores computed, as before it had one."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, *args, **kwargs):
        return self.model(*args, **kwargs)


@pytest.fixture(scope="module")
def dblp():
    data = load_dataset("dblp", dir=real_dataset_dir("DBLP"))
    return data, RelationInputs.build(data)


@pytest.mark.parametrize("threads,learnt", [(1, True), (2, True), (2, False)])
def test_a_full_batch_step_on_the_loss_rows_trains_as_the_whole_step(dblp, threads, learnt, set_threads):
    """DBLP RE-GCN as the paper configures it (4 layers, 64 hidden, double dropout), and plain GCN: five training
    steps with their validation passes on the rows the losses read leave every parameter and every loss
    bit-identical to the whole-graph steps, and the layers did run on their rows (most of DBLP is not within
    reach of the 400 training authors)."""
    kernels_or_skip()
    set_threads(threads)
    data, inputs = dblp
    torch.manual_seed(0)
    model = REGNN.from_inputs(
        inputs,
        data.in_dims,
        data.num_classes,
        relation=relation(edge_embeddings=learnt, self_loop_embeddings=learnt),
        hidden=64,
        num_layers=4,
        double_dropout=True,
    )
    twin = copy.deepcopy(model)
    options = fullbatch(max_epochs=5)
    fast = FullBatchStep(model, inputs, data.features, data.labels, data.splits, options)
    whole = FullBatchStep(Whole(twin), inputs, data.features, data.labels, data.splits, options)
    for epoch in range(5):
        torch.manual_seed(epoch)
        a = fast(epoch)
        torch.manual_seed(epoch)
        b = whole(epoch)
        assert {k: v for k, v in a.items() if k != "epoch_time_s"} == {
            k: v for k, v in b.items() if k != "epoch_time_s"
        }
    for p, q in zip(model.parameters(), twin.parameters()):
        assert torch.equal(p, q)
    blocks = receptive.cached_plan(inputs.adj, data.splits["train"], None, 4)
    assert [b.rows.numel() for b in blocks][1:] == sorted([b.rows.numel() for b in blocks][1:], reverse=True)
    assert blocks[1].rows.numel() < receptive.WHOLE_ABOVE * inputs.adj.num_dst  # run on rows, not whole
