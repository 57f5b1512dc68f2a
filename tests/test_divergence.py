"""Diverged training stops with one line, is recorded as a failed run and never reported as a score."""
import json

import pytest
import torch

from conftest import run_train
from custom_data import write_npz
from regnn.data import make_synthetic
from regnn.models import REGNN, RelationInputs
from regnn.training.divergence import Diverged
from regnn.training.trainer import train_run

FAST = ["dataset=synthetic", "model=re_gcn", "threads=1", "trainer.patience=40"]


def strict_json(path):
    """The file parsed as strict JSON: a NaN or Infinity token fails."""
    def refuse(token):
        raise ValueError(f"{path} holds the non-JSON token {token}")
    return json.loads(path.read_text(), parse_constant=refuse)


def nan_features_dataset(root):
    return write_npz(root, change=lambda z: z["features:shop"].__setitem__((3, 2), float("nan")))


def test_train_run_raises_on_nan_features():
    d = make_synthetic(num_items=60, num_sources=30, num_tags=6, seed=0)
    d.features["item"][0, 0] = float("nan")
    inputs = RelationInputs.build(d)
    model = REGNN.from_inputs(inputs, d.in_dims, d.num_classes, hidden=8, num_layers=2)
    with pytest.raises(Diverged, match="training diverged at epoch 0: the training loss is nan; lower optimizer.lr"):
        train_run(model, inputs, d.features, d.labels, d.splits, seed=0, optimizer={"lr": 0.01}, max_epochs=5)


def test_huge_learning_rate_fails_runs_instead_of_scoring_them(tmp_path):
    p = run_train(*FAST, "runs=2", "trainer.max_epochs=40", "optimizer.lr=1e4", f"hydra.run.dir={tmp_path}")
    r = strict_json(tmp_path / "results.json")
    failed = [rec for rec in r["per_run"] if "failed" in rec]
    assert failed, "lr=1e4 should make at least one run diverge"
    assert r["failed_runs"] == len(failed) and r["finished_runs"] == 2 - len(failed)
    for rec in failed:
        assert "training diverged at epoch" in rec["failed"] and "optimizer.lr (now 10000.0)" in rec["failed"]
        assert "test_micro_f1" not in rec  # never a score
        assert rec["device"] == "cpu"  # a failed run names its device too: it is no run of another device
        assert strict_json(tmp_path / "runs" / f"run_{rec['run']:02d}" / "results.json")["failed_epoch"] >= 0
    assert f"{len(failed)} of 2 runs diverged" in p.stderr
    assert r["environment"]["run_devices"] == {"cpu": [0, 1]}
    if r["finished_runs"]:
        assert p.returncode == 0 and r["metrics"]["test_micro_f1"]["n"] == r["finished_runs"]
    else:
        assert p.returncode != 0 and r["metrics"] == {}


@pytest.mark.parametrize("trainer", [["trainer.max_epochs=5"],
                                     ["trainer=minibatch", "trainer.fanouts=[5,5]", "trainer.max_epochs=3",
                                      "trainer.batch_size=64"]])
def test_nan_in_features_fails_every_run_and_exits_non_zero(tmp_path, trainer):
    meta = nan_features_dataset(tmp_path / "data")
    p = run_train("dataset=custom", f"dataset.path={meta}", "model=re_gcn", "threads=1", "runs=2", *trainer,
                  f"hydra.run.dir={tmp_path}/out")
    assert p.returncode == 3, p.stderr
    assert "Traceback" not in p.stderr
    assert "training diverged at epoch 0" in p.stderr and "2 of 2 runs diverged" in p.stderr
    r = strict_json(tmp_path / "out" / "results.json")
    assert r["metrics"] == {} and r["failed_runs"] == 2 and all("failed" in rec for rec in r["per_run"])
    # a resumed job keeps the failed runs (the same seeds diverge again) and still exits non-zero
    p = run_train("dataset=custom", f"dataset.path={meta}", "model=re_gcn", "threads=1", "runs=2", *trainer,
                  "resume=true", f"hydra.run.dir={tmp_path}/out")
    assert p.returncode == 3 and "2 of 2 runs diverged" in p.stderr


def test_a_blown_up_but_finite_loss_is_divergence_too():
    from regnn.training.divergence import check_loss
    check_loss(12.5, "validation loss", 3)  # a poor model, not a diverged one
    with pytest.raises(Diverged, match=r"epoch 1: the validation loss is 3.7e\+24 \(above 1e\+06: the weights blew up\)"):
        check_loss(3.7e24, "validation loss", 1, lr=1e4)  # ACM at lr 1e4, every value finite
