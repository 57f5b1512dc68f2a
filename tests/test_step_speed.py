"""The mini-batch step's fast paths against the plain computations they replace: hashed dropout, GAT's
aggregate-then-transform on blocks, the typed input projection over type-grouped sources, parallel sampling and
the step profile."""

import pytest
import torch

from conftest import relation, minibatch

from regnn.core.adjacency import Adjacency
from regnn.nn import REGATConv
from regnn.core.backend import choose_backend
from regnn.core.dropout import HashDropout
from regnn.core.kernels import load_kernels
from regnn.data import load_dataset
from regnn.training.minibatch import train_minibatch_run
from regnn.training.sampling import SampledGraph, sampled_loader, sampling_rate
from regnn.training.seed import seed_everything

needs_kernels = pytest.mark.skipif(load_kernels() is None, reason="the fused kernels could not be built here")


@needs_kernels
def test_hash_dropout_keeps_the_rate_and_its_backward_uses_the_same_mask():
    d = HashDropout(0.3)
    x = torch.randn(4001, 37).abs() + 0.1  # no zeros, odd sizes (a tail after the last whole block)
    x.requires_grad_(True)
    y = d(x)
    kept = y != 0
    assert abs(kept.float().mean().item() - 0.7) < 0.01
    assert torch.allclose(y[kept], x[kept] / 0.7, rtol=1e-4)
    y.backward(torch.ones_like(y))
    assert torch.equal(x.grad != 0, kept)
    torch.manual_seed(5)
    a = d(x)
    torch.manual_seed(5)
    assert torch.equal(a, d(x))  # the seed comes from torch's generator: a seeded run repeats
    assert not torch.equal(a, d(x))  # and every call draws a new mask
    d.eval()
    assert d(x) is x


def test_hash_dropout_falls_back_to_torch_without_kernels(monkeypatch):
    import regnn.core.dropout as mod

    monkeypatch.setattr(mod, "load_kernels", lambda: None)
    y = HashDropout(0.5)(torch.ones(20000))
    assert abs((y != 0).float().mean().item() - 0.5) < 0.02 and set(y.unique().tolist()) <= {0.0, 2.0}


@pytest.mark.parametrize("kernels", [True, False])
def test_gat_aggregate_then_transform_equals_transform_then_aggregate(kernels):
    if kernels and load_kernels() is None:
        pytest.skip("no kernels")
    torch.manual_seed(0)
    ns, nd, e = 300, 40, 900
    u, v = torch.randint(0, ns, (e,)), torch.randint(0, nd, (e,))
    v[:nd] = torch.arange(nd)
    adj = Adjacency.from_edges(u, v, torch.randint(0, 3, (e,)), ns, nd, backend=choose_backend("cpu", kernels=kernels))
    conv = REGATConv(16, 16, heads=4).double()
    h = torch.randn(ns, 16, dtype=torch.float64, requires_grad=True)
    alpha = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    assert conv._transform_after(adj, h)
    params = [h, alpha, conv.fc.weight, conv.attn_l, conv.attn_r]
    fast = conv(h, adj, alpha=alpha)
    conv._transform_after = lambda *_: False
    plain = conv(h, adj, alpha=alpha)
    g = torch.randn_like(fast)
    assert torch.allclose(fast, plain)
    for a, b in zip(torch.autograd.grad((fast * g).sum(), params), torch.autograd.grad((plain * g).sum(), params)):
        assert torch.allclose(a, b)


def test_gat_transforms_first_on_a_whole_graph():
    adj = Adjacency.from_edges(torch.arange(10), torch.arange(10).roll(1), None, 10)
    assert not REGATConv(8, 8, heads=2)._transform_after(adj, torch.randn(10, 8))


@pytest.fixture(scope="module")
def mag(mag_root):
    d = load_dataset("ogbn_mag", dir=str(mag_root), format="ogb", ogb_name="ogbn-mag")
    return d, SampledGraph(d)


def _model(d, sg, backbone="gcn"):
    from regnn.models import REGNN
    from regnn.models.sampled import NodeInputs, SampledREGNN

    inputs = NodeInputs(d.features, embed_dim=8)
    opts = dict(hidden=16, norm="right") if backbone == "gcn" else dict(hidden=4, heads=2)
    regnn = REGNN(
        in_dims=inputs.in_dims,
        num_classes=d.num_classes,
        relation_types=sg,
        backbone=backbone,
        num_layers=2,
        dropout=0.2,
        relation=relation(),
        layout="stack",
        **opts,
    )
    inputs._fixed = {t: (x.double() if not x.is_sparse else x) for t, x in inputs._fixed.items()}
    return SampledREGNN(regnn, inputs, sg.ntypes, sg.offsets, sg.node_type).double()


@pytest.mark.parametrize("backbone", ["gcn", "gat"])
def test_type_grouped_batch_gives_the_scores_and_gradients_of_the_block_order(mag, backbone):
    d, sg = mag
    model = _model(d, sg, backbone).eval()
    blocks = next(iter(sampled_loader(sg, sg.seeds(d.splits["train"][:64]), [4, 3], 64, False))).blocks
    grouped, adjs = sg.batch(blocks)
    input_nodes, nd = blocks[0].src_nodes, blocks[0].num_dst
    assert torch.equal(grouped[:nd], input_nodes[:nd]) and torch.equal(grouped.sort().values, input_nodes.sort().values)
    assert (sg.node_type[grouped[nd:]].diff() >= 0).all()  # the sources after the destinations, by type
    plain_adjs = [sg.adjacency(b) for b in blocks]
    out, ref = model(grouped, adjs), model(input_nodes, plain_adjs)
    assert torch.allclose(out, ref)
    lins = list(model.regnn.proj.lins.parameters())
    g = torch.randn_like(out)
    for a, b in zip(torch.autograd.grad((out * g).sum(), lins), torch.autograd.grad((ref * g).sum(), lins)):
        assert torch.allclose(a, b)


def test_projection_pieces_equal_per_row_projection(mag):
    from regnn.models.sampled import _runs

    pos = torch.tensor([0, 1, 2, 3, 10, 11, 12, 20])
    pieces = _runs(pos, min_run=3)
    assert [(p[0], p[1]) for p in pieces[:2]] == [(slice(0, 4), slice(0, 4)), (slice(10, 13), slice(4, 7))]
    assert pieces[2][0].tolist() == [20] and pieces[2][1].tolist() == [7]
    d, sg = mag
    model = _model(d, sg)
    ids = torch.randperm(sg.num_nodes)[:500]
    ids = torch.cat([ids, ids.sort().values])  # scattered rows, then long runs of one type
    rows = model.input_rows(ids)
    for i, t in enumerate(sg.ntypes):
        sel = sg.node_type[ids] == i
        if sel.any() and t in model.inputs._fixed:
            lin = model.regnn.proj.lins[t]
            assert torch.allclose(rows[sel], lin(model.inputs._fixed[t][ids[sel] - sg.offsets[t]]))


def test_parallel_sampling_covers_every_seed_once(mag):
    d, sg = mag
    seeds = sg.seeds(d.splits["train"])
    for kw in ({"sampling": "parallel"}, {"sampling": "parallel", "num_workers": 2}):
        got = torch.cat([b.seeds for b in sampled_loader(sg, seeds, [4, 3], 32, True, **kw)])
        assert torch.equal(got.sort().values, seeds.sort().values)
    with pytest.raises(ValueError, match="sampling must be one of"):
        sampled_loader(sg, seeds, [4, 3], 32, True, sampling="fast")
    r = sampling_rate(sg, seeds, [4, 3], 32, "parallel", threads=1, batches=3)
    assert r["batches"] == 3 and r["seeds_per_s"] > 0


def test_profiled_epoch_reports_its_phases_and_the_sampling_share(mag):
    d, sg = mag
    seed_everything(0)
    model = _model(d, sg).float()
    model.inputs._fixed = {t: (x.float() if not x.is_sparse else x) for t, x in model.inputs._fixed.items()}
    res = train_minibatch_run(
        model,
        sg,
        d.labels,
        d.splits,
        seed=0,
        num_classes=d.num_classes,
        options=minibatch(
            optimizer={"lr": 0.01},
            fanouts=[4, 3],
            batch_size=64,
            max_epochs=1,
            patience=1,
            log_every=0,
            profile=True,
            eval="sampled",
        ),
    )
    h = res.history[0]
    phases = {k for k in h if k.startswith("profile_")}
    assert {
        "profile_blocks_s",
        "profile_gather_s",
        "profile_project_s",
        "profile_forward_layer_0_s",
        "profile_forward_layer_1_s",
        "profile_backward_s",
        "profile_optimizer_step_s",
        "profile_sample_s",
    } <= phases
    assert all(h[k] >= 0 for k in phases)
    assert abs(h["sample_s"] + h["compute_s"] - h["train_time_s"]) < 1e-6
    assert any(k.startswith("peak_rss_gb_batch_") for k in h)
    assert not model.regnn.convs[0]._forward_hooks  # the layer timers are gone after training
