"""Sweeps through a real SLURM (scripts/setup/local_slurm.sh: one node, this machine): the launcher trains and renders,
a preempted cell and a cell out of time keep their finished runs and say why they stopped, a re-run trains only
the missing runs, and two sweeps over the same cells train each cell once. `make test-slurm` (root; installs
slurm-wlm and munge where missing)."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO

pytestmark = pytest.mark.slurm

SMOKE = [
    "experiment=table_ablation",
    "debug=smoke",
    "hydra.sweeper.params.dataset=synthetic",
    "hydra/launcher=slurm_local",
]
# slow enough runs (about a second each) that a signal lands mid-cell
SLOW = ["runs=4", "trainer.max_epochs=300", "trainer.patience=300"]


@pytest.fixture(scope="module", autouse=True)
def cluster():
    p = subprocess.run(
        [str(REPO / "scripts" / "setup" / "local_slurm.sh"), "start"], capture_output=True, text=True, timeout=600
    )
    assert p.returncode == 0, f"no local SLURM: {p.stderr.strip() or p.stdout.strip()}"
    yield


def sweep(sweep_dir: Path, *extra: str, wait: bool = True):
    cmd = [sys.executable, str(REPO / "train.py"), "-m", *SMOKE, f"hydra.sweep.dir={sweep_dir}", *extra]
    env = {**os.environ, "HYDRA_FULL_ERROR": "1"}
    if wait:
        return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600, env=env)
    return subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


def wait_until(cond, what: str, timeout: float = 300, proc=None):
    t0 = time.time()
    while not cond():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the sweep ended before {what}:\n{proc.stdout.read()[-3000:]}")
        assert time.time() - t0 < timeout, f"no {what} after {timeout}s"
        time.sleep(0.5)


def our_jobs() -> list[str]:
    out = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True).stdout
    return [j for j in out.split() if j]


def whole_runs(cell: Path) -> dict[int, dict]:
    """Every finished run folder's results.json (each must parse), by run index; a stopped run may hold its
    checkpoint.pt alone (it continues from it), any other folder without results.json fails the test."""
    runs = {}
    for d in sorted((cell / "runs").iterdir()):
        names = sorted(f.name for f in d.iterdir())
        if names == ["checkpoint.pt"]:
            continue
        assert (d / "results.json").exists(), f"{d} holds no results.json: {names}"
        runs[int(d.name.split("_")[1])] = json.loads((d / "results.json").read_text())
    return runs


def test_a_smoke_sweep_trains_as_slurm_jobs_and_renders(tmp_path):
    p = sweep(tmp_path / "cells", "hydra.sweeper.params.model='gcn,re_gcn'")
    assert p.returncode == 0, p.stderr[-3000:]
    jobs = sorted((tmp_path / "cells" / ".submitit").iterdir())
    assert jobs, "no submitit job folders: the cells did not go through SLURM"
    for model in ("gcn", "re_gcn"):
        r = json.loads((tmp_path / "cells" / f"synthetic_{model}" / "results.json").read_text())
        assert len(r["per_run"]) == 2 and r["metrics"]["test_micro_f1"]["mean"] > 0
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "regnn.reporting.ablation",
            "--cells",
            str(tmp_path / "cells"),
            "--out",
            str(tmp_path / "results"),
            "--datasets",
            "synthetic",
            "--allow-missing",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "synthetic" in (tmp_path / "results" / "table_ablation.md").read_text()


def test_a_preempted_cell_keeps_its_finished_runs_and_a_rerun_trains_only_the_rest(tmp_path):
    cells, cell = tmp_path / "cells", tmp_path / "cells" / "synthetic_re_gcn"
    first = sweep(cells, "hydra.sweeper.params.model=re_gcn", *SLOW, wait=False)
    wait_until(lambda: (cell / "runs" / "run_00" / "results.json").exists(), "first finished run", proc=first)
    (job,) = our_jobs()
    subprocess.run(["scancel", "--signal=TERM", job], check=True)  # what SLURM sends on preemption
    log, _ = first.communicate(timeout=300)
    assert first.returncode != 0, "the sweep reported a preempted cell as finished"
    cell_log = (cell / "train.log").read_text()
    stops = [line for line in cell_log.splitlines() if "stopped by SIGTERM" in line]
    assert len(stops) == 1 and "was preempted, cancelled or signalled" in stops[0], cell_log[-3000:]
    assert not (cell / "results.json").exists()
    kept = whole_runs(cell)
    assert 0 in kept and len(kept) < 4
    again = sweep(cells, "hydra.sweeper.params.model=re_gcn", *SLOW)
    assert again.returncode == 0, again.stderr[-3000:]
    final = {r["run"]: r for r in json.loads((cell / "results.json").read_text())["per_run"]}
    assert sorted(final) == [0, 1, 2, 3]
    for run, rec in kept.items():  # not trained twice: the same process's record, byte for byte the same scores
        assert final[run]["pid"] == rec["pid"] and final[run]["test_micro_f1"] == rec["test_micro_f1"]
    assert {final[r]["pid"] for r in final if r not in kept}.isdisjoint({rec["pid"] for rec in kept.values()})
    whole_runs(cell)


def test_a_job_out_of_time_says_so_and_keeps_its_finished_runs(tmp_path):
    cell = tmp_path / "cell"
    cmd = (
        f"{sys.executable} {REPO / 'train.py'} dataset=synthetic model=re_gcn runs=500 trainer.max_epochs=100 "
        f"trainer.patience=100 threads=1 workers=1 hydra.run.dir={cell}"
    )
    job = subprocess.run(
        [
            "sbatch",
            "--parsable",
            "--time=1",
            "-c",
            "1",
            "--mem=2G",
            "-o",
            str(tmp_path / "slurm-%j.out"),
            "--chdir",
            str(REPO),
            "--wrap",
            cmd,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    wait_until(lambda: job not in our_jobs(), f"end of job {job}", timeout=240)
    out = (tmp_path / f"slurm-{job}.out").read_text()
    stops = [line for line in out.splitlines() if "stopped by SIGTERM" in line]
    assert len(stops) == 1 and "reached its time limit" in stops[0], out[-3000:]
    assert "the same command again (resume=true) trains the rest" in stops[0]
    assert not (cell / "results.json").exists()
    kept = whole_runs(cell)
    assert 0 < len(kept) < 500 and sorted(kept) == list(range(len(kept)))


def test_two_sweeps_over_the_same_cells_train_each_cell_once(tmp_path):
    cells = tmp_path / "cells"
    procs = [sweep(cells, "hydra.sweeper.params.model='gcn,re_gcn'", wait=False) for _ in range(2)]
    for p in procs:
        log, _ = p.communicate(timeout=600)
        assert p.returncode == 0, log[-3000:]
    for model in ("gcn", "re_gcn"):
        cell = cells / f"synthetic_{model}"
        per_run = json.loads((cell / "results.json").read_text())["per_run"]
        assert len(per_run) == 2 and len({r["pid"] for r in per_run}) == 1, per_run  # one job trained the cell
        trained = [line for line in (cell / "train.log").read_text().splitlines() if ": test Micro-F1" in line]
        assert len(trained) == 2, trained  # each run once, across both sweeps' jobs


# Imported by every Python process of a job through PYTHONPATH: the run stops at the first epoch check once its
# checkpoint exists (after $REGNN_TEST_HOLD_SKIP more), once per test ($REGNN_TEST_HOLD_READY marks it), and waits
# there until a signal ends the wait, so the job reaches its time limit mid-run on any machine.
SITE_HOLD = r"""
import glob, os, time
if os.environ.get("REGNN_TEST_HOLD_AFTER"):
    import regnn.runtime.interrupt as interrupt
    after, ready, check = os.environ["REGNN_TEST_HOLD_AFTER"], os.environ["REGNN_TEST_HOLD_READY"], interrupt.check
    skip = [int(os.environ.get("REGNN_TEST_HOLD_SKIP", "0"))]
    def held(where=""):
        if glob.glob(after) and not os.path.exists(ready):
            if skip[0] > 0:
                skip[0] -= 1
            else:
                open(ready, "w").close()
                while interrupt._received is None:  # submitit's SIGUSR2 handler requeues and exits from here
                    time.sleep(0.05)
        check(where)
    interrupt.check = held
"""


def test_a_run_out_of_time_is_requeued_and_continues_from_its_checkpoint(tmp_path):
    """A cell whose run outlasts its job: submitit requeues the job before the time limit (USR2, max_num_timeout)
    and the requeued job continues the run from its mid-run checkpoint, not from epoch 0. The first job is held
    mid-run (SITE_HOLD) until the limit comes, so the run is cut at a known epoch on any machine. SLURM may send the
    signal up to a minute before signal_delay_s asks, so the limit is 3 minutes: a job that got its USR2 before submitit
    set its handler (the unpickling imports torch) would die of it with no result to wait for."""
    cells = tmp_path / "cells"
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITE_HOLD)
    ready, epochs = tmp_path / "held", 300
    env = {
        **os.environ,
        "HYDRA_FULL_ERROR": "1",
        "PYTHONPATH": f"{site}:{os.environ.get('PYTHONPATH', '')}",
        "REGNN_TEST_HOLD_AFTER": str(cells / "*" / "runs" / "run_00" / "checkpoint.pt"),
        "REGNN_TEST_HOLD_READY": str(ready),
        "REGNN_TEST_HOLD_SKIP": "20",
    }
    cmd = [
        sys.executable,
        str(REPO / "train.py"),
        "-m",
        "dataset=synthetic",
        "model=re_gcn",
        "runs=1",
        "resume=true",
        f"trainer.max_epochs={epochs}",
        f"trainer.patience={epochs}",
        "checkpoint_every_s=0",
        "threads=1",
        "hydra/launcher=slurm_local",
        f"hydra.sweep.dir={cells}",
        "hydra.launcher.timeout_min=3",
        "hydra.launcher.signal_delay_s=60",
        "hydra.launcher.max_num_timeout=2",
    ]
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=900, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    (cell,) = [d for d in cells.iterdir() if d.name.endswith("synthetic_re_gcn")]
    assert ready.exists(), "the first job was never held mid-run"
    log = (cell / "train.log").read_text()
    starts = [
        int(line.rsplit("at epoch ", 1)[1].split()[0]) for line in log.splitlines() if "run continues from" in line
    ]
    assert len(starts) == 1 and 20 < starts[0] < epochs, log[-3000:]  # requeued once, on from where it was held
    errs = "".join(f.read_text() for f in (cells / ".submitit").rglob("*_log.err"))
    assert "timed-out" in errs, errs[-3000:]
    history = (cell / "runs" / "run_00" / "history.csv").read_text().splitlines()
    assert len(history) - 1 == epochs  # every epoch once: the requeued job trained epochs - k, not all again
    assert json.loads((cell / "results.json").read_text())["finished_runs"] == 1
