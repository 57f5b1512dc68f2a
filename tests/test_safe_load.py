"""User-supplied files are read without unpickling: a .pt whose unpickling runs code is refused, unrun. regnn's own
tensor files are written whole (a full disk leaves no partial file; killed writes' temporary files are removed)
and a damaged resume checkpoint is refused, never continued from."""

import errno
import json
import os
import shutil
import subprocess
import sys

import pytest
import torch

import numpy as np

from conftest import run_train
from regnn.data.ogb import load_ogb
from regnn.errors import DataError
from regnn.data.safe_load import torch_load
from regnn.runs import checkpoint, io_safe
from regnn.runs.resume import RunCheckpoint
from test_model_integrity import tensor_regions


class _Payload:
    """Unpickling this runs `touch <path>`."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return os.system, (f"touch {self.path}",)


def payload(pt, witness, key="author"):
    torch.save({key: _Payload(witness)}, pt)
    return pt


def test_torch_load_refuses_a_payload(tmp_path):
    pt = payload(tmp_path / "evil.pt", tmp_path / "ran")
    with pytest.raises(DataError, match="holds Python objects other than tensors"):
        torch_load(pt)
    assert not (tmp_path / "ran").exists()
    torch.save({"a": torch.ones(2)}, tmp_path / "ok.pt")
    assert torch.equal(torch_load(tmp_path / "ok.pt")["a"], torch.ones(2))


def test_feature_file_payload_is_refused_by_train_py(mag_root, tmp_path):
    pt = payload(tmp_path / "m2v.pt", tmp_path / "ran")
    p = run_train(
        "dataset=ogbn_mag",
        f"dataset.dir={mag_root}",
        "dataset.featureless=file",
        f"dataset.feature_file={pt}",
        "trainer=minibatch",
        "model=re_gcn",
        "runs=1",
        "threads=1",
        f"hydra.run.dir={tmp_path}/out",
    )
    assert p.returncode == 2, p.stderr
    assert "holds Python objects other than tensors" in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "ran").exists()


def test_ogb_split_dict_payload_is_refused(mag_root, tmp_path):
    root = tmp_path / "ogb"
    shutil.copytree(mag_root, root)
    split = root / "ogbn_mag" / "split" / "time"
    assert split.is_dir()
    payload(split / "split_dict.pt", tmp_path / "ran", key="train")
    with pytest.raises(DataError, match="split_dict.pt holds Python objects other than tensors"):
        load_ogb("ogbn-mag", root)
    assert not (tmp_path / "ran").exists()
    # a split_dict.pt of plain tensors (as ogb's own) is read as before
    torch.save(
        {s: {"paper": torch.arange(3) + 3 * i} for i, s in enumerate(("train", "valid", "test"))},
        split / "split_dict.pt",
    )
    d = load_ogb("ogbn-mag", root)
    assert d.splits["train"].tolist() == [0, 1, 2] and d.splits["test"].tolist() == [6, 7, 8]
    assert torch.load is not None and torch.load.__module__ == "torch.serialization"  # restored after


def test_a_full_disk_while_writing_a_model_leaves_no_partial_file(tmp_path, monkeypatch):
    def full(obj, f, *a, **k):
        with open(f, "wb") as h:
            h.write(b"partial")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(torch, "save", full)
    with pytest.raises(io_safe.OutputError, match="No space left on device") as e:
        checkpoint.write_tensors(tmp_path / checkpoint.MODEL_FILE, {"w": torch.ones(2)})
    assert "\n" not in str(e.value) and list(tmp_path.iterdir()) == []
    monkeypatch.undo()

    def no_rename(a, b):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", no_rename)
    with pytest.raises(io_safe.OutputError):
        checkpoint.write_tensors(tmp_path / checkpoint.MODEL_FILE, {"w": torch.ones(2)})
    assert list(tmp_path.iterdir()) == []


def test_temporary_files_of_killed_writes_are_removed_when_the_folder_is_written(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".model.pt.{dead.pid}.tmp"
    live = tmp_path / f".model.pt.{os.getppid()}.tmp"  # a process that runs: its write may be under way
    stale_json = tmp_path / f".results.json.{dead.pid}.tmp"
    for p in (stale, live, stale_json):
        p.write_bytes(b"x")
    checkpoint.write_tensors(tmp_path / checkpoint.SCALING_FILE, {"w": torch.ones(2)})
    assert not stale.exists() and not stale_json.exists() and live.exists()
    (tmp_path / f".history.csv.{dead.pid}.tmp").write_bytes(b"x")
    io_safe.write_text(tmp_path / "history.csv", "a\n")  # a text write removes its own file's only
    assert not (tmp_path / f".history.csv.{dead.pid}.tmp").exists()


def test_reading_a_malformed_record_only_reads_where_asked(tmp_path):
    f = tmp_path / "results.json"
    f.write_text("{broken")
    assert io_safe.read_json(f, set_aside=False) is None and f.read_text() == "{broken"
    assert io_safe.read_json(f) is None and not f.exists() and (tmp_path / "results.json.invalid").exists()


class _Part:
    def __init__(self):
        self.s = {"lr": 0.1, "t": torch.arange(4.0)}
        self.epoch = 3

    def state(self):
        return self.s

    def load_state(self, s):
        self.s = s


@pytest.mark.parametrize("damage", ["flipped bit", "not a checkpoint"])
def test_a_damaged_resume_checkpoint_is_refused_in_one_line(tmp_path, damage):
    model = torch.nn.Linear(4, 3)
    ck = RunCheckpoint(tmp_path, 1.0, {"config": "c", "graph": "g", "seed": 0}, resume=True)
    ck.attach(model, _Part(), _Part())
    ck.save(ck.loop, "test")
    path = tmp_path / "checkpoint.pt"
    if damage == "flipped bit":
        name, start, size = next(r for r in tensor_regions(path) if r[2] == 4 * 12)  # the 4x3 weight
        b = bytearray(path.read_bytes())
        b[start + 5] ^= 0x10
        path.write_bytes(bytes(b))
    else:
        torch.save([1, 2], path)
    again = RunCheckpoint(tmp_path, 1.0, {"config": "c", "graph": "g", "seed": 0}, resume=True)
    with pytest.raises(DataError, match="damaged|not a checkpoint") as e:
        again.attach(torch.nn.Linear(4, 3), _Part(), _Part())
    assert "\n" not in str(e.value) and "move it away" in str(e.value)


def test_edited_feature_statistics_are_refused(tmp_path):
    run = tmp_path / "runs" / "run_00"
    scaling = {"item": {"method": "standard", "mean": np.zeros(3, np.float32), "scale": np.ones(3, np.float32)}}
    checkpoint.save(run, torch.nn.Linear(3, 2), {"schema": {}}, scaling=scaling)
    meta = json.loads((run / checkpoint.META_FILE).read_text())
    assert checkpoint.load_scaling(run, meta)["item"]["scale"].tolist() == [1, 1, 1]
    torch.save({"item.mean": torch.zeros(3), "item.scale": torch.full((3,), 2.0)}, run / checkpoint.SCALING_FILE)
    with pytest.raises(DataError, match="scaling.pt is not the file training wrote"):
        checkpoint.load_scaling(run, meta)
