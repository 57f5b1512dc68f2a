"""User-supplied files are read without unpickling: a .pt whose unpickling runs code is refused, unrun."""

import os
import shutil

import pytest
import torch

from conftest import run_train
from regnn.data.ogb import load_ogb
from regnn.errors import DataError
from regnn.data.safe_load import torch_load


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
