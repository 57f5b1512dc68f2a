"""Progress of a cell: a bar on a terminal, a line at most every `interval` seconds in a log, nothing when off, and
estimates of the time left that follow the epochs' cost, the cap and early stopping."""

import io
import logging
import os
import pty
import subprocess
import sys

import pytest

from conftest import REPO
from regnn.training.progress import CellProgress, Plan, Position, clock, in_sweep


class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_clock_reads_as_hours_minutes_seconds():
    assert [clock(s) for s in (0, 5.4, 125, 3723)] == ["0:00", "0:05", "2:05", "1:02:03"]


def test_time_left_follows_the_epoch_cost_the_cap_and_early_stopping():
    t = FakeClock()
    cell = CellProgress("dblp re_gcn", Plan(runs=3, max_epochs=100, patience=10), "lines", now=t)
    run = cell.run(0)
    t.t = 20.0  # 10 epochs of 2 s
    run.epochs = 10
    assert run.left(epoch=9, best_epoch=9) == (20.0, 20.0 + 2 * 40.0)  # stops by epoch 19; each run ~40 s
    assert run.left(epoch=9, best_epoch=None)[0] == 90 * 2.0  # no best epoch yet: up to the cap
    run.close()
    second = cell.run(1)
    t.t = 30.0  # 5 epochs of 2 s in the second run
    second.epochs = 5
    run_left, cell_left = second.left(epoch=4, best_epoch=4)
    assert run_left == 20.0 and cell_left == 20.0 + 1 * 20.0  # the finished run took 20 s
    free = CellProgress("x", Plan(runs=1, max_epochs=50, patience=None), "lines", now=t).run(0)
    t.t += 5.0
    free.epochs = 5
    assert free.left(epoch=4, best_epoch=4) == (45.0, 45.0)  # without early stopping: to the cap


def test_a_log_gets_one_line_per_interval_never_one_per_epoch(caplog):
    t = FakeClock()
    cell = CellProgress("acm re_gat", Plan(runs=2, max_epochs=200, patience=50), "lines", interval=30, now=t)
    run = cell.run(0)
    with caplog.at_level(logging.INFO, logger="regnn"):
        for epoch in range(100):  # 100 epochs of 1 s: the first epoch's line (every cell shows one), then 31, 61, 91 s
            t.t += 1.0
            run.update(f"epoch {epoch} val micro-F1 90.00", epoch=epoch, best_epoch=epoch)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 4 and lines[0].startswith("[acm re_gat run 1/2] epoch 0 val micro-F1 90.00 (1 of 200 epochs)")
    assert lines[1].startswith("[acm re_gat run 1/2] epoch 30 val micro-F1 90.00 (31 of 200 epochs); left ~")
    assert "cell ~" in lines[1]


def test_a_run_in_a_worker_process_shows_the_cells_time_left_and_its_place_in_the_sweep(caplog):
    """A worker trains one run at a time: the cell's runs after this one share the workers."""
    from regnn.training.progress import current_position, set_position

    t = FakeClock()
    set_position(Position("model 2/6", after_s=100.0))
    try:
        handed = (1, 3, 4, 5, 6, 7, 8, 9)  # runs 0 and 2 finished before a resume
        cell = CellProgress("dblp re_gcn", Plan(1, 100, None, 10, 2, handed), "lines", interval=30, now=t)
    finally:
        set_position(None)
    assert current_position() is None
    run = cell.run(3)  # run 4 of 10: 6 handed out after it, one of them in the other worker now: 5 left, 3 here
    with caplog.at_level(logging.INFO, logger="regnn"):
        t.t += 1.0
        run.update("epoch 0", epoch=0)
    line = caplog.records[-1].getMessage()
    # 99 s left in this run; 3 more runs of about 100 s each in this worker; then 100 s of the sweep's later models
    assert line.startswith("[dblp re_gcn run 4/10 model 2/6] epoch 0 (1 of 100 epochs); left ~1:39, cell ~6:39")
    assert line.endswith("sweep ~8:19")


def test_a_cell_in_a_sweep_names_its_place_and_the_sweeps_time_left(caplog):
    t = FakeClock()
    with in_sweep(Position("model 2/3", after_s=600.0)):
        cell = CellProgress("shops re_gat", Plan(runs=1, max_epochs=100, patience=None), "lines", interval=5, now=t)
    outside = CellProgress("shops mlp", Plan(runs=1, max_epochs=100), "lines", interval=5, now=t)
    run, plain = cell.run(0), outside.run(0)
    with caplog.at_level(logging.INFO, logger="regnn"):
        for epoch in range(11):  # 11 epochs of 1 s (lines at 1, 6, 11 s): 89 s left, then the sweep's later 600 s
            t.t += 1.0
            run.update("val micro-F1 50.00", epoch=epoch)
            plain.update("val micro-F1 50.00", epoch=epoch)
    lines = [r.getMessage() for r in caplog.records]
    assert lines[-2].startswith("[shops re_gat model 2/3] val micro-F1 50.00 (11 of 100 epochs); left ~1:29")
    assert lines[-2].endswith("sweep ~11:29")  # 89 s + 600 s
    assert lines[-1].startswith("[shops mlp] ") and "sweep" not in lines[-1]  # the position ends with the block


def test_off_prints_nothing_and_a_bad_mode_is_refused(caplog):
    stream = io.StringIO()
    run = CellProgress("x", Plan(1, 10, 5), "off", interval=0, stream=stream).run(0)
    with caplog.at_level(logging.INFO, logger="regnn"):
        run.update("epoch 0", epoch=0, best_epoch=0)
        run.close()
    assert stream.getvalue() == "" and caplog.records == []
    with pytest.raises(ValueError, match="progress mode"):
        CellProgress("x", Plan(1, 10), "loud")


def test_a_terminal_gets_a_live_bar():
    code = (
        "from regnn.training.progress import CellProgress, Plan\n"
        "run = CellProgress('dblp re_gcn', Plan(2, 40, 10), redraw=0).run(0)\n"
        "for e in range(12):\n"
        "    run.update(f'epoch {e} val micro-F1 93.00', epoch=e, best_epoch=e)\n"
        "run.close()\n"
    )
    primary, secondary = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=secondary, stderr=secondary, cwd=REPO)
    os.close(secondary)
    out = b""
    while True:
        try:
            chunk = os.read(primary, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    assert proc.wait() == 0
    text = out.decode(errors="replace")
    assert "[dblp re_gcn run 1/2]" in text and "12/40, left ~" in text and "| epoch 11 val" in text
    assert "left ~" in text and "\r" in text  # redrawn in place


@pytest.mark.onepython
@pytest.mark.parametrize("workers", [1, 2])
def test_a_run_logged_to_a_file_shows_its_epochs_best_score_and_time_left(tmp_path, workers):
    """Not a terminal: log lines (here one per epoch, the interval being tiny), from the main process or from each
    worker; progress=false keeps the log as it was, without them."""
    from conftest import run_train

    fast = ["dataset=synthetic", "runs=2", "trainer.max_epochs=4", "trainer.patience=3", f"workers={workers}"]
    p = run_train(*fast, "progress_interval=1e-9", f"hydra.run.dir={tmp_path / 'on'}")
    assert p.returncode == 0, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if "left ~" in ln]
    for run in (1, 2):
        mine = [ln for ln in lines if f"[re_gcn on synthetic run {run}/2] epoch" in ln]
        assert len(mine) == 4, p.stderr  # epochs 0..3
        # the epoch the run keeps, named by what early stopping watches (not the best Micro-F1's epoch)
        assert "; kept: epoch " in mine[-1] and "(best val loss), val micro-F1 " in mine[-1]
        assert "(4 of 4 epochs)" in mine[-1]
    log = (tmp_path / "on" / "train.log").read_text()
    assert sum("left ~" in ln for ln in log.splitlines()) == 8
    p = run_train(*fast, "progress=false", "progress_interval=1e-9", f"hydra.run.dir={tmp_path / 'off'}")
    assert p.returncode == 0 and "left ~" not in p.stderr
