"""Read experiment cells (one folder per dataset x model [x setting], see conf/experiment/base_cells.yaml)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from regnn.paths import REPO_ROOT
from regnn.runs.io_safe import read_json, strict, write_text
from regnn.runs.store import run_devices

CELLS = REPO_ROOT / "outputs" / "experiments" / "cells"


class MissingCells(Exception):
    """Some cells a table needs have not been trained yet."""


def load_cell(cells_dir: Path, name: str, archive: Path | None = None) -> dict:
    """A cell's results.json (+ "relation_weights", "dir"). Where the pool has no readable one, the archived
    summary archive/<name>.json (written by save_archive) stands in, with "archived": True."""
    d = Path(cells_dir) / name
    r = read_json(d / "results.json")  # missing, empty or cut short: not trained (a re-run trains it)
    if r is None and archive is not None and (a := read_json(Path(archive) / f"{name}.json")) is not None:
        r = a["results"] | {"relation_weights": a.get("relation_weights") or [], "archived": True}
    elif r is not None:
        r["relation_weights"] = read_json(d / "relation_weights.json") or []
    if r is None:
        raise MissingCells(f"{d} has no readable results.json (train it with the experiment's make target)")
    if r.get("failed_runs") and not r.get("metrics"):
        raise MissingCells(f"{d}: every run diverged, so it has no scores ({d}/runs/*/results.json say where)")
    r["dir"] = d
    return r


class CellPool:
    """The cells of one experiment pool, as a renderer reads them.

    allow_missing=False: a table whose cells are not all trained is an error (MissingCells names them).
    allow_missing=True (--allow-missing): the cells that exist are returned and the missing ones collected in
    `missing`, which write_table lists in the table's notes.
    archive: a folder of cell summaries (save_archive writes them); a cell the pool lacks is read from there.
    """

    def __init__(self, cells_dir: Path | str = CELLS, allow_missing: bool = False, archive: Path | str | None = None):
        self.dir = Path(cells_dir)
        self.allow_missing = allow_missing
        self.archive = None if archive is None else Path(archive)
        self.missing: list[str] = []
        self.archived: list[str] = []  # cells read from the archive (their run folders are not in the pool)
        self.trained: dict[str, dict] = {}  # cells read from the pool itself, for save_archive
        self.devices: dict[str, dict[str, list[int]]] = {}  # cell -> {device: its runs}

    def load(self, names: list[str], whole: str | None = None) -> dict[str, dict]:
        """{cell name: results} of the named cells. whole: why the figure is one piece that needs every cell;
        then a missing cell raises MissingCells even with allow_missing (the committed figure is kept)."""
        out, missing = {}, []
        for n in names:
            try:
                out[n] = load_cell(self.dir, n, self.archive)
            except MissingCells:
                missing.append(n)
                continue
            self.devices[n] = cell_devices(out[n])
            if out[n].get("archived"):
                if n not in self.archived:
                    self.archived.append(n)
            else:
                self.trained[n] = out[n]
        if missing and whole:
            raise MissingCells(f"{whole}; not trained yet: {', '.join(missing)}")
        if missing and not self.allow_missing:
            raise MissingCells(
                f"cells not trained yet under {self.dir}: {', '.join(missing)} (train them, or "
                "render what exists with --allow-missing)"
            )
        self.missing.extend(m for m in missing if m not in self.missing)
        return out

    def save_archive(self) -> list[str]:
        """Writes the summary of every cell read from the pool to archive/<name>.json (results.json and the
        relation weights, no run folders), so that the tables render again where the pool is gone. Returns the
        names whose summary changed."""
        if self.archive is None:
            return []
        changed = []
        for n, c in self.trained.items():
            rec = {
                "results": {k: v for k, v in c.items() if k not in ("dir", "relation_weights", "archived")},
                "relation_weights": c["relation_weights"],
            }
            path = self.archive / f"{n}.json"
            text = json.dumps(strict(rec), separators=(",", ":"), allow_nan=False) + "\n"
            if not path.exists() or path.read_text() != text:
                self.archive.mkdir(parents=True, exist_ok=True)
                write_text(path, text)
                changed.append(n)
        return changed


def cell_devices(cell: dict) -> dict[str, list[int]]:
    """{device: runs} of a cell; runs written before they recorded their device count as the cell's device."""
    env = cell.get("environment", {})
    return env.get("run_devices") or run_devices(cell.get("per_run", []), default=str(env.get("device", "cpu")))


def as_pool(cells) -> CellPool:
    """A CellPool as it is, or a strict one over a cells directory."""
    return cells if isinstance(cells, CellPool) else CellPool(cells)


def mean_weights(cell: dict, layer: int) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Relation names and the mean and std over runs of one layer's weights (heads averaged)."""
    runs = [r["layers"][layer] for r in cell["relation_weights"]]
    names = list(runs[0])
    vals = np.array([[np.mean(r[n]) for n in names] for r in runs])
    return names, vals.mean(0), vals.std(0)


def metric(cell: dict, key: str) -> tuple[float, float]:
    m = cell["metrics"][key]
    return m["mean"], m["std"]
