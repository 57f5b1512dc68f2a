"""dataset=custom: an .npz of arrays, a dgl.save_graphs file or MAGNN-style files described by a small YAML/JSON,
any names."""

import json

import pytest
import torch
import yaml

from conftest import assert_scored_on_the_test_nodes, run_train
from custom_data import edit_npz, write_dgl, write_magnn, write_npz
from regnn.data import build_relation_graph, load_dataset
from regnn.errors import DataError


def load(path, **kw):
    return load_dataset("custom", format="custom", path=None if path is None else str(path), **kw)


@pytest.mark.parametrize("write", [write_npz, write_dgl], ids=["npz", "dgl"])
def test_npz_and_dgl_formats_load_with_reverse_relations_masks_and_features(tmp_path, write):
    d = load(write(tmp_path / "shops"))
    g = d.graph
    assert sorted(g.ntypes) == ["city", "customer", "shop"] and d.target == "customer" and d.num_classes == 3
    assert sorted(g.etypes) == ["located_in", "rev_located_in", "rev_trusts", "rev_visits", "trusts", "visits"]
    u, v = g.edges(etype="trusts")
    ru, rv = g.edges(etype="rev_trusts")
    assert torch.equal(u, rv) and torch.equal(v, ru)
    assert d.in_dims == {"customer": 8, "shop": 8, "city": 12}  # cities have no features: one-hot ids
    assert [len(d.splits[s]) for s in ("train", "val", "test")] == [96, 48, 96]
    rg = build_relation_graph(d)
    assert rg.relation_names[-3:] == ["self:city", "self:customer", "self:shop"]


def test_folder_json_and_keep_reverse(tmp_path):
    meta_path = write_npz(tmp_path / "shops", {"reverse": "keep"})
    meta = yaml.safe_load(meta_path.read_text())
    meta_path.unlink()
    (tmp_path / "shops" / "dataset.json").write_text(json.dumps(meta))
    d = load(tmp_path / "shops")  # the folder: its dataset.json is found
    assert sorted(d.graph.etypes) == ["located_in", "trusts", "visits"]


def test_magnn_format_with_four_new_node_types(tmp_path):
    d = load(write_magnn(tmp_path / "m"))
    assert sorted(d.graph.ntypes) == ["city", "customer", "region", "shop"]
    assert sorted(d.graph.etypes) == ["customer->shop", "has", "hosts", "in", "located_in", "shop->customer"]
    assert d.in_dims == {"customer": 8, "shop": 8, "city": 12, "region": 3}
    assert d.graph.num_edges("in") == 12 and d.num_classes == 3


@pytest.mark.parametrize(
    "overrides,message",
    [
        ({"target": "person"}, "target 'person' is not a node type"),
        ({"label": "klass"}, "label key 'klass' is neither in the ndata of 'customer'"),
        ({"splits": {"train": "train_mask", "val": "val_mask"}}, r"splits lacks \['test'\]"),
        ({"splits": {"train": "train_mask", "val": "va", "test": "test_mask"}}, "split key 'va' is neither"),
        ({"graph": "nothing.bin"}, "nothing.bin does not exist; save your graph with dgl.save_graphs"),
        ({"format": "csv"}, "format 'csv' is not known"),
        ({"reverse": "both"}, "reverse='both'; use add"),
        ({"target": None}, "key 'target' is missing"),
        ({"features": "x", "label": "x"}, "need one integer class id per customer node"),
    ],
)
def test_bad_descriptions_name_the_problem(tmp_path, overrides, message):
    with pytest.raises(DataError, match=message):
        load(write_dgl(tmp_path / "shops", overrides))


@pytest.mark.parametrize(
    "overrides,change,message",
    [
        ({"target": "person"}, None, r"target 'person' is not a node type of graph.npz"),
        ({"graph": "nothing.npz"}, None, "nothing.npz does not exist; write it with numpy.savez"),
        ({"label": "y"}, None, "unknown key 'label'"),
        ({}, lambda z: z.pop("num_nodes:city"), "node type 'city' has neither num_nodes:city nor features:city"),
        ({}, lambda z: z.pop("test"), r"lacks the arrays \['test'\]"),
        ({}, lambda z: z.update({"edges:customer:trusts": z["labels"]}), "must be named edges:<src type>:<relation>"),
        (
            {},
            lambda z: z.update({"edges:customer:x:shop": z["labels"]}),
            r"has shape \(240,\); it must be \(2, edges\)",
        ),
        ({}, lambda z: z.update({"weights": z["labels"]}), "unknown array 'weights'"),
        ({}, lambda z: z.update({"labels": z["labels"][:-1]}), "labels has 239 entries but there are 240 customer"),
        ({}, lambda z: z.update({"val": z["val"][:-1]}), "val is a boolean mask of 239 entries"),
        (
            {},
            lambda z: z.update({"features:shop": z["features:shop"][:5], "num_nodes:shop": 120}),
            "features:shop has 5 rows but num_nodes:shop is 120",
        ),
        (
            {},
            lambda z: z.update({"features:shop": z["features:shop"][:5]}),
            r"graph.npz: edge type \('customer', 'trusts', 'shop'\): node ids in \[0, 119\] but there are 5 shop nodes",
        ),
        (
            {},
            lambda z: z.update({"edges:customer:trusts:shop": z["edges:customer:trusts:shop"] + 1000}),
            r"node ids in \[1000, 1239\] but there are 240 customer nodes",
        ),
    ],
)
def test_bad_npz_files_name_the_problem(tmp_path, overrides, change, message):
    with pytest.raises(DataError, match=message) as e:
        load(write_npz(tmp_path / "shops", overrides, change=change))
    assert "\n" not in str(e.value)


def test_dgl_format_without_dgl_names_what_to_install(tmp_path, monkeypatch):
    import builtins

    (tmp_path / "d.yaml").write_text(
        yaml.safe_dump(
            {
                "format": "dgl",
                "graph": "g.bin",
                "target": "a",
                "label": "y",
                "splits": {"train": "a", "val": "b", "test": "c"},
            }
        )
    )
    (tmp_path / "g.bin").write_bytes(b"x")
    real_import = builtins.__import__

    def no_dgl(name, *args, **kwargs):
        if name == "dgl" or name.startswith("dgl."):
            raise ImportError("No module named 'dgl'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_dgl)
    with pytest.raises(DataError, match=r"format: dgl .* needs DGL \(pip install dgl\).*format: npz") as e:
        load(tmp_path / "d.yaml")
    assert "\n" not in str(e.value)


def test_missing_path_and_folder_without_description(tmp_path):
    with pytest.raises(DataError, match="dataset=custom needs dataset.path="):
        load(None)
    with pytest.raises(DataError, match="holds none of"):
        load(tmp_path)
    with pytest.raises(DataError, match="no such file or folder"):
        load(tmp_path / "nope.yaml")
    (tmp_path / "bad.yaml").write_text("- just\n- a list\n")
    with pytest.raises(DataError, match="must hold a mapping"):
        load(tmp_path / "bad.yaml")
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "dataset.yaml").write_text(yaml.safe_dump({"format": "magnn", "schema": {"target": "a"}}))
    with pytest.raises(DataError, match="schema lacks"):
        load(tmp_path / "m")


def test_unlabelled_nodes_in_a_split_are_refused(tmp_path):
    path = write_npz(tmp_path / "shops")

    def unlabel_first_val(z):
        z["labels"][z["val"].nonzero()[0][0]] = -1

    edit_npz(tmp_path / "shops", unlabel_first_val)
    with pytest.raises(DataError, match="1 nodes of split 'val' have no label"):
        load(path)


@pytest.mark.onepython
def test_train_py_trains_on_each_format(tmp_path):
    # lambda 10 at lr 0.01: a relation weight moves ~0.1 per step. At the default lambda 100 it moves ~1, weights
    # cross zero and stay there (LeakyReLU), and whether the planted relation survives is left to float rounding.
    fast = [
        "dataset=custom",
        "runs=1",
        "threads=1",
        "trainer.max_epochs=60",
        "trainer.patience=60",
        "optimizer.lr=0.01",
        "model.dropout=0.2",
        "model.num_layers=3",
        "model.hidden=16",
    ]
    re = ["model.relation.scale=10"]
    p = run_train(
        *fast, *re, f"dataset.path={write_npz(tmp_path / 'npz')}", "model=re_gcn", f"hydra.run.dir={tmp_path}/a"
    )
    assert p.returncode == 0, p.stderr
    r = json.loads((tmp_path / "a" / "results.json").read_text())
    assert r["metrics"]["test_micro_f1"]["mean"] > 80  # the planted relation signal is learnt
    assert {"trusts", "rev_trusts", "self:customer"} <= set(r["relation_names"])
    p = run_train(
        *fast,
        f"dataset.path={write_magnn(tmp_path / 'magnn')}",
        "model=re_gat",
        "model.heads=2",
        f"hydra.run.dir={tmp_path}/b",
    )
    assert p.returncode == 0, p.stderr
    r = json.loads((tmp_path / "b" / "results.json").read_text())
    assert set(r["relation_names"]) >= {"in", "has", "located_in", "hosts", "self:region"}
    assert_scored_on_the_test_nodes(r)


def test_train_py_minibatch_on_custom_data(tmp_path):
    """This small graph starts on a plateau (every node predicted as the largest class) that a run leaves after a
    number of epochs that depends on its seed: two seeds, and at least one learns the graph."""
    p = run_train(
        "dataset=custom",
        f"dataset.path={write_npz(tmp_path / 'npz')}",
        "trainer=minibatch",
        "model=re_gcn",
        "model.hidden=32",
        "trainer.default_fanout=10",
        "trainer.batch_size=32",
        "trainer.max_epochs=100",
        "trainer.patience=100",
        "optimizer.lr=0.01",
        "runs=2",
        "threads=1",
        "workers=1",
        "trainer.log_every=0",
        f"hydra.run.dir={tmp_path}/mb",
    )
    assert p.returncode == 0, p.stderr
    r = json.loads((tmp_path / "mb" / "results.json").read_text())
    assert r["trainer"] == "minibatch" and r["finished_runs"] == 2
    assert max(run["test_acc"] for run in r["per_run"]) > 90


def test_custom_without_path_fails_cleanly(tmp_path):
    p = run_train("dataset=custom", "runs=1", f"hydra.run.dir={tmp_path}/x")
    assert p.returncode == 2 and "dataset=custom needs dataset.path=" in p.stderr and "Traceback" not in p.stderr


def test_a_users_relations_keep_their_node_types_in_the_summary_the_weights_and_the_heatmap(tmp_path):
    """`visits` names neither of its node types: the summary records them, regnn.run's weights and the heatmap's
    labels give them, and the heatmap is titled with the graph's own name, not `custom`."""
    import regnn
    from regnn.description import relation_label
    from regnn.reporting.case_study import draw_cell

    graph = write_npz(tmp_path / "shops", {"name": "corner_shops"}).parent
    out = regnn.run(
        ["dataset=custom", f"dataset.path={graph}", "model=re_gcn", "runs=1", "trainer.max_epochs=3", "threads=1"],
        run_dir=tmp_path / "cell",
    )
    ends = out.summary["relations"]
    assert ends["visits"] == ["customer", "shop"] and ends["rev_visits"] == ["shop", "customer"]
    assert ends["self:city"] == ["city", "city"] and set(ends) == set(out.summary["relation_names"])
    assert out.summary["graph"] == "corner_shops"
    w = out.relation_weights()
    assert set(zip(w.relation, w.source, w.destination)) >= {
        ("visits", "customer", "shop"),
        ("self:shop", "shop", "shop"),
    }
    assert relation_label("visits", ends["visits"]) == "visits (customer->shop)"
    assert (
        relation_label("item->tag", ["item", "tag"]) == "item->tag" and relation_label("self:a", ["a", "a"]) == "self:a"
    )
    import matplotlib.pyplot as plt

    drawn = []
    real_save = __import__("regnn.reporting.case_study", fromlist=["save"]).save

    def keep(fig, path):
        ax = fig.axes[0]
        drawn.append((ax.get_title(), [t.get_text() for t in ax.get_xticklabels()]))
        real_save(fig, path)

    import regnn.reporting.case_study as cs

    cs.save, saved = keep, cs.save
    try:
        draw_cell(tmp_path / "cell", tmp_path / "w")
    finally:
        cs.save = saved
        plt.close("all")
    title, labels = drawn[0]
    assert title.startswith("re_gcn on corner_shops:") and "visits (customer->shop)" in labels
