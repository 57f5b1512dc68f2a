"""Quantities read off a trained RE model (regnn.pipeline.relation_signals), checked against what they claim to be,
and the planted graphs of graded and indirect effects that the weight study (regnn.experiments.weight_study) uses."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from omegaconf import OmegaConf

from conftest import trained_cell
from regnn.data.planted import make_planted, node_relations
from regnn.errors import DataError

INDIRECT = "m1->n1 + n1->m1"
CELL = [
    "dataset=planted",
    "model=re_gcn",
    "runs=2",
    "trainer.max_epochs=30",
    "threads=1",
    "workers=1",
    "dataset.relations=3",
    "dataset.planted=2",
    "dataset.through=[1]",
    "model.num_layers=2",
]


def test_shares_and_through_build_the_graph_they_say():
    n, k = 600, 3
    data = make_planted(num_items=n, relations=3, planted=2, per_node=True, shares=[0.5, 0.3], through=[1], noise=0.0)
    g, y = data.graph, data.labels.numpy()
    assert ("m1", "m1->n1", "n1") in g.canonical_etypes and ("item", "item->m1", "m1") in g.canonical_etypes
    assert not any({"item", "n1"} == {s, d} for s, _, d in g.canonical_etypes)  # n1 reaches items only through m1
    own = node_relations(n, 2, 0, (0.5, 0.3))
    assert 0.12 < np.mean(own == -1) < 0.28 and 0.4 < np.mean(own == 0) < 0.6  # the rest: no relation says it
    for rel, planted_for in (("item->n0", 0), ("item->m1", 1)):
        u, v = (t.numpy() for t in g.edges(etype=rel))
        mine = own[u] == planted_for
        assert (v[mine] % k == y[u[mine]]).all()  # noise 0: every link of an item it is planted for says its class
        assert 0.2 < np.mean(v[~mine] % k == y[u[~mine]]) < 0.5  # the others link at random
    u, v = (t.numpy() for t in g.edges(etype="m1->n1"))
    assert (u % k == v % k).all()  # a middle node links to nodes of its own class
    with pytest.raises(DataError, match="one share per planted relation"):
        make_planted(relations=3, planted=2, per_node=True, shares=[0.5])
    with pytest.raises(DataError, match="set per_node=true"):
        make_planted(relations=3, planted=2, shares=[0.5, 0.3])
    with pytest.raises(DataError, match="through=\\[3\\]"):
        make_planted(relations=3, planted=2, through=[3])


@pytest.fixture(scope="module")
def cell(tmp_path_factory):
    return trained_cell(tmp_path_factory.mktemp("signals"), *CELL)


@pytest.fixture(scope="module")
def predicted_cell(cell):
    from regnn.pipeline.predict import predicted

    return predicted(
        OmegaConf.create(
            {"run": str(cell), "ensemble": True, "dataset_path": None, "device": "cpu", "check_scores": True}
        )
    )


def test_every_quantity_for_every_run_and_a_relation_off_the_targets_counts_only_through_the_flow(predicted_cell):
    from regnn.data.pruning import relation_groups
    from regnn.pipeline.explain import weight_rows
    from regnn.pipeline.explain import run_rows
    from regnn.pipeline.relation_signals import QUANTITIES

    p = predicted_cell
    groups = relation_groups(p.data.graph)
    rows = run_rows(p, groups, "auto", weight_rows(p))[1]
    assert len(rows) == 2 * len(groups) * len(QUANTITIES) and rows.value.notna().all()
    v = rows.pivot_table(index=["run", "group"], columns="quantity", values="value")
    off = v.xs(INDIRECT, level="group")
    assert (off.last_into_target == 0).all() and (off.last_share == 0).all()  # it never enters an item
    assert (off.flow_share > 0).all()  # but it feeds the middle nodes the items read
    for run, d in v.groupby(level="run"):
        # shares of the messages, self-loops left out: non-negative, at most 1 together
        assert (d.flow_share >= 0).all() and d.flow_share.sum() <= 1 + 1e-9 and d.last_share.sum() <= 1 + 1e-9
    assert (v.gradient >= 0).all()


def test_taylor_is_the_loss_change_of_shrinking_the_groups_weights(predicted_cell):
    """-sum(w dL/dw) is the first-order change of the validation loss when the group's weights shrink to 0: shrink
    them by a small share and the loss moves by that share of it."""
    from regnn.data.pruning import relation_groups
    from regnn.pipeline.node_reasons import group_name
    from regnn.pipeline.relation_signals import gradient_quantities
    from regnn.pipeline.trained_model import loaded_model

    p = predicted_cell
    job = p.job
    model, _ = loaded_model(job, p.tcfg, p.chosen.runs[0])
    groups = {group_name(g): tuple(g) for g in relation_groups(p.data.graph)}
    val = p.data.splits["val"]
    taylor = gradient_quantities(model, job.inputs, job.feats, job.labels, val, groups)["taylor"]
    name = max(taylor, key=lambda g: abs(taylor[g]))
    ids = [model.relation_names.index(r) for r in groups[name]]

    def loss(shrink: float) -> float:
        with torch.no_grad():
            saved = [rw.edge.detach().clone() for rw in model.relations]
            for rw in model.relations:
                rw.edge[..., ids, :] *= 1 - shrink
            out = F.cross_entropy(model(job.inputs, job.feats)[0].double()[val], job.labels[val]).item()
            for rw, s in zip(model.relations, saved):
                rw.edge.copy_(s)
        return out

    assert abs(taylor[name]) > 1e-4  # a change to measure
    eps = 1e-3
    slope = (loss(eps) - loss(-eps)) / (2 * eps)
    assert slope == pytest.approx(taylor[name], rel=0.05, abs=1e-5)


def test_the_summary_the_report_quotes_is_the_committed_studys():
    """src/regnn/resources/relation_signals.json is what regnn.experiments.weight_study.best makes of the committed
    results/weight_study/ tables: a study re-run without its summary (or the reverse) would make the report quote
    numbers no committed run produced."""
    import json

    import pandas as pd

    from conftest import REPO
    from regnn.experiments.weight_study import GRAPHS, best
    from regnn.reporting.relation_signals import study

    table = pd.read_csv(REPO / "results" / "weight_study" / "study.csv")
    groups = pd.read_csv(REPO / "results" / "weight_study" / "groups.csv")
    assert set(table.graph) == set(GRAPHS) and (table.runs == 10).all()
    again = json.loads(json.dumps(best(table, groups)))
    assert _close(again, study())
    for name in GRAPHS:
        assert (REPO / "results" / "weight_study" / name / "explain.md").is_file()


def _close(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return abs(a - b) <= 1e-3  # the tables hold 4 decimals
    return a == b


def test_a_planted_cell_of_the_keys_before_shares_and_through_is_the_same_computation():
    from regnn.runs.computation import computation

    old = {"dataset": {"name": "planted", "relations": 4}, "model": {"name": "re_gcn"}, "trainer": {}}
    new = {**old, "dataset": {**old["dataset"], "shares": [], "through": []}}
    assert computation(old) == computation(new)
    graded = {**old, "dataset": {**old["dataset"], "shares": [0.5, 0.2]}}
    assert computation(graded) != computation(old)


def test_a_model_recorded_with_empty_shares_and_through_is_the_config_it_trained_with(tmp_path):
    from regnn.runs import integrity

    config = {"dataset": {"name": "planted", "shares": [], "through": []}, "model": {"name": "re_gcn"}, "trainer": {}}
    # a model.json written while computation() still kept the empty keys
    recorded = integrity.model_settings(config) | {"dataset": config["dataset"]}
    meta = {"integrity": {"config_sha256": integrity.settings_digest(recorded), "config": recorded}}
    integrity.check_config(tmp_path, tmp_path / "runs" / "run_00", meta, config)  # accepted
    edited = {**config, "dataset": {**config["dataset"], "shares": [0.5]}}
    with pytest.raises(DataError, match="dataset.shares"):
        integrity.check_config(tmp_path, tmp_path / "runs" / "run_00", meta, edited)
