"""predict.py's checks of the graph it is given against the graph the runs trained on (regnn.data.graph_binding):
what changed (refused unless changed_graph=true), whether the recorded scores can be compared, and that an
ensemble's runs share one graph."""

from __future__ import annotations

import logging
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from regnn.errors import DataError, RegnnError
from regnn.runs import checkpoint, identity

log = logging.getLogger("regnn")


def _same_graph(tcfg: DictConfig, meta: dict) -> bool:
    """Whether tcfg's graph has the files the run trained on (model.json's fingerprint)."""
    trained = ((meta.get("graph") or {}).get("fingerprint") or {}).get("digest")
    try:
        now = (identity.describe(OmegaConf.to_container(tcfg, resolve=True)).get("fingerprint") or {}).get("digest")
    except (RegnnError, OSError):
        return False
    return trained is not None and now == trained


def _changed_files(tcfg: DictConfig | None, run_dir: Path) -> str:
    """' (<files> changed since)' where the graph is read from the files the run trained on and some of them
    changed (a table, a database), else ''."""
    if tcfg is None:
        return ""
    try:
        now = identity.describe(OmegaConf.to_container(tcfg, resolve=True))
    except (RegnnError, OSError):
        return ""
    then = checkpoint.load_meta(run_dir).get("graph") or {}
    files = identity.changed_files(then, now) if then.get("path") == now.get("path") else []
    return f" ({', '.join(files[:3])}{' ...' if len(files) > 3 else ''} changed since)" if files else ""


def graph_changes(cfg: DictConfig, aligned, run_dir: Path, tcfg: DictConfig | None = None) -> dict | None:
    """What the graph changes against the one the run trained on (None: a model without its graph record). A
    changed graph is refused, naming what changed (and which of the files it trained on changed, tcfg given),
    unless changed_graph=true says it changed on purpose; the log counts the new and removed nodes per type."""
    if aligned is None:
        log.warning(
            "predict: %s was saved before runs kept their graph by name (graph.npz): its nodes and classes are "
            "bound by position; train it again to bind them by id",
            run_dir,
        )
        return None
    ch = aligned.changes
    for t in sorted(set(ch.new) | set(ch.removed)):
        log.info("predict: %s nodes: %d new, %d removed", t, ch.new.get(t, 0), ch.removed.get(t, 0))
    if not ch.same and not cfg.get("changed_graph", False):
        raise DataError(
            f"the graph differs from the one {run_dir} was trained on{_changed_files(tcfg, run_dir)}: "
            f"{ch.summary()}; to predict on it as it is "
            "pass changed_graph=true (predict.py; its scores are then not compared with the run's, and "
            "predictions.csv marks new nodes), or train on this graph"
        )
    if ch.labelled or ch.unlabelled:
        log.info(
            "predict: of the target nodes the run trained on, %d gained a label and %d lost their label or split "
            "(not a change of the model's inputs; labelled nodes outside the splits are split 'outside')",
            ch.labelled,
            ch.unlabelled,
        )
    if ch.reordered and ch.same:
        log.info("predict: the graph's rows are in another order than when it trained; bound by id, nothing changed")
    return {"changed": not ch.same, "changed_graph": bool(cfg.get("changed_graph", False)), **ch.as_dict()}


def why_not_compared(cfg: DictConfig, tcfg: DictConfig, meta: dict, aligned=None) -> str | None:
    """Why the recomputed scores are not compared with the run's (None: they are). A graph that is the one the
    run trained on (by its record; or, for a run without one, by its files) is compared."""
    if aligned is not None and not aligned.changes.same:
        return f"the graph changed on purpose (changed_graph=true: {aligned.changes.summary()})"
    if aligned is not None and aligned.changes.unlabelled:
        return f"{aligned.changes.unlabelled} target nodes it trained on are no longer labelled or in a split"
    if aligned is None and cfg.get("dataset_path") is not None and not _same_graph(tcfg, meta):
        return "predicting on another graph (dataset_path=)"
    if not cfg.get("check_scores", True):
        return "check_scores=false"
    tr = tcfg.get("trainer") or {}
    if tr.get("name", "") == "minibatch" and tr.get("eval", "layerwise") != "layerwise":
        return f"the run evaluated on sampled neighbours (trainer.eval={tr.get('eval')})"
    return None


def check_one_graph(runs: list[Path]) -> None:
    """DataError when the runs to predict with were trained on different graphs (another class order, other
    nodes): an ensemble averages class probabilities by class id, so they must mean the same classes."""
    first = None
    for run in runs:
        rec = checkpoint.load_record(run, checkpoint.load_meta(run))
        if rec is None:
            continue
        if first is None:
            first = (run, rec)
        elif not rec.same_graph(first[1]):
            raise DataError(
                f"{run} was trained on another graph than {first[0]} (its graph.npz differs: other nodes, classes, "
                "class order or relations); an ensemble averages the runs' classes by position, so predict each "
                "run alone "
                "(run=<cell>/runs/run_XX), or put the cell's own runs back"
            )
