"""Where a cell's job runs, chosen before the job exists (pipeline.job): the CPU threads of its process, its
memory settings and its device; pipeline.minibatch.processes() adds torchrun's processes."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from regnn.pipeline.from_config import device_of
from regnn.runs.executor import job_threads
from regnn.runtime.perf import keep_freed_memory

# torch's own thread count (one per core), read before any job sets its own: a multirun process or GCN-M's
# meta-path jobs train again after an earlier job lowered it
DEFAULT_THREADS = torch.get_num_threads()


@dataclass(frozen=True)
class Placement:
    """Where a cell's job runs, chosen before the job exists: its device and why, the CPU threads of its
    process, and its processes (the mini-batch trainer's torchrun ranks, regnn.training.distributed.Dist;
    None: this process alone)."""

    device: torch.device
    why: str
    threads: int
    dist: object | None = None


def placement(spec, worker: bool = False) -> Placement:
    """Sets this process's CPU threads for the job (a worker's were set for it) and its memory settings, and
    chooses the device (spec: regnn.runs.jobspec.JobSpec)."""
    threads = None if worker else job_threads(spec)  # the job's CPU budget
    if threads:
        torch.set_num_threads(threads)
    keep_freed_memory(every_size=True)  # a step's large tensors would fault in again every time they are freed
    device, why = device_of(spec.device)
    return Placement(device, why, threads or DEFAULT_THREADS)
