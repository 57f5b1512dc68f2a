"""regnn's GIN against a reference written here in plain torch from the authors' released code (bywmm/RE-GNN at
2e297ef: model/REGIN.py, layer/REGINConv.py, run_regnn.py), with the same weights, in float64, on a small typed
graph, with relation weights (RE) and without (plain: every weight 1).

Released REGIN, L layers: the per-type input projection; layers 0..L-2 each
    norm = 1 / clamp(sum of the relation weights of a node's in-edges, min=1)
    h <- ELU(W (dropout(norm * sum_{u->v} w_r(e) h_u)))      (W: the MLP's second linear, no bias)
layer L-1: h <- norm * sum_{u->v} w_r(e) h_u (no W, no activation); logits = W_out(dropout(h)), no bias; the
representation is h. w_r = LeakyReLU(lambda * e_r) (slope 0.01), one set per layer. The reference shares no model
code with regnn: its graph and aggregation are its own (test_regat_reference.typed_edges, loops over edges).
"""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

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
    return {"proj": {t: (lin.weight, lin.bias) for t, lin in model.proj.lins.items()},
            "W": [sd.get(f"convs.{i}.lin.weight") for i in range(num_layers)],
            "relation": relation, "out": sd["head.lin.weight"]}


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
    model = REGNN.from_inputs(inputs, small.in_dims, small.num_classes, backbone="gin", hidden=hidden,
                              num_layers=num_layers, dropout=0.0, mlp_dropout=0.5, scale=scale,
                              edge_embeddings=re, self_loop_embeddings=re).double().eval()
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
        per_type + (num_layers - 1) * hidden * hidden + hidden * small.num_classes)
    if re:  # the comparison is not vacuous: other relation weights, other logits
        params["relation"] = params["relation"] * 0 + 1
        assert (reference_gin(params, small)[0] - logits).abs().max() > 1e-3
