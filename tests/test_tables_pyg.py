"""A graph as tables with its own ids (format: tables) and as a PyG HeteroData (from_heterodata, to_heterodata,
format: pyg): both read back the graph they were written from, train to the same scores as the graph itself, carry
the user's ids into predictions, and refuse a bad table in one line."""

import json
import shutil

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from conftest import REPO, run_train
from regnn.data import load_dataset
from regnn.data.custom import load_custom
from regnn.data.pyg import from_pyg_dict, save_pyg
from regnn.data.tables_write import write_tables
from regnn.errors import DataError


def synthetic():
    return load_dataset("synthetic", format="synthetic")


def assert_same_graph(a, b):
    assert a.graph.ntypes == b.graph.ntypes and a.graph.canonical_etypes == b.graph.canonical_etypes
    for et in a.graph.canonical_etypes:
        for x, y in zip(a.graph.edges(etype=et), b.graph.edges(etype=et)):
            assert torch.equal(x, y), et
    for t in a.features:
        assert torch.equal(a.features[t].to_dense(), b.features[t].to_dense()), t
    assert torch.equal(a.labels, b.labels) and a.num_classes == b.num_classes
    assert all(torch.equal(a.splits[s], b.splits[s]) for s in ("train", "val", "test"))


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_tables_read_back_the_graph_with_its_ids_and_class_names(tmp_path, fmt):
    d = synthetic()
    got = load_custom(write_tables(d, tmp_path, fmt=fmt))
    assert_same_graph(d, got)
    assert list(got.node_ids["item"][:2]) == ["item:0", "item:1"] and got.class_names == ["0", "1", "2"]


def test_inferred_feature_columns_are_named_with_the_key_that_chooses_them(tmp_path, caplog):
    import logging

    path = write_tables(synthetic(), tmp_path, fmt="csv")
    with caplog.at_level(logging.INFO, logger="regnn"):
        load_custom(path)
    said = [r.getMessage() for r in caplog.records if "feature columns" in r.getMessage()]
    item = next(m for m in said if "(item)" in m)
    assert "every column but the id and the label and split" in item and "`features: [...]`" in item
    spec = yaml.safe_load(path.read_text())
    cols = [c for c in pd.read_csv(tmp_path / "nodes_item.csv").columns if c.startswith("f")][:2]
    spec["nodes"]["item"]["features"] = cols  # declared: used as given, nothing to say
    path.write_text(yaml.safe_dump(spec))
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="regnn"):
        got = load_custom(path)
    assert not any("(item)" in r.getMessage() for r in caplog.records) and got.features["item"].shape[1] == len(cols)


def test_heterodata_round_trip_without_and_with_pyg(tmp_path):
    d = synthetic()
    pytest.importorskip("torch_geometric")
    from regnn.data.pyg import from_heterodata, to_heterodata

    hd = to_heterodata(d)
    assert set(hd.node_types) == set(d.graph.ntypes) and hd["item"].train_mask.sum() == len(d.splits["train"])
    assert_same_graph(d, from_heterodata(hd, target="item", name="synthetic", reverse="keep"))
    assert_same_graph(d, load_custom(save_pyg(d, tmp_path)))  # saved as tensors, read without PyG
    # both directions held: reverse: add, every format's default, would add a second copy of each relation
    with pytest.raises(DataError, match="are each other's reverse, so the graph already holds both directions"):
        from_heterodata(hd, target="item", name="synthetic")


def test_a_relation_that_is_its_own_reverse_is_not_reversed_again(tmp_path):
    """A relation between nodes of one type given in both directions (a symmetric relation) is its own reverse:
    reverse: add refuses it, reverse: keep reads it as it is; a one-way relation is reversed."""
    from regnn.data.pyg import from_pyg_dict

    friends = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
    d = {
        "_global_store": {},
        "user": {
            "x": torch.rand(3, 2),
            "y": torch.tensor([0, 1, 0]),
            "train_idx": torch.tensor([0]),
            "val_idx": torch.tensor([1]),
            "test_idx": torch.tensor([2]),
        },
        ("user", "friend", "user"): {"edge_index": friends},
    }
    with pytest.raises(DataError, match="friend \\(user->user\\) and friend \\(user->user\\)"):
        from_pyg_dict(d, "user")
    assert from_pyg_dict(d, "user", reverse="keep").graph.canonical_etypes == [("user", "friend", "user")]
    d[("user", "friend", "user")]["edge_index"] = friends[:, :2]  # 0->1, 1->0: still symmetric
    with pytest.raises(DataError, match="each other's reverse"):
        from_pyg_dict(d, "user")
    d[("user", "friend", "user")]["edge_index"] = friends[:, ::2]  # 0->1, 1->2: one way
    assert ("user", "rev_friend", "user") in from_pyg_dict(d, "user").graph.canonical_etypes


def test_heterodata_unlabelled_nodes_ids_and_reversed_relations():
    x = torch.rand(5, 3)
    d = {
        "_global_store": {},
        "paper": {
            "x": x,
            "y": torch.tensor([0, 1, -1, 1, 0]),
            "node_id": ["p1", "p2", "p3", "p4", "p5"],
            "train_mask": torch.tensor([1, 1, 0, 0, 0], dtype=torch.bool),
            "val_idx": torch.tensor([3]),
            "test_idx": torch.tensor([4]),
            "class_names": ["db", "ml"],
        },
        "author": {"num_nodes": 2},
        ("author", "writes", "paper"): {"edge_index": torch.tensor([[0, 1, 1], [0, 2, 4]])},
    }
    ds = from_pyg_dict(d, "paper", reverse="add")
    assert [r for _, r, _ in ds.graph.canonical_etypes] == ["writes", "rev_writes"]
    assert ds.known_labels().tolist() == [0, 1, -1, 1, 0] and ds.class_names == ["db", "ml"]
    assert list(ds.node_ids["paper"]) == ["p1", "p2", "p3", "p4", "p5"] and ds.features["author"].shape == (2, 2)
    d["paper"]["y"] = torch.tensor([0, 1, -1, 1, -1])  # a test node without a label
    with pytest.raises(DataError, match="split 'test' have no label"):
        from_pyg_dict(d, "paper")
    d["paper"].pop("train_mask")
    with pytest.raises(DataError, match="neither train_mask nor train_idx"):
        from_pyg_dict(d, "paper")


@pytest.mark.parametrize(
    "x, message",
    [
        (
            lambda: torch.sparse_coo_tensor(torch.tensor([[0, 1], [0, 1]]), torch.tensor([1.0, float("nan")]), (2, 2)),
            "NaN",
        ),
        (lambda: torch.tensor([[1.0, 0.0], [0.0, float("inf")]]).to_sparse_csr(), "NaN or inf"),
        (
            lambda: torch.sparse_coo_tensor(
                torch.tensor([[0], [0]]), torch.tensor([1e300], dtype=torch.float64), (2, 2)
            ),
            "float32",
        ),
    ],
)
def test_sparse_heterodata_features_are_checked_like_dense_ones(x, message):
    d = {
        "paper": {"x": torch.rand(4, 2), "y": torch.tensor([0, 1, 0, 1]), "train_idx": torch.tensor([0, 1])},
        "author": {"x": x()},
        ("author", "writes", "paper"): {"edge_index": torch.tensor([[0, 1], [0, 2]])},
    }
    d["paper"].update(val_idx=torch.tensor([2]), test_idx=torch.tensor([3]))
    with pytest.raises(DataError) as e:
        from_pyg_dict(d, "paper")
    assert str(e.value).startswith("HeteroData: author.x (sparse) holds") and message in str(e.value)
    d["author"]["x"] = torch.eye(2).to_sparse()
    assert torch.equal(from_pyg_dict(d, "paper").features["author"].to_dense(), torch.eye(2))


def settings_of(cell) -> list[str]:
    """The model, optimizer and trainer settings a cell trained with, as overrides (a custom graph gets the custom
    defaults; the same settings make the runs comparable)."""
    from omegaconf import OmegaConf

    cfg = OmegaConf.load(cell / "config.yaml")
    out = []
    for section in ("model", "optimizer", "trainer"):
        flat = pd.json_normalize(OmegaConf.to_container(cfg[section], resolve=True), sep=".").iloc[0].to_dict()
        out += [f"{section}.{k}={json.dumps(v) if not isinstance(v, str) else v}" for k, v in flat.items()]
    return out


def train(tmp_path, name, *data):
    cell = tmp_path / name
    r = run_train(
        *data,
        "model=re_gcn",
        "runs=2",
        "trainer.max_epochs=15",
        "trainer.patience=15",
        "threads=1",
        "workers=1",
        f"hydra.run.dir={cell}",
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return cell, [
        (p["test_micro_f1"], p["val_micro_f1"], p["best_epoch"])
        for p in json.loads((cell / "results.json").read_text())["per_run"]
    ]


@pytest.mark.onepython
def test_the_graph_as_tables_and_as_heterodata_trains_to_the_same_scores_and_predicts_with_its_ids(tmp_path):
    first, builtin = train(tmp_path, "builtin", "dataset=synthetic")
    same = settings_of(first)
    d = synthetic()
    cell, tables = train(tmp_path, "tables", "dataset=custom", f"dataset.path={write_tables(d, tmp_path / 't')}", *same)
    assert tables == builtin
    _, pyg = train(tmp_path, "pyg", "dataset=custom", f"dataset.path={save_pyg(d, tmp_path / 'p')}", *same)
    assert pyg == builtin
    p = __import__("subprocess").run(
        [
            __import__("sys").executable,
            str(REPO / "predict.py"),
            f"run={cell}",
            "embeddings=true",
            f"hydra.run.dir={tmp_path / 'pred'}",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    rows = pd.read_csv(tmp_path / "pred" / "predictions.csv")
    assert rows.node.tolist() == [f"item:{i}" for i in range(len(rows))]
    assert set(rows.predicted.astype(str)) <= {"0", "1", "2"} and {"p_0", "p_1", "p_2"} <= set(rows.columns)
    z = np.load(tmp_path / "pred" / "embeddings.npz")
    assert list(z["ids"][:2]) == ["item:0", "item:1"]


def bad_dangling(folder, meta):
    f = folder / meta["edges"][next(iter(meta["edges"]))]["file"]
    df = pd.read_csv(f, dtype=str)
    df.loc[3, "source"] = "item:nobody"
    df.to_csv(f, index=False)
    return "line 5: source id 'item:nobody' is not in the item table"  # data row 4: the header is line 1


def bad_duplicate(folder, meta):
    f = folder / meta["nodes"]["tag"]["file"]
    df = pd.read_csv(f, dtype=str)
    df.loc[2, "id"] = df.loc[0, "id"]
    df.to_csv(f, index=False)
    return "id 'tag:0' appears twice (line 2, again in line 4)"


def bad_test_only_class(folder, meta):
    f = folder / meta["nodes"]["item"]["file"]
    df = pd.read_csv(f, dtype={"id": str, "label": str})
    meta["classes"] = meta["classes"] + ["rare"]
    df.loc[df.index[df.split == "test"][0], "label"] = "rare"
    df.to_csv(f, index=False)
    return "class 'rare' has nodes in test but none in train"


def bad_text_feature(folder, meta):
    f = folder / meta["nodes"]["item"]["file"]
    df = pd.read_csv(f, dtype={"id": str})
    df["f1"] = df["f1"].astype(object)
    df.loc[5, "f1"] = "high"
    df.to_csv(f, index=False)
    return "feature column 'f1' holds text (line 7: 'high')"


def bad_empty_edges(folder, meta):
    f = folder / meta["edges"][next(iter(meta["edges"]))]["file"]
    f.write_text("source,target\n")
    return "holds no edges"


@pytest.mark.parametrize("spoil", [bad_dangling, bad_duplicate, bad_test_only_class, bad_text_feature, bad_empty_edges])
def test_a_bad_table_is_refused_in_one_line_and_nothing_is_written(tmp_path, spoil):
    folder = tmp_path / "tables"
    y = write_tables(synthetic(), folder)
    meta = yaml.safe_load(y.read_text())
    message = spoil(folder, meta)
    y.write_text(yaml.safe_dump(meta, sort_keys=False))
    with pytest.raises(DataError) as e:
        load_custom(y)
    assert message in str(e.value) and "\n" not in str(e.value)
    if spoil is bad_dangling:  # through train.py once: every DataError takes the same way out
        out = tmp_path / "out"
        r = run_train("dataset=custom", f"dataset.path={y}", "runs=1", f"hydra.run.dir={out}")
        assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr
        assert not (out / "results.json").exists() and not (out / "runs").exists()


def test_unknown_keys_and_types_are_named(tmp_path):
    y = write_tables(synthetic(), tmp_path / "t")
    meta = yaml.safe_load(y.read_text())
    meta["nodes"]["item"]["lable"] = "label"
    y.write_text(yaml.safe_dump(meta))
    with pytest.raises(DataError, match="nodes.item: unknown key 'lable'; did you mean 'label'"):
        load_custom(y)
    meta["nodes"]["item"].pop("lable")
    meta["edges"][next(iter(meta["edges"]))]["source"] = "itme"
    y.write_text(yaml.safe_dump(meta))
    with pytest.raises(DataError, match="node type 'itme' has no node table"):
        load_custom(y)
    shutil.rmtree(tmp_path / "t")


def test_npz_descriptions_name_their_classes(tmp_path):
    from custom_data import write_npz

    d = load_custom(write_npz(tmp_path / "a"))
    names = [f"class {c}" for c in range(d.num_classes)]
    assert load_custom(write_npz(tmp_path / "b", {"classes": names})).class_names == names
    with pytest.raises(DataError, match=f"classes names 2 classes but the labels have {d.num_classes}"):
        load_custom(write_npz(tmp_path / "c", {"classes": ["x", "y"]}))


def test_the_readers_keep_their_node_type_order_which_a_seed_depends_on(tmp_path):
    """The features' order is the order of the model's input layers and of their initialisation: the npz reader
    lists the types counted by num_nodes (in the file's order), then those with features (by name); the tables
    and PyG readers their node tables or stores in order."""
    import numpy as np

    from regnn.data import load_dataset
    from regnn.data.pyg import from_pyg_dict
    from regnn.names import SPLITS

    (tmp_path / "n").mkdir()
    arrays = {
        "edges:paper:cites:author": np.array([[0, 1], [1, 0]]),
        "num_nodes:zeta": np.array(2),
        "num_nodes:author": np.array(2),
        "features:paper": np.eye(4, dtype=np.float32),
        "features:alpha": np.eye(2, dtype=np.float32),
        "edges:alpha:a:paper": np.array([[0, 1], [0, 1]]),
        "edges:zeta:z:paper": np.array([[0, 1], [1, 1]]),
        "labels": np.array([0, 1, 0, 1]),
        "train": np.array([0, 1]),
        "val": np.array([2]),
        "test": np.array([3]),
    }
    np.savez(tmp_path / "n" / "graph.npz", **arrays)
    (tmp_path / "n" / "dataset.yaml").write_text("format: npz\ngraph: graph.npz\ntarget: paper\n")
    npz = load_dataset("custom", format="custom", path=str(tmp_path / "n" / "dataset.yaml"))
    assert list(npz.features) == ["zeta", "author", "alpha", "paper"]
    store = {"x": torch.eye(4), "y": torch.tensor([0, 1, 0, 1])}
    masks = {f"{s}_mask": torch.tensor([s == "train", s == "train", s == "val", s == "test"]) for s in SPLITS}
    d = {
        "zeta": {"num_nodes": 2},
        "paper": store | masks,
        "alpha": {"x": torch.eye(2)},
        ("paper", "cites", "zeta"): {"edge_index": torch.tensor([[0, 1], [1, 0]])},
        ("alpha", "a", "paper"): {"edge_index": torch.tensor([[0, 1], [0, 1]])},
    }
    assert list(from_pyg_dict(d, "paper").features) == ["zeta", "paper", "alpha"]
