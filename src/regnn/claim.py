"""One writer per output directory on a host: two sweeps over one cell pool must not train the same cell at once.

The marker `.training.pid` holds the writer's pid. It is written under a temporary name and then linked into
place, so it never exists empty or half-written; a marker whose process is gone (a killed run) is taken over.
Deciding and taking over happen under an exclusive flock of the directory itself, so two processes that both find
a stale marker cannot both take it. On exit the marker is removed only if it still holds this process's pid.
(Markers of other hosts' processes are beyond what one host's pids and locks can tell.)
"""
from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from regnn.errors import CellBusy

MARKER = ".training.pid"


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def _dir_lock(d: Path):
    fd = os.open(d, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _read_pid(marker: Path) -> int | None:
    try:
        text = marker.read_text().strip()
    except FileNotFoundError:
        return None
    return int(text) if text.isdigit() else -1  # -1: not a pid (empty, or junk): stale


def _place(marker: Path, pid: int) -> None:
    """Creates the marker whole: written and synced under a temporary name, then hard-linked into place."""
    tmp = marker.with_name(f"{marker.name}.{pid}.tmp")
    try:
        with open(tmp, "w") as f:
            f.write(str(pid))
            f.flush()
            os.fsync(f.fileno())
        os.link(tmp, marker)  # FileExistsError if another writer got there first
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def acquire(out_dir: Path, marker: str = MARKER, doing: str = "trained",
            fix: str = "wait for it to finish (a re-run then skips the cell), or choose another output directory") -> None:
    """Takes out_dir for this process (its pid in `marker`); CellBusy when a live process holds it."""
    path, me = Path(out_dir) / marker, os.getpid()
    with _dir_lock(Path(out_dir)):
        pid = _read_pid(path)
        if pid is not None and pid != me and pid > 0 and alive(pid):
            raise CellBusy(f"{out_dir} is being {doing} by process {pid} right now ({marker}); {fix}")
        if pid is not None:
            path.unlink()  # left by a process that is gone (or by this one)
        _place(path, me)


def release(out_dir: Path, marker: str = MARKER) -> None:
    """Removes the marker if this process holds it (never another process's)."""
    path = Path(out_dir) / marker
    with _dir_lock(Path(out_dir)):
        if _read_pid(path) == os.getpid():
            path.unlink()


@contextlib.contextmanager
def claim(out_dir: Path):
    """Holds out_dir for this process; CellBusy when a live process holds it."""
    if int(os.environ.get("RANK", "0")) > 0:  # torchrun: rank 0 holds the claim for every rank
        yield
        return
    acquire(out_dir)
    try:
        yield
    finally:
        release(out_dir)
