"""The defaults of dataset=custom train on a generated graph nobody tuned for: no run at chance."""

import json

import pytest
import torch

import regnn.config  # noqa: F401  (registers the model names of regnn.catalog)
from conftest import run_train
from regnn.data import load_dataset, make_count_graph
from regnn.data.custom import save_npz

CHANCE_MARGIN = 15.0  # mean validation Micro-F1 at least this far above the largest class's share


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    data = make_count_graph(num_items=150, num_users=75, num_tags=15, seed=0)
    path = save_npz(data, tmp_path_factory.mktemp("counts"))
    y = data.labels[data.splits["val"]]
    return path, 100.0 * float(torch.bincount(y).max()) / len(y)


def test_save_npz_round_trips_through_dataset_custom(graph):
    path, _ = graph
    back = load_dataset("custom", format="custom", path=str(path))
    data = make_count_graph(num_items=150, num_users=75, num_tags=15, seed=0)
    assert torch.equal(back.features["item"], data.features["item"])
    assert torch.equal(back.labels, data.labels)
    assert all(torch.equal(back.splits[s], data.splits[s]) for s in ("train", "val", "test"))
    assert sorted(back.graph.canonical_etypes) == sorted(data.graph.canonical_etypes)


@pytest.mark.parametrize("model", [["model=re_gat"]])
def test_attention_models_learn_above_chance_with_the_custom_defaults(graph, model, tmp_path):
    """The library defaults put these runs at chance on raw counts (exploding training-mode outputs);
    dataset=custom standardises the counts and RE-GAT drops less."""
    path, chance = graph
    p = run_train(
        "dataset=custom",
        f"dataset.path={path}",
        *model,
        "runs=2",
        "threads=1",
        "workers=1",
        "trainer.max_epochs=120",
        "trainer.patience=120",
        f"hydra.run.dir={tmp_path}",
    )
    assert p.returncode == 0, p.stderr[-2000:]
    r = json.loads((tmp_path / "results.json").read_text())
    vals = [run["val_micro_f1"] for run in r["per_run"]]
    assert min(vals) > chance + CHANCE_MARGIN, (vals, chance)
    assert r["train_loss_blowup_runs"] == 0
    assert "standardised" in p.stderr  # feature_norm=auto found the raw counts


def test_custom_defaults_apply_to_gat_backbones_only_on_custom_graphs():
    from hydra import compose, initialize_config_dir
    from conftest import REPO

    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        custom = compose("train", overrides=["dataset=custom", "model=re_gat"])
        plain = compose("train", overrides=["dataset=custom", "model=gat"])
        dblp = compose("train", overrides=["dataset=dblp", "model=re_gat"])
        counts = compose("train", overrides=["dataset=counts", "model=re_gat"])
    assert (custom.model.dropout, custom.model.attn_dropout) == (0.2, 0.2)
    # 64 units a layer as RE-GCN's, RE-GCN's custom lambda with a lower learning rate (plain GAT keeps 5e-3); the
    # residual for plain GAT, for RE-GAT where the target has no features (auto); RE-GAT's attention starts at 0,
    # plain GAT's as the authors' does
    assert (custom.model.heads, custom.model.hidden, custom.optimizer.lr, custom.model.relation.scale) == (
        8,
        8,
        2e-3,
        20,
    )
    assert plain.optimizer.lr == 5e-3
    assert (custom.model.residual, plain.model.residual, plain.model.heads) == ("auto", True, 8)
    assert (custom.model.attn_init, plain.model.attn_init, dblp.model.attn_init) == ("zeros", "xavier", "xavier")
    assert (custom.model.input_width, plain.model.input_width, dblp.model.input_width) == ("auto", "head", "head")
    assert (dblp.model.dropout, dblp.model.attn_dropout, dblp.model.heads) == (0.6, 0.6, 8)  # DBLP's own settings
    assert (dblp.model.hidden, dblp.optimizer.lr, dblp.model.relation.scale, dblp.model.residual) == (
        64,
        1e-3,
        100,
        False,
    )
    assert (counts.model.dropout, counts.model.attn_dropout, counts.model.hidden) == (0.6, 0.6, 64)


def test_simple_hgn_keeps_attention_whole_only_on_custom_graphs():
    from hydra import compose, initialize_config_dir
    from conftest import REPO

    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        custom = compose("train", overrides=["dataset=custom", "model=simple_hgn"])
        acm = compose("train", overrides=["dataset=acm", "model=simple_hgn"])
    assert (custom.model.dropout, custom.model.attn_dropout) == (0.5, 0.0)
    assert (acm.model.dropout, acm.model.attn_dropout, acm.optimizer.lr) == (0.5, 0.5, 0.0005)  # HGB's, as published


def test_the_bag_of_words_graph_has_words_as_a_feature_less_type_linked_by_use():
    from regnn.data.synthetic import BowGraph
    from regnn.data.scaling import is_placeholder

    shape = BowGraph(num_papers=120, num_authors=80, num_subjects=6, vocab=90, topic_words=10, words=8)
    data = shape.build()
    x = data.features["paper"]
    assert set(x.unique().tolist()) == {0.0, 1.0} and (x.sum(1) <= 8).all() and (x.sum(1) >= 1).all()
    assert is_placeholder(data.features["term"])  # one-hot ids: no features of its own
    p, t = data.graph.edges(etype=("paper", "paper->term", "term"))
    used = torch.zeros_like(x)
    used[p, t] = 1.0
    assert torch.equal(used, x) and len(p) == int(x.sum())  # one edge per paper and word it uses
    a = data.features["author"]  # the word counts of its papers
    pa, aa = data.graph.edges(etype=("paper", "paper->author", "author"))
    assert torch.equal(a, torch.zeros_like(a).index_add_(0, aa, x[pa]))
    assert {k: len(v) for k, v in data.splits.items()} == {"train": 24, "val": 6, "test": 90}
    assert torch.equal(shape.build().features["paper"], x)  # a seed gives one graph


def test_the_id_graph_has_no_features_and_few_labels():
    from regnn.data.synthetic import IdGraph
    from regnn.data.scaling import is_placeholder

    shape = IdGraph(num_movies=300, num_directors=40, num_actors=900, num_keywords=200, seed=1)
    data = shape.build()
    assert all(is_placeholder(x) for x in data.features.values())  # one-hot ids on every type, the target's too
    assert data.graph.num_nodes("actor") == 3 * data.graph.num_nodes("movie")
    for other, per_movie in (("director", 1), ("actor", shape.actor_degree), ("keyword", shape.keyword_degree)):
        m, o = data.graph.edges(etype=("movie", f"movie->{other}", other))
        back_o, back_m = data.graph.edges(etype=(other, f"{other}->movie", "movie"))
        assert torch.equal(m, back_m) and torch.equal(o, back_o)  # every link in both directions
        assert torch.equal(torch.bincount(m, minlength=300), torch.full((300,), per_movie))
    # links follow the class (node i of a type is in class i % num_classes) more often than chance
    m, a = data.graph.edges(etype=("movie", "movie->actor", "actor"))
    same = (data.labels[m] == a % shape.num_classes).float().mean()
    assert same > 1 / shape.num_classes + 0.2
    assert {k: len(v) for k, v in data.splits.items()} == {"train": 24, "val": 12, "test": 264}
    assert torch.equal(shape.build().splits["train"], data.splits["train"])  # a seed gives one graph


def test_the_id_graph_can_hold_one_large_class():
    from regnn.data.synthetic import IdGraph

    shape = IdGraph(num_movies=3000, num_directors=40, num_actors=900, num_keywords=200, largest_class=0.56)
    shares = torch.bincount(shape.build().labels, minlength=3) / 3000
    assert abs(shares[0] - 0.56) < 0.03 and abs(shares[1] - 0.22) < 0.03 and abs(shares[2] - 0.22) < 0.03
    even = torch.bincount(IdGraph(num_movies=3000, num_directors=40, num_actors=900, num_keywords=200).build().labels)
    assert (even / 3000 - 1 / 3).abs().max() < 0.03  # 0: the classes as before
    with pytest.raises(ValueError, match="largest_class"):
        IdGraph(largest_class=1.0).build()


def test_the_bag_of_words_graph_takes_its_split_shares():
    from regnn.data.synthetic import BowGraph

    data = BowGraph(
        num_papers=200,
        num_authors=80,
        num_subjects=6,
        vocab=90,
        topic_words=10,
        words=8,
        train_share=0.05,
        val_share=0.1,
    ).build()
    assert {k: len(v) for k, v in data.splits.items()} == {"train": 10, "val": 20, "test": 170}


def _check_output(path, generator, kwargs, overrides, val, seconds):
    row = {"model": "re_gat", "runs": 3, "val_micro_f1_mean": val, "val_micro_f1_std": 1.0}
    row |= {"test_micro_f1_mean": val - 1, "test_micro_f1_std": 1.0, "runs_at_chance": 0, "epoch_time_s": seconds}
    doc = {"graph": {"generator": generator, "kwargs": kwargs}, "overrides": overrides, "models": [row]}
    path.write_text(json.dumps(doc))
    return path


def test_the_selection_keeps_graphs_of_two_generators_apart_and_reads_validation_only(tmp_path):
    import subprocess
    import sys

    from conftest import REPO

    inputs = [
        _check_output(tmp_path / "a.json", "regnn.data.synthetic.IdGraph", "seed=0", ["model.hidden=16"], 70.0, 0.1),
        _check_output(tmp_path / "b.json", "regnn.data.synthetic.BowGraph", "seed=0", ["model.hidden=16"], 90.0, 0.1),
        _check_output(tmp_path / "c.json", "regnn.data.synthetic.IdGraph", "seed=0", ["model.hidden=64"], 75.0, 0.5),
        _check_output(tmp_path / "d.json", "regnn.data.synthetic.BowGraph", "seed=0", ["model.hidden=64"], 80.0, 0.5),
    ]
    out = tmp_path / "selection"
    cmd = [sys.executable, str(REPO / "scripts/checks/defaults_selection.py"), *map(str, inputs), "--out", str(out)]
    cmd += ["--title", "Width on two graphs"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    chosen = json.loads(out.with_suffix(".json").read_text())
    assert chosen["chosen"] == "model.hidden=16"  # mean validation 80 against 77.5
    md = out.with_suffix(".md").read_text()
    assert md.startswith("# Width on two graphs\n")
    assert "`IdGraph(seed=0)`" in md and "`BowGraph(seed=0)`" in md and "| 0.500 |" in md
    again = subprocess.run(cmd, capture_output=True, text=True)
    assert again.returncode != 0 and "exists" in again.stderr  # never overwritten
