"""One writer per output directory, across processes and hosts that share a filesystem.

The marker `.training.pid` names its owner (host, pid, a random token) and a lease: the time it was last renewed
and how long it lasts. While the owner trains, a heartbeat thread renews it. A marker is taken over when
- its host is this host and its pid is gone (a killed run: at once), or
- its host is another one and its lease has expired (that host's clock and ours agree to well under the lease).
A marker of another host with a fresh lease is respected even where its pid means nothing here.

Creating the marker is an exclusive hard link of a fully written temporary file, so it never exists empty or half
written, and of two creators exactly one succeeds (link is atomic on local filesystems and NFS). Taking over a
stale marker renames it away to a name of this process's own (one renamer gets it), checks that the renamed file
is the marker judged stale (else puts it back: another process had taken over meanwhile), then links a new one.
On one host the whole decision also runs under an exclusive flock of the directory, where the filesystem offers
one. On exit the marker is removed only if it still holds this process's token.

REGNN_CLAIM_LEASE_S (default 600) and REGNN_CLAIM_HEARTBEAT_S (default 60) set the lease and the renewal period;
REGNN_HOST_ID overrides the host name (containers that share a hostname across machines).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import socket
import threading
import time
import uuid
from pathlib import Path

from regnn.errors import CellBusy, ConfigError

MARKER = ".training.pid"
log = logging.getLogger("regnn")


def host_id() -> str:
    return os.environ.get("REGNN_HOST_ID") or socket.gethostname()


def _seconds(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if value <= 0:
        raise ConfigError(
            f"{name}={raw!r} is not a positive number of seconds; unset it or set e.g. {name}={default:g}"
        )
    return value


def lease_s() -> float:
    return _seconds("REGNN_CLAIM_LEASE_S", 600.0)


def heartbeat_s() -> float:
    return _seconds("REGNN_CLAIM_HEARTBEAT_S", 60.0)


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
    """Exclusive flock of the directory (same-host races); a filesystem without flock on directories (NFS
    refuses it on a read-only descriptor) leaves the link/rename protocol alone to decide."""
    fd = os.open(d, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as e:
            if e.errno not in (errno.EBADF, errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL):
                raise
        yield
    finally:
        os.close(fd)  # releases the lock


def read_marker(marker: Path) -> dict | None:
    """The marker's owner as a dict (host, pid, token, renewed, lease_s), None when there is no marker."""
    try:
        return parse(marker.read_text())
    except FileNotFoundError:
        return None


def parse(text: str) -> dict:
    """A marker's text as its owner. A bare pid (markers of older versions) is a process of this host without a
    lease; empty or junk text is {"pid": -1}, which nobody holds."""
    if text.strip().isdigit():
        return {"host": host_id(), "pid": int(text.strip())}
    try:
        owner = json.loads(text)
    except ValueError:
        return {"pid": -1}
    ok = isinstance(owner, dict) and isinstance(owner.get("pid"), int) and isinstance(owner.get("host"), str)
    return owner if ok else {"pid": -1}


def holds(owner: dict | None, now: float | None = None) -> bool:
    """Whether the marker's owner still holds it: a live process of this host, or a fresh lease of another."""
    if owner is None or owner.get("pid", -1) <= 0:
        return False
    if owner["host"] == host_id():
        return owner["pid"] == os.getpid() or alive(owner["pid"])
    renewed, lease = owner.get("renewed"), owner.get("lease_s")
    if not isinstance(renewed, (int, float)) or not isinstance(lease, (int, float)):
        return False  # another host's marker without a lease cannot be checked: never renewed
    return (time.time() if now is None else now) < renewed + lease


def _this_process(owner: dict) -> bool:
    return owner.get("host") == host_id() and owner.get("pid") == os.getpid()


def _owner(token: str) -> dict:
    return {"host": host_id(), "pid": os.getpid(), "token": token, "renewed": time.time(), "lease_s": lease_s()}


def _tmp(marker: Path, owner: dict) -> Path:
    return marker.with_name(f"{marker.name}.{owner['token']}.tmp")


def _write_tmp(marker: Path, owner: dict) -> Path:
    tmp = _tmp(marker, owner)
    with open(tmp, "w") as f:
        f.write(json.dumps(owner))
        f.flush()
        os.fsync(f.fileno())
    return tmp


def _place(marker: Path, owner: dict) -> None:
    """Creates the marker whole: written and synced under a temporary name, then hard-linked into place."""
    tmp = _tmp(marker, owner)  # named before writing, so a write cut short is removed too
    try:
        _write_tmp(marker, owner)
        os.link(tmp, marker)  # FileExistsError if another writer got there first
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _take_over(marker: Path, stale_text: str) -> bool:
    """Moves the stale marker (whose text was stale_text) out of the way; False when someone else's is there now."""
    aside = marker.with_name(f"{marker.name}.{uuid.uuid4().hex}.stale")
    try:
        os.rename(marker, aside)  # of several renamers, one gets the file
    except FileNotFoundError:
        return True  # another process moved it: the exclusive link decides between us
    try:
        if aside.read_text() == stale_text:
            return True
        with contextlib.suppress(FileExistsError):
            os.link(aside, marker)  # not the stale one: another process's new claim, put back
        return False
    finally:
        aside.unlink()


def describe(owner: dict) -> str:
    where = "" if owner.get("host") == host_id() else f" on host {owner.get('host')}"
    left = (owner.get("renewed") or 0) + (owner.get("lease_s") or 0) - time.time()
    lease = f" (lease expires in {left:.0f}s unless renewed)" if where and "renewed" in owner else ""
    return f"process {owner.get('pid')}{where}{lease}"


def acquire(
    out_dir: Path,
    marker: str = MARKER,
    doing: str = "trained",
    fix: str = "wait for it to finish (a re-run then skips the cell), or choose another output directory",
) -> str:
    """Takes out_dir for this process and renews the lease in a heartbeat thread until release(); returns the
    claim's token. CellBusy when a live owner holds it."""
    path, token = Path(out_dir) / marker, uuid.uuid4().hex
    period, lease = heartbeat_s(), lease_s()
    if period >= lease:
        raise ConfigError(
            f"REGNN_CLAIM_HEARTBEAT_S ({period:g}) must be shorter than REGNN_CLAIM_LEASE_S ({lease:g}), "
            "or a live claim expires between renewals; e.g. a tenth of the lease"
        )
    with _dir_lock(Path(out_dir)):
        for _ in range(5):
            try:
                text = path.read_text()
            except FileNotFoundError:
                text = None
            if text is not None:
                owner = parse(text)
                if holds(owner) and not _this_process(owner):
                    raise CellBusy(f"{out_dir} is being {doing} by {describe(owner)} right now ({marker}); {fix}")
                if not _take_over(path, text):
                    continue  # another process took it over first: look again
            try:
                _place(path, _owner(token))
            except FileExistsError:
                continue
            if (read_marker(path) or {}).get("token") == token:  # re-read: the link is ours
                break
        else:
            raise CellBusy(
                f"{out_dir} is being {doing} by {describe(read_marker(path) or {})} right now ({marker}); {fix}"
            )
    beat = _BEATS.pop(path, None)
    if beat is not None:  # this process claimed it before without releasing: one heartbeat per marker
        beat.stop()
    _BEATS[path] = Heartbeat(path, token, period)
    return token


def renew(path: Path, token: str) -> bool:
    """Renews this claim's lease (a whole new marker renamed over the old one); False when it is not ours any more."""
    with _dir_lock(path.parent):
        if (read_marker(path) or {}).get("token") != token:
            return False
        os.replace(_write_tmp(path, _owner(token)), path)
        return True


def release(out_dir: Path, marker: str = MARKER) -> None:
    """Stops the heartbeat and removes the marker if this process holds it (never another process's)."""
    path = Path(out_dir) / marker
    beat = _BEATS.pop(path, None)
    if beat is not None:
        beat.stop()
    with _dir_lock(Path(out_dir)):
        owner = read_marker(path)
        if owner is not None and (owner.get("token") == beat.token if beat else _this_process(owner)):
            path.unlink()


class Heartbeat:
    """Renews a claim every `period` seconds in a daemon thread until stopped."""

    def __init__(self, path: Path, token: str, period: float):
        self.path, self.token, self.period = path, token, period
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"claim heartbeat {path}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _beat(self) -> None:
        while not self._stop.wait(self.period):
            try:
                if not renew(self.path, self.token):
                    log.error(
                        "%s: the claim was taken over by another process (its lease had expired: this "
                        "process stalled for longer than the lease); its writes may now race with it",
                        self.path,
                    )
                    return
            except OSError as e:  # a filesystem hiccup: try again at the next beat (the lease has slack)
                log.warning("%s: could not renew the claim (%s)", self.path, e)


_BEATS: dict[Path, Heartbeat] = {}


@contextlib.contextmanager
def claim(out_dir: Path, marker: str = MARKER):
    """Holds out_dir for this process, its lease renewed over the block; CellBusy when a live owner holds it."""
    if int(os.environ.get("RANK", "0")) > 0:  # torchrun: rank 0 holds the claim for every rank
        yield
        return
    acquire(out_dir, marker)
    try:
        yield
    finally:
        release(out_dir, marker)
