"""A job stopped by SLURM's stop signals (SIGTERM, SIGUSR1) mid-cell: the run in progress is abandoned at its next
epoch, the finished runs stay whole, the job says why it stopped in one line, and the same command trains only
the missing runs. (tests/test_slurm.py does the same through a real SLURM.)"""

import json
import signal
import subprocess
import sys
import time

import pytest

from conftest import REPO, start_held, wait_for_file

SLOW_RUNS = ["dataset=synthetic", "model=re_gcn", "trainer.max_epochs=100", "trainer.patience=100"]


def start(out, *extra):
    cmd = [sys.executable, str(REPO / "train.py"), *SLOW_RUNS, f"hydra.run.dir={out}", *extra]
    return subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_for(path, p, timeout=240):
    t0 = time.time()
    while not path.exists():
        assert p.poll() is None, f"the job ended before {path} appeared:\n{p.stdout.read()[-3000:]}"
        assert time.time() - t0 < timeout, f"no {path} after {timeout}s"
        time.sleep(0.1)


@pytest.mark.parametrize(
    "sig,workers,runs",
    [
        (signal.SIGTERM, 1, 2),
        # worker processes (~45 s, make test-all): more runs than workers, so that some are still to start
        pytest.param(signal.SIGUSR1, 2, 6, marks=pytest.mark.slow),
    ],
)
def test_a_stop_signal_keeps_finished_runs_and_the_same_command_trains_the_rest(tmp_path, sig, workers, runs):
    out = tmp_path / "cell"
    first_run = out / "runs" / "run_00" / "results.json"
    if workers == 1:  # the job holds before run 1 until the signal comes: run 1 can never finish first
        p = start_held(
            [*SLOW_RUNS, f"hydra.run.dir={out}", "workers=1", "threads=1", f"runs={runs}"],
            first_run,
            tmp_path / "held",
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        wait_for_file(tmp_path / "held", p)
    else:  # runs train in worker processes, which the hold does not reach; 6 runs of 100 epochs outlast the poll
        p = start(out, f"workers={workers}", f"threads={workers}", f"runs={runs}")  # one thread per run
        wait_for(first_run, p)
    p.send_signal(sig)  # to the job only: it passes the signal on to its worker processes
    log, _ = p.communicate(timeout=120)
    assert p.returncode == 128 + sig, log[-3000:]
    stop = [line for line in log.splitlines() if f"stopped by {signal.Signals(sig).name}" in line]
    assert len(stop) == 1 and "the same command again (resume=true) trains the rest" in stop[0], log[-3000:]
    assert "Traceback" not in log
    assert not (out / "results.json").exists()  # the cell is not finished
    finished = {
        d.name: json.loads((d / "results.json").read_text())  # every file that is there is whole
        for d in (out / "runs").iterdir()
        if (d / "results.json").exists()
    }
    assert "run_00" in finished and len(finished) < runs
    for d in (out / "runs").iterdir():  # a stopped run left its checkpoint at most, nothing half-written
        assert d.name in finished or {f.name for f in d.iterdir()} <= {"checkpoint.pt"}, sorted(d.iterdir())
    again = subprocess.run(
        [
            sys.executable,
            str(REPO / "train.py"),
            *SLOW_RUNS,
            f"hydra.run.dir={out}",
            f"workers={workers}",
            f"threads={workers}",
            f"runs={runs}",
            "resume=true",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert again.returncode == 0, again.stderr[-3000:]
    per_run = {r["run"]: r for r in json.loads((out / "results.json").read_text())["per_run"]}
    assert sorted(per_run) == list(range(runs))
    for name, rec in finished.items():  # kept as they were, not trained again
        run = int(name.split("_")[1])
        assert per_run[run]["pid"] == rec["pid"] and per_run[run]["test_micro_f1"] == rec["test_micro_f1"]
        assert f"run {run + 1}/{runs} seed {run}: finished earlier, kept" in again.stderr
    assert {per_run[r]["pid"] for r in range(runs) if f"run_{r:02d}" not in finished}.isdisjoint(
        {rec["pid"] for rec in finished.values()}
    )


@pytest.mark.slow  # make test-all
def test_a_sweep_signalled_in_one_cell_stops_the_later_cells_with_the_same_line(tmp_path):
    """A local multirun: the cell in progress stops at its next epoch and every later cell stops before it starts,
    each with its one line (no traceback from the handler itself)."""
    sweep = tmp_path / "sweep"
    cmd = [
        sys.executable,
        str(REPO / "train.py"),
        "-m",
        "dataset=synthetic",
        "model=gcn,re_gcn",
        "runs=3",
        "trainer.max_epochs=400",
        "trainer.patience=400",
        "threads=1",
        f"hydra.sweep.dir={sweep}",
    ]
    p = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    t0 = time.time()
    while not list(sweep.glob("0_*/runs/run_00/results.json")):
        assert p.poll() is None and time.time() - t0 < 240, "the first cell did not finish a run in the sweep"
        time.sleep(0.1)
    p.send_signal(signal.SIGTERM)
    log, _ = p.communicate(timeout=120)
    assert p.returncode == 128 + signal.SIGTERM, log[-3000:]
    stops = [line for line in log.splitlines() if "stopped by SIGTERM" in line and "trains the rest" in line]
    assert len(stops) == 2 and "before it started" in stops[1], log[-3000:]
    assert "Traceback" not in log, log[-3000:]  # the lines above are the whole report
    assert not list(sweep.glob("*/results.json"))
