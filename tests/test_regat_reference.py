"""regnn's RE-GAT / RE-GATv2 (and their plain and ablation forms) against a small reference written here in plain
torch from the authors' released stack (bywmm/RE-GNN at 2e297ef: model/REGAT.py, layer/REGATConv.py,
layer/REGATv2Conv.py, run_regnn.py), with the same weights, in float64, on a small typed graph.

The reference shares no model code with regnn: it builds its own typed edge list (self-loops removed, one
self-loop per node typed by the node's type), its own softmax over in-edges and its own layers. It reads regnn's
parameters by name only to copy them.

Released stack, L layers and H heads: layer 0 and layers 1..L-2 have W, concatenate their heads and apply ELU;
the last layer has no W and no activation and is applied twice (inside the loop, then as the "output
projection"); a Linear over the concatenated heads gives the logits; the representation is the head mean of the
last attention output. The relation weight w_r = LeakyReLU(lambda * e_r) (slope 0.01) is ADDED to the attention
logit before the LeakyReLU (GAT) or to a.LeakyReLU(W_s h_u + W_d h_v) (GATv2); the plain model (--no_re) holds
every weight at 1.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from conftest import relation

from regnn.data.synthetic import make_synthetic
from regnn.models.regnn import REGNN, RelationInputs

SLOPE = 0.01  # the authors' attention and relation LeakyReLU slope


def typed_edges(data):
    """(src, dst, rel, relation names, offsets, number of nodes) of the homogeneous graph the authors build."""
    g = data.graph
    offsets, n = {}, 0
    for t in g.ntypes:
        offsets[t], n = n, n + g.num_nodes(t)
    src, dst, rel, names = [], [], [], []
    for r, (st, et, dt) in enumerate(g.canonical_etypes):
        u, v = g.edges(etype=(st, et, dt))
        for a, b in zip((u + offsets[st]).tolist(), (v + offsets[dt]).tolist()):
            if a != b:
                src.append(a), dst.append(b), rel.append(r)
        names.append(et)
    for i, t in enumerate(g.ntypes):
        for a in range(offsets[t], offsets[t] + g.num_nodes(t)):
            src.append(a), dst.append(a), rel.append(len(g.canonical_etypes) + i)
        names.append(f"self:{t}")
    return torch.tensor(src), torch.tensor(dst), torch.tensor(rel), names, offsets, n


def softmax_in_edges(e, dst, n):
    """Softmax of e (E, H) over the in-edges of each destination, one destination at a time."""
    a = torch.zeros_like(e)
    for v in range(n):
        m = dst == v
        if m.any():
            a[m] = torch.softmax(e[m], 0)
    return a


def attention_layer(p, h, src, dst, rel, w, n, heads, v2, act):
    """One REGATConv / REGATv2Conv call of the authors (dropout off)."""
    if v2:
        zs = h if p["W_src"] is None else h @ p["W_src"].t() + p["b_src"]
        zd = h if p["W_dst"] is None else h @ p["W_dst"].t() + p["b_dst"]
        zs, zd = zs.view(n, heads, -1), zd.view(n, heads, -1)
        e = (F.leaky_relu(zs[src] + zd[dst], SLOPE) * p["attn"]).sum(-1) + w[rel]
        z = zs
    else:
        z = (h if p["W"] is None else h @ p["W"].t()).view(n, heads, -1)
        el, er = (z * p["attn_l"]).sum(-1), (z * p["attn_r"]).sum(-1)
        e = F.leaky_relu(el[src] + er[dst] + w[rel], SLOPE)
    a = softmax_in_edges(e, dst, n)
    out = torch.zeros_like(z[:n])
    out.index_add_(0, dst, a[:, :, None] * z[src])
    if p.get("res") is not None:  # residual=True: res_fc(h) added before the activation (GATv2's with a bias)
        out = out + (h @ p["res"].t() + (p["res_b"] if v2 else 0)).view(n, heads, -1)
    return F.elu(out) if act else out


def reference_forward(params, data, heads, v2):
    src, dst, rel, _, offsets, n = typed_edges(data)
    h = torch.cat([data.features[t] @ params["proj"][t][0].t() + params["proj"][t][1] for t in data.graph.ntypes])
    layers = params["layers"]
    num_layers = len(layers)
    ws = params["relation"]  # (L, R, H) weights after LeakyReLU(lambda * e)
    h = attention_layer(layers[0], h, src, dst, rel, ws[0], n, heads, v2, act=True).flatten(1)
    for i in range(1, num_layers):
        h = attention_layer(layers[i], h, src, dst, rel, ws[i], n, heads, v2, act=i < num_layers - 1).flatten(1)
    # the released forward's loop already ran the last layer; it runs once more as the output layer
    # (bywmm/RE-GNN 2e297ef model/REGAT.py), and regnn keeps that
    emb = attention_layer(layers[-1], h, src, dst, rel, ws[-1], n, heads, v2, act=False)
    out = emb.flatten(1) @ params["out"][0].t() + params["out"][1]
    t = slice(offsets[data.target], offsets[data.target] + data.graph.num_nodes(data.target))
    return out[t], emb.mean(1)[t]


def params_of(model: REGNN, names: list[str], num_layers: int, v2: bool) -> dict:
    """regnn's weights in the reference's form (copied by parameter name; relation weights reordered by name)."""
    sd = model.state_dict()
    proj = {t: (lin.weight, lin.bias) for t, lin in model.proj.lins.items()}
    layers = []
    for i in range(num_layers):
        pre = f"convs.{i}."
        if v2:
            has_w = pre + "fc_src.weight" in sd
            layers.append(
                {
                    "W_src": sd.get(pre + "fc_src.weight"),
                    "b_src": sd.get(pre + "fc_src.bias"),
                    "W_dst": sd.get(pre + "fc_dst.weight"),
                    "b_dst": sd.get(pre + "fc_dst.bias"),
                    "attn": sd[pre + "attn"],
                    "res": sd.get(pre + "res_fc.weight"),
                    "res_b": sd.get(pre + "res_fc.bias"),
                }
            )
        else:
            has_w = pre + "fc.weight" in sd
            layers.append(
                {
                    "W": sd.get(pre + "fc.weight"),
                    "attn_l": sd[pre + "attn_l"],
                    "attn_r": sd[pre + "attn_r"],
                    "res": sd.get(pre + "res_fc.weight"),
                }
            )
        assert has_w == (i < num_layers - 1), "layers 0..L-2 have W, the last has none"
    (rw,) = model.relations  # one set of relation weights for all L layers (equal heads)
    if rw.is_constant:  # plain: no relation parameters; the authors hold every weight at 1
        relation = torch.ones(num_layers, len(names), rw.heads, dtype=torch.float64)
    else:
        alpha = rw()  # (L, R, H) in regnn's relation order
        relation = alpha[:, [model.relation_names.index(r) for r in names]]
    return {"proj": proj, "layers": layers, "relation": relation, "out": (sd["head.lin.weight"], sd["head.lin.bias"])}


def build(data, backbone, heads, hidden, num_layers, edge, self_loop, scale=100.0, seed=0, **kw):
    torch.manual_seed(seed)
    inputs = RelationInputs.build(data)
    model = REGNN.from_inputs(
        inputs,
        data.in_dims,
        data.num_classes,
        backbone=backbone,
        hidden=hidden,
        num_layers=num_layers,
        heads=heads,
        dropout=0.0,
        attn_dropout=0.0,
        attn_negative_slope=SLOPE,
        relation=relation(scale=scale, edge_embeddings=edge, self_loop_embeddings=self_loop),
        **kw,
    ).double()
    with torch.no_grad():  # relation weights away from 1 (and some below 0), as after training
        for p in model.relations.parameters():
            p.copy_(torch.randn(p.shape, dtype=p.dtype) * 2.0 / scale)
    return model.eval(), inputs


@pytest.fixture(scope="module")
def small():
    data = make_synthetic(num_items=24, num_sources=12, num_tags=4, feat_dim=5, seed=3)
    data.features = {t: x.double() for t, x in data.features.items()}
    return data


@pytest.mark.parametrize("backbone", ["gat", "gatv2"])
@pytest.mark.parametrize("edge,self_loop", [(True, True), (False, False), (True, False), (False, True)])
def test_regnn_gat_stack_equals_the_released_forward(small, backbone, edge, self_loop):
    heads, hidden, num_layers = 3, 4, 4
    model, inputs = build(small, backbone, heads, hidden, num_layers, edge, self_loop)
    names = typed_edges(small)[3]
    assert sorted(names) == sorted(model.relation_names)
    with torch.no_grad():
        logits, emb = model(inputs, small.features, embed=True)
        params = params_of(model, names, num_layers, backbone == "gatv2")
        want_logits, want_emb = reference_forward(params, small, heads, backbone == "gatv2")
    torch.testing.assert_close(logits, want_logits, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(emb, want_emb, rtol=1e-10, atol=1e-12)
    # the model has exactly the released stack's parameters
    n_rel = len(names) * heads * num_layers * (edge or self_loop)
    per_type = sum(x.shape[1] * hidden + hidden for x in small.features.values())
    if backbone == "gat":
        attn = num_layers * 2 * heads * hidden + hidden * heads * hidden + (num_layers - 2) * (hidden * heads) ** 2
    else:
        attn = (
            num_layers * heads * hidden
            + 2 * (hidden * heads * hidden + heads * hidden)
            + (num_layers - 2) * 2 * ((hidden * heads) ** 2 + heads * hidden)
        )
    head = hidden * heads * small.num_classes + small.num_classes
    learnt_rel = sum(p.numel() for p in model.relations.parameters())
    assert learnt_rel <= n_rel
    assert sum(p.numel() for p in model.parameters()) - learnt_rel == per_type + attn + head


@pytest.mark.parametrize("backbone", ["gat", "gatv2"])
@pytest.mark.parametrize("edge,self_loop", [(True, True), (False, False)])
def test_residual_gat_stack_equals_the_released_forward(small, backbone, edge, self_loop):
    """residual=True: REGAT's residual argument, a linear map of the input (GATv2's with a bias) added on every
    layer but the first (the last layer's shared map in both of its calls)."""
    heads, hidden, num_layers, v2 = 3, 4, 4, backbone == "gatv2"
    model, inputs = build(small, backbone, heads, hidden, num_layers, edge, self_loop, residual=True)
    names = typed_edges(small)[3]
    with torch.no_grad():
        for m in model.modules():  # the released init zeroes GATv2's biases: make them count here
            if getattr(m, "res_fc", None) is not None and m.res_fc.bias is not None:
                m.res_fc.bias.normal_()
        logits, emb = model(inputs, small.features, embed=True)
        params = params_of(model, names, num_layers, v2)
        assert [p["res"] is not None for p in params["layers"]] == [False] + [True] * (num_layers - 1)
        want_logits, want_emb = reference_forward(params, small, heads, v2)
        for p in params["layers"]:
            p["res"] = None
        without = reference_forward(params, small, heads, v2)[0]
    torch.testing.assert_close(logits, want_logits, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(emb, want_emb, rtol=1e-10, atol=1e-12)
    assert (logits - without).abs().max() > 1e-3  # the residual terms are in the comparison


def test_relation_weights_change_the_output(small):
    """The comparison above is not vacuous: other relation weights give other logits."""
    model, inputs = build(small, "gat", 2, 4, 3, True, True)
    with torch.no_grad():
        before = model(inputs, small.features)[0].clone()
        for p in model.relations.parameters():
            p.mul_(-1.0)
        after = model(inputs, small.features)[0]
    assert (before - after).abs().max() > 1e-3
