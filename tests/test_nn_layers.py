"""regnn.nn's PyG-style layers (x, edge_index, edge_type, node_type) compute what the package's own layers compute
on the relation graph regnn builds, in float64: outputs and every gradient."""

import pytest
import torch

from regnn.core.attention import REGATConv as OwnGAT
from regnn.core.conv import REGraphConv
from regnn.core.relation import Relation, RelationWeights
from regnn.data.relation_graph import build_relation_graph
from regnn.data.synthetic import make_synthetic
from regnn.nn import REGATConv, REGCNConv


def homogeneous(data):
    """edge_index, edge_type and node_type of the graph, node types numbered one after the other (to_homogeneous)."""
    g = data.graph
    offsets, start = {}, 0
    for t in g.ntypes:
        offsets[t], start = start, start + g.num_nodes(t)
    ei, et = [], []
    for r, (s, e, d) in enumerate(g.canonical_etypes):
        u, v = g.edges(etype=(s, e, d))
        ei.append(torch.stack([u + offsets[s], v + offsets[d]]))
        et.append(torch.full((u.numel(),), r))
    node_type = torch.cat([torch.full((g.num_nodes(t),), i) for i, t in enumerate(g.ntypes)])
    return torch.cat(ei, 1), torch.cat(et), node_type


def case(seed):
    data = make_synthetic(num_items=60, num_sources=30, num_tags=7, seed=seed)
    edge_index, edge_type, node_type = homogeneous(data)
    perm = torch.randperm(edge_type.numel(), generator=torch.Generator().manual_seed(seed))  # any edge order
    loops = torch.arange(5).repeat(2, 1)  # self-edges in the input are replaced by the typed self-loops
    edge_index = torch.cat([edge_index[:, perm], loops], 1)
    edge_type = torch.cat([edge_type[perm], torch.zeros(5, dtype=torch.long)])
    return data, edge_index, edge_type, node_type


def randomise(*relation_weights):
    g = torch.Generator().manual_seed(1)
    for p in relation_weights[0].parameters():
        p.data = torch.rand(p.shape, generator=g, dtype=torch.float64) * 0.03 - 0.005  # some below 0: the slope
    for other in relation_weights[1:]:
        other.load_state_dict(relation_weights[0].state_dict())


def grads(*tensors):
    return [t.grad.clone() for t in tensors]


@pytest.mark.parametrize("seed,norm", [(0, "both"), (1, "right"), (2, "both")])
def test_regcnconv_equals_the_package_layer_in_float64(seed, norm):
    data, edge_index, edge_type, node_type = case(seed)
    rg = build_relation_graph(data)
    R, T = rg.num_edge_relations, len(rg.ntypes)
    torch.manual_seed(seed)
    layer = REGCNConv(5, 3, R, T, norm=norm).double()
    own_conv = REGraphConv(5, 3, norm=norm).double()
    own_conv.load_state_dict(layer.conv.state_dict())
    own_rel = RelationWeights(R, T, Relation(True, True, 100.0, 0.01)).double()
    randomise(layer.relations, own_rel)
    x = torch.randn(rg.num_nodes, 5, dtype=torch.float64)
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    out = layer(xa, edge_index, edge_type, node_type)
    want = own_conv(rg.adjacency(), xb, own_rel())
    torch.testing.assert_close(out, want, rtol=1e-12, atol=1e-12)
    w = torch.randn_like(out)
    (out * w).sum().backward()
    (want * w).sum().backward()
    for a, b in zip(
        grads(xa, layer.conv.weight, layer.conv.bias, layer.relations.edge, layer.relations.self_loop),
        grads(xb, own_conv.weight, own_conv.bias, own_rel.edge, own_rel.self_loop),
    ):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)
    assert set(layer.relation_weights()) == {*range(R), *(f"self:{t}" for t in range(T))}


@pytest.mark.parametrize("heads,concat", [(1, True), (3, True), (2, False)])
def test_regatconv_equals_the_package_layer_in_float64(heads, concat):
    data, edge_index, edge_type, node_type = case(heads)
    rg = build_relation_graph(data)
    R, T = rg.num_edge_relations, len(rg.ntypes)
    torch.manual_seed(heads)
    layer = REGATConv(5, 4, R, T, heads=heads, concat=concat).double()
    own = OwnGAT(5, 4, heads=heads, bias=True).double()
    own.load_state_dict(layer.conv.state_dict())
    own_rel = RelationWeights(R, T, Relation(True, True, 100.0, 0.01), heads=heads).double()
    randomise(layer.relations, own_rel)
    x = torch.randn(rg.num_nodes, 5, dtype=torch.float64)
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    out = layer(xa, edge_index, edge_type, node_type)
    full = own(rg.adjacency(), xb, own_rel())
    want = full.flatten(1) if concat else full.mean(1)
    torch.testing.assert_close(out, want, rtol=1e-12, atol=1e-12)
    w = torch.randn_like(out)
    (out * w).sum().backward()
    (want * w).sum().backward()
    for a, b in zip(
        grads(xa, layer.conv.fc.weight, layer.conv.attn_l, layer.relations.edge, layer.relations.self_loop),
        grads(xb, own.fc.weight, own.attn_l, own_rel.edge, own_rel.self_loop),
    ):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


def test_bad_ids_are_named():
    layer = REGCNConv(2, 2, num_relations=2, num_node_types=1)
    x, ei = torch.randn(3, 2), torch.tensor([[0, 1], [1, 2]])
    with pytest.raises(ValueError, match=r"edge_type must lie in \[0, 2\)"):
        layer(x, ei, torch.tensor([0, 2]), torch.zeros(3, dtype=torch.long))
    with pytest.raises(ValueError, match=r"node_type must lie in \[0, 1\)"):
        layer(x, ei, torch.tensor([0, 1]), torch.tensor([0, 0, 1]))


def test_learn_switches_give_the_ablations_and_the_plain_layer():
    data, edge_index, edge_type, node_type = case(0)
    rg = build_relation_graph(data)
    R, T = rg.num_edge_relations, len(rg.ntypes)
    x = torch.randn(rg.num_nodes, 5, dtype=torch.float64)
    plain = REGCNConv(5, 3, R, T, learn="none").double()
    own = REGraphConv(5, 3).double()
    own.load_state_dict(plain.conv.state_dict())
    assert not list(plain.relations.parameters())
    torch.testing.assert_close(plain(x, edge_index, edge_type, node_type), own(rg.adjacency(), x, None))
    assert REGCNConv(5, 3, R, T, learn="edges").relations.self_loop is None
    assert REGATConv(5, 3, R, T, learn="self").relations.edge is None
    with pytest.raises(ValueError, match="learn must be one of"):
        REGCNConv(5, 3, R, T, learn="all")
