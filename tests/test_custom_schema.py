"""A user's dataset description is checked up front, integer arrays exactly; messages name the user's file and
the fix (never `make data`), and every format treats unlabelled nodes alike."""

import numpy as np
import pytest
import torch
import yaml

from conftest import run_train
from custom_data import edit_npz, write_dgl, write_magnn, write_npz
from regnn.data import load_dataset
from regnn.errors import DataError


def load(path):
    return load_dataset("custom", format="custom", path=str(path))


def edit_yaml(path, change):
    meta = yaml.safe_load(path.read_text())
    change(meta)
    path.write_text(yaml.safe_dump(meta))
    return path


def edit_graph(root, change):
    import dgl  # write_dgl, called first, skipped the test where DGL is absent

    (g,), extra = dgl.load_graphs(str(root / "shops.bin"))
    change(g)
    dgl.save_graphs(str(root / "shops.bin"), [g])


@pytest.mark.parametrize(
    "overrides,message",
    [
        ({"num_classes": "three"}, r"dataset.yaml: num_classes must be a whole number >= 1, got 'three'"),
        ({"num_classes": 3.5}, r"num_classes must be a whole number >= 1, got 3.5"),
        ({"num_classes": True}, r"num_classes must be a whole number"),
        ({"graph_index": 3}, r"graph_index 3, but shops.bin holds 1 graph\(s\); use 0..0"),
        ({"graph_index": -1}, r"graph_index must be a whole number >= 0"),
        ({"lable": "y"}, r"unknown key 'lable'; did you mean 'label'\?"),
        ({"targett": "customer"}, r"unknown key 'targett'; did you mean 'target'\?"),
        ({"features": "xx"}, r"features 'xx' is in the ndata of no node type of shops.bin"),
        ({"features": {"custmer": "x"}}, r"features must be a name \(text\)"),
        (
            {"splits": {"train": "train_mask", "vall": "val_mask", "test": "test_mask"}},
            r"unknown split 'vall'; did you mean 'val'",
        ),
        ({"format": "dlg"}, r"format 'dlg' is not known; .*did you mean 'dgl'\?"),
        ({"target": 3}, r"target must be a name \(text\), got 3"),
    ],
)
def test_dgl_descriptions_are_checked_up_front(tmp_path, overrides, message):
    with pytest.raises(DataError, match=message) as e:
        load(write_dgl(tmp_path / "shops", overrides))
    assert str(tmp_path / "shops") in str(e.value) and "make data" not in str(e.value)


def test_float_labels_with_fractions_are_refused_whole_ones_kept(tmp_path):
    path = write_dgl(tmp_path / "shops")
    edit_graph(tmp_path / "shops", lambda g: g.nodes["customer"].data.update(y=g.nodes["customer"].data["y"].float()))
    d = load(path)
    assert d.labels.dtype == torch.int64 and d.num_classes == 3  # 2.0 is class 2
    edit_graph(tmp_path / "shops", lambda g: g.nodes["customer"].data["y"].__setitem__(5, 1.5))
    with pytest.raises(DataError, match=r"shops.bin: labels 'y' holds non-integer values \(e.g. 1.5 at position 5\)"):
        load(path)


def test_npz_float_labels_and_ids_with_fractions_are_refused_whole_ones_kept(tmp_path):
    path = write_npz(
        tmp_path / "shops", change=lambda z: z.update(labels=z["labels"].astype(float), train=z["train"].astype(float))
    )
    d = load(path)
    assert d.labels.dtype == torch.int64 and d.num_classes == 3 and d.splits["train"].dtype == torch.int64
    edit_npz(tmp_path / "shops", lambda z: z["labels"].__setitem__(5, 1.5))
    with pytest.raises(DataError, match=r"graph.npz: labels holds non-integer values \(e.g. 1.5 at position 5\)"):
        load(path)
    edit_npz(tmp_path / "shops", lambda z: z.update(labels=z["labels"].round(), train=z["train"] + 0.5))
    with pytest.raises(DataError, match=r"graph.npz: train holds non-integer values"):
        load(path)


def test_split_ids_given_as_floats_are_refused(tmp_path):
    path = write_dgl(tmp_path / "shops", {"splits": {"train": "tr", "val": "val_mask", "test": "test_mask"}})
    import dgl

    (g,), _ = dgl.load_graphs(str(tmp_path / "shops" / "shops.bin"))
    dgl.save_graphs(str(tmp_path / "shops" / "shops.bin"), [g], {"tr": torch.tensor([0.0, 1.5, 2.0])})
    with pytest.raises(DataError, match="split 'tr' holds floats"):
        load(path)


def test_a_file_that_is_not_a_dgl_graph_gives_one_line(tmp_path):
    path = write_dgl(tmp_path / "shops")
    (tmp_path / "shops" / "shops.bin").write_text("customer,shop\n0,1\n")
    with pytest.raises(DataError, match="shops.bin is not a graph file written by dgl.save_graphs") as e:
        load(path)
    assert "\n" not in str(e.value) and "Stack trace" not in str(e.value)
    p = run_train("dataset=custom", f"dataset.path={path}", "runs=1", f"hydra.run.dir={tmp_path}/out")
    assert p.returncode == 2 and "Stack trace" not in p.stderr and "Traceback" not in p.stderr
    assert "is not a graph file written by dgl.save_graphs" in p.stderr


@pytest.mark.parametrize(
    "change,message",
    [
        (
            lambda s: s.update(features={"custmer": "features_0.npy"}),
            r"schema.features: unknown node type 'custmer'; did you mean 'customer'\?",
        ),
        (lambda s: s.update(num_classes="three"), r"schema: num_classes must be a whole number"),
        (lambda s: s.update(node_type=["a"]), r"schema: unknown key 'node_type'; did you mean 'node_types'\?"),
        (lambda s: s.update(relations=[["customer"]]), r"schema.relations must be a list of \[src, dst\]"),
    ],
)
def test_magnn_schemas_are_checked_up_front(tmp_path, change, message):
    path = edit_yaml(write_magnn(tmp_path / "m"), lambda meta: change(meta["schema"]))
    with pytest.raises(DataError, match=message):
        load(path)


@pytest.mark.parametrize(
    "file,array,message",
    [
        ("labels.npy", lambda a: a.astype(float) + 0.5, r"labels.npy: class labels holds non-integer values"),
        ("node_types.npy", lambda a: a.astype(float) * 1.01, r"node_types.npy: node type ids holds non-integer"),
        (
            "node_types.npy",
            lambda a: np.where(np.arange(a.size) == 7, -1, a),
            r"node_types.npy holds type id -1, but "
            r"type ids index the schema's node_types",
        ),
    ],
)
def test_magnn_integer_arrays_are_checked_exactly(tmp_path, file, array, message):
    path = write_magnn(tmp_path / "m")
    np.save(tmp_path / "m" / file, array(np.load(tmp_path / "m" / file)))
    with pytest.raises(DataError, match=message) as e:
        load(path)
    assert "make data" not in str(e.value)


def test_magnn_split_ids_with_fractions_and_missing_files_name_the_fix(tmp_path):
    path = write_magnn(tmp_path / "m")
    z = dict(np.load(tmp_path / "m" / "train_val_test_idx.npz"))
    np.savez(tmp_path / "m" / "train_val_test_idx.npz", **z | {"val_idx": z["val_idx"] + 0.25})
    with pytest.raises(DataError, match=r"train_val_test_idx.npz: val_idx holds non-integer values") as e:
        load(path)
    assert "make data" not in str(e.value)
    (tmp_path / "m" / "labels.npy").unlink()
    with pytest.raises(DataError, match=r"labels.npy is missing; fix or re-export the file") as e:
        load(path)
    assert "make data" not in str(e.value)


def test_both_formats_take_unlabelled_nodes_outside_the_splits(tmp_path):
    # magnn: test node `free` leaves the split and loses its label
    path = write_magnn(tmp_path / "m")
    labels = np.load(tmp_path / "m" / "labels.npy")
    z = dict(np.load(tmp_path / "m" / "train_val_test_idx.npz"))
    free, inside = int(z["test_idx"][0]), int(z["val_idx"][0])
    np.savez(tmp_path / "m" / "train_val_test_idx.npz", **z | {"test_idx": z["test_idx"][1:]})
    labels[free] = -1
    np.save(tmp_path / "m" / "labels.npy", labels)
    assert load(path).labels[free] == 0  # never scored
    labels[inside] = -1
    np.save(tmp_path / "m" / "labels.npy", labels)
    with pytest.raises(DataError, match="1 nodes of split 'val' have no label"):
        load(path)
    # npz: the same rule
    path = write_npz(tmp_path / "n")

    def unlabel_npz(z):
        i = int(z["test"].nonzero()[0][0])
        z["test"][i], z["labels"][i] = False, -1

    edit_npz(tmp_path / "n", unlabel_npz)
    assert load(path).labels.min() == 0
    # dgl: the same rule
    path = write_dgl(tmp_path / "shops")

    def unlabel(g):
        m = g.nodes["customer"].data
        i = int(m["test_mask"].nonzero()[0, 0])
        m["test_mask"][i] = False
        m["y"][i] = -1

    edit_graph(tmp_path / "shops", unlabel)
    assert load(path).labels.min() == 0
