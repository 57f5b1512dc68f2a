"""regnn.nn's layers, the model's own: called PyG's way (x, edge_index, edge_type, node_type) they compute what they
compute on the relation graph regnn builds, in float64, outputs and every gradient."""

import pytest
import torch

from regnn.data.relation_graph import build_relation_graph
from regnn.data.synthetic import make_synthetic
from regnn.nn import REGATConv, REGATv2Conv, REGCNConv, REGINConv, REMixHopConv, RESAGEConv


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


def randomise(relation_weights):
    g = torch.Generator().manual_seed(1)
    for p in relation_weights.parameters():
        p.data = torch.rand(p.shape, generator=g, dtype=torch.float64) * 0.03 - 0.005  # some below 0: the slope


def grads(*tensors):
    return [t.grad.clone() for t in tensors]


LAYERS = {
    "gcn": lambda R, T: REGCNConv(5, 3, R, T),
    "gcn_right": lambda R, T: REGCNConv(5, 3, R, T, norm="right"),
    "sage": lambda R, T: RESAGEConv(5, 3, R, T),
    "gin": lambda R, T: REGINConv(5, 3, R, T),
    "mixhop": lambda R, T: REMixHopConv(5, 3, R, T),
    "gat": lambda R, T: REGATConv(5, 4, R, T, heads=3),
    "gat_mean": lambda R, T: REGATConv(5, 4, R, T, heads=2, concat=False),
    "gatv2": lambda R, T: REGATv2Conv(5, 4, R, T, heads=2),
}


@pytest.mark.parametrize("name", LAYERS)
def test_the_pyg_call_equals_the_call_on_the_graph_regnn_builds(name):
    """conv(x, edge_index, edge_type, node_type) on a graph made homogeneous (any edge order, self-edges given)
    computes what the same layer computes on regnn's own relation graph of that data with its weights passed as
    alpha (the model's call): outputs and every gradient, float64."""
    seed = len(name)
    data, edge_index, edge_type, node_type = case(seed)
    rg = build_relation_graph(data)
    R, T = rg.num_edge_relations, len(rg.ntypes)
    torch.manual_seed(seed)
    layer = LAYERS[name](R, T).double()
    randomise(layer.relations)
    x = torch.randn(rg.num_nodes, 5, dtype=torch.float64)
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    out = layer(xa, edge_index, edge_type, node_type)
    (out * torch.ones_like(out)).sum().backward()
    own = grads(xa, *layer.parameters())
    layer.zero_grad()
    want = layer(xb, rg.adjacency(), alpha=layer.relations())
    torch.testing.assert_close(out, want, rtol=1e-12, atol=1e-12)
    (want * torch.ones_like(want)).sum().backward()
    for a, b in zip(own, grads(xb, *layer.parameters())):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)
    assert set(layer.relation_weights()) == {*range(R), *(f"self:{t}" for t in range(T))}


def small_model(backbone: str):
    """An RE-GNN of 3 layers of 8 units on the synthetic graph of case(0)."""
    from regnn.core.relation import Relation
    from regnn.models.regnn import REGNN

    rg = build_relation_graph(case(0)[0])
    return REGNN(
        in_dims={t: 4 for t in rg.ntypes},
        num_classes=3,
        relation_types=rg,
        relation=Relation(True, True, 100.0, 0.01),
        backbone=backbone,
        hidden=8,
        num_layers=3,
    )


@pytest.mark.parametrize("backbone", ["gcn", "gat", "sage", "gin", "gatv2", "mixhop"])
def test_the_model_is_built_from_the_public_layers(backbone):
    """Every message-passing call of the RE-GNN model is one of regnn.nn's layers (held bare, or inside the
    stack layout's LayerNorm and activation), without relation weights of its own: the model passes them."""
    from regnn.nn import RELayer

    for conv in small_model(backbone).convs:
        layer = getattr(conv, "conv", conv)
        assert isinstance(layer, RELayer) and layer.relations is None, type(layer).__name__


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
    bare = REGCNConv(5, 3).double()  # no relation weights of its own: every weight 1 without alpha
    bare.load_state_dict(plain.state_dict())
    assert not list(plain.relations.parameters())
    torch.testing.assert_close(plain(x, edge_index, edge_type, node_type), bare(x, rg.adjacency()))
    assert REGCNConv(5, 3, R, T, learn="edges").relations.self_loop is None
    assert REGATConv(5, 3, R, T, learn="self").relations.edge is None
    with pytest.raises(ValueError, match="learn must be one of"):
        REGCNConv(5, 3, R, T, learn="all")


def test_weights_saved_under_the_earlier_attention_names_load_under_the_new_ones():
    """RE-GAT weights saved while a wrapper held each attention layer as `.conv` (convs.0.conv.fc.weight) are
    read under the layers' own names; a state with other unknown names is left for the loader to refuse."""
    from regnn.models.regnn import renamed_from_earlier

    now = small_model("gat").state_dict()
    earlier = {k.replace("convs.0.", "convs.0.conv.").replace("convs.1.", "convs.1.conv."): v for k, v in now.items()}
    assert earlier.keys() != now.keys()
    renamed = renamed_from_earlier(earlier, now.keys())
    assert renamed.keys() == now.keys() and all(renamed[k] is now[k] for k in now)
    odd = {**earlier, "convs.0.conv.extra": torch.zeros(1)}
    assert renamed_from_earlier(odd, now.keys()) is odd
    assert renamed_from_earlier(now, now.keys()) is now


def test_a_prepared_graph_and_a_layer_without_weights_of_its_own_are_used_as_documented():
    """A prepared graph carries its relations (no edge_type, node_type beside it); a layer built without
    num_relations and num_node_types takes only prepared graphs, its weights 1 unless alpha gives them; x must
    have the graph's rows."""
    from regnn.nn import typed_adjacency

    x, ei = torch.randn(3, 2), torch.tensor([[0, 1], [1, 2]])
    et, nt = torch.tensor([0, 1]), torch.zeros(3, dtype=torch.long)
    graph = typed_adjacency(ei, et, nt, 2)
    own = REGCNConv(2, 2, num_relations=2, num_node_types=1)
    with pytest.raises(ValueError, match="a prepared graph carries its relations"):
        own(x, graph, et, nt)
    with pytest.raises(ValueError, match="x has 4 rows but the graph 3"):
        own(torch.randn(4, 2), graph)
    bare = REGCNConv(2, 2)
    bare.load_state_dict({k: v for k, v in own.state_dict().items() if not k.startswith("relations.")})
    with pytest.raises(ValueError, match="built without num_relations and num_node_types"):
        bare(x, ei, et, nt)
    with pytest.raises(ValueError, match="without relation weights of its own"):
        bare.relation_weights()
    torch.testing.assert_close(bare(x, graph), own(x, graph))  # every weight 1: the layer's start
    alpha = torch.tensor([[2.0], [0.5], [1.5]])
    with torch.no_grad():
        own.relations.edge.copy_(alpha[:2] / 100)
        own.relations.self_loop.copy_(alpha[2:] / 100)
    torch.testing.assert_close(bare(x, graph, alpha=alpha), own(x, ei, et, nt))


@pytest.mark.parametrize("layer", [REGATConv, REGATv2Conv])
def test_zero_started_attention_is_the_mean_over_in_edges_and_then_learns(layer):
    """attn_init=zeros: a new layer (every relation weight equal) attends uniformly, so each node's output is the
    mean of its in-neighbours' messages and its own (the typed self-loop); every other parameter is drawn as
    with xavier, and the attention vectors get a gradient."""
    from regnn.nn.attention import AttentionOptions

    data, edge_index, edge_type, node_type = case(3)
    rg = build_relation_graph(data)
    R, T = rg.num_edge_relations, len(rg.ntypes)
    torch.manual_seed(0)
    xavier = layer(5, 4, R, T, heads=2).double()
    torch.manual_seed(0)
    zeros = layer(5, 4, R, T, heads=2, options=AttentionOptions(attn_init="zeros")).double()
    assert "attn_init=zeros" in repr(zeros)
    attention = [n for n, _ in zeros.named_parameters() if n.startswith("attn")]
    for (name, a), (_, b) in zip(zeros.named_parameters(), xavier.named_parameters()):
        assert torch.equal(a, torch.zeros_like(a)) if name in attention else torch.equal(a, b), name
    x = torch.randn(rg.num_nodes, 5, dtype=torch.float64)
    out = zeros(x, edge_index, edge_type, node_type)
    # messages: W x (GAT), W_s x (GATv2); their mean over the in-edges without the given self-edges, plus the self-loop
    msg = (zeros.fc(x) if layer is REGATConv else zeros.fc_src(x)).view(-1, 2, 4)
    keep = edge_index[0] != edge_index[1]
    src = torch.cat([edge_index[0, keep], torch.arange(rg.num_nodes)])
    dst = torch.cat([edge_index[1, keep], torch.arange(rg.num_nodes)])
    total = torch.zeros_like(msg).index_add_(0, dst, msg[src])
    count = torch.zeros(rg.num_nodes, dtype=torch.float64).index_add_(
        0, dst, torch.ones(dst.numel(), dtype=torch.float64)
    )
    want = total / count.view(-1, 1, 1)
    if getattr(zeros, "bias", None) is not None:
        want = want + zeros.bias
    torch.testing.assert_close(out, want.flatten(1), rtol=1e-12, atol=1e-12)
    out.pow(2).sum().backward()
    assert all(p.grad.abs().sum() > 0 for n, p in zeros.named_parameters() if n in attention)
