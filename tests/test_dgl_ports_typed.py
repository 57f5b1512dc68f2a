"""R-GCN's and HGT's layers, their homogeneous view of a heterograph, and both baselines whole, against float64
fixtures written from DGL's own RelGraphConv, HGTConv and to_homogeneous (tests/make_dgl_fixtures.py): ids
and edge order, the initial weights a seed gives, outputs, and the gradients with respect to the inputs and every
parameter, to 1e-10."""

import pytest
import torch

from dgl_fixtures import assert_close, load_fixture
from regnn.data.hetero import HeteroGraph
from regnn.models.baselines.hgt import HGT
from regnn.models.baselines.inputs import TypedGraph
from regnn.models.baselines.rgcn import RGCN
from regnn.models.baselines.typed_layers import HGTConv, RelGraphConv

NUM_NTYPES, NUM_RELATIONS = 3, 5


def hetero_of(fx) -> HeteroGraph:
    """The fixture's heterograph (`nodes.<type>`, `edges.<src>.<rel>.<dst>.src/.dst`)."""
    nodes = {k.split(".")[1]: int(v) for k, v in fx.items() if k.startswith("nodes.")}
    edges = {
        tuple(k.split(".")[1:4]): (fx[k], fx[k[:-3] + "dst"])
        for k in fx
        if k.startswith("edges.") and k.endswith(".src")
    }
    return HeteroGraph(edges, nodes)


def typed_graph(fx, backend, target="b") -> TypedGraph:
    tg = TypedGraph.from_hetero(hetero_of(fx), target)
    tg.adj = tg.adj.to("cpu", backend=backend)
    return tg


def test_typed_graph_numbers_nodes_and_edges_as_dgl_to_homogeneous():
    fx = load_fixture("typed_graph")
    g = hetero_of(fx)
    tg = TypedGraph.from_hetero(g, "b")
    assert tg.ntypes == ["a", "b", "c"] and tg.relation_names == ["ab", "ba", "bb", "bc", "cb"]
    assert torch.equal(tg.src, fx["homo.src"]) and torch.equal(tg.dst, fx["homo.dst"])
    assert torch.equal(tg.etype, fx["homo.etype"]) and torch.equal(tg.ntype, fx["homo.ntype"])
    # DGL's per-type local ids: the homogeneous id minus the type's offset; its per-type edge ids likewise
    offsets = torch.tensor(tg.node_offsets)
    assert torch.equal(torch.arange(tg.num_nodes) - offsets[tg.ntype], fx["homo.nid"])
    first_edge = torch.cumsum(torch.bincount(tg.etype, minlength=NUM_RELATIONS), 0) - torch.bincount(tg.etype)
    assert torch.equal(torch.arange(tg.src.numel()) - first_edge[tg.etype], fx["homo.eid"])
    assert torch.equal(tg.rel_norm.double(), fx["homo.norm"])
    assert torch.equal(tg.target_nodes, torch.arange(4, 9))  # type b's nodes, by local id
    # the Adjacency's sources are (relation, source node) rows: each edge's row holds its relation's source type
    pair_rel = torch.repeat_interleave(torch.arange(NUM_RELATIONS), torch.tensor(tg.pair_offsets).diff())
    src_of_csr = tg.src if tg.adj.perm is None else tg.src[tg.adj.perm]
    assert torch.equal(pair_rel[tg.adj.indices], tg.adj.rel)
    pair_first = torch.tensor(tg.pair_offsets)[tg.adj.rel]
    src_type_first = offsets[torch.tensor([s for s, _ in tg.relation_types])][tg.adj.rel]
    assert torch.equal(tg.adj.indices - pair_first + src_type_first, src_of_csr)
    with pytest.raises(Exception, match="target node type 'z'"):
        TypedGraph.from_hetero(g, "z")


def load_params(module, fx, prefix="param."):
    """Copies the fixture's parameters into module; their names and shapes must be DGL's."""
    named = {k[len(prefix) :]: v for k, v in fx.items() if k.startswith(prefix)}
    ours = dict(module.named_parameters())
    assert sorted(ours) == sorted(named), "parameter names differ from DGL's module"
    with torch.no_grad():
        for k, p in ours.items():
            assert p.shape == named[k].shape, f"{k}: shape {tuple(p.shape)} vs DGL's {tuple(named[k].shape)}"
            p.copy_(named[k])


def check_initial_weights(module, fx):
    """The module built under torch.manual_seed(0) (float32) has DGL's module's initial state dict."""
    init = {k[len("init.") :]: v for k, v in fx.items() if k.startswith("init.")}
    state = module.state_dict()
    assert list(state) == list(init), "state dict keys (or their order) differ from DGL's module"
    for k, v in state.items():
        assert v.dtype == torch.float32 and torch.equal(v.double(), init[k]), f"initial {k} differs from DGL's"


def check_module(module, fx, run):
    """run(x) with the fixture's parameters, in float64: output and every gradient equal to DGL's."""
    module = module.double()
    load_params(module, fx)
    x = fx["in.x"].clone().requires_grad_()
    out = run(module, x)
    assert_close(out, fx["out"], "output")
    (out * fx["G"]).sum().backward()
    assert_close(x.grad, fx["grad.x"], "gradient of the input")
    for k, p in module.named_parameters():
        assert p.grad is not None, f"no gradient for {k}"
        assert_close(p.grad, fx[f"grad.param.{k}"], f"gradient of {k}")


def built(make):
    torch.manual_seed(0)
    return make()


@pytest.mark.parametrize("name,bases", [("rgcn_layer", None), ("rgcn_layer_basis", 2)])
def test_rgcn_layer_equals_dgls_relgraphconv(name, bases, backend):
    fx = load_fixture(name)
    tg = typed_graph(fx, backend)
    conv = built(lambda: RelGraphConv(4, 3, NUM_RELATIONS, num_bases=bases))
    check_initial_weights(conv, fx)
    check_module(conv, fx, lambda m, x: m(tg, x, fx["homo.norm"]))
    assert fx["out"][tg.node_offsets[0] + 3].abs().sum() > 0  # a3 (no in-edges): bias and self-loop only


@pytest.mark.parametrize("name,in_size,use_norm", [("hgt_layer", 6, False), ("hgt_layer_norm", 5, True)])
def test_hgt_layer_equals_dgls_hgtconv(name, in_size, use_norm, backend):
    fx = load_fixture(name)
    tg = typed_graph(fx, backend)
    conv = built(lambda: HGTConv(in_size, 3, 2, NUM_NTYPES, NUM_RELATIONS, dropout=0.2, use_norm=use_norm))
    check_initial_weights(conv, fx)
    check_module(conv.eval(), fx, lambda m, x: m(tg, x))
    assert hasattr(conv, "residual_w") == (in_size != 6)


DIMS = {"a": 3, "b": 4, "c": 2}


@pytest.mark.parametrize("name", ["rgcn_model", "hgt_model"])
def test_baseline_models_start_from_dgls_weights_and_give_its_logits(name, backend):
    """The whole R-GCN / HGT baseline: the same seed gives the weights the DGL-based model started from (so the
    committed cells' runs start where they did), and in eval mode, in float64, the same logits."""
    fx = load_fixture(name)
    tg = typed_graph(fx, backend)
    assert torch.equal(tg.target_nodes, fx["target"])
    if name == "rgcn_model":
        model = built(lambda: RGCN.from_inputs(tg, DIMS, 3, hidden=8, num_layers=2, dropout=0.5, num_bases=None))
    else:
        model = built(
            lambda: HGT.from_inputs(
                tg, DIMS, 3, hidden=8, heads=2, num_layers=2, dropout=0.2, use_norm=True, variant="dgl"
            )
        )
    check_initial_weights(model, fx)
    model = model.double().eval()
    load_params(model, fx, "init.")
    feats = {t: fx[f"feat.{t}"] for t in DIMS}
    with torch.no_grad():
        logits, _ = model(tg, feats)
    assert_close(logits, fx["logits"], "logits")


def hgb_name(ours: str, ntypes: list[str]) -> str:
    """HGB's parameter name for one of regnn's HGT(variant="hgb") parameters."""
    parts = ours.split(".")
    if parts[0] == "proj":  # proj.lins.<type>.weight -> adapt_ws.<type index>.weight
        return f"adapt_ws.{ntypes.index(parts[2])}.{parts[3]}"
    if parts[0] == "head":
        return "out." + parts[1]
    names = {"k": "k_linears", "q": "q_linears", "v": "v_linears", "a": "a_linears", "norms": "norms"}
    parts[0] = "gcs"
    if parts[2] in names:
        parts[2] = names[parts[2]]
    return ".".join(parts)


def test_hgt_hgb_variant_equals_hgbs_own_hgt(backend):
    """HGT(variant="hgb") against HGB's own model.py (THUDM/HGB, run unchanged on DGL): with HGB's weights, in
    float64, the eval-mode logits of the target type and the gradient of every parameter that reaches them."""
    fx = load_fixture("hgb_hgt_model")
    tg = typed_graph(fx, backend)
    torch.manual_seed(0)
    model = (
        HGT.from_inputs(tg, DIMS, 3, hidden=8, heads=2, num_layers=2, dropout=0.2, use_norm=True, variant="hgb")
        .double()
        .eval()
    )
    with torch.no_grad():
        for k, p in model.named_parameters():
            want = fx["init." + hgb_name(k, tg.ntypes)]
            assert p.shape == want.shape, k
            p.copy_(want)
    logits, _ = model(tg, {t: fx[f"feat.{t}"] for t in DIMS})
    assert_close(logits, fx["logits"], "logits")
    (logits * fx["G"]).sum().backward()
    checked = 0
    for k, p in model.named_parameters():
        want = fx.get("grad." + hgb_name(k, tg.ntypes))
        if want is None:  # HGB's last layer's maps of the other types do not reach the logits
            assert p.grad is None or p.grad.abs().max() == 0, k
            continue
        assert_close(p.grad, want, f"gradient of {k}")
        checked += 1
    assert checked == len([k for k in fx if k.startswith("grad.")])
