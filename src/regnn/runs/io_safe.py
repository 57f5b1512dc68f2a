"""Files written whole and user files read without running code.

Every summary, config and per-run record goes through `write_text`: a temporary file in the same folder, flushed
to disk, then renamed over the target, so a kill or a full disk leaves the old file or the new one, never a
truncated one. `read_json` treats a missing, empty, unreadable or wrongly shaped file as absent (a cell is then
trained again; a file that held something is set aside as .invalid first, unless the reader only reads:
predict.py never changes a run). A write first removes the temporary files of earlier writes of the same file
whose process is gone (a kill between the write and the rename).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import re
from pathlib import Path

from regnn.errors import RegnnError

log = logging.getLogger("regnn")
_TMP = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.tmp$")  # the temporary names of write_text and write_tensors


class OutputError(RegnnError):
    """A result could not be written (disk full, no permission, ...)."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def remove_stale_temps(folder: str | Path, name: str | None = None) -> None:
    """Removes the temporary files (.<name>.<pid>.tmp) of writes into folder whose process is gone, of the file
    `name` only where given (a folder that several hosts write into may hold another host's live ones)."""
    try:
        entries = list(Path(folder).iterdir())
    except OSError:
        return
    for p in entries:
        m = _TMP.match(p.name)
        if m is None or (name is not None and m["name"] != name):
            continue
        pid = int(m["pid"])
        if pid != os.getpid() and not _alive(pid):
            with contextlib.suppress(OSError):
                p.unlink()


def write_text(path: str | Path, text: str) -> None:
    """Writes `text` to `path` atomically: temp file in the same folder, fsync, os.replace."""
    path = Path(path)
    remove_stale_temps(path.parent, path.name)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise OutputError(
            f"cannot write {path} ({e.strerror or e}); free disk space or fix the folder's "
            "permissions, then re-run with resume=true (finished runs are kept)"
        ) from e
    with contextlib.suppress(OSError):  # the rename itself reaches the disk
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def strict(obj):
    """obj with every non-finite float as None and numpy scalars as Python numbers: strict JSON."""
    if isinstance(obj, dict):
        return {k: strict(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [strict(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):  # numpy / torch scalars
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def dumps(obj) -> str:
    return json.dumps(strict(obj), indent=2, allow_nan=False) + "\n"


def write_json(path: str | Path, obj) -> None:
    write_text(path, dumps(obj))


def _set_aside(path: Path, why: str) -> None:
    """Renames a record that cannot be used to <name>.invalid (.invalid.1, ... when taken), so that it is neither
    read again nor lost, and says so."""
    k, dest = 0, path.with_name(f"{path.name}.invalid")
    while dest.exists():
        k += 1
        dest = path.with_name(f"{path.name}.invalid.{k}")
    try:
        path.rename(dest)
        log.warning("%s %s; treated as absent (it is retrained) and set aside as %s", path, why, dest.name)
    except OSError:
        log.warning("%s %s; treated as absent (it is retrained)", path, why)


def read_json(path: str | Path, valid=None, set_aside: bool = True):
    """The JSON held by path, or None when it is missing, empty or unusable: cut short (a write cut short by an
    older writer, or another program), not UTF-8, or, with `valid` (a predicate on the parsed value), of the wrong
    shape. The caller treats the file as absent; an unusable file that is not empty is renamed to .invalid first
    (with set_aside=False, as a reader that must not change the folder asks, it is left as it is).
    A path that is a folder or cannot be read (permissions) is an OutputError: nothing is retrained over it."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError as e:
        raise OutputError(f"{path} is a folder where regnn keeps a result file; move it away, then re-run") from e
    except PermissionError as e:
        raise OutputError(
            f"{path} cannot be read: permission denied; give this user read access (chmod u+r), then re-run"
        ) from e
    except OSError as e:  # a link loop, an I/O error
        raise OutputError(f"{path} cannot be read ({e.strerror or e}); replace it with the file regnn wrote") from e
    if not raw.strip():
        log.warning("%s is empty; treated as absent", path)
        return None
    try:
        obj = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except UnicodeDecodeError:
        why = "is not UTF-8 text"
    except ValueError:
        why = "is not readable JSON"
    else:
        if valid is None or valid(obj):
            return obj
        why = "does not hold the record regnn writes there"
    if set_aside:
        _set_aside(path, why)
    else:
        log.warning("%s %s; treated as absent", path, why)
    return None
    return obj


def _no_constant(name: str):
    raise ValueError(f"{name} is not strict JSON")  # regnn writes none: NaN and inf are stored as null


def is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def is_run_record(r) -> bool:
    """runs/run_XX/results.json: a finished or failed run of one seed."""
    return (
        isinstance(r, dict)
        and isinstance(r.get("seed"), int)
        and not isinstance(r.get("seed"), bool)
        and isinstance(r.get("run"), int)
        and isinstance(r.get("relation_weights", []), list)
        and (isinstance(r.get("failed"), str) or any(is_number(v) for k, v in r.items() if k.startswith("test_")))
    )


def is_cell_summary(r) -> bool:
    """A cell's results.json: its runs, their records and the metrics over them."""
    return (
        isinstance(r, dict)
        and isinstance(r.get("runs"), int)
        and not isinstance(r.get("runs"), bool)
        and r["runs"] >= 1
        and isinstance(r.get("per_run"), list)
        and isinstance(r.get("metrics"), dict)
        and all(isinstance(x, dict) for x in r["per_run"])
    )
