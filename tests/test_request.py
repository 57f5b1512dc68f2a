"""The train.py commands that compare.tune and a tune's final runs start: built from a typed request that reads back
from its own command line, inheriting exactly the user's overrides they should, and setting only keys that exist."""

from pathlib import Path

from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from conftest import REPO
from regnn.config.request import TrainRequest, kept_overrides

USER = [
    "experiment=compare",
    "dataset=custom",
    "dataset.path=/data/shops",
    "threads=2",
    "+tune.x=1",
    "compare.tune=true",
]


def test_a_request_reads_back_from_its_command_line():
    req = TrainRequest(
        ("dataset=dblp", "model=re_gcn", "optimizer.lr=0.01"),
        {"runs": 3, "resume": True, "tune.trials": 5},
        out_dir=Path("/tmp/x"),
        config_dir=Path("/tmp/sweep"),
        tuned="best",
        multirun=True,
        experiment="tune",
    )
    argv = req.argv()
    assert argv[:3] == ["-m", "--config-dir", "/tmp/sweep"] and "resume=true" in argv
    assert argv[-1] == "hydra.sweep.dir=/tmp/x"
    assert TrainRequest.from_argv(argv, settings=tuple(req.settings)) == req
    single = TrainRequest(("model=gcn",), {"runs": 1}, out_dir=Path("/o"))
    assert single.argv() == ["model=gcn", "runs=1", "hydra.run.dir=/o"]
    assert TrainRequest.from_argv(single.argv(), settings=("runs",)) == single


def test_only_the_callers_own_keys_are_left_out_of_what_is_inherited():
    own = ("experiment", "compare.", "tune.", "runs", "resume", "hydra.")
    assert kept_overrides(USER, own=own) == ("dataset=custom", "dataset.path=/data/shops", "threads=2")
    assert kept_overrides(["runs_note=1", "runs=3", "~tune.seeds"], own=own) == ("runs_note=1",)  # keys, not prefixes
    assert kept_overrides(["optimizer.lr=0.1", "seed=1"], keys={"optimizer.lr"}) == ("seed=1",)


def test_compare_tunes_then_trains_with_the_commands_it_always_ran(tmp_path):
    from regnn.experiments.compare_sweep import tuned_requests

    budget = {"trials": 7, "seeds": 2, "finalists": 3, "finalist_seeds": 5}
    cfg = OmegaConf.create({"compare": {"tune": True}, "tune": budget, "runs": 10})
    (what_tune, tune), (what_best, best) = tuned_requests(cfg, tmp_path / "cell", USER)
    keep = ["dataset=custom", "dataset.path=/data/shops", "threads=2"]
    assert tune.argv() == [
        "-m",
        "experiment=tune",
        *keep,
        "tune.trials=7",
        "tune.seeds=2",
        "tune.finalists=3",
        "tune.finalist_seeds=5",
        "tune.final_runs=0",
        f"hydra.sweep.dir={tmp_path / 'cell' / 'tune'}",
    ]
    assert best.argv() == [
        "--config-dir",
        str(tmp_path / "cell" / "tune"),
        "tuned=best",
        *keep,
        "runs=10",
        "resume=true",
        f"hydra.run.dir={tmp_path / 'cell'}",
    ]
    _exist(["experiment=tune", "dataset=synthetic"], tune.settings)  # a renamed key fails here, not in a sweep
    _exist(["dataset=synthetic"], best.settings)


def test_a_tunes_final_runs_inherit_all_but_the_searched_and_tune_keys(tmp_path):
    from regnn.tuning.callback import final_request

    task = [
        "experiment=tune",
        "dataset=acm",
        "model=re_gcn",
        "threads=1",
        "optimizer.lr=tag(log, interval(1e-4, 1e-2))",
    ]
    task += ["tune.trials=4", "folds=3"]
    req = final_request(task, {"optimizer.lr": 0.003, "model.dropout": 0.5}, 10, tmp_path, 2)
    assert req.argv() == [
        "--config-dir",
        str(tmp_path),
        "tuned=best",
        "dataset=acm",
        "model=re_gcn",
        "threads=1",
        "runs=10",
        "resume=true",
        f"hydra.run.dir={tmp_path / 'final_trial_2'}",
    ]
    _exist(["dataset=synthetic"], req.settings)


def _exist(overrides, settings):
    import regnn.config  # noqa: F401  (the resolvers)

    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=overrides)
    for key in settings:
        assert OmegaConf.select(cfg, key, default="<missing>") != "<missing>", key
