"""APPNP, the backbone of docs/adding_a_backbone.md: its propagation, and its relation weights."""

import torch
from omegaconf import OmegaConf

from regnn.data import make_synthetic
from regnn.pipeline import arch_of, build_model, model_kwargs
from test_config import cfg


def _model(*overrides):
    data = make_synthetic(num_items=60, num_sources=30, num_tags=5)
    mcfg = cfg("dataset=synthetic", *overrides).model
    inputs = arch_of(mcfg).prepare(data, "cpu", **model_kwargs(mcfg))
    torch.manual_seed(0)
    return build_model(mcfg, data, inputs).eval(), inputs, data


def _scores(model, inputs, data):
    with torch.no_grad():
        return model(inputs, data.features)[0]


def test_re_appnp_learns_one_weight_per_relation_for_all_steps():
    model, inputs, data = _model("model=re_appnp")
    weights = model.relation_weights()
    assert len(weights) == 1 and set(weights[0]) == set(inputs.rg.relation_names)
    assert cfg("model=appnp", "relation=re").model == cfg("model=re_appnp").model


def test_the_relation_weights_move_the_scores_unless_every_step_teleports_home():
    for teleport, moved in ((0.1, True), (1.0, False)):
        model, inputs, data = _model("model=re_appnp", f"model.teleport={teleport}")
        before = _scores(model, inputs, data)
        with torch.no_grad():
            for p in model.relations.parameters():
                p.mul_(3.0)
        assert (not torch.allclose(before, _scores(model, inputs, data))) == moved, teleport


def test_plain_appnp_has_no_relation_parameters():
    model, *_ = _model("model=appnp")
    assert not any(n.startswith("relations.") for n, _ in model.named_parameters())
    assert OmegaConf.to_container(cfg("model=appnp").model.relation) == {
        "edge_embeddings": False,
        "self_loop_embeddings": False,
        "scale": 100,
        "negative_slope": 0.01,
    }
