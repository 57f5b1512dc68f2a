"""`python train.py ...` end to end in a subprocess, on the synthetic graph (seconds)."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import psutil
import pytest

from conftest import REPO, assert_scored_on_the_test_nodes, run_train

FAST = ["dataset=synthetic", "runs=2", "trainer.max_epochs=6", "trainer.patience=3"]


def check_results(run_dir, runs=2):
    r = json.loads((run_dir / "results.json").read_text())
    assert r["runs"] == runs and r["seeds"] == list(range(runs))
    for k in ("test_micro_f1", "test_macro_f1", "val_micro_f1", "best_epoch", "train_time_s"):
        m = r["metrics"][k]
        assert m["n"] == runs and m["std"] >= 0
    assert_scored_on_the_test_nodes(r)
    assert len(r["per_run"]) == runs
    assert r["environment"]["device"] == "cpu" and r["num_parameters"] > 0
    for i in range(runs):
        d = run_dir / "runs" / f"run_{i:02d}"
        hist = pd.read_csv(d / "history.csv")
        assert list(hist.columns[:3]) == ["epoch", "train_loss", "val_loss"] and 1 <= len(hist) <= 6
        assert json.loads((d / "results.json").read_text())["seed"] == i
    return r


def test_train_writes_results_weights_history_and_config(tmp_path):
    run_dir = tmp_path / "run"
    p = run_train(*FAST, "model=re_gcn", f"hydra.run.dir={run_dir}")
    assert p.returncode == 0, p.stderr
    r = check_results(run_dir)
    assert r["relation_names"][:2] == ["item->noise", "item->source"]
    weights = json.loads((run_dir / "relation_weights.json").read_text())
    assert len(weights) == 2 and len(weights[0]["layers"]) == 4
    assert set(weights[0]["layers"][0]) == set(r["relation_names"])
    assert "dataset:\n  name: synthetic" in (run_dir / "config.yaml").read_text()
    assert "Micro-F1" in p.stderr + p.stdout  # the summary line
    assert 0.05 < r["peak_rss_gb"] < 8  # the process's own peak resident memory, in GiB
    from regnn.data import make_synthetic

    data = make_synthetic()
    assert r["split_sizes"] == {"train": 120, "val": 60, "test": 120}  # what every score stands on
    y = data.labels[data.splits["test"]]
    assert r["chance_test_micro_f1"] == pytest.approx(100 * int(y.bincount().max()) / 120)


@pytest.mark.onepython
def test_refuses_to_overwrite_and_resume_skips(tmp_path):
    run_dir = tmp_path / "run"
    assert run_train(*FAST, "model=gcn", f"hydra.run.dir={run_dir}").returncode == 0
    before = (run_dir / "results.json").read_text()
    p = run_train(*FAST, "model=gcn", f"hydra.run.dir={run_dir}")
    assert p.returncode == 2 and "refusing to overwrite" in p.stderr and "Traceback" not in p.stderr
    assert (run_dir / "results.json").read_text() == before
    p = run_train(*FAST, "model=gcn", f"hydra.run.dir={run_dir}", "resume=true")
    assert p.returncode == 0 and "skipped" in p.stderr
    assert (run_dir / "results.json").read_text() == before


def test_a_cell_being_trained_by_a_live_process_is_left_alone(tmp_path):
    import subprocess
    import sys

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    marker = run_dir / ".training.pid"
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        marker.write_text(str(other.pid))
        p = run_train(*FAST, "model=gcn", f"hydra.run.dir={run_dir}")
        assert p.returncode == 2 and f"being trained by process {other.pid}" in p.stderr
        p = run_train(*FAST, "model=gcn", f"hydra.run.dir={run_dir}", "resume=true")  # a sweep moves on
        assert p.returncode == 0 and "skipped" in p.stderr
        assert not (run_dir / "results.json").exists() and marker.read_text() == str(other.pid)
    finally:
        other.kill()
        other.wait()
    # the other process is gone (killed mid-run): its marker is stale, the cell is trained and the marker removed
    p = run_train(*FAST, "model=gcn", f"hydra.run.dir={run_dir}")
    assert p.returncode == 0, p.stderr
    check_results(run_dir)
    assert not marker.exists()


def test_multirun_sweep(tmp_path):
    p = run_train("-m", *FAST, "runs=1", "model=gcn,re_gcn", f"hydra.sweep.dir={tmp_path}/sweep")
    assert p.returncode == 0, p.stderr
    cells = sorted(d.name for d in (tmp_path / "sweep").iterdir() if (d / "results.json").exists())
    assert cells == ["0_synthetic_gcn", "1_synthetic_re_gcn"]


@pytest.mark.onepython
@pytest.mark.parametrize("logger", ["csv", "wandb"])
def test_loggers_work_offline(tmp_path, logger):
    run_dir = tmp_path / "run"
    p = run_train(
        *FAST,
        "runs=1",
        f"logger={logger}",
        f"hydra.run.dir={run_dir}",
        env={"WANDB_MODE": "offline", "WANDB_SILENT": "true"},
    )
    assert p.returncode == 0, p.stderr
    check_results(run_dir, runs=1)
    if logger == "csv":
        m = pd.read_csv(run_dir / "metrics.csv")
        assert {"run", "epoch", "val_loss"} <= set(m.columns) and len(m) >= 1
    else:
        assert list((run_dir / "wandb").glob("offline-run-*")), "wandb wrote no offline run"


def test_missing_data_is_a_clear_error(tmp_path):
    p = run_train("dataset=imdb", f"dataset.dir={tmp_path}/nothing", "runs=1", f"hydra.run.dir={tmp_path}/run")
    assert p.returncode == 2
    assert "does not exist; run `make data`" in p.stderr and "Traceback" not in p.stderr


# resume after a kill is in tests/test_atomic_writes.py, extension in tests/test_resume.py
@pytest.mark.slow  # make test-all
def test_resume_keeps_finished_runs_and_extends_a_cell(tmp_path):
    run_dir = tmp_path / "run"
    assert run_train(*FAST, "model=re_gcn", f"hydra.run.dir={run_dir}").returncode == 0
    first = json.loads((run_dir / "results.json").read_text())
    # a training killed during its second run: results.json and run_01 never written
    (run_dir / "results.json").unlink()
    for f in (run_dir / "runs" / "run_01").iterdir():
        f.unlink()
    p = run_train(*FAST, "model=re_gcn", f"hydra.run.dir={run_dir}")
    assert p.returncode == 2 and "unfinished training" in p.stderr and "resume=true" in p.stderr
    p = run_train(*FAST, "model=re_gcn", f"hydra.run.dir={run_dir}", "resume=true")
    assert p.returncode == 0, p.stderr
    assert "run 1/2 seed 0: finished earlier, kept" in p.stderr and "run 2/2 seed 1: finished earlier" not in p.stderr
    again = check_results(run_dir)
    assert again["per_run"][0] == first["per_run"][0]
    # the retrained run is the same run (deterministic), bar its timing and the process that trained it
    timing = ("train_time_s", "epoch_time_s", "pid")
    strip = lambda r: {k: v for k, v in r.items() if k not in timing}  # noqa: E731
    assert strip(again["per_run"][1]) == strip(first["per_run"][1])
    weights = json.loads((run_dir / "relation_weights.json").read_text())
    assert [w["run"] for w in weights] == [0, 1] and weights[0]["layers"] == first_weights(run_dir, 0)

    # asking for more runs extends the cell: 2 kept, 1 trained, the 2-run summary kept beside
    p = run_train(*FAST, "model=re_gcn", "runs=3", f"hydra.run.dir={run_dir}", "resume=true")
    assert p.returncode == 0, p.stderr
    assert "extending 2 runs to 3" in p.stderr
    r = check_results(run_dir, runs=3)
    assert [strip(x) for x in r["per_run"][:2]] == [strip(x) for x in again["per_run"]]
    assert json.loads((run_dir / "results.2runs.json").read_text()) == again
    # other settings still refuse, fewer runs are not an extension
    p = run_train(*FAST, "model=re_gcn", "runs=3", "optimizer.lr=0.5", f"hydra.run.dir={run_dir}", "resume=true")
    assert p.returncode == 2 and "optimizer differ" in p.stderr
    p = run_train(*FAST, "model=re_gcn", "runs=2", f"hydra.run.dir={run_dir}", "resume=true")
    assert p.returncode == 2 and "runs differ" in p.stderr


def first_weights(run_dir, run):
    return json.loads((run_dir / "runs" / f"run_{run:02d}" / "results.json").read_text())["relation_weights"]


@pytest.mark.onepython
def test_runs_in_worker_processes_equal_the_runs_in_turn(tmp_path):
    """workers=2 trains the runs side by side in two processes of one thread each: the same runs (seeds, scores,
    relation weights) as one process training them in turn with one thread, and every run's log line in
    train.log."""
    strip = lambda r: {k: v for k, v in r.items() if k not in ("train_time_s", "epoch_time_s", "pid")}  # noqa: E731
    out = {}
    for workers, threads in ((2, 2), (1, 1)):
        run_dir = tmp_path / f"w{workers}"
        p = run_train(
            *FAST, "model=re_gcn", "runs=3", f"workers={workers}", f"threads={threads}", f"hydra.run.dir={run_dir}"
        )
        assert p.returncode == 0, p.stderr
        out[workers] = check_results(run_dir, runs=3)
        assert out[workers]["environment"]["threads"] == 1 and out[workers]["environment"]["workers"] == workers
        log = (run_dir / "train.log").read_text()
        assert all(f"run {i}/3 seed {i - 1}: test Micro-F1" in log for i in (1, 2, 3)), log
    assert "3 runs in 2 worker processes of 1 thread each" in (tmp_path / "w2" / "train.log").read_text()
    assert [strip(r) for r in out[2]["per_run"]] == [strip(r) for r in out[1]["per_run"]]
    for run in range(3):
        assert first_weights(tmp_path / "w2", run) == first_weights(tmp_path / "w1", run)


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
# the workers themselves are checked by test_runs_in_worker_processes_equal_the_runs_in_turn
@pytest.mark.slow  # make test-all
def test_worker_processes_end_with_a_killed_job(tmp_path):
    """A job killed while its workers train (SIGKILL: no handler of its own runs) takes its workers with it; they
    would otherwise train on as orphans, holding the cores."""
    cmd = [
        sys.executable,
        str(REPO / "train.py"),
        "dataset=synthetic",
        "model=re_gcn",
        "runs=2",
        "workers=2",
        "threads=2",
        "trainer.max_epochs=1000000",
        "trainer.patience=1000000",
        f"hydra.run.dir={tmp_path}",
    ]
    job = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and job.poll() is None:
            with contextlib.suppress(psutil.Error):
                workers = [
                    c.pid for c in psutil.Process(job.pid).children() if any("spawn_main" in arg for arg in c.cmdline())
                ]
            if len(workers) == 2:
                break
            time.sleep(0.2)
        assert len(workers) == 2 and job.poll() is None, "the job did not start two workers"
        time.sleep(3)  # at any point: a worker that has not set the signal yet finds its parent gone and exits
        job.kill()
        job.wait()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(_alive(w) for w in workers):
            time.sleep(0.2)
        assert not any(_alive(w) for w in workers), "workers outlived the job"
    finally:
        for pid in [job.pid, *workers]:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        job.wait()


@pytest.mark.onepython
def test_a_run_that_never_stopped_early_says_so(tmp_path):
    r = run_train(
        "dataset=synthetic",
        "model=re_gcn",
        "runs=1",
        "trainer.max_epochs=5",
        "threads=1",
        f"hydra.run.dir={tmp_path / 'short'}",
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert "it trained all 5 allowed epochs without early stopping" in r.stderr
    r = run_train(
        "dataset=synthetic",
        "model=re_gcn",
        "runs=1",
        "trainer.max_epochs=400",
        "trainer.patience=5",
        "threads=1",
        f"hydra.run.dir={tmp_path / 'stopped'}",
    )
    assert r.returncode == 0 and "run 1/1" in r.stderr and "without early stopping" not in r.stderr
