"""regnn.nn's layers as PyTorch modules: under inference_mode (and the whole model too), deep-copied and saved
whole after a call, in half, bfloat16 and double precision, reset and printed."""

import copy
import io

import pytest
import torch

from conftest import relation
from test_nn_layers_hostile import C, R, T, Twin, graph, make

from regnn.data.synthetic import make_synthetic
from regnn.models import REGNN, RelationInputs
from regnn.nn import REGATConv, REGATv2Conv, REGCNConv, REGINConv, REMixHopConv, RESAGEConv

LAYERS = [REGCNConv, RESAGEConv, REGINConv, REMixHopConv, REGATConv, REGATv2Conv]


def inputs(n=30, e=90, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    ei, et, nt = graph(n, e, g)
    return torch.randn(n, C, generator=g, dtype=dtype), ei, et, nt


@pytest.mark.parametrize("cls", LAYERS)
def test_a_layer_runs_under_inference_mode_and_trains_after(cls):
    """The graph a layer first builds under inference_mode serves the training call after it."""
    layer, twin = make(cls), make(cls)
    x, ei, et, nt = inputs()
    with torch.inference_mode():
        got = layer(x, ei, et, nt)
        fresh = layer(*inputs(seed=1))  # tensors made in inference mode too
    with torch.no_grad():
        assert torch.equal(got, twin(x, ei, et, nt))
        assert torch.equal(fresh, Twin(layer)(*inputs(seed=1)))
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    layer(xa, ei, et, nt).square().sum().backward()
    twin(xb, ei, et, nt).square().sum().backward()
    assert torch.equal(xa.grad, xb.grad)
    for p, q in zip(layer.parameters(), twin.parameters()):
        assert torch.equal(p.grad, q.grad)


@pytest.mark.parametrize("name", ["gcn", "sage", "gat"])
def test_the_model_runs_under_inference_mode_and_trains_after(name, backend):
    """A model's first pass under inference_mode gives the no_grad pass's scores, and leaves nothing in the caches
    (the graph's, the relation weights') that a training pass after it would trip on: its gradients are those of
    a twin that never ran under inference_mode."""
    data = make_synthetic(num_items=60, num_sources=30, num_tags=7, seed=0)
    data.features["item"] = data.features["item"].to_sparse()  # multiplied as CSR, kept per input tensor
    graph_inputs = RelationInputs.build(data, backend=backend)
    torch.manual_seed(0)
    model = REGNN.from_inputs(
        graph_inputs, data.in_dims, data.num_classes, relation=relation(), backbone=name, hidden=8, num_layers=2
    )
    twin = copy.deepcopy(model)
    model.eval(), twin.eval()
    with torch.inference_mode():
        got, _ = model(graph_inputs, data.features)
    with torch.no_grad():
        want, _ = twin(graph_inputs, data.features)
    assert torch.equal(got, want)
    for m in (model, twin):
        m.train()
        torch.manual_seed(1)
        m(graph_inputs, data.features)[0].logsumexp(1).sum().backward()
    for p, q in zip(model.parameters(), twin.parameters()):
        assert torch.equal(p.grad, q.grad)


@pytest.mark.parametrize("edit", ["data", "vector_to_parameters"])
def test_the_model_computes_with_relation_weights_edited_without_a_version(edit, backend):
    """Relation weights changed where no version counter sees it (through .data, or torch's
    vector_to_parameters) are what the next pass computes with: the same scores as a fresh copy of the model,
    not the previous pass's prepared weights."""
    data = make_synthetic(num_items=60, num_sources=30, num_tags=7, seed=0)
    graph_inputs = RelationInputs.build(data, backend=backend)
    torch.manual_seed(0)
    model = REGNN.from_inputs(
        graph_inputs, data.in_dims, data.num_classes, relation=relation(), backbone="gcn", hidden=8, num_layers=3
    ).eval()
    weights = model.relations[0].edge
    with torch.no_grad():
        before, _ = model(graph_inputs, data.features)
        if edit == "data":
            weights.data.mul_(3.0)
        else:
            vec = torch.nn.utils.parameters_to_vector(model.relations.parameters())
            torch.nn.utils.vector_to_parameters(vec * 3.0, model.relations.parameters())
        after, _ = model(graph_inputs, data.features)
        fresh, _ = copy.deepcopy(model)(RelationInputs.build(data, backend=backend), data.features)
    assert not torch.equal(after, before)
    assert torch.equal(after, fresh)


@pytest.mark.parametrize("cls", LAYERS)
def test_a_layer_is_copied_and_saved_whole_after_a_call(cls):
    layer = make(cls)
    x, ei, et, nt = inputs()
    out = layer(x, ei, et, nt)
    assert set(layer.state_dict()) == {k for k, _ in layer.named_parameters()}  # the kept graph is no state
    stack = torch.nn.ModuleList([layer])  # inside a user's model, as `best = copy.deepcopy(model)` copies it
    for copied in (copy.deepcopy(stack)[0], _saved_and_loaded(stack)[0]):
        assert copied._graph._adj is None  # copies build their own graph
        assert torch.equal(copied(x, ei, et, nt), out)
        assert torch.equal(layer(x, ei, et, nt), out)


def _saved_and_loaded(module):
    buf = io.BytesIO()
    torch.save(module, buf)
    buf.seek(0)
    return torch.load(buf, weights_only=False)


def test_moving_or_converting_a_layer_drops_its_graph():
    layer = make(REGCNConv)
    x, ei, et, nt = inputs()
    layer(x, ei, et, nt)
    assert layer._graph._adj is not None
    layer.to("cpu", torch.float32)
    assert layer._graph._adj is None
    assert layer(x.float(), ei, et, nt).dtype == torch.float32


@pytest.mark.parametrize("dtype,tol", [(torch.float16, 2e-2), (torch.bfloat16, 5e-2)])
def test_low_precision_layers_stack_and_train_in_their_dtype(dtype, tol):
    """Half and bfloat16 layers return their dtype (so they stack) and give the float32 layers' numbers to their
    precision; their gradients reach the low-precision parameters."""
    torch.manual_seed(0)
    first, second = REGCNConv(C, 8, R, T), REGATConv(8, 3, R, T, heads=2)
    x, ei, et, nt = inputs(dtype=torch.float32)

    def run(a, b, x):
        return b(a(x, ei, et, nt).relu(), ei, et, nt)

    want = run(first, second, x)
    low = [copy.deepcopy(m).to(dtype) for m in (first, second)]
    out = run(*low, x.to(dtype))
    assert out.dtype == dtype
    torch.testing.assert_close(out.float(), want, rtol=tol, atol=tol)
    out.float().square().sum().backward()
    for p in (*low[0].parameters(), *low[1].parameters()):
        assert p.dtype == dtype and p.grad is not None and p.grad.dtype == dtype


@pytest.mark.parametrize("cls", LAYERS)
def test_a_double_layer_computes_in_double(cls):
    layer = make(cls)
    x, ei, et, nt = inputs()
    out = layer(x, ei, et, nt)
    assert out.dtype == torch.float64
    single = copy.deepcopy(layer).float()(x.float(), ei, et, nt)
    torch.testing.assert_close(out.float(), single, rtol=1e-5, atol=1e-6)
    assert not torch.equal(out, single.double())  # double's own rounding, not float32's widened


@pytest.mark.parametrize("cls", LAYERS)
def test_reset_parameters_starts_the_layer_afresh(cls):
    layer = make(cls)
    x, ei, et, nt = inputs()
    before = layer(x, ei, et, nt)
    weights = [p.clone() for p in _own(layer)]
    layer.reset_parameters()
    assert all(v == 1 for v in _flat(layer.relation_weights().values()))
    assert any(not torch.equal(p, q) for p, q in zip(weights, _own(layer)))
    assert not torch.equal(layer(x, ei, et, nt), before)
    assert layer.extra_repr().startswith(f"4, {layer.out_channels}, num_relations={R}, num_node_types={T}, ")
    assert repr(layer).startswith(f"{cls.__name__}(\n  4, ")


def _own(layer):
    return [p for n, p in layer.named_parameters() if not n.startswith("relations.")]


def _flat(values):
    return [x for v in values for x in (v if isinstance(v, list) else [v])]
