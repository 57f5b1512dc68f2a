"""regnn's GTN against a small reference written here in plain torch from the GTN code's final version
(seongjunyun/Graph_Transformer_Networks at 0df0c69: model_gtn.py GTN / GTLayer / GTConv, gcn.py GCNConv, and the
adjacency list main.py builds), with the same weights, in float64, on a small typed graph.

The reference shares no model code with regnn: it builds dense relation matrices from the graph's edges (the
identity appended last, as main.py does), forms every product explicitly, row-normalises after every GT layer as
`GTN.normalization` does, and applies GCNConv's self-loops, row normalisation and bias. GTN multiplies one feature
matrix by one GCN weight; here the node types' features sit in a block-diagonal matrix and regnn's per-type
weights are stacked into that one weight, which is the same linear map.
"""

from __future__ import annotations

import pytest
import torch

from regnn.data.synthetic import make_synthetic
from regnn.models.baselines.gtn import GTN
from regnn.models.baselines.inputs import SelfLoopGraph
from regnn.models.stack import StackShape


def relation_matrices(data):
    """GTN's A: one dense (n, n) matrix per relation, A[dst, src] = 1 per edge (main.py's edge_index is (dst, src)
    and GCNConv sums x[col] into row), then the identity. GTN reads scipy matrices, one entry per node pair; the
    synthetic graph's noise relations repeat pairs, and each repeat counts here as it does in regnn's graph."""
    g = data.graph
    offsets, n = {}, 0
    for t in g.ntypes:
        offsets[t], n = n, n + g.num_nodes(t)
    mats = []
    for st, et, dt in g.canonical_etypes:
        u, v = g.edges(etype=(st, et, dt))
        a = torch.zeros(n, n, dtype=torch.float64)
        a.index_put_((v + offsets[dt], u + offsets[st]), torch.ones(len(u), dtype=a.dtype), accumulate=True)
        mats.append(a)
    return mats + [torch.eye(n, dtype=torch.float64)], offsets, n


def gtn_released(A, X, gcn_weight, gcn_bias, conv_logits, lin_w, lin_b, num_layers, target):
    """model_gtn.GTN.forward on dense matrices. conv_logits[k]: the (channels, candidates) weight of the k-th
    GTConv in construction order (layer 0 conv1, layer 0 conv2, layer 1 conv1, ...)."""

    def gtconv(w):  # one soft selection per channel
        f = torch.softmax(w, dim=1)
        return [sum(f[i, j] * A[j] for j in range(len(A))) for i in range(f.shape[0])]

    def normalization(h):  # value * deg_row^-1, deg over the product's rows; inf -> 0
        deg = h.sum(1)
        inv = deg.pow(-1)
        inv[inv == float("inf")] = 0
        return inv[:, None] * h

    H = None
    for i in range(num_layers):
        if i == 0:
            a, b = gtconv(conv_logits[0]), gtconv(conv_logits[1])
        else:
            a, b = H, gtconv(conv_logits[i + 1])
        H = [normalization(x @ y) for x, y in zip(a, b)]
    outs = []
    for h in H:  # gcn.GCNConv: X W, self-loops of weight 1, deg over rows, norm = deg^-1[row] * w, + bias
        ah = h + torch.eye(h.shape[0], dtype=h.dtype)
        deg = ah.sum(1)
        inv = deg.pow(-1)
        inv[inv == float("inf")] = 0
        outs.append(torch.relu(inv[:, None] * ah @ (X @ gcn_weight) + gcn_bias))
    x_ = torch.cat(outs, 1)
    return x_[target] @ lin_w.t() + lin_b, x_[target]


@pytest.mark.parametrize("num_layers,channels,scale", [(1, 2, 1.0), (2, 2, 1.0), (3, 3, 100.0)])
def test_gtn_matches_the_released_model(num_layers, channels, scale):
    torch.manual_seed(0)
    data = make_synthetic(num_items=24, num_sources=10, num_tags=5)
    inputs = SelfLoopGraph.build(data)
    in_dims = {t: x.shape[1] for t, x in data.features.items()}
    model = GTN(
        in_dims,
        StackShape(6, 3, num_layers),
        relation_names=inputs.relation_names,
        num_channels=channels,
        dropout=0.0,
        select_lr_scale=scale,
    ).double()
    with torch.no_grad():  # selections far from uniform, a non-zero bias: every term matters
        model.select.copy_(torch.randn_like(model.select) / scale)
        model.gcn_bias.copy_(torch.randn_like(model.gcn_bias))
    feats = {t: x.to_dense().double() if x.is_sparse else x.double() for t, x in data.features.items()}
    logits, emb = model(inputs, feats, embed=True)

    A, offsets, n = relation_matrices(data)
    assert len(A) == len(inputs.relation_names) and inputs.relation_names[-1] == "self"
    X = torch.block_diag(*[feats[t] for t in data.graph.ntypes])
    W = torch.cat([model.gcn.lins[t].weight.t() for t in data.graph.ntypes])
    conv = [scale * model.select[k] for k in range(num_layers + 1)]
    target = torch.arange(data.graph.num_nodes(data.target)) + offsets[data.target]
    want, want_emb = gtn_released(
        A, X, W, model.gcn_bias, conv, model.linear.weight, model.linear.bias, num_layers, target
    )
    assert logits.dtype == torch.float64
    torch.testing.assert_close(logits, want, rtol=0, atol=1e-10)
    torch.testing.assert_close(emb, want_emb, rtol=0, atol=1e-10)
    go = torch.randn_like(want)
    got_g = torch.autograd.grad(logits, [model.select, model.gcn_bias], go, retain_graph=True)
    want_g = torch.autograd.grad(want, [model.select, model.gcn_bias], go)
    for a, b in zip(got_g, want_g):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-10)


def test_selections_start_near_uniform_as_gtn_draws_them():
    shape = StackShape(hidden=64, num_classes=2, num_layers=2)
    g = GTN({"a": 3}, shape, relation_names=["r", "self"], num_channels=2, dropout=0.0, select_lr_scale=100)
    logits = g.select_lr_scale * g.select.detach()
    assert logits.abs().max() < 0.1 and logits.std() > 0  # N(0, 0.01^2) logits, not one constant
