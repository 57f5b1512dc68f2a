"""Sweeps beyond one process: the launchers of conf/hydra/launcher/ over one shared cell pool, where every cell is
trained by exactly one job and every run exactly once, and a killed job leaves only whole files behind."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

import regnn.config  # noqa: F401  (the model names, as train.py registers them)
import regnn.tuning  # noqa: F401
from conftest import REPO, SET_UP, run_train
from regnn.runs.io_safe import read_json

EXPERIMENTS = sorted(p.stem for p in (REPO / "conf" / "experiment").glob("*.yaml") if p.stem != "base_cells")
LAUNCHERS = {
    "slurm": "SlurmLauncher",
    "local": "LocalLauncher",
    "parallel": "JoblibLauncher",
    "submitit_slurm": "SlurmLauncher",
    "submitit_local": "LocalLauncher",
    "joblib": "JoblibLauncher",
}
NEEDS = {"search_re_gat": ["model=re_gat"]}  # the model its searched keys belong to
SMOKE = ["debug=smoke", "hydra.sweeper.params.dataset=synthetic", "threads=1"]
TRAINED = re.compile(r"run (\d+)/\d+ seed \d+: test Micro-F1")


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_launcher_composes_with_every_experiment(experiment):
    with initialize_config_dir(str(REPO / "conf"), version_base="1.3"):
        every = experiment in ("table_classification", "tune")  # the slurm one for every experiment (seconds each)
        for launcher, target in LAUNCHERS.items() if every else [("slurm", "SlurmLauncher")]:
            cfg = compose(
                "train",
                [f"experiment={experiment}", f"hydra/launcher={launcher}", *NEEDS.get(experiment, [])],
                return_hydra_config=True,
            )
            assert cfg.hydra.launcher._target_.endswith(target), (experiment, launcher)
            if launcher == "slurm":
                assert cfg.hydra.launcher.timeout_min == 720 and cfg.hydra.launcher.cpus_per_task == 8
        cfg = compose(
            "train",
            [
                f"experiment={experiment}",
                "hydra/launcher=slurm",
                "hydra.launcher.partition=gpu",
                "hydra.launcher.gpus_per_node=1",
                "hydra.launcher.mem_gb=64",
                *NEEDS.get(experiment, []),
            ],
            return_hydra_config=True,
        )
        assert (cfg.hydra.launcher.partition, cfg.hydra.launcher.gpus_per_node, cfg.hydra.launcher.mem_gb) == (
            "gpu",
            1,
            64,
        )


def test_the_slurm_config_prints():
    p = run_train(
        "experiment=table_classification", "hydra/launcher=slurm", "--cfg", "hydra", "-p", "hydra.launcher", timeout=120
    )
    assert p.returncode == 0, p.stderr
    assert "SlurmLauncher" in p.stdout and "partition: null" in p.stdout and "timeout_min: 720" in p.stdout


def trained_runs(cells: Path) -> dict[str, list[int]]:
    """The runs each cell's jobs trained, from the log every job of a cell appends to (kept runs log otherwise)."""
    return {
        c.name: sorted(int(m.group(1)) - 1 for m in TRAINED.finditer((c / "train.log").read_text()))
        for c in sorted(cells.glob("synthetic_*"))
    }


def records(cell: Path) -> list[dict]:
    return [read_json(p) for p in sorted((cell / "runs").glob("run_*/results.json"))]


@pytest.mark.slow  # about 60 s on 2 busy cores: 2 sweeps x 4 cells, each cell a fresh Python process
def test_two_submitit_sweeps_on_two_hosts_share_one_pool(tmp_path):
    """Two sweeps over the same 4 cells at once, as if from two hosts (REGNN_HOST_ID): each cell trained by one job
    (the other finds it claimed and moves on), every run trained exactly once."""
    cells = tmp_path / "cells"
    cmd = [
        sys.executable,
        str(REPO / "train.py"),
        "experiment=table_classification",
        *SMOKE,
        f"hydra.sweep.dir={cells}",
        "hydra/launcher=local",
    ]
    procs = [
        subprocess.Popen(
            cmd,
            cwd=REPO,
            env={**os.environ, "REGNN_HOST_ID": host},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for host in ("node-a", "node-b")
    ]
    for p in procs:
        out, _ = p.communicate(timeout=600)
        assert p.returncode == 0, out
    assert trained_runs(cells) == {f"synthetic_{m}": [0, 1] for m in ("gat", "gcn", "re_gat", "re_gcn")}
    for cell in cells.glob("synthetic_*"):
        summary = read_json(cell / "results.json")
        owners = {(r["host"], r["pid"]) for r in summary["per_run"]}
        assert len(owners) == 1 and summary["finished_runs"] == 2, cell  # one job trained the whole cell
        assert records(cell) == [
            {**r, "relation_weights": records(cell)[i]["relation_weights"]} for i, r in enumerate(summary["per_run"])
        ]
        assert not (cell / ".training.pid").exists()


@pytest.mark.slow  # make test-all: kills at every write are in tests/test_atomic_writes.py
def test_a_job_killed_mid_cell_leaves_whole_files_and_another_host_trains_only_the_rest(tmp_path):
    """SIGKILL once the first run is written: no results.json; the dead job's lease (2 s here) keeps another
    host away until it expires, then that host trains only the missing runs."""
    cell = tmp_path / "cell"
    lease = {"REGNN_CLAIM_LEASE_S": "2", "REGNN_CLAIM_HEARTBEAT_S": "0.5"}
    cmd = [
        sys.executable,
        str(REPO / "train.py"),
        "dataset=synthetic",
        "model=gcn",
        "runs=3",
        "threads=1",
        "trainer.max_epochs=40",
        "trainer.patience=40",
        f"hydra.run.dir={cell}",
    ]
    p = subprocess.Popen(
        cmd,
        cwd=REPO,
        env={**os.environ, **lease, "REGNN_HOST_ID": "node-a"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.time() + 120
        while read_json(cell / "runs" / "run_00" / "results.json") is None and p.poll() is None:
            assert time.time() < deadline
            time.sleep(0.05)
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    assert not (cell / "results.json").exists()
    done = [r for r in range(3) if (cell / "runs" / f"run_{r:02d}" / "results.json").exists()]
    assert 0 in done and done != [0, 1, 2]
    for r in done:
        assert read_json(cell / "runs" / f"run_{r:02d}" / "results.json")["host"] == "node-a"  # whole and readable
    assert json.loads((cell / ".training.pid").read_text())["host"] == "node-a"  # the dead job's claim is left
    time.sleep(max(0.0, json.loads((cell / ".training.pid").read_text())["renewed"] + 2.2 - time.time()))
    again = run_train(
        "dataset=synthetic",
        "model=gcn",
        "runs=3",
        "threads=1",
        "trainer.max_epochs=40",
        "trainer.patience=40",
        f"hydra.run.dir={cell}",
        "resume=true",
        env={"REGNN_HOST_ID": "node-b"},
    )
    assert again.returncode == 0, again.stderr
    retrained = sorted(int(m.group(1)) - 1 for m in TRAINED.finditer(again.stderr))
    assert retrained == sorted(set(range(3)) - set(done))
    summary = read_json(cell / "results.json")
    assert [r["host"] for r in summary["per_run"]] == ["node-a" if r in done else "node-b" for r in range(3)]
    assert not (cell / ".training.pid").exists()


@pytest.mark.slow  # about 50 s on 2 busy cores
def test_joblib_trains_the_cells_two_at_a_time_and_the_table_renders(tmp_path):
    p = subprocess.run(
        ["make", "-s", *SET_UP, "table-classification-smoke", f"SMOKE={tmp_path}", "LAUNCHER=parallel"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Joblib.Parallel(n_jobs=2" in p.stderr + p.stdout
    cells = tmp_path / "cells"
    assert trained_runs(cells) == {f"synthetic_{m}": [0, 1] for m in ("gat", "gcn", "re_gat", "re_gcn")}
    pids = {r["pid"] for c in cells.glob("synthetic_*") for r in read_json(c / "results.json")["per_run"]}
    assert len(pids) == 2  # two worker processes trained the 4 cells
    table = (tmp_path / "results" / "table_classification.md").read_text()
    assert "synthetic" in table.lower() or "Synthetic" in table
    assert (tmp_path / "results" / "table_classification.csv").is_file()
