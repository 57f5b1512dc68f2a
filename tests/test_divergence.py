"""Diverged training stops with one line, is recorded as a failed run and never reported as a score."""

import json

import pytest

from conftest import relation, run_train, fullbatch
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
    model = REGNN.from_inputs(inputs, d.in_dims, d.num_classes, hidden=8, num_layers=2, relation=relation())
    with pytest.raises(Diverged, match="training diverged at epoch 0: the training loss is nan; lower optimizer.lr"):
        train_run(
            model,
            inputs,
            d.features,
            d.labels,
            d.splits,
            seed=0,
            options=fullbatch(optimizer={"lr": 0.01}, max_epochs=5),
        )


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


@pytest.mark.parametrize(
    "trainer",
    [
        ["trainer.max_epochs=5"],
        ["trainer=minibatch", "trainer.default_fanout=5", "trainer.max_epochs=3", "trainer.batch_size=64"],
    ],
)
def test_nan_in_a_feature_file_is_refused_at_load_naming_the_file(tmp_path, trainer):
    """Not trained into an epoch-0 divergence whose advice is to lower the learning rate: the file and the row."""
    meta = nan_features_dataset(tmp_path / "data")
    p = run_train(
        "dataset=custom",
        f"dataset.path={meta}",
        "model=re_gcn",
        "threads=1",
        "runs=2",
        *trainer,
        f"hydra.run.dir={tmp_path}/out",
    )
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "graph.npz: features:shop holds NaN or inf (first in row 3)" in p.stderr
    assert "optimizer.lr" not in p.stderr and not (tmp_path / "out").exists()


def test_a_blown_up_but_finite_loss_is_divergence_too():
    from regnn.training.divergence import check_loss

    check_loss(12.5, "validation loss", 3)  # a poor model, not a diverged one
    with pytest.raises(
        Diverged, match=r"epoch 1: the validation loss is 3.7e\+24 \(above 1e\+06: the weights blew up\)"
    ):
        check_loss(3.7e24, "validation loss", 1, lr=1e4)  # ACM at lr 1e4, every value finite


def test_train_loss_blowup_is_flagged_after_a_streak_and_once():
    from regnn.training.divergence import TrainLossBlowup

    w = TrainLossBlowup(num_classes=3, factor=10, epochs=5)
    fired = [w.step(e, 1.0 - 0.01 * e, 1.1) for e in range(30)]  # an ordinary run: never
    assert not any(fired) and w.report is None
    w = TrainLossBlowup(num_classes=3, factor=10, epochs=5)
    losses = [75.0, 60.0, 40.0] + [40.0 * 1.3**k for k in range(12)]  # the training loss grows, validation flat
    fired = [e for e, loss in enumerate(losses) if w.step(e, loss, 1.4)]
    assert fired == [4]  # flagged from epoch 0 (75 > 10 x 1.4): the fifth epoch completes the streak, once
    assert w.report["min_train_loss"] == 40.0 and w.report["val_loss"] == 1.4
    assert "lower model.dropout" in TrainLossBlowup.message(w.report)
    w = TrainLossBlowup(num_classes=3, factor=10, epochs=5)  # tiny losses of an easy task: 10x but below the floor
    assert not any(w.step(e, 0.05, 0.001) for e in range(20))
    w = TrainLossBlowup(num_classes=3, factor=10, epochs=5)  # a streak broken by a normal epoch starts again
    pattern = [30.0] * 4 + [1.0] + [30.0] * 4
    assert not any(w.step(e, loss, 1.0) for e, loss in enumerate(pattern))


def test_a_run_whose_training_loss_blows_up_is_reported_in_the_log_and_results(tmp_path):
    # RE-GAT's library defaults on raw counts: dropout-rescaled training-mode outputs explode over the five
    # attention calls (train loss in the thousands), while evaluation stays near chance
    p = run_train(
        "dataset=counts",
        "dataset.num_items=200",
        "dataset.num_users=100",
        "dataset.num_tags=20",
        "model=re_gat",
        "model.hidden=16",
        "runs=1",
        "threads=1",
        "trainer.max_epochs=25",
        "trainer.patience=25",
        f"hydra.run.dir={tmp_path}",
    )
    assert p.returncode == 0, p.stderr[-2000:]
    r = strict_json(tmp_path / "results.json")
    assert r["train_loss_blowup_runs"] == 1
    rec = r["per_run"][0]["train_loss_blowup"]
    assert rec["train_loss"] > 10 * rec["val_loss"] and rec["epochs"] >= 20
    assert "training loss blew up" in p.stderr and "dataset.feature_norm=standard" in p.stderr
