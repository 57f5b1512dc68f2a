"""The zoo of generated graphs (regnn.data.zoo) spans what it says, and the leave-one-family-out choice of
defaults (regnn.experiments.zoo_defaults) never sees the family it is scored on, nor any test score."""

import numpy as np
import pandas as pd
import pytest

from regnn.data.features import is_one_hot_ids
from regnn.data.zoo import FAMILIES, ZooGraph


def _same_class_share(data, etype) -> float:
    """The share of a relation's links that join a node to one of its class (the other end's class: i % C)."""
    src, dst = (t.numpy() for t in data.graph.edges(etype=etype))
    y = data.labels.numpy()
    return float(np.mean(y[src] == dst % data.num_classes))


@pytest.mark.parametrize("name", list(FAMILIES))
def test_each_family_is_the_graph_its_description_says(name):
    g = FAMILIES[name].graph
    data = g.build()
    n = g.num_targets
    assert len(data.splits["train"]) == int(g.train_share * n) and len(data.splits["val"]) == int(g.val_share * n)
    x = data.features["target"]
    assert is_one_hot_ids(x) == (g.features == "none")
    if g.features == "counts":
        assert x.max() > 100 and bool((x == x.round()).all())  # raw, heavy-tailed counts
    if g.features == "bow":
        assert set(np.unique(x.numpy()).tolist()) == {0.0, 1.0}
    assert all(is_one_hot_ids(data.features[t]) for t in data.graph.ntypes if t != "target")
    assert len(data.graph.canonical_etypes) == 2 * (g.relations + g.through)
    shares = np.bincount(data.labels.numpy(), minlength=g.num_classes) / n
    assert shares.max() == pytest.approx(g.largest_class or 1 / g.num_classes, abs=0.03)


def test_informative_relations_link_by_class_and_the_others_at_random():
    data = ZooGraph("none", 3000, (900, 600), relations=4, informative=2, homophily=0.6).build()
    by_name = {e: (s, e, d) for s, e, d in data.graph.canonical_etypes if s == "target"}
    chance = 1 / data.num_classes
    for r in range(4):
        share = _same_class_share(data, by_name[f"target-r{r:02d}->t{r % 2}"])
        expect = 0.6 + 0.4 * chance if r < 2 else chance
        assert share == pytest.approx(expect, abs=0.03)


def test_through_a_middle_type_the_informative_relations_never_touch_the_target():
    data = ZooGraph("dense", 1500, (800,), relations=2, informative=1, through=True).build()
    touching = {(s, d) for s, _, d in data.graph.canonical_etypes if "target" in (s, d)}
    assert touching == {("target", "mid"), ("mid", "target"), ("target", "t0"), ("t0", "target")}
    assert any(s == "mid" and e.endswith("r00->t0") for s, e, _ in data.graph.canonical_etypes)


def test_the_zoo_spans_feature_kinds_label_rates_imbalance_sizes_and_relation_counts():
    graphs = [f.graph for f in FAMILIES.values()]
    assert {g.features for g in graphs} == {"none", "bow", "counts", "dense"}
    assert {g.train_share for g in graphs} >= {0.01, 0.05, 0.2}
    assert max(g.largest_class for g in graphs) >= 0.6 and min(g.largest_class for g in graphs) == 0
    assert min(g.relations for g in graphs) <= 2 and max(g.relations for g in graphs) >= 80
    assert any(g.through for g in graphs)
    sizes = [g.num_targets + sum(g.others) + g.through * g.num_targets for g in graphs]
    assert min(sizes) <= 4000 and max(sizes) >= 20000


def test_a_family_is_scored_with_the_setting_chosen_on_the_other_families_validation_only():
    from regnn.experiments.zoo_defaults import GRID, chosen

    model = "re_gcn"
    a, b = list(GRID[model])[:2]
    rows = []
    for graph, val_a, val_b in (("f1", 80.0, 70.0), ("f2", 80.0, 75.0), ("held", 50.0, 99.0)):
        for seed in range(3):
            # test scores favour b everywhere, and the held-out family favours b on validation too
            rows += [
                {"graph": graph, "model": model, "setting": a, "seed": seed, "val": val_a, "test": 0.0},
                {"graph": graph, "model": model, "setting": b, "seed": seed, "val": val_b, "test": 100.0},
            ]
    runs = pd.DataFrame(rows)
    assert chosen(runs, model, ["f1", "f2"]) == a
    assert chosen(runs, model, ["f1", "f2", "held"]) == b  # with the held-out family it would have been b
    assert chosen(runs, "mlp", ["f1"]) == "defaults"  # a model without a grid keeps its defaults


def test_the_report_names_each_missed_target():
    from regnn.reporting.zoo import verdicts

    held = pd.DataFrame(
        [
            {"graph": "g", "model": "re_gcn", "test_mean": 80.0, "chance": 50.0, "runs_at_cap": 0},
            {"graph": "g", "model": "rgcn", "test_mean": 40.0, "chance": 50.0, "runs_at_cap": 2},
            {"graph": "g", "model": "mlp", "test_mean": 30.0, "chance": 50.0, "runs_at_cap": 0},
        ]
    )
    lines = verdicts(held, {"g": (-3.0, -5.0, -1.0), "h": (-1.0, -2.0, 0.0)})
    assert lines[0].endswith("missed on g")  # h trails by 1, within the 2 points
    assert "rgcn on g" in lines[1] and "mlp" not in lines[1]
    assert "rgcn on g (2 runs)" in lines[2]
    ok = verdicts(held.iloc[[0]], {"g": (1.0, 0.0, 2.0)})
    assert "met on every graph" in ok[0] and ok[1].endswith("met") and ok[2].endswith("met")
