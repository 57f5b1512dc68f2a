"""Bad inputs end in one line that names the file or key, the problem and the fix (docs/failures.md): out-of-range
values, unknown dataset keys, feature arrays that are not real finite numbers, adjacency values, corrupt headers,
records of the wrong shape on resume, and Hydra's own failures."""

import json
import logging
import re

import numpy as np
import pytest
import scipy.sparse as sp

import regnn.config  # noqa: F401  (the repo_root resolver)
from conftest import REPO, cfg, run_train
from custom_data import write_magnn, write_npz
from regnn.runs import io_safe
from regnn.config import validate
from regnn.data import load_dataset
from regnn.data.features import FEATS_TYPES
from regnn.data.magnn import read_array
from regnn.errors import ConfigError, DataError
from regnn.models import BACKBONES


def load(path):
    return load_dataset("custom", format="custom", path=str(path))


@pytest.mark.parametrize(
    "override,message",
    [
        ("threads=-1", "threads=-1 is not valid: use null"),
        ("threads=0", "threads=0 is not valid: use null"),  # once silently the default
        ("threads=2.5", "threads=2.5 is not valid"),  # once silently 2
        ("runs=100000", "runs=100000 is not valid: must be <= 1000"),
        ("seed=100000000000000000000", "is not valid: must be <= 2147483647"),
        ("seed=2147483647 runs=2", "the last run's seed"),
        ("model.hidden=100000000", "model.hidden=100000000 is not valid: must be <= 65536"),
        ("model=re_gat model.heads=1000", "model.heads=1000 is not valid: must be <= 64"),
        ("+dataset.foo=1", "dataset.foo=1 is not valid: dataset dblp (format magnn) has no such key"),
        ("dataset=custom +dataset.foo=1", "dataset.foo=1 is not valid: dataset custom (format custom) has no such key"),
    ],
)
def test_values_out_of_range_and_unknown_dataset_keys_are_refused(override, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        validate(cfg(*override.split()), BACKBONES, FEATS_TYPES)


def test_a_long_value_is_quoted_with_a_cap():
    with pytest.raises(ConfigError) as e:
        validate(cfg("model.hidden=" + "x" * 100_000), BACKBONES, FEATS_TYPES)
    assert len(str(e.value)) < 300 and "model.hidden='xxx" in str(e.value)


def test_a_yaml_alias_bomb_is_quoted_without_expanding_it(tmp_path):
    """Nine levels of nine aliases: a 500-byte description whose value repr() would spell out 9^9 items."""
    levels = ["&a [x, x, x, x, x, x, x, x, x]"] + [
        f"&{c} [{', '.join([f'*{p}'] * 9)}]" for p, c in zip("abcdefgh", "bcdefghi")
    ]
    path = write_npz(tmp_path / "shops")
    path.write_text(path.read_text() + f"name: [{', '.join(levels)}]\n")
    with pytest.raises(DataError, match="name must be a name") as e:
        load(path)
    assert len(str(e.value)) < 400


@pytest.mark.parametrize(
    "change,message",
    [
        (lambda z: z.update({"features:shop": np.array([["a", "b"]] * 120)}), "features:shop holds text"),
        (lambda z: z.update({"features:shop": z["features:shop"] + 1j}), "features:shop holds complex numbers"),
        (
            lambda z: z["features:shop"].__setitem__((7, 1), np.inf),
            r"features:shop holds NaN or inf \(first in row 7\)",
        ),
        (
            lambda z: z.update({"features:shop": z["features:shop"][:, 0]}),
            r"features:shop has shape \(120,\); features must be \(nodes, dim\) \(one value per node",
        ),
    ],
)
def test_feature_arrays_must_be_real_finite_matrices(tmp_path, change, message):
    path = write_npz(tmp_path / "shops", change=change)
    with pytest.raises(DataError, match=message) as e:
        load(path)
    assert "graph.npz" in str(e.value)


def test_a_class_without_training_nodes_is_warned_about(tmp_path, caplog):
    def drop_class_2(z):
        tr = z["train"]
        z["labels"][tr[z["labels"][tr] == 2]] = 1

    with caplog.at_level(logging.WARNING, logger="regnn"):
        load(write_npz(tmp_path / "shops", change=drop_class_2))
    assert re.search(r"class 2 has no training node \(\d+ of them in validation/test\)", caplog.text)


@pytest.mark.parametrize(
    "num_classes,message", [(10**12, "at most 100000"), (2, r"labels range over \[0, 2\] but there are 2 classes")]
)
def test_num_classes_is_bounded_by_the_labels_and_memory(tmp_path, num_classes, message):
    with pytest.raises(DataError, match=message):
        load(write_npz(tmp_path / "shops", {"num_classes": num_classes}))


def edit_adj(root, change):
    adj = sp.load_npz(root / "adjM.npz").tocsr()
    adj = change(adj) or adj
    sp.save_npz(root / "adjM.npz", adj)


def test_explicit_zeros_in_adjm_are_dropped_with_a_note(tmp_path, caplog):
    path = write_magnn(tmp_path / "m")
    before = load(path).graph.num_edges()

    def add_zeros(adj):
        adj.data[:5] = 0  # stored, but no edge

    edit_adj(tmp_path / "m", add_zeros)
    with caplog.at_level(logging.WARNING, logger="regnn"):
        after = load(path).graph.num_edges()
    assert "stores 5 explicit zeros" in caplog.text
    assert after < before  # once read as edges


@pytest.mark.parametrize("value", [2.0, -1.0, np.nan])
def test_adjm_values_other_than_one_are_refused(tmp_path, value):
    path = write_magnn(tmp_path / "m")
    edit_adj(tmp_path / "m", lambda adj: adj.data.__setitem__(3, value))
    with pytest.raises(DataError, match=r"adjM.npz holds edge values other than 1 .*row \d+, column \d+"):
        load(path)


def test_adjm_indices_beyond_its_shape_are_corrupt(tmp_path):
    path = write_magnn(tmp_path / "m")
    adj = sp.load_npz(tmp_path / "m" / "adjM.npz").tocsr()
    indices = adj.indices.copy()
    indices[0] = adj.shape[1] + 10
    np.savez(
        tmp_path / "m" / "adjM.npz",
        format=b"csr",
        shape=np.array(adj.shape),
        data=adj.data,
        indices=indices,
        indptr=adj.indptr,
    )
    with pytest.raises(DataError, match="adjM.npz.* corrupt"):
        load(path)


def test_an_npy_header_claiming_more_than_the_file_holds_is_refused(tmp_path):
    path = tmp_path / "x.npy"
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": "<f8", "fortran_order": False, "shape": (10**12, 4)})
        f.write(np.zeros(4).tobytes())
    with pytest.raises(DataError, match=r"header claims shape \(1000000000000, 4\).*truncated or corrupt"):
        read_array(path, "fix it")


def test_a_folder_or_a_link_loop_where_a_file_should_be_is_named_as_such(tmp_path):
    path = write_magnn(tmp_path / "m")
    (tmp_path / "m" / "labels.npy").unlink()
    (tmp_path / "m" / "labels.npy").mkdir()
    with pytest.raises(DataError, match="labels.npy is a folder, not a file"):
        load(path)
    (tmp_path / "m" / "labels.npy").rmdir()
    (tmp_path / "m" / "labels.npy").symlink_to(tmp_path / "m" / "labels.npy")
    with pytest.raises(DataError, match="labels.npy (is a link that leads to no file|cannot be reached)"):
        load(path)


def test_a_graph_file_or_description_that_is_a_folder_is_not_called_missing(tmp_path):
    path = write_npz(tmp_path / "shops")
    (tmp_path / "shops" / "graph.npz").unlink()
    (tmp_path / "shops" / "graph.npz").mkdir()
    with pytest.raises(DataError, match="graph.npz is a folder, not a file; write it with numpy.savez"):
        load(path)
    (tmp_path / "loop.yaml").symlink_to(tmp_path / "loop.yaml")
    with pytest.raises(DataError, match="loop.yaml (is a link that leads to no file|cannot be reached)"):
        load(tmp_path / "loop.yaml")


@pytest.mark.parametrize("text", ["{}", "[1, 2]", '{"runs": NaN}', b"\xff\xfe results"])
def test_resume_treats_a_misshapen_or_non_utf8_record_as_absent_and_sets_it_aside(tmp_path, text, caplog):
    p = tmp_path / "results.json"
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    with caplog.at_level(logging.WARNING, logger="regnn"):
        assert io_safe.read_json(p, io_safe.is_cell_summary) is None
    assert not p.exists() and (tmp_path / "results.json.invalid").exists()
    assert "set aside as results.json.invalid" in caplog.text
    p.write_text("{}")
    io_safe.read_json(p, io_safe.is_run_record)
    assert (tmp_path / "results.json.invalid.1").exists()  # the first one is kept


def test_a_result_file_that_is_a_folder_is_named_as_such(tmp_path):
    (tmp_path / "results.json").mkdir()
    with pytest.raises(io_safe.OutputError, match="is a folder where regnn keeps a result file"):
        io_safe.read_json(tmp_path / "results.json")


@pytest.mark.onepython
def test_a_run_record_of_the_wrong_shape_is_retrained_not_reported(tmp_path):
    """A `{}` run record was once reported as "trained with seed None ... move that directory away"."""
    out = tmp_path / "run"
    args = ["dataset=synthetic", "runs=2", "trainer.max_epochs=3", "threads=1", "workers=1", f"hydra.run.dir={out}"]
    assert run_train(*args).returncode == 0
    (out / "results.json").unlink()
    (out / "runs" / "run_01" / "results.json").write_text("{}")
    r = run_train(*args, "resume=true")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "seed None" not in r.stderr
    assert (out / "runs" / "run_01" / "results.json.invalid").exists()
    rec = json.loads((out / "runs" / "run_01" / "results.json").read_text())
    assert rec["seed"] == 1 and io_safe.is_run_record(rec)


def test_the_sweep_check_leaves_to_hydra_what_it_cannot_read_itself():
    from regnn.entry import unknown_sweep_value

    conf = REPO / "conf"
    assert "did you mean 're_gcn'?" in unknown_sweep_value(["-m", "model=gcn,re_gcnn"], conf)
    assert unknown_sweep_value(["model=re_gcnn"], conf) is None  # no sweep: Hydra's own message
    for fine in (["model=[gcn,re_gcn]"], ["model=null"], ["model='${x}'"], ["--config-dir", "d", "tuned=best"]):
        assert unknown_sweep_value(["-m", "dataset=dblp", *fine], conf) is None, fine


def test_a_misspelt_group_value_in_a_sweep_is_refused_with_the_closest_before_any_cell_launches(tmp_path):
    r = run_train("-m", "dataset=synthetic", "model=gcn,re_gcnn", f"hydra.sweep.dir={tmp_path / 'sweep'}")
    assert (
        r.returncode == 2
        and "Could not find 'model/re_gcnn' (in the sweep model=gcn,re_gcnn); did you mean 're_gcn'?" in r.stderr
    )
    assert "Launching" not in r.stdout + r.stderr and not (tmp_path / "sweep").exists()


@pytest.mark.parametrize(
    "args,expect",
    [
        (["model.hiden=64"], "Could not override 'model.hiden'"),
        (["threads=0"], "threads=0 is not valid"),
        (["dataset=cora"], "Could not find 'dataset/cora'; available: acm"),
    ],
)
def test_refused_commands_print_one_line_exit_2_and_leave_no_run_folder(tmp_path, args, expect):
    out = tmp_path / "run"
    r = run_train("dataset=synthetic", *args, f"hydra.run.dir={out}")
    lines = [ln for ln in (r.stdout + r.stderr).splitlines() if ln.strip()]
    assert r.returncode == 2 and expect in lines[-1], r.stderr[-2000:]
    assert "+model" not in r.stderr and "Traceback" not in r.stderr
    assert all(len(ln) < 400 for ln in lines)
    assert not out.exists()  # nothing a later run must clean up


def test_a_run_folder_that_is_a_file_gets_one_line(tmp_path):
    (tmp_path / "taken").write_text("x")
    r = run_train("dataset=synthetic", f"hydra.run.dir={tmp_path / 'taken'}")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [
        f"{tmp_path / 'taken'} is a file, not a folder; give a writable folder "
        "with hydra.run.dir=<folder> (hydra.sweep.dir=<folder> for -m)"
    ]
