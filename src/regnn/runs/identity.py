"""A cell knows its graph: data.json beside config.yaml names the graph a cell was trained on (its name, where it
was read from, and the fingerprint of its files: regnn.data.fingerprint), and a resumed or reused cell is checked
against the graph of the command that finds it. A cell of another graph is refused in one line, never reused.

Cells written before data.json existed: a custom graph's is compared by the path its config.yaml stored; a
built-in dataset's (pinned by data/SHA256SUMS) is taken as it is.
"""

from __future__ import annotations

import logging
from pathlib import Path

from regnn.data.fingerprint import fingerprint
from regnn.description import graph_name
from regnn.errors import ConfigError
from regnn.runs import io_safe

DATA_FILE = "data.json"
log = logging.getLogger("regnn")


def describe(config: dict) -> dict:
    """What data.json holds for the graph of a resolved config."""
    ds = config["dataset"]
    where = ds.get("path") if ds.get("format") == "custom" else ds.get("dir")
    return {
        "dataset": ds.get("name"),
        "graph": graph_name(ds),
        "path": str(Path(where).resolve()) if where else None,
        "fingerprint": fingerprint(ds),
    }


def write(cell: Path, data: dict) -> None:
    io_safe.write_json(cell / DATA_FILE, data)


def _label(d: dict) -> str:
    fp = (d.get("fingerprint") or {}).get("digest")
    return f"{d.get('graph')} at {d.get('path')}" + (f", files {fp[:12]}" if fp else "")


def changed_files(old: dict, new: dict) -> list[str]:
    a, b = (old.get("fingerprint") or {}).get("files", {}), (new.get("fingerprint") or {}).get("files", {})
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def _same_files(old: dict | None, new: dict | None) -> bool:
    """Whether two fingerprints are of the same files. A fingerprint of an earlier regnn also hashed the files
    beside a description that its reader never reads (a README): the same graph where every file read now is
    one it hashed, unchanged."""
    if (old or {}).get("digest") == (new or {}).get("digest"):
        return True
    a, b = (old or {}).get("files"), (new or {}).get("files")
    return bool(a) and bool(b) and all(a.get(k) == v for k, v in b.items())


def check(cell: Path, now: dict, stored_config: dict | None, config: dict | None = None) -> None:
    """ConfigError when the cell at `cell` was trained on another graph than `now` (describe(config)), naming the
    files that differ and (config given) what changed in the graph."""
    stored = io_safe.read_json(cell / DATA_FILE, lambda d: isinstance(d, dict) and "fingerprint" in d)
    if stored is None:  # a cell from before data.json: only a custom graph's stored path can tell
        old = (stored_config or {}).get("dataset") or {}
        if old.get("format") != "custom" or not old.get("path") or now["path"] is None:
            return
        if str(Path(str(old["path"])).resolve()) == now["path"]:
            return
        stored = {"graph": old.get("name"), "path": str(Path(str(old["path"])).resolve()), "fingerprint": None}
    same_files = _same_files(stored.get("fingerprint"), now.get("fingerprint"))
    if same_files and (stored.get("fingerprint") is not None or stored.get("path") == now["path"]):
        return
    changed = changed_files(stored, now)
    what = (
        f" ({', '.join(changed[:3])}{' ...' if len(changed) > 3 else ''} differ)"
        if changed and stored.get("path") == now["path"]
        else ""
    )
    ch = _changes(cell, config) if config is not None and stored.get("path") == now["path"] else None
    if ch is not None and ch.same and not (ch.reordered or ch.labelled or ch.unlabelled):
        # the files differ where the graph does not (a comment in the description): the cell's own graph
        log.info("%s: its graph's files changed (%s) but not the graph its runs know", cell, ", ".join(changed))
        return
    change = "" if ch is None else ch.summary() if not ch.same else _same_words(ch)
    raise ConfigError(
        f"{cell} holds results trained on another graph ({_label(stored)}) than this one "
        f"({_label(now)}){what}{f': {change}' if change else ''}; choose another folder (hydra.run.dir=..., or "
        "hydra.sweep.dir=... for a sweep) or move that one away"
    )


def _same_words(ch) -> str:
    if ch.reordered:
        return "the same graph with its rows in another order"
    return f"the same graph, {ch.labelled} nodes outside the splits now labelled and {ch.unlabelled} unlabelled"


def _changes(cell: Path, config: dict):
    """What the graph of `config` changes against the one the cell's runs trained on (regnn.data.graph_record's
    Changes), or None where no run kept its graph record or the graph cannot be read."""
    from regnn.data import load_dataset
    from regnn.data.dataset import empty_splits_allowed
    from regnn.data.table_columns import applying
    from regnn.errors import RegnnError
    from regnn.runs import checkpoint, column_file

    runs = [d for d in sorted((cell / "runs").glob("run_*")) if (d / checkpoint.RECORD_FILE).is_file()]
    if not runs:
        return None
    try:
        meta = checkpoint.load_meta(runs[0])
        record = checkpoint.load_record(runs[0], meta)
        ds = {k: v for k, v in config["dataset"].items() if k not in ("name", "display_name", "metapaths")}
        with empty_splits_allowed(), applying(column_file.load(runs[0], meta)):
            data = load_dataset(str(config["dataset"]["name"]), **{**ds, "feature_norm": None})
        if record is None or (
            list(data.class_names or []) != list(record.classes or [])
            or {t: list(c) for t, c in (data.feature_names or {}).items()} != record.columns
        ):
            return None  # another class or column order: new runs would read them otherwise than the cell's
        _, aligned = checkpoint.bind(runs[0], meta, data)
    except (RegnnError, OSError, ValueError, KeyError):
        return None
    return None if aligned is None else aligned.changes
