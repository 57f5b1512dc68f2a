"""regnn's GIN, GraphSAGE and MixHop against references written here in plain torch from the authors' released code
(bywmm/RE-GNN at 2e297ef: model/REGIN.py, layer/REGINConv.py, model/REGCN.py with use_sage, layer/RESAGEConv.py,
model/REMixHop.py, layer/REMixHopConv.py, run_regnn.py), with the same weights, in float64, on a small typed graph,
with relation weights (RE) and without (plain: every weight 1).

Released REGIN, L layers: the per-type input projection; layers 0..L-2 each
    norm = 1 / clamp(sum of the relation weights of a node's in-edges, min=1)
    h <- ELU(W (dropout(norm * sum_{u->v} w_r(e) h_u)))      (W: the MLP's second linear, no bias)
layer L-1: h <- norm * sum_{u->v} w_r(e) h_u (no W, no activation); logits = W_out(dropout(h)), no bias; the
representation is h. w_r = LeakyReLU(lambda * e_r) (slope 0.01), one set per layer.

Released RE-GraphSAGE (REGCN with RESAGEConv), L layers: d_u = clamp(sum of the weights of u's in-edges, 1);
    h <- act((sum_{u->v} w_e h_u / d_u) W + h_v W + b)   for layers 1..L-2 (ELU, one W, bias)
    h <- sum_{u->v} w_e h_u / d_u + h_v                   for layers 0 and L-1 (no W, no bias, no activation)
logits = W_out h + b_out; the representation is h.

Released RE-MixHop, L layers: s_v = clamp(sum of the weights of v's in-edges, 1)^-1/2, and every message unweighted:
    x_0 = h, x_{j+1} = s * (sum_{u->v} s_u x_j[u]);  h <- ELU(concat_j W_j x_j)   (powers j = 0, 1, 2)
logits = W_out h, no bias; the representation is h.

The reference shares no model code with regnn: its graph and aggregation are its own
(test_regat_reference.typed_edges, loops over edges).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from conftest import relation

from regnn.data.synthetic import make_synthetic
from regnn.models.regnn import REGNN, RelationInputs
from test_regat_reference import typed_edges


def weighted_mean(h, src, dst, w, n):
    """norm_v * sum over in-edges u->v of w_e h_u, norm_v = 1 / clamp(sum of w_e over v's in-edges, 1)."""
    out = torch.zeros(n, h.shape[1], dtype=h.dtype)
    deg = torch.zeros(n, dtype=h.dtype)
    for u, v, we in zip(src.tolist(), dst.tolist(), w):
        out[v] += we * h[u]
        deg[v] += we
    return out / deg.clamp(min=1).unsqueeze(1)


def reference_gin(params, data):
    src, dst, rel, _, offsets, n = typed_edges(data)
    h = torch.cat([data.features[t] @ params["proj"][t][0].t() + params["proj"][t][1] for t in data.graph.ntypes])
    for layer, W in enumerate(params["W"]):
        w = params["relation"][layer][rel]
        h = weighted_mean(h, src, dst, w, n)
        if W is not None:
            h = F.elu(h @ W.t())
    t = slice(offsets[data.target], offsets[data.target] + data.graph.num_nodes(data.target))
    return (h @ params["out"].t())[t], h[t]


def regnn_params(model: REGNN, names: list[str], num_layers: int) -> dict:
    sd = model.state_dict()
    (rw,) = model.relations
    if rw.is_constant:
        relation = torch.ones(num_layers, len(names), dtype=torch.float64)
    else:
        alpha = rw()[..., 0]  # (L, R) in regnn's relation order
        relation = alpha[:, [model.relation_names.index(r) for r in names]]
    return {
        "proj": {t: (lin.weight, lin.bias) for t, lin in model.proj.lins.items()},
        "W": [sd.get(f"convs.{i}.lin.weight") for i in range(num_layers)],
        "relation": relation,
        "out": sd["head.lin.weight"],
    }


@pytest.fixture(scope="module")
def small():
    data = make_synthetic(num_items=24, num_sources=12, num_tags=4, feat_dim=5, seed=3)
    data.features = {t: x.double() for t, x in data.features.items()}
    return data


@pytest.mark.parametrize("re", [True, False])
def test_regnn_gin_equals_the_released_regin(small, re):
    hidden, num_layers, scale = 6, 4, 100.0
    torch.manual_seed(0)
    inputs = RelationInputs.build(small)
    model = (
        REGNN.from_inputs(
            inputs,
            small.in_dims,
            small.num_classes,
            backbone="gin",
            hidden=hidden,
            num_layers=num_layers,
            dropout=0.0,
            mlp_dropout=0.5,
            relation=relation(scale=scale, edge_embeddings=re, self_loop_embeddings=re),
        )
        .double()
        .eval()
    )
    with torch.no_grad():  # relation weights away from 1 (some negative, some degrees under 1), as after training
        for p in model.relations.parameters():
            p.copy_(torch.randn(p.shape, dtype=p.dtype) * 2.0 / scale)
        names = typed_edges(small)[3]
        params = regnn_params(model, names, num_layers)
        assert [W is not None for W in params["W"]] == [True] * (num_layers - 1) + [False]
        logits, emb = model(inputs, small.features, embed=True)
        want_logits, want_emb = reference_gin(params, small)
    torch.testing.assert_close(logits, want_logits, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(emb, want_emb, rtol=1e-10, atol=1e-12)
    # the released stack's parameters: projections, L-1 linears hidden x hidden, the output layer, no biases
    per_type = sum(x.shape[1] * hidden + hidden for x in small.features.values())
    learnt = sum(p.numel() for p in model.relations.parameters())
    assert sum(p.numel() for p in model.parameters()) - learnt == (
        per_type + (num_layers - 1) * hidden * hidden + hidden * small.num_classes
    )
    if re:  # the comparison is not vacuous: other relation weights, other logits
        params["relation"] = params["relation"] * 0 + 1
        assert (reference_gin(params, small)[0] - logits).abs().max() > 1e-3


def in_degree(src, dst, w, n):
    deg = torch.zeros(n, dtype=w.dtype)
    for v, we in zip(dst.tolist(), w):
        deg[v] += we
    return deg


def edge_sum(h, src, dst, w, n):
    """sum over in-edges u->v of w_e h_u."""
    out = torch.zeros(n, h.shape[1], dtype=h.dtype)
    for u, v, we in zip(src.tolist(), dst.tolist(), w):
        out[v] += we * h[u]
    return out


def project(params, data):
    return torch.cat([data.features[t] @ params["proj"][t][0].t() + params["proj"][t][1] for t in data.graph.ntypes])


def targets(data, offsets):
    return slice(offsets[data.target], offsets[data.target] + data.graph.num_nodes(data.target))


def reference_sage(params, data):
    src, dst, rel, _, offsets, n = typed_edges(data)
    h = project(params, data)
    for layer, (W, b) in enumerate(params["Wb"]):
        w = params["relation"][layer][rel]
        norm = 1.0 / in_degree(src, dst, w, n).clamp(min=1)
        root = h @ W if W is not None else h
        agg = edge_sum(h * norm.unsqueeze(1), src, dst, w, n)
        h = (agg @ W if W is not None else agg) + root
        if W is not None:
            h = F.elu(h + b)
    t = targets(data, offsets)
    return (h @ params["out"][0].t() + params["out"][1])[t], h[t]


def reference_mixhop(params, data, powers=(0, 1, 2)):
    src, dst, rel, _, offsets, n = typed_edges(data)
    h = project(params, data)
    ones = torch.ones(len(src), dtype=h.dtype)
    for layer, Ws in enumerate(params["Wj"]):
        w = params["relation"][layer][rel]
        norm = in_degree(src, dst, w, n).clamp(min=1).pow(-0.5).unsqueeze(1)
        outs, x = [], h
        for j in range(max(powers) + 1):
            if j in powers:
                outs.append(x @ Ws[powers.index(j)].t())
            x = edge_sum(x * norm, src, dst, ones, n) * norm  # copy_u: the weights are in the norm only
        h = F.elu(torch.cat(outs, 1))
    t = targets(data, offsets)
    return (h @ params["out"].t())[t], h[t]


def relation_table(model: REGNN, names: list[str], num_layers: int) -> torch.Tensor:
    (rw,) = model.relations
    if rw.is_constant:
        return torch.ones(num_layers, len(names), dtype=torch.float64)
    return rw()[..., 0][:, [model.relation_names.index(r) for r in names]]


def built(small, backbone, re, hidden, num_layers, scale, **kw):
    torch.manual_seed(0)
    inputs = RelationInputs.build(small)
    model = (
        REGNN.from_inputs(
            inputs,
            small.in_dims,
            small.num_classes,
            backbone=backbone,
            hidden=hidden,
            num_layers=num_layers,
            dropout=0.5,
            relation=relation(scale=scale, edge_embeddings=re, self_loop_embeddings=re),
            **kw,
        )
        .double()
        .eval()
    )
    with torch.no_grad():  # relation weights away from 1 (some negative, some degrees under 1), as after training
        for p in model.relations.parameters():
            p.copy_(torch.randn(p.shape, dtype=p.dtype) * 2.0 / scale)
        for name, p in model.named_parameters():  # biases away from their zero init, so that they count
            if name.endswith("bias"):
                p.add_(torch.randn(p.shape, dtype=p.dtype) * 0.1)
    return inputs, model


@pytest.mark.parametrize("re", [True, False])
def test_regnn_sage_equals_the_released_resage(small, re):
    hidden, num_layers, scale = 6, 4, 10.0
    inputs, model = built(small, "sage", re, hidden, num_layers, scale, double_dropout=True)
    sd = model.state_dict()
    names = typed_edges(small)[3]
    params = {
        "proj": {t: (lin.weight, lin.bias) for t, lin in model.proj.lins.items()},
        "Wb": [(sd.get(f"convs.{i}.weight"), sd.get(f"convs.{i}.bias")) for i in range(num_layers)],
        "relation": relation_table(model, names, num_layers),
        "out": (sd["head.weight"], sd["head.bias"]),
    }
    assert [W is not None for W, _ in params["Wb"]] == [False] + [True] * (num_layers - 2) + [False]
    with torch.no_grad():
        want_logits, want_emb = reference_sage(params, small)
        logits, emb = model(inputs, small.features, embed=True)
        fast_logits, _ = model(inputs, small.features)  # the last layer on the class scores (REGNN.propagate)
    for got, want in ((logits, want_logits), (emb, want_emb), (fast_logits, want_logits)):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)
    # one W and one bias per middle layer (the released layer's unused weight_root is not built)
    per_type = sum(x.shape[1] * hidden + hidden for x in small.features.values())
    learnt = sum(p.numel() for p in model.relations.parameters())
    assert sum(p.numel() for p in model.parameters()) - learnt == (
        per_type + (num_layers - 2) * (hidden * hidden + hidden) + hidden * small.num_classes + small.num_classes
    )
    # the released dropout: the model's before layer 0, two masks (the model's and the layer's) before the others
    assert [d.p for d in model.dropouts] == [0.5] + [0.75] * (num_layers - 1)
    if re:  # the comparison is not vacuous: other relation weights, other logits
        params["relation"] = params["relation"] * 0 + 1
        assert (reference_sage(params, small)[0] - logits).abs().max() > 1e-3


@pytest.mark.parametrize("re", [True, False])
def test_regnn_mixhop_equals_the_released_remixhop(small, re):
    hidden, num_layers, scale = 5, 3, 100.0
    inputs, model = built(small, "mixhop", re, hidden, num_layers, scale)
    sd = model.state_dict()
    names = typed_edges(small)[3]
    params = {
        "proj": {t: (lin.weight, lin.bias) for t, lin in model.proj.lins.items()},
        "Wj": [[sd[f"convs.{i}.lins.{k}.weight"] for k in range(3)] for i in range(num_layers)],
        "relation": relation_table(model, names, num_layers),
        "out": sd["head.weight"],
    }
    with torch.no_grad():
        want_logits, want_emb = reference_mixhop(params, small)
        logits, emb = model(inputs, small.features, embed=True)
    torch.testing.assert_close(logits, want_logits, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(emb, want_emb, rtol=1e-10, atol=1e-12)
    assert "head.bias" not in sd
    # the released dropout: none on the projected input, two masks before layer 1, one before each later layer
    assert [d.p for d in model.dropouts] == [0.0, 0.75] + [0.5] * (num_layers - 2)
    if re:  # the weights act through the degrees: other relation weights, other logits
        params["relation"] = params["relation"] * 0 + 1
        assert (reference_mixhop(params, small)[0] - logits).abs().max() > 1e-3


@pytest.mark.parametrize("backbone", ["sage", "mixhop"])
def test_relation_weight_gradients_flow_through_the_degrees(small, backbone):
    """The relation weights' gradient in float64 against finite differences: through the messages and the source
    degrees (GraphSAGE), through the degrees alone (MixHop)."""
    inputs, model = built(small, backbone, True, 4, 3, 10.0)
    (rw,) = model.relations
    param = next(rw.parameters())

    def loss():
        logits, _ = model(inputs, small.features)
        return (logits**2).sum()

    out = loss()
    (grad,) = torch.autograd.grad(out, param)
    idx = tuple(int(i) for i in torch.nonzero(grad.abs() > 0)[0])
    eps = 1e-7
    with torch.no_grad():
        param[idx] += eps
        up = loss()
        param[idx] -= 2 * eps
        down = loss()
        param[idx] += eps
    assert grad.abs().max() > 0
    torch.testing.assert_close(grad[idx], (up - down) / (2 * eps), rtol=1e-5, atol=1e-8)
