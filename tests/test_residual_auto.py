"""`model.residual: auto` and `model.input_width: auto` (RE-GAT's dataset=custom defaults): on (a layer-wide input)
where the target type has no features of its own, off (one head's width) elsewhere; settled from the dataset before a
model is built, refused where it cannot be."""

import re

import pytest
import torch

from conftest import cfg
from regnn.config import validate
from regnn.data.custom import save_npz
from regnn.data.features import FEATS_TYPES, is_one_hot_ids, one_hot_ids
from regnn.data.synthetic import BowGraph, IdGraph
from regnn.errors import ConfigError
from regnn.models import BACKBONES
from regnn.models.backbones import gat
from regnn.models.stack import StackShape
from regnn.spec import ModelSpec

SMALL_IDS = dict(num_movies=120, num_directors=20, num_actors=200, num_keywords=60, seed=0)


def test_only_the_identity_of_one_hot_ids_counts_as_no_features():
    assert is_one_hot_ids(one_hot_ids(5))
    assert not is_one_hot_ids(one_hot_ids(5).to_dense())
    assert not is_one_hot_ids(2 * one_hot_ids(5))

    def sparse(ids, shape):
        return torch.sparse_coo_tensor(torch.tensor(ids), torch.ones(len(ids[0])), shape, check_invariants=True)

    assert not is_one_hot_ids(sparse([[0, 1], [1, 0]], (2, 2)).coalesce())  # a permutation, not the ids
    assert not is_one_hot_ids(sparse([[0], [0]], (1, 3)).coalesce())


@pytest.mark.parametrize("graph, expected", [(IdGraph(**SMALL_IDS), True), (BowGraph(num_papers=80, seed=0), False)])
def test_auto_is_on_exactly_where_the_target_has_no_features(graph, expected):
    data = graph.build()
    spec = ModelSpec(name="re_gat", arch="regnn", options={"backbone": "gat", "residual": "auto"})
    assert spec.for_data(data).options["residual"] is expected
    fixed = ModelSpec(name="re_gat", arch="regnn", options={"backbone": "gat", "residual": False})
    assert fixed.for_data(data) is fixed


@pytest.mark.parametrize(
    "graph, expected", [(IdGraph(**SMALL_IDS), "layer"), (BowGraph(num_papers=80, seed=0), "head")]
)
def test_auto_input_width_is_a_layers_exactly_where_the_target_has_no_features(graph, expected):
    spec = ModelSpec(name="re_gat", arch="regnn", options={"backbone": "gat", "residual": False, "input_width": "auto"})
    settled = spec.for_data(graph.build())
    assert settled.options["input_width"] == expected and settled.options["residual"] is False


def test_a_custom_graph_without_features_gets_re_gat_with_the_residual_and_wide_inputs(tmp_path):
    from regnn.pipeline.fullbatch import DeviceGraph

    for name, graph in (("ids", IdGraph(**SMALL_IDS)), ("bow", BowGraph(num_papers=80, seed=0))):
        path = save_npz(graph.build(), tmp_path / name)
        c = cfg("dataset=custom", f"dataset.path={path}", "model=re_gat")
        assert (c.model.residual, c.model.input_width) == ("auto", "auto")
        model = DeviceGraph(c, "cpu").model()
        residual = [getattr(conv, "res_fc", None) is not None for conv in model.convs]
        assert any(residual) is (name == "ids"), (name, residual)
        width = c.model.hidden * (c.model.heads if name == "ids" else 1)
        assert {lin.out_features for lin in model.proj.lins.values()} == {width}
        assert model.convs[0].in_channels == width


@pytest.mark.parametrize("backbone", ["gat", "gatv2"])
def test_a_layer_wide_input_projects_every_type_to_heads_times_hidden_and_trains(backbone):
    from regnn.pipeline import arch_of, build_model, model_kwargs

    data = IdGraph(**SMALL_IDS).build()
    c = cfg("dataset=dblp", f"model=re_{backbone}", "model.hidden=4", "model.heads=3", "model.input_width=layer")
    inputs = arch_of(c.model).prepare(data, "cpu", **model_kwargs(c.model))
    model = build_model(c.model, data, inputs)
    assert {lin.out_features for lin in model.proj.lins.values()} == {12} and model.convs[0].in_channels == 12
    logits, _ = model(inputs, data.features)
    assert logits.shape == (data.labels.shape[0], data.num_classes)
    logits.square().sum().backward()
    assert all(lin.weight.grad is not None for lin in model.proj.lins.values())


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["model=re_gat", "model.residual=yes"], "model.residual='yes' is not valid: use true, false or auto"),
        (["model=simple_hgn", "model.residual=auto"], "model.residual='auto' is not valid: use true, false"),
        (["model=re_gat", "model.input_width=wide"], "model.input_width='wide' is not valid: use head, layer or auto"),
    ],
)
def test_a_residual_other_than_true_false_or_auto_is_refused(overrides, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        validate(cfg("dataset=dblp", *overrides), BACKBONES, FEATS_TYPES)


def test_a_builder_refuses_an_unsettled_auto():
    with pytest.raises(ValueError, match="residual must be true or false here, got 'auto'"):
        gat(StackShape(8, 3, 3), residual="auto")
    with pytest.raises(ValueError, match=re.escape("input_width must be one of ['head', 'layer'], got 'auto'")):
        gat(StackShape(8, 3, 3), input_width="auto")
