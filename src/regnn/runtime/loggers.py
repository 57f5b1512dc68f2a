"""Experiment loggers: none (default), csv (a metrics.csv that grows while training) and wandb (offline by
default; never blocks or fails a run). Results files are written by the pipeline whatever the logger."""

from __future__ import annotations

import csv
import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)


class NoLogger:
    def start_run(self, run: int, seed: int) -> None: ...
    def log_epoch(self, row: dict) -> None: ...
    def end_run(self, metrics: dict) -> None: ...
    def finish(self, summary: dict) -> None: ...


class CSVLogger(NoLogger):
    """Appends one row per epoch to <run dir>/metrics.csv (handy for `tail -f` or a live plot)."""

    def __init__(self, out_dir: Path):
        self.path = Path(out_dir) / "metrics.csv"
        self.run, self._writer, self._file = 0, None, None

    def start_run(self, run: int, seed: int) -> None:
        self.run = run

    def log_epoch(self, row: dict) -> None:
        row = {"run": self.run, **row}
        if self._writer is None:
            self._file = open(self.path, "a", newline="")
            self._writer = csv.DictWriter(self._file, fieldnames=list(row))
            if self.path.stat().st_size == 0:
                self._writer.writeheader()
        self._writer.writerow(row)
        self._file.flush()

    def finish(self, summary: dict) -> None:
        if self._file:
            self._file.close()


class WandbLogger(NoLogger):
    """One wandb run per training run, grouped by the job. Offline unless mode=online; a failing wandb only
    produces a warning."""

    def __init__(self, out_dir: Path, project: str, mode: str, entity: str | None, group: str, config: dict):
        self.kw = dict(
            project=project, mode=mode, entity=entity, group=group, config=config, dir=str(out_dir), reinit=True
        )
        self.run_obj = None
        os.environ.setdefault("WANDB_SILENT", "true")

    def start_run(self, run: int, seed: int) -> None:
        try:
            import wandb

            self.run_obj = wandb.init(name=f"{self.kw['group']}-run{run}", **self.kw)
        except Exception as e:  # never let logging stop training
            log.warning("wandb disabled for this run: %s", e)
            self.run_obj = None

    def log_epoch(self, row: dict) -> None:
        if self.run_obj:
            self.run_obj.log(row)

    def end_run(self, metrics: dict) -> None:
        if self.run_obj:
            self.run_obj.summary.update(metrics)
            self.run_obj.finish()
            self.run_obj = None


def make_logger(
    name: str,
    out_dir: Path,
    group: str,
    config: dict,
    project: str = "regnn",
    mode: str = "offline",
    entity: str | None = None,
):
    if name == "csv":
        return CSVLogger(out_dir)
    if name == "wandb":
        return WandbLogger(out_dir, project, mode, entity, group, config)
    return NoLogger()
