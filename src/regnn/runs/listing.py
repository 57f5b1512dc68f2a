"""Past cells as a table: `python -m regnn.runs list` and `python -m regnn.runs best` (regnn.runs.__main__).

A cell is any folder under the root (default outputs/) holding a finished results.json; its graph is the name its
data.json records (a custom description's `name:`, else its folder's; "<graph> without <relations>" for a cell
trained without some, as explain's retrained ablation trains them), its date the summary's finished_at. Only
reads: a file that cannot be read is skipped and counted, never renamed or rewritten.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from regnn.runs.io_safe import is_cell_summary


@dataclass(frozen=True)
class Cell:
    folder: Path
    graph: str
    model: str
    finished: str
    runs: int
    val: tuple[float, float]  # validation Micro-F1, mean and std over the runs
    test: tuple[float, float]


def _read(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def cells(root: Path) -> tuple[list[Cell], int]:
    """(every finished cell under root, oldest first; how many results.json could not be read as one)."""
    found, unreadable = [], 0
    for f in sorted(Path(root).rglob("results.json")):
        if f.parent.parent.name == "runs" and f.parent.name.startswith("run_"):
            continue  # a run's own record, inside its cell
        r = _read(f)
        if not is_cell_summary(r) or "val_micro_f1" not in r["metrics"]:
            unreadable += not is_cell_summary(r)
            continue
        data = _read(f.parent / "data.json") or {}
        m = r["metrics"]
        dropped = _dropped(f.parent)  # explain's retrained cells: the graph without a relation group
        found.append(
            Cell(
                folder=f.parent,
                graph=str(data.get("graph") or r.get("dataset")) + (f" without {'+'.join(dropped)}" if dropped else ""),
                model=str(r.get("model")),
                finished=str(r.get("finished_at", "")),
                runs=int(m["val_micro_f1"].get("n", r.get("finished_runs", r["runs"]))),  # the runs the mean is of
                val=(m["val_micro_f1"]["mean"], m["val_micro_f1"]["std"]),
                test=(m["test_micro_f1"]["mean"], m["test_micro_f1"]["std"]),
            )
        )
    return sorted(found, key=lambda c: (c.finished, str(c.folder))), unreadable


def _dropped(cell: Path) -> list[str]:
    """The relations the cell's graph was trained without (dataset.drop_relations: explain's retrained ablation)."""
    import yaml

    try:
        cfg = yaml.safe_load((cell / "config.yaml").read_text())
        drop = ((cfg or {}).get("dataset") or {}).get("drop_relations") or []
    except (OSError, yaml.YAMLError, AttributeError):
        return []
    return [str(x) for x in drop] if isinstance(drop, list) else []


def best(found: list[Cell]) -> dict[str, Cell]:
    """Per graph, the cell whose mean validation Micro-F1 is highest at the low end of its 95% interval (test
    never decides; ties: the earlier): a cell of more runs is trusted over a lucky one of few, and a single run,
    which has no interval, only where no cell has two or more."""
    out: dict[str, Cell] = {}
    for c in found:
        if c.graph not in out or _sure(c) > _sure(out[c.graph]):
            out[c.graph] = c
    return out


def _sure(c: Cell) -> tuple[int, float]:
    from scipy import stats

    if c.runs < 2:
        return 0, c.val[0]
    # val[1] is the population std over the runs (the cell's summary): the sample std is sqrt(n/(n-1)) times it
    se = c.val[1] * (c.runs / (c.runs - 1)) ** 0.5 / c.runs**0.5
    return 1, c.val[0] - float(stats.t.ppf(0.975, c.runs - 1)) * se


def table(found: list[Cell], root: Path) -> str:
    """A fixed-width table, one line per cell, folders relative to root."""
    head = f"{'graph':<14} {'model':<12} {'finished':<20} {'runs':>4}  {'val Micro-F1':>14}  {'test Micro-F1':>14}"
    lines = [f"{head}  folder"]
    for c in found:
        folder = c.folder.relative_to(root) if c.folder.is_relative_to(root) else c.folder
        lines.append(
            f"{c.graph:<14} {c.model:<12} {c.finished[:19]:<20} {c.runs:>4}  "
            f"{c.val[0]:>7.2f} ± {c.val[1]:<4.2f}  {c.test[0]:>7.2f} ± {c.test[1]:<4.2f}  {folder}"
        )
    return "\n".join(lines)


def trained_name(run: str | Path) -> str:
    """ "<graph>/<model>" of the cell a run or cell folder belongs to (its data.json and results.json or config.yaml),
    for the folder a prediction writes to; "unknown/unknown" where they cannot be read (predict then says why)."""
    path = Path(str(run)).expanduser()
    cell = path.parent.parent if path.parent.name == "runs" else path
    data, summary = _read(cell / "data.json") or {}, _read(cell / "results.json") or {}
    graph, model = data.get("graph") if isinstance(data, dict) else None, summary.get("model")
    if model is None and (cell / "config.yaml").is_file():
        import yaml

        try:
            model = ((yaml.safe_load((cell / "config.yaml").read_text()) or {}).get("model") or {}).get("name")
        except (OSError, yaml.YAMLError, AttributeError):
            model = None
    safe = [re.sub(r"[^A-Za-z0-9._-]+", "_", str(x or "unknown")).strip("._") or "unknown" for x in (graph, model)]
    return "/".join(safe)
