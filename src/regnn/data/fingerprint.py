"""Which graph a cell was trained on: the dataset's files, each by size and SHA-256, and one digest over them.

A cell's identity (regnn.runs.store) includes this, so that a resumed sweep never reuses a cell trained on
another graph: another `dataset.path`, or the same path whose files were changed in place. Hashing reads every
byte once; the result is cached per file by (path, size, modification and change times, inode) in $REGNN_CACHE (default
~/.cache/regnn)/fingerprints.json, so a graph is hashed again only when a file of it changes.

The files of a dataset: for `dataset=custom`, the description and exactly the files it names for its reader (in a
subfolder, outside its folder or hidden alike; nothing else beside it); for a dataset read from a folder (DBLP,
ACM, IMDB, OGBN-MAG), that folder's files. Generated graphs (synthetic, counts) have no files: their config is
their identity.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Mapping

CHUNK = 1 << 22


def cache_path() -> Path:
    return Path(os.environ.get("REGNN_CACHE", Path.home() / ".cache" / "regnn")) / "fingerprints.json"


def _listed(folder: Path) -> list[Path]:
    """The regular, non-hidden files directly in folder."""
    return sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))


MAGNN_FILES = ("adjM.npz", "node_types.npy", "labels.npy", "train_val_test_idx.npz")


def described_files(meta: Mapping[str, Any], desc: Path) -> list[Path]:
    """The files a custom graph's description has its reader read (the description itself included), as named in
    it: every node and edge table (format: tables), the database file (format: sql), the graph file (npz, pyg, dgl),
    or the MAGNN files in its dir.
    Files beside the description that it does not name (a README, a script) are not part of the graph."""
    base = desc.parent
    files = [desc]
    fmt = meta.get("format")
    if fmt == "tables":
        for block in ("nodes", "edges"):
            for entry in (meta.get(block) or {}).values():
                f = entry.get("file") if isinstance(entry, dict) else entry
                if isinstance(f, str) and f:
                    files.append(base / f)
    elif fmt == "sql" and isinstance(meta.get("database"), str):
        # the database's content: its file, and a write-ahead log where one holds changes not yet in it
        db = base / meta["database"]
        files += [db, db.with_name(db.name + "-wal"), db.with_name(db.name + ".wal")]
    elif fmt == "magnn":
        root = base / str(meta.get("dir", "."))
        if root.is_dir():
            files += [root / n for n in MAGNN_FILES if (root / n).exists()]
            files += sorted(p for p in root.iterdir() if p.name.startswith("features_") and p.is_file())
    elif isinstance(meta.get("graph"), str):
        files.append(base / meta["graph"])
    return [p for p in files if p.exists()]


def data_files(dataset: Mapping[str, Any]) -> list[Path]:
    """The files that define the dataset of this `dataset` config (resolved, links followed), or [] for a
    generated one."""
    if dataset.get("format") == "custom" and dataset.get("path"):
        from regnn.description import read_meta

        meta, desc = read_meta(dataset["path"])
        return sorted({p.resolve() for p in described_files(meta, desc)})
    folder = dataset.get("dir")
    if folder and Path(folder).is_dir():
        return [p.resolve() for p in _listed(Path(folder))]
    return []


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def fingerprint(dataset: Mapping[str, Any]) -> dict | None:
    """{"files": {name: "<size>:<sha256>"}, "digest": sha256 over them} for the dataset's files (names relative to
    their common folder), or None for a generated dataset."""
    files = data_files(dataset)
    if not files:
        return None
    cache_file = cache_path()
    try:
        cache = json.loads(cache_file.read_text())
    except (OSError, ValueError):
        cache = {}
    root = Path(os.path.commonpath([str(p.parent) for p in files]))
    entries, changed = {}, False
    for p in files:
        st = p.stat()
        # the change time too: a write that keeps the size and restores the modification time (touch -r, tar, rsync
        # -t) still changes it, so the cached digest is never taken for an edited file
        key, stamp = str(p), [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
        if not isinstance(cache.get(key), dict) or cache[key].get("stamp") != stamp:
            cache[key], changed = {"stamp": stamp, "sha256": _sha256(p)}, True
        entries[str(p.relative_to(root))] = f"{st.st_size}:{cache[key]['sha256']}"
    if changed:
        try:
            cache_file.parent.mkdir(parents=True, exist_ok=True)
            tmp = cache_file.with_name(f"{cache_file.name}.{os.getpid()}")
            tmp.write_text(json.dumps(cache))
            os.replace(tmp, cache_file)
        except OSError:  # a read-only home: hash again next time
            pass
    digest = hashlib.sha256(json.dumps(entries, sort_keys=True).encode()).hexdigest()
    return {"files": entries, "digest": digest}
