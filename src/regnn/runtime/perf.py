"""Process-level settings that make CPU training faster without changing results (the heap's thresholds, one
OpenMP thread in a sampling thread), and a timer of a step's phases."""

from __future__ import annotations

import contextlib
import functools
import ctypes
import ctypes.util
import sys
import time
from pathlib import Path


def keep_freed_memory(every_size: bool = False) -> bool:
    """Ask glibc to serve tensors of up to 32 MB (every_size: of any size) from its heap and not hand freed memory
    back at once.

    By default every allocation above 128 KB is a fresh mmap whose pages fault in on first touch; a full-batch
    epoch allocates hundreds of such (N x hidden) tensors, and on small VMs the page faults cost ~10% of the
    epoch. 32 MB is the most glibc's mmap threshold takes; every_size turns mmap off altogether (DBLP's GAT
    activations, 26k x 512 floats, are 53 MB: page faults were a third of its epoch). Full-batch training reuses
    the same few shapes every epoch; a sampled step's largest tensors (sources x hidden, ~0.5 GB on OGBN-MAG)
    differ by a few percent from batch to batch, and the heap reuses their blocks too (the scale benchmark's
    profile records the memory high-water mark along the epoch). Returns False where this is not glibc.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        m_trim_threshold, m_mmap_threshold, m_mmap_max = -1, -3, -4
        ok = bool(libc.mallopt(m_mmap_threshold, 32 << 20)) and bool(libc.mallopt(m_trim_threshold, 1 << 30))
        return ok and (not every_size or bool(libc.mallopt(m_mmap_max, 0)))
    except (OSError, AttributeError):
        return False


def peak_rss_gb() -> float:
    """This process's peak resident memory so far (a multirun process holds several cells)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


class StepTimer:
    """Seconds per named phase of a training step, summed over the steps of an epoch (`with timer("backward"):`).

    Off (enabled=False, which may be set at any time) it times nothing and costs nothing. On a GPU it waits for the
    device at each phase's edges, so that asynchronous work is counted in the phase that queued it (and the step slows
    down a little). `layers(modules)` times the forward pass of each named module by hooks.
    """

    def __init__(self, enabled: bool = False, device="cpu"):
        import torch

        self.enabled = enabled
        self._sync = torch.cuda.synchronize if torch.device(device).type == "cuda" else None
        self.totals: dict[str, float] = {}
        self._hooks: list = []

    @contextlib.contextmanager
    def __call__(self, name: str):
        if not self.enabled:
            yield
            return
        t0 = self._now()
        try:
            yield
        finally:
            self.totals[name] = self.totals.get(name, 0.0) + self._now() - t0

    def _now(self) -> float:
        if self._sync is not None:
            self._sync()
        return time.perf_counter()

    def layers(self, modules: dict) -> None:
        """Times every call of modules[name] as phase name (forward only), while enabled."""
        for name, m in modules.items():
            start: list[float] = []

            def pre(*_, s=start):
                if self.enabled:
                    s.append(self._now())

            def post(*_, s=start, n=name):
                if self.enabled and s:
                    self.totals[n] = self.totals.get(n, 0.0) + self._now() - s.pop()

            self._hooks += [m.register_forward_pre_hook(pre), m.register_forward_hook(post)]

    def remove(self) -> None:
        for h in self._hooks:
            h.remove()
        self._hooks.clear()

    def take(self) -> dict[str, float]:
        """The totals since the last take, and a fresh start."""
        out, self.totals = self.totals, {}
        return out


@functools.lru_cache(maxsize=None)
def _openmp_runtimes() -> tuple:
    """The OpenMP runtimes loaded in this process (ctypes), torch's among them; none where none can be found."""
    try:
        maps = Path("/proc/self/maps").read_text().split("\n")
    except OSError:  # not Linux: leave the thread count alone
        return ()
    paths = dict.fromkeys(
        line.split(" ")[-1]
        for line in maps
        if any(n in Path(line.split(" ")[-1]).name for n in ("libgomp", "libiomp5", "libomp."))
    )
    libs = []
    for path in paths:
        try:
            libs.append(ctypes.CDLL(path))
        except OSError:
            pass
    return tuple(lib for lib in libs if hasattr(lib, "omp_set_num_threads"))


def one_openmp_thread() -> None:
    """Runs torch's ops in this (a sampling) thread on this thread alone: the training thread's ops keep their
    OpenMP threads, and sampling threads add no team of their own on the same cores. Sampling is many short
    operations, which gain little from a team and lose much where its threads wait for a busy core (a team of
    2 on 2 shared cores sampled several times slower than one thread). OpenMP's thread count is per thread;
    torch sets this thread's count on its first use here, so that comes first."""
    import torch

    torch.get_num_threads()
    for lib in _openmp_runtimes():
        lib.omp_set_num_threads(1)
