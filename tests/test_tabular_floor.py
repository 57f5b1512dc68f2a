"""The tabular floor (regnn.experiments.tabular_floor) reads a graph through regnn's reader and adds, per relation
leaving the target, the mean of the linked nodes' encoded columns and their number; both models are scored."""

from __future__ import annotations

import numpy as np

from custom_data import write_shop_database
from regnn.data.custom import load_custom
from regnn.experiments import tabular_floor


def test_neighbour_columns_are_the_mean_of_the_linked_rows_and_their_count(tmp_path):
    ds = load_custom(write_shop_database(tmp_path, "sqlite"))
    near, names = tabular_floor.neighbour_columns(ds)
    rels = [(s, r, d) for s, r, d in ds.graph.canonical_etypes if s == ds.target]
    assert near.shape[0] == ds.graph.num_nodes(ds.target) and sum(n.endswith(":count") for n in names) == len(rels)
    src, rel, dst = rels[0]
    u, v = (t.numpy() for t in ds.graph.edges(etype=(src, rel, dst)))
    x, node = tabular_floor.dense(ds.features[dst]), u[0]
    width = x.shape[1]
    assert np.allclose(near[node, :width], x[v[u == node]].mean(axis=0)) and near[node, width] == (u == node).sum()


def test_floors_score_both_column_sets_with_both_models(tmp_path):
    graph, rows = tabular_floor.floors(write_shop_database(tmp_path, "sqlite"))
    assert [(r["columns"], r["model"]) for r in rows] == [
        (c, m) for c in ("target", "target + neighbours") for m in ("logistic regression", "gradient boosting")
    ]
    assert rows[2]["width"] > rows[0]["width"] and all(0 <= r["test_micro_f1"] <= 100 for r in rows)
    assert tabular_floor.render(rows, graph).count("\n| target") == 4 and graph in tabular_floor.render(rows, graph)
