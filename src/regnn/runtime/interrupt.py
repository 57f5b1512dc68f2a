"""Stopping a job on a signal without losing or half-writing anything (SLURM preemption, time limits, scancel).

SLURM asks a job to stop with SIGTERM (preemption, `scancel`, the time limit; SIGKILL follows after the
cluster's KillWait) or with a signal the job asked for (`--signal=USR1@<seconds>`). `install()` makes SIGTERM and
SIGUSR1 set a flag instead of killing the process; the training loops call `check()` at the start of every
epoch (and the job before every run), which raises `Interrupted` once the flag is set. The epoch loop first writes
the run's checkpoint (regnn.runs.resume), the finished runs stay in the cell folder, and the same
command (resume=true, as every sweep) continues the stopped run from its checkpoint and trains the missing ones.
A process with worker processes passes the signal on to them. SIGUSR2 stays with submitit, which uses it to
requeue a job before its time limit (hydra.launcher.signal_delay_s, max_num_timeout; docs/scale.md).
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess

SIGNALS = (signal.SIGTERM, signal.SIGUSR1)
_received: int | None = None
_received_at: dt.datetime | None = None
_slurm_end: dt.datetime | None = None  # the job's projected end, read when the handlers are installed


class Interrupted(Exception):
    """A stop signal arrived; the run in progress stopped (its checkpoint written where it has one). Picklable
    (crosses from worker processes)."""

    def __init__(self, message: str, signum: int = int(signal.SIGTERM)):
        super().__init__(message)
        self.signum = signum

    def __reduce__(self):
        return Interrupted, (str(self), self.signum)


def _handler(signum, frame) -> None:
    global _received, _received_at
    first = _received is None
    _received, _received_at = signum, dt.datetime.now()
    if first:
        import multiprocessing as mp

        for child in mp.active_children():  # worker processes stop at their next epoch too
            try:
                os.kill(child.pid, signum)
            except OSError:
                pass


def install() -> None:
    """SIGTERM and SIGUSR1 set the stop flag (in the main thread of this process). Under SLURM the job's end
    time is read now: once the time limit has struck, squeue may no longer list the job."""
    global _slurm_end
    for s in SIGNALS:
        signal.signal(s, _handler)
    job = os.environ.get("SLURM_JOB_ID")
    if job and _slurm_end is None:
        try:
            out = subprocess.run(
                ["squeue", "-h", "-j", job, "-o", "%e"], capture_output=True, text=True, timeout=5
            ).stdout.strip()
            _slurm_end = dt.datetime.fromisoformat(out.splitlines()[0])
        except (OSError, ValueError, IndexError, subprocess.SubprocessError):
            _slurm_end = None


def check(where: str = "") -> None:
    """Raises Interrupted if a stop signal arrived."""
    if _received is not None:
        name = signal.Signals(_received).name
        raise Interrupted(f"stopped by {name}{f' {where}' if where else ''}", _received)


def reason(signum: int) -> str:
    """Why a SLURM job got its signal, as far as SLURM said: its time limit, or something else."""
    job = os.environ.get("SLURM_JOB_ID")
    if not job:
        return "the process was signalled"
    if _slurm_end is None:
        return f"SLURM job {job} signalled"
    if (_received_at or dt.datetime.now()) >= _slurm_end - dt.timedelta(seconds=5):
        return f"SLURM job {job} reached its time limit"
    return f"SLURM job {job} was preempted, cancelled or signalled before its time limit"
