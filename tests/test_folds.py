"""folds=k: run r validates on fold r mod k of the training and validation nodes, the test nodes untouched."""

import pytest
import torch

from conftest import cfg


def test_folds_split_the_training_and_validation_nodes_stratified_and_leave_test_alone():
    from regnn.data.folds import fold_splits

    labels = torch.tensor([0] * 30 + [1] * 12 + [2] * 8)
    splits = {"train": torch.arange(0, 50, 2), "val": torch.arange(1, 40, 2), "test": torch.arange(41, 50, 2)}
    pool = torch.cat([splits["train"], splits["val"]]).unique()
    folds = [fold_splits(splits, labels, 4, i) for i in range(4)]
    vals = torch.cat([f["val"] for f in folds])
    assert torch.equal(vals.sort().values, pool)  # every training or validation node validates once
    for f in folds:
        assert torch.equal(f["test"], splits["test"])
        assert torch.equal(torch.cat([f["train"], f["val"]]).sort().values, pool)  # a fold's train: the rest
        assert set(labels[f["val"]].tolist()) == set(labels[pool].tolist())  # every class in every fold
    sizes = [len(f["val"]) for f in folds]
    assert max(sizes) - min(sizes) <= 1
    assert all(
        torch.equal(a["val"], b["val"]) for a, b in zip(folds, [fold_splits(splits, labels, 4, i) for i in range(4)])
    )  # the same every time
    with pytest.raises(ValueError, match="folds=1"):
        fold_splits(splits, labels, 1, 0)
    with pytest.raises(ValueError, match="more folds than"):
        fold_splits(splits, labels, 100, 0)


def test_with_folds_run_r_validates_on_fold_r_mod_k(tmp_path):
    from regnn.pipeline import load_data, train

    c = cfg(
        "dataset=synthetic", "model=gcn", "runs=3", "folds=3", "trainer.max_epochs=3", "trainer.patience=3", "workers=1"
    )
    summary = train(c, tmp_path / "cell")
    data = load_data(c.dataset)
    pool = len(data.splits["train"]) + len(data.splits["val"])
    assert [r["fold"] for r in summary["per_run"]] == [0, 1, 2]
    sizes = summary["split_sizes"]
    assert sizes["folds"] == 3 and sizes["train"] + sizes["val"] == pool and sizes["test"] == len(data.splits["test"])


def test_a_tune_validates_its_trials_over_folds_and_its_final_runs_on_the_split():
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from conftest import REPO
    from regnn.errors import ConfigError
    from regnn.tuning import check_tune

    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        c = compose(
            "train",
            overrides=["experiment=tune", "dataset=synthetic", "tune.folds=3", "tune.seeds=3", "tune.finalist_seeds=6"],
        )
    assert c.folds == 3 and c.runs == 3
    check_tune(c.tune)
    bad = OmegaConf.merge(c.tune, {"finalist_seeds": 5})
    with pytest.raises(ConfigError, match="tune.finalist_seeds=5: a multiple of tune.folds=3"):
        check_tune(bad)
    with pytest.raises(ConfigError, match="tune.folds=1"):
        check_tune(OmegaConf.merge(c.tune, {"folds": 1}))
