"""trainer.input_dropout=features: the first layer's dropout on the input features, so that a GCN first layer
projects after its aggregation (A (X W) = (A X) W, on the first hop's destinations). The two orders compute the
same logits and gradients (float64); at evaluation the model is the one that drops the projected inputs."""

import pytest
import torch

from conftest import relation
from regnn.data import make_count_graph, make_synthetic
from regnn.models.sampled import SampledREGNN
from regnn.training.sampling import SampledGraph

FANOUTS = [4, 3, 2]


def _model(sg, d, feats, seed=0, **kw):
    torch.manual_seed(seed)
    options = dict(backbone="gcn", hidden=6, num_layers=3, dropout=0.3, relation=relation(), embed_dim=5) | kw
    m = SampledREGNN.from_graph(sg, feats, d.num_classes, input_dropout="features", **options).double()
    with torch.no_grad():
        for rw in m.regnn.relations:  # relation weights away from 1, so a wrong relation id would show
            for p in rw.parameters():
                p.uniform_(-0.5, 0.5)
    return m


def _logits_and_grads(m, batch, g, seed):
    torch.manual_seed(seed)  # the same dropout masks in both orders
    logits = m(*batch)
    grads = torch.autograd.grad((logits * g).sum(), list(m.parameters()), allow_unused=True)
    return logits, [x.to_dense() if x is not None and x.is_sparse else x for x in grads]


@pytest.mark.parametrize(
    "options",
    [dict(layout="stack", norm="right"), dict(layout="stack", norm="both"), dict(layout="authors", norm="both")],
)
@pytest.mark.parametrize("min_run", [1024, 2])  # rows written by index, or runs of a type's rows as slices
def test_projecting_after_the_first_hop_computes_what_projecting_first_does(options, min_run, monkeypatch):
    from regnn.models import sampled

    runs = sampled._runs
    monkeypatch.setattr(sampled, "_runs", lambda pos: runs(pos, min_run=min_run))
    d = make_count_graph(num_items=60, num_users=30, num_tags=8, seed=0)  # dense items, one-hot users and tags
    feats = {t: x.double() for t, x in d.features.items()}
    sg = SampledGraph(d, whole_graph_degrees=options["norm"] == "both")
    m = _model(sg, d, feats, **options).train()
    assert m.regnn.convs[0].takes_factors and len(m.inputs.embeddings) == 2  # learnt embeddings are factored too
    seeds = sg.seeds(torch.tensor([7, 0, 55, 3, 42, 21]))
    batch = sg.batch(sg.sample_blocks(seeds, FANOUTS[: len(m.regnn.convs)], torch.Generator().manual_seed(0)))
    g = torch.randn(seeds.numel(), d.num_classes, dtype=torch.float64)
    got, gg = _logits_and_grads(m, batch, g, seed=3)
    m.project_after_hop = False
    want, gw = _logits_and_grads(m, batch, g, seed=3)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-10)
    for (name, _), a, b in zip(m.named_parameters(), gg, gw):
        assert (a is None) == (b is None), name
        if a is not None:
            torch.testing.assert_close(a, b, rtol=0, atol=1e-10, msg=name)
    m.project_after_hop = True
    again, _ = _logits_and_grads(m, batch, g, seed=4)
    assert not torch.allclose(again, got)  # dropout is on: another seed drops other features


@pytest.mark.parametrize("backbone", ["gcn", "gat"])
def test_at_evaluation_the_model_is_the_one_that_drops_the_projected_inputs(backbone):
    """Dropout is off at evaluation, so where it applied does not matter: the same weights give the logits of
    input_dropout=projected (a GAT, whose first layer multiplies before aggregating, projects first)."""
    d = make_synthetic(num_items=120, num_sources=60, num_tags=10, random_degree=5, seed=2)
    feats = {t: x.double() for t, x in d.features.items()}
    sg = SampledGraph(d)
    extra = dict(layout="stack", norm="right") if backbone == "gcn" else dict(layout="stack", heads=2)
    m = _model(sg, d, feats, backbone=backbone, num_layers=2, **extra).eval()
    seeds = sg.seeds(torch.tensor([1, 2, 30, 77]))
    batch = sg.batch(sg.sample_blocks(seeds, FANOUTS[:2], torch.Generator().manual_seed(1)))
    got = m(*batch)
    m.input_dropout = "projected"
    torch.testing.assert_close(got, m(*batch), rtol=0, atol=1e-10)


def test_sparse_input_features_are_refused_with_the_fix():
    d = make_count_graph(num_items=40, num_users=20, num_tags=6, seed=0)  # one-hot user and tag ids (sparse)
    sg = SampledGraph(d)
    m = _model(
        sg,
        d,
        {t: x.double() for t, x in d.features.items()},
        embed_dim=None,
        num_layers=2,
        layout="stack",
        norm="right",
    )
    batch = sg.batch(sg.sample_blocks(sg.seeds(torch.tensor([0, 1])), FANOUTS[:2], torch.Generator().manual_seed(0)))
    with pytest.raises(ValueError, match="has sparse ones .*trainer.embed_dim.*input_dropout=projected"):
        m(*batch)
