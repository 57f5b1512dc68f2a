"""The run executor: how many of a cell's independent runs train side by side, and the spawned worker processes
that train them (`workers`, conf/train.yaml). The job says what one run is; this module only runs them."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import torch

from regnn.runtime.perf import keep_freed_memory, peak_rss_gb

MAX_AUTO_WORKERS = 4
MIN_AUTO_EDGES = 20_000  # a worker starts in ~3 s (imports); the synthetic test graph's runs take under 1 s


def job_threads(spec) -> int | None:
    """The job's CPU threads (spec: regnn.runs.jobspec.JobSpec): `threads`, else the CPUs SLURM gave the job
    (SLURM_CPUS_PER_TASK: without cgroup confinement torch would start one thread per core of the whole node, and
    oversubscribed OpenMP threads can make a run a hundred times slower), else None (torch's default, one per core)."""
    if spec.threads:
        return int(spec.threads)
    slurm = os.environ.get("SLURM_CPUS_PER_TASK", "")
    return int(slurm) if slurm.isdigit() and int(slurm) > 0 else None


def plan_workers(spec, device, pending: int, threads: int, num_edges: int) -> tuple[int, int]:
    """(worker processes, torch threads per run) for `pending` runs within a budget of `threads` CPU threads.

    auto: on CPU with the `none` logger, min(budget, runs, MAX_AUTO_WORKERS) runs side by side, each with
    budget // that many threads: a small graph keeps two cores far busier as two one-thread runs than as one
    two-thread run. Not on a toy graph (under MIN_AUTO_EDGES edges), whose runs take less than a worker's
    start. The threads per run follow from the configuration, not from how many runs are left, so a resumed
    cell trains its remaining runs with the thread count of its first ones (the float rounding of a run depends
    on it). Extending a cell keeps it too unless its first runs were fewer than the thread budget (e.g. 1 run
    on 2 threads, then 3 runs: 1 thread each); environment.threads in results.json records the count.
    """
    w = spec.workers
    if str(w) == "auto":
        if torch.device(device).type != "cpu" or spec.logger != "none" or num_edges < MIN_AUTO_EDGES:
            return 1, threads
        w = min(threads, MAX_AUTO_WORKERS, spec.runs)
    w = min(int(w), spec.runs)
    per_run = max(1, threads // w)
    return max(1, min(w, pending)), per_run


def run_in_workers(
    out_dir: Path, pending: list[int], workers: int, threads: int, setup, setup_args: tuple, run_one
) -> float:
    """Trains the pending runs in `workers` spawned processes, each taking the next run when it is free. Every
    worker first calls setup(*setup_args) (load the data once), then run_one(what setup returned, run) per run;
    both must be module level functions (spawn pickles them by name) and run_one writes runs/run_XX/ as a run
    trained in turn does (so an interrupted job resumes the same way). The workers' log lines reach this
    process's handlers (console, train.log). Returns the largest worker's peak memory in GB."""
    import logging.handlers
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    from regnn.training.progress import current_position

    ctx = mp.get_context("spawn")  # fresh interpreters: no OpenMP pool or DGL state inherited through fork
    queue = ctx.Queue()
    listener = logging.handlers.QueueListener(queue, _Relay())
    listener.start()
    peak = 0.0
    where = current_position()  # the sweep cell's place (model k of n), for the workers' progress lines
    # an executor, not multiprocessing.Pool: a worker that dies (killed for memory) or fails to start breaks it
    # with an error here, where a Pool would quietly replace the worker and wait for its lost run forever
    pool = ProcessPoolExecutor(
        workers,
        mp_context=ctx,
        initializer=_worker_init,
        initargs=(queue, os.getpid(), threads, setup, setup_args, where),
    )
    try:
        for done in as_completed([pool.submit(_worker_run, run_one, run) for run in pending]):
            peak = max(peak, done.result())
    except BrokenProcessPool as e:
        raise RuntimeError(
            f"a worker process of {out_dir} died or could not start ({e}); the runs it finished "
            "are kept: resume=true trains the rest, workers=1 trains them in this process"
        ) from e
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # workers exit normally: their last log records arrive
        listener.stop()
    return peak


class _Relay(logging.Handler):
    """Hands a worker's log record to the logger of the same name here, so it goes where this process's go."""

    def emit(self, record: logging.LogRecord) -> None:
        logging.getLogger(record.name).handle(record)


def _die_with_parent(parent: int) -> None:
    """On Linux, this worker gets SIGTERM when the job that started it exits, killed included: its run stops at
    the next epoch as on any stop signal (with its checkpoint), and the worker exits (_worker_run). Without it a
    killed job's workers trained on as orphans for minutes, holding the cores a restarted job needed (their runs
    were written, complete, and a resumed job kept them). Elsewhere nothing changes."""
    import ctypes
    import signal
    import sys

    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the job was gone before the call above
        os._exit(1)


def _worker_init(queue, parent: int, threads: int, setup, setup_args: tuple, position=None) -> None:
    import logging.handlers

    from regnn.runtime import interrupt
    from regnn.training.progress import set_position

    set_position(position)
    _die_with_parent(parent)
    interrupt.install()  # a stop signal ends this worker's run at its next epoch, as in the job itself
    root = logging.getLogger()
    root.handlers[:] = [logging.handlers.QueueHandler(queue)]
    root.setLevel(logging.INFO)
    keep_freed_memory(every_size=True)
    torch.set_num_threads(threads)
    _IN_THIS_WORKER["parent"] = parent
    _IN_THIS_WORKER["set_up"] = setup(*setup_args)


# what the worker process's setup returned (a set-up job), for each run_one it is handed: a ProcessPoolExecutor
# keeps nothing between its initializer and its tasks but the process itself
_IN_THIS_WORKER: dict = {}


def _worker_run(run_one, run: int) -> float:
    from regnn.runtime import interrupt

    try:
        run_one(_IN_THIS_WORKER["set_up"], run)
    except interrupt.Interrupted:
        if os.getppid() != _IN_THIS_WORKER["parent"]:  # the job is gone: no one will hand this worker a run
            os._exit(1)
        raise
    return peak_rss_gb()
