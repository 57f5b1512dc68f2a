"""Mini-batch training: sampled blocks, exact layer-wise inference, sparse embeddings, train.py end to end."""

import dataclasses
import json
from collections import Counter

import pytest
import torch

from conftest import assert_scored_on_the_test_nodes, minibatch, relation, run_train
from regnn.data import build_relation_graph, load_dataset, make_synthetic
from regnn.models import REGNN
from regnn.training.early_stopping import MONITORS
from regnn.training.block_inference import Scorer
from regnn.training.minibatch import train_minibatch_run
from regnn.models.sampled import NodeInputs, SampledREGNN
from regnn.training.block_inference import layerwise_logits, layerwise_outputs, sampled_logits
from regnn.training.sampling import SampledGraph, sampled_loader
from regnn.training.seed import seed_everything


@pytest.fixture(scope="module")
def mag(mag_root):
    d = load_dataset("ogbn_mag", dir=str(mag_root), format="ogb", ogb_name="ogbn-mag")
    return d, SampledGraph(d)


def model_for(d, sg, backbone="gcn", features=None, **kw):
    inputs = NodeInputs(features or d.features, embed_dim=16)
    opts = dict(hidden=16, norm="right") if backbone == "gcn" else dict(hidden=4, heads=2)
    regnn = REGNN(
        in_dims=inputs.in_dims,
        num_classes=d.num_classes,
        relation_types=sg,
        backbone=backbone,
        num_layers=2,
        dropout=0.2,
        relation=relation(),
        layout="stack",
        **(opts | kw),
    )
    return SampledREGNN(regnn, inputs, sg.ntypes, sg.offsets, sg.node_type)


@pytest.fixture(scope="module")
def synthetic_sg():
    return SampledGraph(make_synthetic(num_items=300, num_sources=150, num_tags=20, random_degree=12, seed=0))


def test_sampled_blocks_hold_graph_edges_within_the_fanout_and_one_typed_self_loop_per_destination(synthetic_sg):
    sg, fanouts = synthetic_sg, [15, 10]  # degrees below, between and above 1 and 2 fanouts
    rg = build_relation_graph(
        make_synthetic(num_items=300, num_sources=150, num_tags=20, random_degree=12, seed=0), self_loops=False
    )
    in_edges = {}  # destination -> its in-edges of the whole graph as (source, relation) multiset
    for u, v, r in zip(rg.src.tolist(), rg.dst.tolist(), rg.rel.tolist()):
        in_edges.setdefault(v, []).append((u, r))
    batch = next(iter(sampled_loader(sg, sg.seeds(torch.arange(64)), fanouts, 64, shuffle=False)))
    assert batch.blocks[-1].num_dst == 64 and torch.equal(batch.seeds, sg.seeds(torch.arange(64)))
    for layer, (b, adj) in enumerate(zip(batch.blocks, batch.adjs)):
        assert torch.equal(b.src_nodes[: b.num_dst], b.dst_nodes) and b.src_nodes.unique().numel() == b.num_src
        if layer:  # a block's destinations are the sources of the block below
            assert torch.equal(b.dst_nodes, batch.blocks[layer - 1].src_nodes[: b.num_dst])
        src_ids = batch.input_nodes if layer == 0 else b.src_nodes  # the adjacency's source order
        u, v, rel = src_ids[adj.indices], b.dst_nodes[adj.dst_of], adj.rel  # graph ids of every edge, CSR order
        loops = rel >= sg.num_edge_relations
        assert loops.sum() == b.num_dst and torch.equal(u[loops], v[loops])  # one self-loop per destination
        assert torch.equal(rel[loops] - sg.num_edge_relations, sg.node_type[v[loops]])  # typed by its node
        got: dict = {}
        for x, y, r in zip(u[~loops].tolist(), v[~loops].tolist(), rel[~loops].tolist()):
            got.setdefault(y, []).append((x, r))
        for node in b.dst_nodes.tolist():
            have, want = sorted(got.get(node, [])), sorted(in_edges.get(node, []))
            if len(want) <= fanouts[layer]:
                assert have == want  # every in-edge kept, with its relation
            else:
                assert len(have) == fanouts[layer] and not (Counter(have) - Counter(want))  # a sub-multiset
        eid = b.eid  # and the edges themselves: distinct edges of the graph, source and destination as sampled
        assert eid.unique().numel() == eid.numel()
        assert torch.equal(rg.src[eid], b.src_nodes[b.edge_src]) and torch.equal(rg.dst[eid], b.dst_nodes[b.edge_dst])


@pytest.mark.parametrize("backbone", ["gcn", "gat"])
def test_layerwise_and_full_fanout_inference_equal_the_full_graph(mag, backbone):
    d, sg = mag
    torch.manual_seed(0)
    m = model_for(d, sg, backbone, layer_norm=True)
    with torch.no_grad():
        for rw in m.regnn.relations:  # relation weights away from 1, so a wrong relation id would show
            rw.edge.uniform_(0.002, 0.03)
    m.eval()
    rg = build_relation_graph(d)
    with torch.no_grad():
        full, emb = m.regnn.propagate(rg.adjacency(), m.input_rows(torch.arange(rg.num_nodes)), embed=True)
    seeds = sg.seeds(d.splits["val"][:40])
    assert torch.allclose(layerwise_logits(m, sg, seeds, batch_size=17), full[seeds], atol=1e-4)
    logits, rep = layerwise_outputs(m, sg, seeds, batch_size=17)  # the representations too (embeddings.npz)
    assert torch.allclose(logits, full[seeds], atol=1e-4) and torch.allclose(rep, emb[seeds], atol=1e-4)
    assert torch.allclose(sampled_logits(m, sg, seeds, [-1, -1], 13), full[seeds], atol=1e-4)
    assert not torch.allclose(sampled_logits(m, sg, seeds, [1, 1], 13), full[seeds], atol=1e-4)


@pytest.mark.parametrize(
    "backbone,options",
    [
        ("gcn", dict(layout="authors", norm="both")),  # the full-batch RE-GCN of DBLP, ACM, IMDB and users' graphs
        ("gcn", dict(layout="stack", norm="right")),  # OGBN-MAG's
        ("gcn", dict(layout="stack", norm="both")),
        ("gat", dict(layout="stack", heads=2)),
        ("sage", dict()),  # the released GraphSAGE stack
    ],
)
def test_on_blocks_of_every_neighbour_the_model_computes_the_full_graph_model(backbone, options):
    """Logits and the gradient of every parameter of a model on full-neighbour blocks equal the same model's on
    the whole graph (float64, dropout off): mini-batch training with fanouts of -1 trains the full-batch model."""
    from regnn.config import whole_graph_degrees

    d = make_synthetic(num_items=120, num_sources=60, num_tags=10, random_degree=5, seed=1)
    feats = {t: x.double() for t, x in d.features.items()}
    sg = SampledGraph(d, whole_graph_degrees=whole_graph_degrees(dict(backbone=backbone, **options)))
    torch.manual_seed(0)
    m = (
        SampledREGNN.from_graph(
            sg,
            feats,
            d.num_classes,
            embed_dim=8,
            backbone=backbone,
            hidden=6,
            num_layers=3,
            dropout=0.0,
            relation=relation(),
            **options,
        )
        .double()
        .eval()
    )
    with torch.no_grad():
        for rw in m.regnn.relations:  # relation weights away from 1, so a wrong relation id would show
            for p in rw.parameters():
                p.uniform_(-0.5, 0.5)
    rg = build_relation_graph(d)
    seeds = sg.seeds(torch.tensor([7, 0, 55, 3, 119, 42]))
    g = torch.randn(seeds.numel(), d.num_classes, dtype=torch.float64)

    def grads(logits):
        return logits, torch.autograd.grad((logits * g).sum(), list(m.parameters()), allow_unused=True)

    want, gw = grads(m.regnn.propagate(rg.adjacency(), m.input_rows(torch.arange(rg.num_nodes)))[0][seeds])
    input_nodes, adjs = sg.batch(sg.sample_blocks(seeds, [-1] * len(m.regnn.convs), None))
    got, gg = grads(m(input_nodes, adjs))
    torch.testing.assert_close(got, want, rtol=0, atol=1e-10)
    for (name, _), a, b in zip(m.named_parameters(), gg, gw):
        assert (a is None) == (b is None), name
        if a is not None:
            torch.testing.assert_close(a, b, rtol=0, atol=1e-10, msg=name)


def test_feature_less_types_train_as_in_full_batch_through_the_input_projection():
    """With trainer.embed_dim null (the default) a type without features is, as in full batch, its one-hot ids
    times the input projection: the full-batch model's weights load into the mini-batch model as they are, and
    on blocks of every neighbour both give the same logits and gradients (float64)."""
    from regnn.data import make_count_graph
    from regnn.models.regnn import RelationInputs

    d = make_count_graph(num_items=60, num_users=30, num_tags=8, seed=0)
    feats = {t: x.double() for t, x in d.features.items()}
    sg = SampledGraph(d, whole_graph_degrees=True)
    kw = dict(backbone="gcn", hidden=6, num_layers=3, dropout=0.0, relation=relation(), norm="both")
    torch.manual_seed(0)
    m = SampledREGNN.from_graph(sg, feats, d.num_classes, embed_dim=None, **kw).double().eval()
    assert len(m.inputs.embeddings) == 0 and m.regnn.proj.lins["user"].in_features == 30  # a column per user
    inputs = RelationInputs.build(d)
    full = REGNN.from_inputs(inputs, {t: x.shape[1] for t, x in feats.items()}, d.num_classes, **kw).double().eval()
    full.load_state_dict(m.regnn.state_dict())  # one set of weights: a checkpoint of either trainer fits both
    local = torch.tensor([0, 9, 31, 59])
    g = torch.randn(local.numel(), d.num_classes, dtype=torch.float64)
    want = full(inputs, feats)[0][local]
    gw = torch.autograd.grad((want * g).sum(), list(full.parameters()), allow_unused=True)
    got = m(*sg.batch(sg.sample_blocks(sg.seeds(local), [-1] * 3, None)))
    gg = torch.autograd.grad((got * g).sum(), list(m.regnn.parameters()), allow_unused=True)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-10)
    for (name, _), a, b in zip(full.named_parameters(), gg, gw):
        assert (a is None) == (b is None), name
        if a is not None:
            torch.testing.assert_close(a, b, rtol=0, atol=1e-10, msg=name)
    assert len(SampledREGNN.from_graph(sg, feats, d.num_classes, embed_dim=4, **kw).inputs.embeddings) == 2


def first_best(history, monitor):
    """The epoch early stopping must choose: the first one holding the best value (ties go to the earlier epoch)."""
    values = [h[monitor] for h in history]
    return values.index(max(values) if MONITORS[monitor] else min(values))


@pytest.mark.parametrize("monitor", ["val_acc", "val_loss"])
def test_training_learns_and_stops_at_the_first_epoch_of_the_best_validation_score(mag, monitor):
    d, sg = mag
    seed_everything(0)
    m = model_for(d, sg, "gcn", hidden=32)
    r = train_minibatch_run(
        m,
        sg,
        d.labels,
        d.splits,
        seed=0,
        num_classes=d.num_classes,
        options=minibatch(
            optimizer={"name": "adam", "lr": 0.01, "weight_decay": 0.0},
            fanouts=[10, 10],
            batch_size=128,
            max_epochs=30,
            patience=4,
            patience_steps=0,
            min_steps=0,
            log_every=0,
            eval="layerwise",
            stop_on=(monitor,),
        ),
    )
    best = first_best(r.history, monitor)
    assert r.best_epoch == best and r.epochs == min(30, best + 1 + 4)
    for key in ("val_acc", "val_loss"):  # the best epoch's weights restored; layerwise evaluation is exact
        assert r.metrics[key] == pytest.approx(r.history[best][key])
    assert r.metrics["test_acc"] > 60 and r.metrics["test_acc"] == pytest.approx(r.metrics["test_micro_f1"])
    assert all(h["seeds"] == len(d.splits["train"]) and h["seeds_per_s"] > 0 for h in r.history)
    assert set(r.relation_weights[0]) == set(sg.relation_names)


def test_sparse_embeddings_only_move_sampled_rows(mag_root):
    d = load_dataset("ogbn_mag", dir=str(mag_root), format="ogb", ogb_name="ogbn-mag", featureless="learnable")
    sg = SampledGraph(d)
    seed_everything(0)
    m = model_for(d, sg, "gcn")
    before = m.inputs.embeddings["author"].weight.detach().clone()
    r = train_minibatch_run(
        m,
        sg,
        d.labels,
        d.splits,
        seed=0,
        num_classes=d.num_classes,
        options=minibatch(
            optimizer={"name": "adam", "lr": 0.01, "weight_decay": 0.0},
            fanouts=[2, 2],
            batch_size=16,
            max_epochs=1,
            max_batches=1,
            log_every=0,
            eval="sampled",
        ),
    )
    assert r.history[0]["seeds"] == 16
    moved = (m.inputs.embeddings["author"].weight != before).any(1)
    assert 0 < moved.sum() < moved.numel() // 4  # only authors sampled in the one batch


def test_scorer_accuracy_is_the_ogb_evaluator(mag):
    from ogb.nodeproppred import Evaluator

    d, sg = mag
    m = model_for(d, sg).eval()
    ids = d.splits["test"]
    s = Scorer(m, sg, d.labels, d.num_classes, minibatch(eval="layerwise"), seed=0)(ids)
    pred = layerwise_logits(m, sg, sg.seeds(ids)).argmax(-1)
    want = Evaluator("ogbn-mag").eval({"y_true": d.labels[ids].view(-1, 1), "y_pred": pred.view(-1, 1)})["acc"]
    assert s["acc"] == pytest.approx(100 * want) and s["acc"] == pytest.approx(s["micro_f1"])


def test_train_py_minibatch_re_gat_on_generated_ogbn_mag(mag_root, tmp_path):
    """The acceptance command, on the generated OGB-format data."""
    run = tmp_path / "run"
    p = run_train(
        "dataset=ogbn_mag",
        "trainer=minibatch",
        "model=re_gat",
        f"dataset.dir={mag_root}",
        "threads=1",
        "runs=1",
        "trainer.max_epochs=2",
        "trainer.log_every=2",
        "model.heads=2",
        f"hydra.run.dir={run}",
    )
    assert p.returncode == 0, p.stderr
    r = json.loads((run / "results.json").read_text())
    assert r["trainer"] == "minibatch" and r["per_run"][0]["epochs"] == 2
    assert r["metrics"]["seeds_per_s"]["mean"] > 0
    assert_scored_on_the_test_nodes(r, "test_acc")
    assert 0 < r["peak_rss_gb"] < 16 and r["load_time_s"] > 0
    assert "seeds/s" in p.stderr and "batch 2/" in p.stderr  # progress lines with throughput
    w = json.loads((run / "relation_weights.json").read_text())[0]["layers"]
    assert len(w) == 2 and len(w[0]["rev_writes"]) == 2  # two layers, one weight per head


@pytest.mark.parametrize(
    "override,message",
    [
        ("trainer.fanouts=[10]", "needs one fanout per model layer"),
        ("trainer.eval=exact", "trainer.eval='exact' is not valid"),
        ("trainer.fanouts=[0,3]", "must be a list of positive integers"),
        ("trainer.eval_fanouts=[5]", "must be null or 4 positive integers"),
        ("trainer.default_fanout=0", "trainer.default_fanout=0 is not valid: must be a positive integer, or -1"),
        ("trainer.batch_size=0", "trainer.batch_size=0 is not valid"),
        ("trainer.stop_on=[val_f1]", "trainer.stop_on=['val_f1'] is not valid: must be a list of one or more of"),
        ("trainer.input_dropout=hidden", "trainer.input_dropout='hidden' is not valid: use one of ['projected', "),
    ],
)
def test_minibatch_config_errors(override, message):
    from hydra import compose, initialize_config_dir

    from conftest import REPO
    from regnn.config import validate_minibatch
    from regnn.errors import ConfigError
    from regnn.training.block_inference import EVAL_MODES

    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=["dataset=synthetic", "trainer=minibatch", "model=re_gcn", *override.split()])
    with pytest.raises(ConfigError, match=message.replace("[", r"\[")):
        validate_minibatch(cfg, EVAL_MODES)


def test_train_py_refuses_bad_minibatch_config_without_traceback(tmp_path):
    p = run_train(
        "dataset=synthetic",
        "trainer=minibatch",
        "model=re_gcn",
        "trainer.fanouts=[10]",
        "runs=1",
        f"hydra.run.dir={tmp_path}/run",
    )
    assert p.returncode == 2 and "needs one fanout per model layer" in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "run" / "results.json").exists()


@pytest.mark.parametrize("model", ["re_gcn", "re_gat", "gcn", "gat", "gcn_e", "gcn_s", "gat_e", "gat_s"])
def test_minibatch_layout_composes_for_every_model(model):
    from hydra import compose, initialize_config_dir

    from conftest import REPO
    from regnn.config import validate, validate_minibatch
    from regnn.data.features import FEATS_TYPES
    from regnn.models import BACKBONES
    from regnn.training.block_inference import EVAL_MODES

    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=["dataset=ogbn_mag", "trainer=minibatch", f"model={model}"])
        tuned = compose("train", overrides=["dataset=dblp", "trainer=minibatch", f"model={model}", "model.hidden=7"])
    validate(cfg, BACKBONES, FEATS_TYPES)
    validate_minibatch(cfg, EVAL_MODES)
    m = cfg.model
    assert m.layout == "stack" and m.num_layers == 2 and list(cfg.trainer.fanouts) == [25, 20]  # OGBN-MAG's own
    assert (m.hidden, m.get("heads")) == ((512, None) if m.backbone == "gcn" else (64, 8))
    assert tuned.model.hidden == 7  # the command line wins over the layout
    # DBLP: GCN models on blocks of every neighbour (conf/layout/dataset/), GAT ones one layer per hop
    assert (tuned.model.get("layout", "authors"), tuned.trainer.fanouts, list(tuned.trainer.stop_on)) == (
        ("authors", [-1] * 4, ["val_loss"]) if m.backbone == "gcn" else ("stack", None, ["val_loss"])
    )
    assert (cfg.trainer.max_epochs, list(cfg.trainer.stop_on), cfg.trainer.min_steps) == (None, ["val_acc"], 500)
    validate_minibatch(tuned, EVAL_MODES)


@pytest.mark.parametrize("dataset", ["dblp", "acm", "imdb", "custom", "synthetic"])
@pytest.mark.parametrize("model", ["re_gcn", "re_gat", "gcn_s"])
def test_minibatch_trains_the_model_full_batch_trains(dataset, model):
    """Every key of the model and the optimizer as full batch composes them, but the GAT layout (one layer per
    hop), and the same stopping rule; the fanouts default to one entry per model layer."""
    from hydra import compose, initialize_config_dir

    from conftest import REPO
    from regnn.config import validate_minibatch
    from regnn.spec import training_of
    from regnn.training.block_inference import EVAL_MODES

    path = ["dataset.path=x"] if dataset == "custom" else []
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        full = compose("train", overrides=[f"dataset={dataset}", f"model={model}", *path])
        mini = compose("train", overrides=[f"dataset={dataset}", f"model={model}", "trainer=minibatch", *path])
    layout = {"layout", "layer_norm"} if full.model.backbone == "gat" else set()
    assert {k: v for k, v in full.model.items() if k not in layout} == {
        k: v for k, v in mini.model.items() if k not in layout
    }
    assert full.optimizer == mini.optimizer
    assert all(full.trainer[k] == mini.trainer[k] for k in ("max_epochs", "patience", "stop_on"))  # one rule
    assert (mini.trainer.patience_steps, mini.trainer.min_steps) == (0, 0)
    if layout:
        assert (full.model.layout, mini.model.layout) == ("authors", "stack")
    validate_minibatch(mini, EVAL_MODES)
    fanouts = training_of(mini).fanouts
    assert len(fanouts) == mini.model.num_layers
    assert fanouts == ((-1,) * 4 if (dataset, full.model.backbone) == ("dblp", "gcn") else (20,) * len(fanouts))


def test_patience_and_length_count_optimizer_steps_where_an_epoch_is_one_batch(mag):
    """One batch per epoch: early stopping waits for patience_steps steps and min_steps, and max_epochs=None gives
    the run the epochs to reach min_steps; with many batches per epoch the epoch counts bind as before."""
    d, sg = mag
    n_train = len(d.splits["train"])
    kw = dict(seed=0, num_classes=d.num_classes)
    o = minibatch(
        optimizer={"name": "adam", "lr": 0.01, "weight_decay": 0.0}, fanouts=[5, 5], log_every=0, eval="layerwise"
    )
    seed_everything(0)
    r = train_minibatch_run(
        model_for(d, sg),
        sg,
        d.labels,
        d.splits,
        **kw,
        options=dataclasses.replace(
            o, batch_size=n_train, max_epochs=None, patience=2, patience_steps=12, min_steps=30
        ),
    )
    steps = [h["steps"] for h in r.history]
    assert steps == list(range(1, r.epochs + 1))  # one step per epoch
    assert r.epochs >= 30 and r.epochs - 1 - r.best_epoch >= 12 or r.epochs == 100
    seed_everything(0)
    old = train_minibatch_run(
        model_for(d, sg),
        sg,
        d.labels,
        d.splits,
        **kw,  # epoch patience alone: stops
        options=dataclasses.replace(o, batch_size=n_train, max_epochs=None, patience=2, patience_steps=0, min_steps=0),
    )  # 2 one-step epochs on
    assert old.epochs == min(100, old.best_epoch + 1 + 2)
    seed_everything(0)
    many = train_minibatch_run(
        model_for(d, sg),
        sg,
        d.labels,
        d.splits,
        **kw,
        options=dataclasses.replace(o, batch_size=16, max_epochs=None, patience=2, patience_steps=12, min_steps=30),
    )
    per_epoch = -(-n_train // 16)
    assert per_epoch * 2 >= 30 and many.epochs == min(100, many.best_epoch + 1 + 2)  # epochs bind: 2 > 30 steps
    assert many.history[0]["steps"] == per_epoch


@pytest.mark.parametrize("weighted", [True, False])
def test_norm_both_on_blocks_of_every_neighbour_is_the_full_graph_product(weighted):
    """norm=both on full-neighbour blocks with whole-graph degrees: the full graph's D^-1/2 A_w D^-1/2 h at the
    block's destinations, and the same gradients for h and the relation weights (float64)."""
    from regnn.core.adjacency import Adjacency

    d = make_synthetic(num_items=120, num_sources=60, num_tags=10, random_degree=5, seed=1)
    sg = SampledGraph(d, whole_graph_degrees=True)
    rg = build_relation_graph(d)  # with typed self-loops, as full-batch training builds it
    full = Adjacency.from_edges(rg.src, rg.dst, rg.rel, rg.num_nodes)
    gen = torch.Generator().manual_seed(0)
    h = torch.randn(rg.num_nodes, 6, dtype=torch.float64, generator=gen, requires_grad=True)
    alpha = (torch.rand(len(sg.relation_names), 1, dtype=torch.float64, generator=gen) * 3 + 0.1).requires_grad_()
    dst = torch.tensor([5, 0, 77, 130, 64, 3])  # items and others, out of order
    g = torch.randn(dst.numel(), 6, dtype=torch.float64, generator=gen)
    want = full.normalized_spmm(h, alpha if weighted else None, "both")[dst]
    gh_want, ga_want = torch.autograd.grad((want * g).sum(), [h, alpha], allow_unused=True)
    block = sg.full_block(dst)
    adj = sg.adjacency(block)
    got = adj.normalized_spmm(h[block.src_nodes], alpha if weighted else None, "both")
    gh_got, ga_got = torch.autograd.grad((got * g).sum(), [h, alpha], allow_unused=True)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-12)
    torch.testing.assert_close(gh_got, gh_want, rtol=0, atol=1e-12)
    if weighted:
        torch.testing.assert_close(ga_got, ga_want, rtol=0, atol=1e-10)
    assert SampledGraph(d).adjacency(block).source_counts is None  # only where norm=both asks for them
    batch = next(iter(sampled_loader(sg, sg.seeds(torch.arange(32)), [-1, -1], 32, shuffle=True)))
    assert torch.equal(batch.adjs[0].source_counts, sg.in_counts[batch.input_nodes])  # sources regrouped by type
    assert torch.equal(batch.adjs[1].source_counts, sg.in_counts[batch.blocks[1].src_nodes])
    with pytest.raises(ValueError, match="needs the source degrees of the whole graph"):
        SampledGraph(d).adjacency(block).normalized_spmm(h[block.src_nodes], alpha, "both")


@pytest.mark.parametrize("layer", ["gcn_both", "sage"])
def test_a_sampled_block_estimates_the_full_graph_sum_without_bias(layer):
    """k of a node's n in-edges drawn: each counts n / k times, so over many draws the mean of the block's
    product (norm=both; the released GraphSAGE's sum) is the whole graph's (float64). Without the factor the
    mean falls short by k / n on every node with more than k in-edges."""
    from regnn.core.adjacency import Adjacency
    from regnn.nn import RESAGEConv

    d = make_synthetic(num_items=120, num_sources=60, num_tags=10, random_degree=5, seed=1)
    sg = SampledGraph(d, whole_graph_degrees=True)
    rg = build_relation_graph(d)
    full = Adjacency.from_edges(rg.src, rg.dst, rg.rel, rg.num_nodes)
    gen = torch.Generator().manual_seed(0)
    h = torch.randn(rg.num_nodes, 3, dtype=torch.float64, generator=gen)
    alpha = torch.rand(len(sg.relation_names), 1, dtype=torch.float64, generator=gen) * 3 + 0.1
    conv = RESAGEConv(3, 3, weight=False) if layer == "sage" else None

    def op(adj, x):
        return conv(x, adj, alpha=alpha) if conv else adj.normalized_spmm(x, alpha, "both")

    degree = sg.csc.in_degrees(torch.arange(rg.num_nodes))
    dst = torch.nonzero(degree > 6).view(-1)[:8]  # nodes a fanout of 3 samples
    want = op(full, h)[dst]
    draws, scaled, short = 3000, [], []
    for _ in range(draws):
        block = sg.csc.block(dst, 3, gen)
        adj = sg.adjacency(block)
        assert adj.edge_scale is not None and adj.edge_scale.max() > 1
        scaled.append(op(adj, h[block.src_nodes]))
        adj.edge_scale = None
        short.append(op(adj, h[block.src_nodes]))
    scaled, short = torch.stack(scaled), torch.stack(short)
    standard_error = scaled.std(0) / draws**0.5
    z = ((scaled.mean(0) - want) / standard_error).abs()
    assert z.max() < 4.5  # 24 numbers, each within 4.5 standard errors of the full graph's
    assert ((short.mean(0) - want) / standard_error).abs().max() > 20  # the factor is what removes the bias
    full_block = sg.adjacency(sg.full_block(dst))
    assert full_block.edge_scale is None  # every in-edge there: nothing to scale


def test_released_sage_on_blocks_of_every_neighbour_is_the_full_graph_layer():
    """The released GraphSAGE divides every message by its source's weighted degree: on full-neighbour blocks
    with whole-graph degrees it gives the full graph's layer, value and gradients (float64)."""
    from regnn.core.adjacency import Adjacency
    from regnn.nn import RESAGEConv

    d = make_synthetic(num_items=120, num_sources=60, num_tags=10, random_degree=5, seed=1)
    sg = SampledGraph(d, whole_graph_degrees=True)
    rg = build_relation_graph(d)
    full = Adjacency.from_edges(rg.src, rg.dst, rg.rel, rg.num_nodes)
    torch.manual_seed(0)
    conv = RESAGEConv(6, 6, activation="elu").double()
    h = torch.randn(rg.num_nodes, 6, dtype=torch.float64, requires_grad=True)
    alpha = (torch.rand(len(sg.relation_names), 1, dtype=torch.float64) * 3 + 0.1).requires_grad_()
    dst = torch.tensor([5, 0, 77, 130, 64, 3])
    want = conv(h, full, alpha=alpha)[dst]
    grads_want = torch.autograd.grad(want.sum(), [h, alpha])
    block = sg.full_block(dst)
    got = conv(h[block.src_nodes], sg.adjacency(block), alpha=alpha)
    grads_got = torch.autograd.grad(got.sum(), [h, alpha])
    torch.testing.assert_close(got, want, rtol=0, atol=1e-12)
    for a, b in zip(grads_got, grads_want):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-10)
    with pytest.raises(ValueError, match="whole graph's degrees of a block's sources"):
        conv(h[block.src_nodes], SampledGraph(d).adjacency(block), alpha=alpha)
