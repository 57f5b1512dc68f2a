"""Mini-batch cells resume like full-batch ones; an existing run directory is never overwritten silently."""

import json
import shutil

import pytest

from conftest import cfg, run_train
from regnn.errors import ConfigError
from regnn.pipeline import train

MINI = [
    "dataset=synthetic",
    "model=re_gcn",
    "threads=1",
    "trainer=minibatch",
    "trainer.default_fanout=5",
    "trainer.batch_size=100",
    "trainer.max_epochs=2",
    "trainer.patience=2",
    "trainer.log_every=0",
]


def test_minibatch_resume_keeps_finished_runs_and_extends(tmp_path, caplog):
    out = tmp_path / "cell"
    first = train(cfg(*MINI, "runs=2"), out)
    run0 = (out / "runs" / "run_00" / "results.json").read_text()
    # as if killed during run 1: run 0 finished, nothing after it
    shutil.rmtree(out / "runs" / "run_01")
    for f in ("results.json", "relation_weights.json"):
        (out / f).unlink()
    assert (out / "config.yaml").exists()  # written before the first run
    caplog.set_level("INFO", logger="regnn")
    again = train(cfg(*MINI, "runs=2", "resume=true"), out)
    assert "run 1/2 seed 0: finished earlier, kept" in caplog.text
    assert (out / "runs" / "run_00" / "results.json").read_text() == run0  # not retrained, not rewritten
    assert again["per_run"] == first["per_run"][:1] + again["per_run"][1:]
    assert [r["seed"] for r in again["per_run"]] == [0, 1]
    # runs=3 extends the cell: runs 0 and 1 kept, their summary moved aside
    caplog.clear()
    more = train(cfg(*MINI, "runs=3", "resume=true"), out)
    assert "run 2/3 seed 1: finished earlier, kept" in caplog.text and "run 3/3 seed 2: test accuracy" in caplog.text
    assert [r["seed"] for r in more["per_run"]] == [0, 1, 2] and more["per_run"][:2] == again["per_run"]
    assert json.loads((out / "results.2runs.json").read_text())["runs"] == 2
    assert json.loads((out / "results.json").read_text())["runs"] == 3


def test_minibatch_resume_refuses_other_settings(tmp_path):
    out = tmp_path / "cell"
    train(cfg(*MINI, "runs=1"), out)
    (out / "results.json").unlink()
    with pytest.raises(ConfigError, match="holds results computed with other settings \\(optimizer differ"):
        train(cfg(*MINI, "runs=1", "resume=true", "optimizer.lr=0.5"), out)


def test_an_existing_run_dir_with_another_config_is_not_overwritten(tmp_path):
    out = tmp_path / "taken"
    out.mkdir()
    (out / "config.yaml").write_text("dataset:\n  name: acm\n")
    p = run_train("dataset=synthetic", "runs=1", "trainer.max_epochs=2", f"hydra.run.dir={out}")
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "already holds the config.yaml of an earlier training; refusing to overwrite it" in p.stderr
    assert (out / "config.yaml").read_text() == "dataset:\n  name: acm\n"


def test_a_resumed_cell_names_the_device_of_each_run(tmp_path):
    """A cell finished on another machine than it started on says which runs each device trained."""
    out, full = tmp_path / "cell", ["dataset=synthetic", "model=re_gcn", "threads=1", "trainer.max_epochs=2"]
    first = train(cfg(*full, "runs=2"), out)
    assert [r["device"] for r in first["per_run"]] == ["cpu", "cpu"]
    assert first["environment"]["run_devices"] == {"cpu": [0, 1]}
    # run 0 as if trained by a GPU machine, run 1 not yet trained
    rec_path = out / "runs" / "run_00" / "results.json"
    rec_path.write_text(json.dumps({**json.loads(rec_path.read_text()), "device": "cuda (GPU X)"}))
    shutil.rmtree(out / "runs" / "run_01")
    (out / "results.json").unlink()
    again = train(cfg(*full, "runs=2", "resume=true"), out)
    assert again["environment"]["run_devices"] == {"cuda (GPU X)": [0], "cpu": [1]}


def test_cells_written_before_the_stopping_options_resume_as_the_defaults():
    """A config.yaml without trainer.stop_on / lr_schedule computed what the defaults compute; other values differ."""
    from omegaconf import OmegaConf

    from regnn.runs.computation import computation

    now = OmegaConf.to_container(cfg("dataset=synthetic"), resolve=True)
    old = {**now, "trainer": {k: v for k, v in now["trainer"].items() if k not in ("stop_on", "lr_schedule")}}
    assert computation(old) == computation(now)
    rhgnn = OmegaConf.to_container(
        cfg("dataset=synthetic", "trainer.stop_on=[val_micro_f1,val_macro_f1]", "trainer.lr_schedule=cosine"),
        resolve=True,
    )
    assert computation(rhgnn)["trainer"] != computation(old)["trainer"]
    # HGT cells written before model.variant existed ran DGL's HGTConv: the default computes what they did
    hgt = OmegaConf.to_container(cfg("dataset=synthetic", "model=hgt"), resolve=True)
    old_hgt = {**hgt, "model": {k: v for k, v in hgt["model"].items() if k != "variant"}}
    assert computation(old_hgt) == computation(hgt)
    hgb = OmegaConf.to_container(cfg("dataset=synthetic", "model=hgt", "model.variant=hgb"), resolve=True)
    assert computation(hgb) != computation(old_hgt)
    # RE-GAT cells written before model.attn_init existed started the attention as xavier does
    gat = OmegaConf.to_container(cfg("dataset=dblp", "model=re_gat"), resolve=True)
    old_gat = {**gat, "model": {k: v for k, v in gat["model"].items() if k != "attn_init"}}
    assert computation(old_gat) == computation(gat)
    zeros = OmegaConf.to_container(cfg("dataset=dblp", "model=re_gat", "model.attn_init=zeros"), resolve=True)
    assert computation(zeros) != computation(old_gat)
    # ... and before model.input_width existed projected their inputs to one head's width
    older_gat = {**old_gat, "model": {k: v for k, v in old_gat["model"].items() if k != "input_width"}}
    assert computation(older_gat) == computation(gat)
    wide = OmegaConf.to_container(cfg("dataset=dblp", "model=re_gat", "model.input_width=layer"), resolve=True)
    assert computation(wide) != computation(older_gat)


def test_cells_clustered_before_n_init_existed_differ_from_the_ten_start_default():
    """A config.yaml without clustering.n_init clustered with one start: a resume under the default (10) must not
    take its scores for ten-start ones, and n_init=1 matches it."""
    from omegaconf import OmegaConf

    from regnn.runs.computation import computation

    now = OmegaConf.to_container(cfg("dataset=synthetic", "clustering.enabled=true"), resolve=True)
    assert now["clustering"]["n_init"] == 10
    old = {**now, "clustering": {k: v for k, v in now["clustering"].items() if k != "n_init"}}
    assert computation(old) != computation(now)
    one = OmegaConf.to_container(
        cfg("dataset=synthetic", "clustering.enabled=true", "clustering.n_init=1"), resolve=True
    )
    assert computation(old) == computation(one)


def test_relation_settings_without_relation_weights_compute_nothing():
    """MLP cells stored before its config named tau's slope, and plain models under any lambda, compute what the
    composed config computes: with both parts off, neither value is read."""
    from omegaconf import OmegaConf

    from regnn.runs.computation import computation

    now = OmegaConf.to_container(cfg("dataset=synthetic", "model=mlp"), resolve=True)
    old = {
        **now,
        "model": {
            **now["model"],
            "relation": {k: v for k, v in now["model"]["relation"].items() if k != "negative_slope"},
        },
    }
    assert computation(old) == computation(now)
    gcn = OmegaConf.to_container(cfg("dataset=synthetic", "model=gcn"), resolve=True)
    other = OmegaConf.to_container(cfg("dataset=synthetic", "model=gcn", "model.relation.scale=3"), resolve=True)
    assert computation(gcn) == computation(other)
    re = OmegaConf.to_container(cfg("dataset=synthetic", "model=re_gcn", "model.relation.scale=3"), resolve=True)
    assert computation(re) != computation(
        OmegaConf.to_container(cfg("dataset=synthetic", "model=re_gcn"), resolve=True)
    )
