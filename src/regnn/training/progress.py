"""Where a cell's training is and how long it has left: run k of n, the epoch of the cap, the validation score and
best epoch a trainer reports, and estimates of the time left for the run and for the whole cell.

On a terminal a live bar (tqdm); in a log file or under SLURM one line through the log at most every `interval`
seconds, never one per epoch; nothing with mode "off" (`progress=false`). The estimates assume the epochs to come
cost what the run's epochs have cost so far, and that early stopping ends the run `patience` epochs after its
best epoch unless the cap comes first: an upper bound while the validation score still improves.
"""

from __future__ import annotations

import logging
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

from regnn.names import PROGRESS_MODES as MODES

log = logging.getLogger("regnn")


def clock(seconds: float) -> str:
    """1:02:03, 2:03 or 0:05."""
    s = max(int(round(seconds)), 0)
    h, rest = divmod(s, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60}:{rest % 60:02d}"


@dataclass(frozen=True)
class Plan:
    """What a cell will train: its pending runs, each at most max_epochs epochs, stopped `patience` epochs after
    its best one (None: no early stopping, every epoch up to the cap is trained)."""

    runs: int
    max_epochs: int | None
    patience: int | None = None
    of: int | None = None  # the cell's runs in all, where they are more than this process trains (default: runs)
    workers: int = 1  # processes training the cell's runs side by side (this one among them)
    pending: tuple[int, ...] = ()  # with workers: the runs the workers were handed, in the order they take them


@dataclass(frozen=True)
class Position:
    """Where a cell stands in a sweep (experiment=compare's "model 3/6", experiment=tune's "trial 4/30") and the
    estimated seconds of the sweep's cells after it (None: unknown)."""

    label: str
    after_s: float | None = None


_position: Position | None = None


def current_position() -> Position | None:
    """The sweep position progress lines started now would show (to hand on to worker processes)."""
    return _position


def set_position(position: Position | None) -> None:
    """A worker process's position: the one of the sweep cell it trains runs for."""
    global _position
    _position = position


@contextmanager
def in_sweep(position: Position | None) -> Iterator[None]:
    """The cells whose progress starts inside show their place in the sweep and the sweep's time left."""
    global _position
    before, _position = _position, position
    try:
        yield
    finally:
        _position = before


class CellProgress:
    """One cell's progress; run(k) gives the handle a trainer reports its epochs to."""

    def __init__(
        self,
        label: str,
        plan: Plan,
        mode: str = "auto",
        interval: float = 30.0,
        *,
        stream=None,
        now: Callable[[], float] = time.monotonic,
        redraw: float = 0.1,
    ):
        if mode not in MODES:
            raise ValueError(f"progress mode must be one of {MODES}, got {mode!r}")
        self.label, self.plan, self.interval, self.now = label, plan, float(interval), now
        self.redraw = redraw  # the bar's least seconds between two redraws (tqdm's mininterval)
        self.stream = stream if stream is not None else sys.stderr
        if mode == "auto":
            mode = "bar" if getattr(self.stream, "isatty", lambda: False)() else "lines"
        self.mode = mode
        self.run_times: list[float] = []  # seconds of each run finished under this object
        self.started = 0
        self.printed = False  # a log line written: every cell writes at least one, however short
        self.position = _position

    def run(self, index: int) -> RunProgress:
        self.started += 1
        return RunProgress(self, index)

    def runs_after(self) -> int:
        return max(self.plan.runs - self.started, 0)


class RunProgress:
    """A run's epochs: update() after each, close() at its end (the run's time joins the cell's estimate)."""

    def __init__(self, cell: CellProgress, index: int):
        self.cell, self.index = cell, index
        self.t0 = self.last_line = cell.now()
        self.epochs, self.bar, self.closed = 0, None, False
        total = cell.plan.of or cell.plan.runs
        where = [f"run {index + 1}/{total}"] if total > 1 else []
        where += [cell.position.label] if cell.position else []
        self.prefix = f"[{' '.join([cell.label, *where])}]"

    def left(self, epoch: int, best_epoch: int | None) -> tuple[float, float]:
        """(seconds left in this run, seconds left in the cell) after `epoch` (0-based) was trained."""
        plan, spent = self.cell.plan, self.cell.now() - self.t0
        per_epoch = spent / max(self.epochs, 1)
        last = plan.max_epochs if plan.max_epochs is not None else epoch + 1
        if plan.patience is not None and best_epoch is not None:
            last = min(last, best_epoch + plan.patience + 1)
        run_left = max(last - (epoch + 1), 0) * per_epoch
        done = self.cell.run_times
        per_run = sum(done) / len(done) if done else spent + run_left
        if plan.workers > 1:  # the runs handed out after this one, less those the other workers train now
            later = sum(1 for r in plan.pending if r > self.index) - (plan.workers - 1)
            after = -(-max(later, 0) // plan.workers)
        else:
            after = self.cell.runs_after()
        return run_left, run_left + after * per_run

    def update(self, text: str, epoch: int | None = None, best_epoch: int | None = None) -> None:
        mode = self.cell.mode
        if mode == "off" or self.closed:
            return
        self.epochs += 1
        epoch = self.epochs - 1 if epoch is None else epoch
        run_left, cell_left = self.left(epoch, best_epoch)
        eta = f"left ~{clock(run_left)}" + (f", cell ~{clock(cell_left)}" if cell_left > run_left else "")
        after = self.cell.position.after_s if self.cell.position else None
        if after:
            eta += f", sweep ~{clock(cell_left + after)}"
        if mode == "bar":
            self._bar(text, eta, epoch)
        elif self.cell.now() - self.last_line >= self.cell.interval or not self.cell.printed:
            self.last_line, self.cell.printed = self.cell.now(), True
            cap = self.cell.plan.max_epochs
            log.info("%s %s (%s of %s epochs); %s", self.prefix, text, epoch + 1, cap or "?", eta)

    def _bar(self, text: str, eta: str, epoch: int) -> None:
        if self.bar is None:
            import shutil

            from tqdm import tqdm

            size = shutil.get_terminal_size()  # 80 x 24 where the terminal tells none (0 x 0 would hide the bar)
            self.bar = tqdm(
                total=self.cell.plan.max_epochs,
                desc=self.prefix,
                file=self.cell.stream,
                leave=False,
                ncols=size.columns,
                nrows=size.lines,
                unit="epoch",
                mininterval=self.cell.redraw,
                bar_format="{desc} {bar:10} {n_fmt}/{total_fmt}{postfix}",
            )
        self.bar.set_postfix_str(f"{eta} | {text}", refresh=False)  # the estimate first: a narrow terminal cuts the end
        self.bar.update(epoch + 1 - self.bar.n)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.cell.run_times.append(self.cell.now() - self.t0)
        if self.bar is not None:
            self.bar.close()
