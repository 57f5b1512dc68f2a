"""Read experiment cells (one folder per dataset x model [x setting], see conf/experiment/base_cells.yaml)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from regnn.config import REPO_ROOT

CELLS = REPO_ROOT / "outputs" / "experiments" / "cells"


class MissingCells(Exception):
    """Some cells a table needs have not been trained yet."""


# --allow-missing (reporting.common.cli): render what exists; the tables then list the cells that were missing
ALLOW_MISSING = False
MISSING: list[str] = []


def load_cell(cells_dir: Path, name: str) -> dict:
    d = Path(cells_dir) / name
    p = d / "results.json"
    if not p.exists():
        raise MissingCells(f"{d} has no results.json (train it with the experiment's make target)")
    r = json.loads(p.read_text())
    w = d / "relation_weights.json"
    r["relation_weights"] = json.loads(w.read_text()) if w.exists() else []
    r["dir"] = d
    return r


def load_cells(cells_dir: Path, names: list[str], required: bool = True) -> dict[str, dict]:
    """{cell name: results}; missing cells raise MissingCells naming them (or are skipped if not required)."""
    out, missing = {}, []
    for n in names:
        try:
            out[n] = load_cell(cells_dir, n)
        except MissingCells:
            missing.append(n)
    if missing and required and not ALLOW_MISSING:
        raise MissingCells(f"cells not trained yet under {cells_dir}: {', '.join(missing)} (train them, or "
                           "render what exists with --allow-missing)")
    MISSING.extend(m for m in missing if m not in MISSING)
    return out


def mean_weights(cell: dict, layer: int) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Relation names and the mean and std over runs of one layer's weights (heads averaged)."""
    runs = [r["layers"][layer] for r in cell["relation_weights"]]
    names = list(runs[0])
    vals = np.array([[np.mean(r[n]) for n in names] for r in runs])
    return names, vals.mean(0), vals.std(0)


def metric(cell: dict, key: str) -> tuple[float, float]:
    m = cell["metrics"][key]
    return m["mean"], m["std"]
