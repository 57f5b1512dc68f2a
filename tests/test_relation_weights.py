"""Relation embeddings: exact initial weights, and the gradient scaling of the paper's appendix A."""

import copy
import dataclasses

import pytest
import torch
import torch.nn.functional as F

from conftest import relation

from regnn.core.relation import RelationWeights
from regnn.data import make_synthetic
from regnn.models import REGNN, RelationInputs


@pytest.fixture(scope="module")
def syn():
    data = make_synthetic(num_items=120, num_sources=60, num_tags=8, seed=3)
    data.features = {t: x.double() for t, x in data.features.items()}
    inputs = RelationInputs.build(data)
    return data, inputs.rg, inputs


def model(data, rg, backbone="gcn", scale=None, edge=True, self_loop=True, **kw):
    """Double precision: the tests check the update rules, not float32 rounding near 1."""
    return REGNN(
        in_dims=data.in_dims,
        num_classes=data.num_classes,
        relation_types=rg,
        backbone=backbone,
        hidden=16,
        num_layers=3,
        dropout=0.0,
        relation=relation(
            edge_embeddings=edge, self_loop_embeddings=self_loop, **({} if scale is None else {"scale": scale})
        ),
        **kw,
    ).double()


@pytest.mark.parametrize("scale", [0.001, 0.3, 1.0, 7.0, 100.0, 1000.0])
def test_weights_start_at_exactly_one(scale):
    rw = RelationWeights(6, 4, relation(scale=scale), heads=3)
    assert torch.equal(rw(), torch.ones(10, 3))


def test_switched_off_parts_are_constant_and_own_no_parameters():
    assert sum(p.numel() for p in RelationWeights(6, 4, relation(edge_embeddings=False)).parameters()) == 4
    assert sum(p.numel() for p in RelationWeights(6, 4, relation(self_loop_embeddings=False)).parameters()) == 6
    rw = RelationWeights(6, 4, relation(edge_embeddings=False, self_loop_embeddings=False))
    assert rw.is_constant and not list(rw.parameters())


def test_weights_of_several_layers_are_one_tensor_per_part():
    """layers=L: the same weights as L modules of one layer each, from two parameters (not 2L)."""
    torch.manual_seed(0)
    many = RelationWeights(5, 3, relation(scale=10.0), heads=2, layers=4)
    with torch.no_grad():
        many.edge.uniform_(-0.2, 0.3), many.self_loop.uniform_(-0.2, 0.3)
    assert len(list(many.parameters())) == 2 and many().shape == (4, 8, 2)
    for i, alpha in enumerate(many.per_layer()):
        one = RelationWeights(5, 3, relation(scale=10.0), heads=2)
        with torch.no_grad():
            one.edge.copy_(many.edge[i]), one.self_loop.copy_(many.self_loop[i])
        assert torch.equal(alpha, one())
    assert [set(d) for d in many.named_values(list("abcdefgh"))] == [set("abcdefgh")] * 4
    one = RelationWeights(5, 3, relation())
    assert one.named_values(list("abcdefgh")) == dict.fromkeys("abcdefgh", 1.0)  # one layer: a dict, as before
    half = RelationWeights(5, 3, relation(edge_embeddings=False), layers=2)
    assert half().shape == (2, 8, 1) and torch.equal(half()[:, :5], torch.ones(2, 5, 1))
    off = relation(edge_embeddings=False, self_loop_embeddings=False)
    assert RelationWeights(5, 3, off, layers=3).per_layer() == [None] * 3
    with pytest.raises(ValueError, match="index the layer first"):
        many(torch.tensor([0, 1]))


@pytest.mark.parametrize(
    "backbone,kw,groups,calls", [("gcn", {}, [(1, 3)], [0, 1, 2]), ("gat", {"heads": 2}, [(2, 3)], [0, 1, 2, 2])]
)
def test_model_groups_layers_with_equal_heads(syn, backbone, kw, groups, calls):
    data, rg, _ = syn
    m = model(data, rg, backbone, **kw)
    assert [(r.heads, r.layers) for r in m.relations] == groups
    alphas = m.layer_alphas()  # one per conv call: the GAT stack calls its last layer twice, with its weights
    assert [a.shape for a in alphas] == [(rg.num_relations, groups[0][0])] * len(calls)
    per_layer = [a for r in m.relations for a in r.per_layer()]
    assert all(torch.equal(a, per_layer[j]) for a, j in zip(alphas, calls))
    names = m.relation_weights()
    assert len(names) == 3 and all(set(layer) == set(rg.relation_names) for layer in names)


def test_scale_must_be_positive():
    with pytest.raises(ValueError, match="must be > 0"):
        relation(scale=0)


@pytest.mark.parametrize("backbone,kw", [("gcn", {}), ("gat", {"heads": 2}), ("gatv2", {"heads": 2})])
def test_re_model_at_init_equals_plain_model_with_same_weights(syn, backbone, kw):
    data, rg, inputs = syn
    torch.manual_seed(0)
    re = model(data, rg, backbone, **kw)
    plain = model(data, rg, backbone, edge=False, self_loop=False, **kw)
    missing = plain.load_state_dict(re.state_dict(), strict=False)
    assert not missing.missing_keys and all("relations" in k for k in missing.unexpected_keys)
    re.eval(), plain.eval()
    out_re, emb_re = re(inputs, data.features, embed=True)
    out_plain, emb_plain = plain(inputs, data.features, embed=True)
    torch.testing.assert_close(out_re, out_plain, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(emb_re, emb_plain, rtol=1e-5, atol=1e-6)
    # and the relation weights are real parameters of the RE model only: R + F per layer (x heads)
    extra = sum(p.numel() for p in re.parameters()) - sum(p.numel() for p in plain.parameters())
    assert extra == rg.num_relations * sum(r.heads * (r.layers or 1) for r in re.relations)


def _alphas(m):
    return torch.stack([a.detach().clone() for a in m.layer_alphas()])


def _one_step(m, data, rg, inputs, opt):
    m.train()
    logits, _ = m(inputs, data.features)
    idx = data.splits["train"]
    loss = F.cross_entropy(logits[idx], data.labels[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()


@pytest.mark.parametrize("scale", [1.0, 10.0, 100.0])
def test_one_adam_step_moves_every_alpha_by_lambda_times_lr(syn, scale):
    data, rg, inputs = syn
    torch.manual_seed(1)
    m = model(data, rg, scale=scale)
    lr = 1e-4
    before = _alphas(m)
    # eps ~ 0 so that the first step is exactly lr * sign(g) even where a gradient is tiny (appendix A)
    _one_step(m, data, rg, inputs, torch.optim.Adam(m.parameters(), lr=lr, eps=1e-16))
    moved = (_alphas(m) - before).abs()
    # Adam's first step is lr * sign(gradient) on e; alpha = lambda * e moves lambda * lr (relations that
    # reach no node used by the loss get no gradient and stay put)
    has_grad = torch.cat([torch.cat([r.edge.grad, r.self_loop.grad], dim=-2) for r in m.relations]).abs() > 0
    assert has_grad.float().mean() > 0.5
    torch.testing.assert_close(moved[has_grad], torch.full_like(moved[has_grad], scale * lr), rtol=1e-3, atol=0)
    assert torch.all(moved[~has_grad] == 0)


def test_one_sgd_step_scales_the_alpha_update_by_lambda_squared(syn):
    data, rg, inputs = syn
    torch.manual_seed(2)
    base = model(data, rg, scale=1.0)
    moves = {}
    for scale in (1.0, 10.0):
        m = model(data, rg, scale=scale)
        m.load_state_dict({k: v for k, v in base.state_dict().items() if "relations" not in k}, strict=False)
        before = _alphas(m)
        _one_step(m, data, rg, inputs, torch.optim.SGD(m.parameters(), lr=1e-3))
        moves[scale] = _alphas(m) - before
    nz = moves[1.0].abs() > 1e-9
    assert nz.float().mean() > 0.5
    torch.testing.assert_close(moves[10.0][nz], 100.0 * moves[1.0][nz], rtol=1e-3, atol=1e-9)


def test_relation_weights_are_readable_by_name_after_training(syn):
    data, rg, inputs = syn
    m = model(data, rg)
    _one_step(m, data, rg, inputs, torch.optim.Adam(m.parameters(), lr=1e-3))
    layers = m.relation_weights()
    assert len(layers) == 3
    assert set(layers[0]) == set(rg.relation_names)
    assert "item->source" in layers[0] and "self:item" in layers[0]
    assert all(isinstance(v, float) for v in layers[0].values())
    assert any(v != 1.0 for v in layers[0].values())


@pytest.mark.parametrize("norm", ["both", "right"])
def test_relation_weights_prepared_ahead_change_no_number(syn, monkeypatch, norm):
    """REGNN.propagate computes every layer's relation weights, and what the fused aggregation needs of them,
    before it propagates (Adjacency.prepare; the layer finds them again by the weights' identity). Two training
    steps and an evaluation give bitwise the scores and gradients of the same model whose layers prepare
    nothing, and the layers do find them: prepared, the node scales of all layers are computed once per pass
    (one kernel call for all of them); unprepared, once per layer and pass."""
    from regnn.core.adjacency import Adjacency

    lookups = []
    scales_of = Adjacency._node_scales_of
    monkeypatch.setattr(Adjacency, "_node_scales_of", lambda self, *a: lookups.append(1) or scales_of(self, *a))
    data, rg, _ = syn
    if RelationInputs.build(data).adj.backend.kernels is None:
        pytest.skip("the fused kernels could not be built here")
    torch.manual_seed(4)
    base = model(data, rg, norm=norm)
    with torch.no_grad():
        for r in base.relations:  # weights away from 1, on both sides of the degree clamp
            r.edge.uniform_(0.002, 0.015), r.self_loop.uniform_(0.002, 0.015)
    runs, counts = [], []
    for prepare in (True, False):
        lookups.clear()
        m, inputs = copy.deepcopy(base), RelationInputs.build(data)  # an adjacency (and its caches) of its own
        if not prepare:
            monkeypatch.setattr(Adjacency, "prepare", lambda self, *a, **k: None)
        opt = torch.optim.Adam(m.parameters(), lr=1e-2)
        grads = []
        for _ in range(2):
            _one_step(m, data, rg, inputs, opt)
            grads.append(torch.cat([p.grad.flatten() for p in m.parameters()]))
        m.eval()
        with torch.no_grad():
            runs.append((m(inputs, data.features)[0], *grads))
        assert bool(inputs.adj.alphas._by_key) == prepare
        counts.append(len(lookups))
    assert counts == [3, 3 * len(m.convs)]  # 2 training passes + 1 evaluation: once each, once per layer each
    for got, want in zip(*runs):
        assert torch.equal(got, want)


def test_prepared_weights_are_found_again_while_the_weights_hold_their_values(syn, monkeypatch):
    """What prepare computed is found again by the next pass with the same relation weights (an epoch's
    evaluation, then the next training step: no optimiser step between them); a change of the parameters in
    place (an optimiser step, a load) changes the weights: computed afresh, and the scores follow the new
    weights. The graph is built here: an earlier test's model on the shared graph, its weights still at their
    start of 1, would have left entries of the same values."""
    from regnn.core.adjacency import Adjacency

    computed = []
    for name in ("_node_scales_of", "_weighted_values_of"):
        fn = getattr(Adjacency, name)
        monkeypatch.setattr(Adjacency, name, lambda self, *a, fn=fn: computed.append(1) or fn(self, *a))
    data, rg, _ = syn
    inputs = RelationInputs.build(data)
    torch.manual_seed(5)
    m = model(data, rg)
    m.eval()
    with torch.no_grad():
        first = m(inputs, data.features)[0]
        n = len(computed)
        assert n >= 1 and torch.equal(m(inputs, data.features)[0], first) and len(computed) == n
        m.relations[0].edge.mul_(1.5)  # in place: new values
        changed = m(inputs, data.features)[0]
    assert len(computed) == 2 * n and not torch.equal(changed, first)


def test_the_model_defaults_are_the_configs():
    """REGNN's keyword defaults are RE-GCN's config values (conf/backbone/gcn.yaml); lambda and the other
    relation settings have no default in Python at all: they come from the config through regnn.spec."""
    import inspect

    from omegaconf import OmegaConf

    from conftest import REPO, cfg

    from regnn.core.relation import Relation

    params = inspect.signature(REGNN.__init__).parameters
    m = OmegaConf.load(REPO / "conf" / "backbone" / "gcn.yaml")
    for key in ("backbone", "hidden", "num_layers", "dropout"):
        assert params[key].default == m[key], key
    assert params["relation"].default is inspect.Parameter.empty
    assert all(f.default is dataclasses.MISSING for f in dataclasses.fields(Relation))
    no_key = [
        b
        for b in ("gcn", "gat", "gatv2", "gin", "sage", "mixhop", "appnp")
        if "double_dropout" not in cfg(f"model=re_{b}").model
    ]
    assert all(params["double_dropout"].default is False for _ in no_key)  # what those configs compute
