"""Which runs of a cell predict: a run folder as it is; a cell folder: its run with the best validation Micro-F1,
or every finished run for an ensemble. Each run folder is checked to hold its own files, and a choice among fewer
runs than the cell was to train (a cell still training, runs deleted or unreadable) is named."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from omegaconf import OmegaConf

from regnn.errors import ConfigError, DataError
from regnn.pipeline import predict_guard as guard
from regnn.runs import checkpoint, io_safe

log = logging.getLogger("regnn")


@dataclass
class Chosen:
    cell: Path
    runs: list[Path]  # the run folders whose models predict (one, or every finished run for an ensemble)
    why: str


def choose_runs(path: Path, ensemble: bool, allow_missing: bool = False) -> Chosen:
    """A run folder as it is; a cell folder: its run with the best validation Micro-F1 (ties: the earlier run), or
    every finished run with ensemble=true. A chosen run without its model.pt is refused, naming it, unless
    allow_missing (then: the best run that has one, or the ensemble of those that have one)."""
    path = guard.resolved(path)
    if path.is_file():
        raise ConfigError(f"run={path} is a file; give the run folder that holds it ({path.parent}) or its cell")
    if (path / checkpoint.META_FILE).exists() or path.parent.name == "runs":
        return Chosen(path.parent.parent, [path], path.name)
    summary = io_safe.read_json(path / "results.json", io_safe.is_cell_summary, set_aside=False) or {}
    if summary.get("metapath") and (path / "metapaths" / str(summary["metapath"]) / "config.yaml").exists():
        path = path / "metapaths" / str(summary["metapath"])  # GCN-M / GAT-M / ...: the meta-path chosen on validation
    if not (path / "config.yaml").exists():
        raise ConfigError(
            f"run={path} is neither a cell folder (config.yaml, runs/) nor a run folder (runs/run_XX); "
            "give one that train.py wrote"
        )
    folders = sorted(d for d in (path / "runs").glob("run_*") if d.is_dir())
    recs = [(d, r) for d in folders if _finished(r := guard.run_record(d))]
    for d, r in recs:
        guard.check_place(d, r)
    missing = guard.missing_models(recs if ensemble else recs and [_best(recs)])
    if missing and not allow_missing:
        raise DataError(
            f"{path}: runs {', '.join(d.name for d in missing)} have no model.pt; the ensemble would be of "
            f"{len(recs) - len(missing)} runs, not {len(recs)}: pass allow_missing=true for that"
            if ensemble
            else f"{missing[0]}, the best run by validation Micro-F1, has no model.pt; pass allow_missing=true "
            "to predict with the best run that has one, or train the cell again"
        )
    recs = [(d, r) for d, r in recs if (d / checkpoint.MODEL_FILE).exists()]
    if not recs:
        unreadable = [d.name for d in folders if (d / "results.json").exists() and guard.run_record(d) is None]
        raise DataError(
            f"{path}: the results.json of {', '.join(unreadable)} cannot be read (damaged or truncated), so no run "
            "is known to have finished; copy the cell again whole, or train it again with resume=true"
            if unreadable
            else f"{path} holds no finished run with a saved model (runs/run_XX/model.pt); train it with "
            "save_model=true (the default)"
        )
    note = _partial(path, folders, [d for d, _ in recs])
    if ensemble:
        return Chosen(path, [d for d, _ in recs], f"the ensemble of its {len(recs)} runs{note}")
    d, rec = _best(recs)
    why = f"{d.name}, run {rec['run'] + 1} of the cell (best validation Micro-F1 {rec['val_micro_f1']:.2f}{note})"
    return Chosen(path, [d], why)


def _partial(cell: Path, folders: list[Path], used: list[Path]) -> str:
    """Words for a choice made among fewer runs than the cell was to train (a cell still training, or runs
    deleted or unreadable), logged as a warning; "" where every run of the cell is there."""
    try:
        planned = int(OmegaConf.load(cell / "config.yaml").get("runs") or 0)
    except Exception:  # noqa: BLE001  (the config is checked, in one line, right after)
        planned = 0
    expected = [f"run_{k:02d}" for k in range(planned)]
    left = [n for n in expected if n not in {d.name for d in used}]
    if not left:
        return ""
    summary = (cell / "results.json").is_file()
    why = "unreadable or without a model" if summary else "still training, or stopped before they finished"
    note = f"; {len(used)} of the cell's {planned} runs: {', '.join(left)} {why}"
    log.warning("predict: %s: using %s%s", cell, ", ".join(d.name for d in used), note)
    return note


def _finished(rec) -> bool:
    return rec is not None and "failed" not in rec and io_safe.is_number(rec.get("val_micro_f1"))


def _best(recs: list[tuple[Path, dict]]) -> tuple[Path, dict]:
    return max(recs, key=lambda dr: (dr[1]["val_micro_f1"], -dr[1]["run"]))
