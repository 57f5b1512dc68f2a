"""The one job procedure: a cell's runs, trained by the full-batch or the mini-batch job, then its summary.

A job (pipeline.fullbatch.FullBatchJob, pipeline.minibatch.MinibatchJob) is set up from the config and the cell's
store (device, data, logger) and gives the steps that differ: which finished runs it keeps, what it does before
the runs (worker processes), how it trains one run, and what its summary adds. Everything else is here, once.
"""
from __future__ import annotations

from typing import Any, Protocol

from regnn.runs.store import CellStore, JobFacts


class CellJob(Protocol):
    store: CellStore
    logger: Any
    t0: float                      # when the job started (the summary's wall time counts from it)
    is_main: bool                  # the process that writes (under torchrun: rank 0)
    summary_keys: tuple[str, ...]  # the per-run metrics the summary averages

    def kept_runs(self) -> set[int]: ...

    def before_runs(self, kept: set[int]) -> dict:
        """Work before this process trains its runs; returns CellStore.collect's options."""

    def train_one(self, run: int) -> tuple[dict, Any]:
        """(the run's record, its relation weights or None)."""

    def summary_fields(self) -> JobFacts:
        """What the cell's summary records of the job (device, environment, model size, ...)."""

    def report(self, summary: dict) -> None:
        """The cell's closing log line."""

    def close(self) -> None: ...


def run_job(job: CellJob) -> dict:
    """Trains the cell's runs that are not finished, writes its summary and returns it."""
    store = job.store
    if job.is_main:
        store.write_config()  # first: lets a resume check the settings of the runs it keeps
    kept = job.kept_runs()
    collect = job.before_runs(kept)
    records, weights = store.collect(kept, job.train_one, **collect)
    summary = store.summary(records, job.summary_keys, job.t0, job.summary_fields())
    if job.is_main:
        store.finish(summary, weights)
    job.logger.finish(summary)
    if summary["metrics"]:
        job.report(summary)
    job.close()
    return summary


def stop_note(rec: dict, max_epochs) -> str:
    """A run's log line's note where early stopping never ended it: it trained every allowed epoch."""
    if max_epochs is None or rec.get("epochs", 0) < int(max_epochs):
        return ""
    return (f"; it trained all {int(max_epochs)} allowed epochs without early stopping (best epoch "
            f"{rec['best_epoch']}): a larger trainer.max_epochs may score higher")
