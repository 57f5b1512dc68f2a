"""Metapath2vec and R-HGNN: configs for the paper's datasets, the skip-gram pairs, both models learning the
planted signal of the synthetic graph, and Metapath2vec through the pipeline (its own trainer, meta-path pick)."""

from types import SimpleNamespace

import pytest
import torch
from omegaconf import OmegaConf

from conftest import cfg, fullbatch
from regnn.runs import io_safe
from regnn.data.hetero import HeteroGraph
from regnn.errors import ConfigError
from regnn.pipeline import arch_of, build_model, load_data, model_kwargs, train
from regnn.pipeline.from_config import prepare_inputs
from regnn.pipeline import check as check_config
from regnn.training.seed import seed_everything
from regnn.training.trainer import train_run
from regnn.training.trainers import trainer_for

# short walks keep the skip-gram tests at seconds; the code path is the one of the paper's settings
FAST_WALKS = [
    "model.walk_length=20",
    "model.walks_per_node=3",
    "model.hidden=32",
    "model.window=3",
    "model.batch_size=8",
]


@pytest.fixture(scope="module")
def synthetic():
    return load_data(cfg("dataset=synthetic").dataset)


@pytest.mark.parametrize("dataset", ["dblp", "acm", "imdb"])
def test_configs_compose_and_validate_for_the_paper_datasets(dataset):
    m2v = cfg(f"dataset={dataset}", "model=metapath2vec")
    check_config(m2v)
    assert m2v.model.arch == "metapath2vec" and m2v.model.hidden == 128 and m2v.model.metapath == "best"
    assert list(m2v.model.metapaths) == list(cfg(f"dataset={dataset}").dataset.metapaths)
    rh = cfg(f"dataset={dataset}", "model=rhgnn")
    check_config(rh)
    assert rh.model.arch == "rhgnn" and rh.model.hidden == 16 and not rh.model.norm
    # the released settings, but where a validation search chose otherwise (conf/tuned/<dataset>_rhgnn.yaml)
    expected = {"dblp": (0.001, 0.0, False), "acm": (0.001, 0.0, True), "imdb": (0.001, 0.0, True)}[dataset]
    assert (rh.optimizer.lr, rh.optimizer.weight_decay, rh.model.residual) == expected
    # and its released training: cosine annealing, the best epoch where validation accuracy and Macro-F1 improve
    assert list(rh.trainer.stop_on) == ["val_micro_f1", "val_macro_f1"] and rh.trainer.lr_schedule == "cosine"
    assert list(cfg(f"dataset={dataset}", "model=han").trainer.stop_on) == ["val_loss"]  # the protocol's elsewhere
    with pytest.raises(Exception, match="hiden"):  # a misspelt key fails at composition
        cfg(f"dataset={dataset}", "model=rhgnn", "model.hiden=8")


@pytest.mark.parametrize(
    "override,message",
    [
        ("model.window=0", "model.window=0 is not valid"),
        ("model.walks_per_node=1.5", "model.walks_per_node=1.5"),
        ("model.metapath=XYZ", None),
    ],
)
def test_bad_metapath2vec_settings_are_refused(override, message, synthetic, tmp_path):
    c = cfg("dataset=synthetic", "model=metapath2vec", override, "runs=1")
    if message:
        with pytest.raises(ConfigError, match=message):
            check_config(c)
    else:
        with pytest.raises(ValueError, match="model.metapath='XYZ' is not valid"):  # the layer: a plain error
            arch_of(c.model).prepare(synthetic, "cpu", **model_kwargs(c.model))
        with pytest.raises(ConfigError, match="^model.metapath='XYZ' is not valid"):  # the job: the user's one line
            prepare_inputs(c.model, synthetic, "cpu")


def test_skipgram_pairs_join_nodes_of_one_walk_only():
    """Window 1: every pair is an edge of the graph; a node without a meta-path neighbour never appears (DGL's
    own sample maps a walk's -1 to the last node of the type)."""
    from regnn.models.baselines.metapath2vec import SkipGram, WalkInputs

    ap = torch.tensor([[0, 0], [1, 0], [1, 1], [2, 2], [3, 2]])  # author 4 has no paper; paper 3 no author
    g = HeteroGraph(
        {
            ("author", "author->paper", "paper"): (ap[:, 0], ap[:, 1]),
            ("paper", "paper->author", "author"): (ap[:, 1], ap[:, 0]),
        },
        {"author": 5, "paper": 4},
    )
    data = SimpleNamespace(graph=g, target="author")
    inputs = WalkInputs.build(
        data, metapaths={"APA": ["author->paper", "paper->author"]}, metapath="APA", walk_length=6
    )
    seed_everything(0)
    sg = SkipGram(inputs, 1, 8, 2)
    u, v, neg = sg.sample(torch.arange(5))
    gid = {t: sg.offsets[t] + torch.arange(g.num_nodes(t)) for t in ("author", "paper")}
    edges = {(int(gid["author"][a]), int(gid["paper"][p])) for a, p in ap.tolist()}
    edges |= {(b, a) for a, b in edges}
    assert u.numel() > 0 and {(int(a), int(b)) for a, b in zip(u, v)} <= edges
    absent = {int(gid["author"][4]), int(gid["paper"][3])}
    assert not absent & set(u.tolist()) and not absent & set(v.tolist())
    assert neg.shape == (u.numel(), 2)


def test_metapath2vec_embeddings_and_classifier_beat_chance(synthetic):
    c = cfg("dataset=synthetic", "model=metapath2vec", "model.metapath=ISI", *FAST_WALKS)
    arch = arch_of(c.model)
    inputs = arch.prepare(synthetic, "cpu", **model_kwargs(c.model))
    assert len(inputs.walk) == 20 and inputs.walk[:2] == ["item->source", "source->item"]
    seed_everything(0)
    net = build_model(c.model, synthetic, inputs)
    r = trainer_for("metapath2vec")(net, inputs, synthetic.features, synthetic.labels, synthetic.splits, seed=0)
    majority = torch.bincount(synthetic.labels).max().item() / synthetic.labels.numel() * 100
    assert majority < 40
    assert r.metrics["test_micro_f1"] >= 70.0, f"{r.metrics['test_micro_f1']:.1f} (chance {majority:.1f})"
    assert r.epochs == 3 and len(r.history) == 3 and r.history[-1]["train_loss"] < r.history[0]["train_loss"]
    logits, emb = net(inputs, synthetic.features, embed=True)  # the fitted classifier is the model's head
    assert emb.shape == (synthetic.labels.numel(), 32) and torch.equal(emb, r.embeddings)
    test = synthetic.splits["test"]
    acc = (logits[test].argmax(1) == synthetic.labels[test]).float().mean().item() * 100
    assert acc == pytest.approx(r.metrics["test_micro_f1"])


def test_rhgnn_learns_the_planted_signal_of_the_synthetic_graph(synthetic):
    c = cfg("dataset=synthetic", "model=rhgnn", "model.heads=2")
    inputs = arch_of(c.model).prepare(synthetic, "cpu", **model_kwargs(c.model))
    assert inputs.source_key["item->source"] == "source->item"  # sources send their item-facing representation
    seed_everything(0)
    net = build_model(c.model, synthetic, inputs)
    r = train_run(
        net,
        inputs,
        synthetic.features,
        synthetic.labels,
        synthetic.splits,
        seed=0,
        options=fullbatch(max_epochs=60, patience=60, optimizer=OmegaConf.to_container(c.optimizer)),
    )
    majority = torch.bincount(synthetic.labels).max().item() / synthetic.labels.numel() * 100
    assert r.metrics["test_micro_f1"] >= 70.0, f"{r.metrics['test_micro_f1']:.1f} (chance {majority:.1f})"
    logits, emb = net(inputs, synthetic.features, embed=True)
    assert logits.shape == (synthetic.labels.numel(), synthetic.num_classes) and emb.shape == (logits.shape[0], 32)
    w = r.relation_weights[0]  # the fusion's weights over the relations into the target type
    assert set(w) == {"source->item", "noise->item"} and sum(w.values()) == pytest.approx(1.0, abs=1e-5)


def test_rhgnn_fusion_keeps_a_lone_relation_as_it_is():
    # one relation into the target type (DBLP's authors): R-HGNN's fusion passes it on, with nothing to learn
    from regnn.models.baselines.rhgnn import RelationFusion

    lone, two = RelationFusion(["a"], 4, 2, 3, 0.5), RelationFusion(["a", "b"], 4, 2, 3, 0.5)
    assert not list(lone.parameters()) and len(list(two.parameters())) == 2
    h, rel = {"a": torch.randn(5, 8), "b": torch.randn(5, 8)}, {"a": torch.randn(6), "b": torch.randn(6)}
    z, beta = lone.train()({"a": h["a"]}, {"a": rel["a"]})
    assert torch.equal(z, h["a"]) and beta.tolist() == [1.0]
    z, beta = two.eval()(h, rel)
    assert z.shape == (5, 8) and beta.sum().item() == pytest.approx(1.0)


def test_metapath2vec_through_the_pipeline_picks_a_metapath_and_clusters(tmp_path):
    c = cfg(
        "dataset=synthetic",
        "model=metapath2vec",
        "runs=1",
        "workers=1",
        "threads=1",
        "clustering.enabled=true",
        "clustering.repeats=2",
        *FAST_WALKS,
    )
    summary = train(c, tmp_path / "cell")
    assert summary["metapath"] in ("ISI", "INI") and set(summary["metapath_scores"]) == {"ISI", "INI"}
    rec = summary["per_run"][0]
    assert rec["epochs"] == 3 and 0.0 <= rec["nmi"] <= 100.0 and "test_macro_f1" in rec
    for name in ("ISI", "INI"):
        assert io_safe.read_json(tmp_path / "cell" / "metapaths" / name / "results.json")["runs"] == 1
    # the planted signal lives in the trusted sources: ISI's walks, chosen on validation
    assert summary["metapath"] == "ISI"
