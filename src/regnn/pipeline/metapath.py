"""The meta-path choice of GCN-M / GAT-M (model.metapath=best): one sub-cell per meta-path, trained through the
cell store like any cell, and the one with the best validation scores reported as this cell's result."""

from __future__ import annotations

import logging
import time
from datetime import datetime, timezone

import numpy as np
from omegaconf import DictConfig, OmegaConf

from regnn.runs import io_safe
from regnn.errors import ConfigError
from regnn.runs.computation import kept_summary
from regnn.runs.store import CellStore
from regnn.training.divergence import finished

log = logging.getLogger("regnn")

SELECTED_ON = ("val_micro_f1", "val_macro_f1")


def chosen(cfg: DictConfig) -> bool:
    return cfg.model.get("metapath") == "best"


def select_runs(cfg: DictConfig) -> int:
    """k: the runs per meta-path the choice is made on (model.metapath_select_runs, or all runs; all runs too where
    fewer are asked for than that, as in a quick `runs=1` try of a model whose dataset chooses on 2)."""
    if not list(cfg.model.metapaths or []):
        raise ConfigError("model.metapath=best needs meta-paths to choose from: set dataset.metapaths")
    k = cfg.model.get("metapath_select_runs") or cfg.runs
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ConfigError(
            f"model.metapath_select_runs must be a whole number from 1 (at most runs, {cfg.runs}, "
            f"count), or null for all runs; got {k!r}"
        )
    return min(k, cfg.runs)


def choose(cfg: DictConfig, store: CellStore, train_cell) -> dict:
    """One sub-cell per meta-path (metapaths/<name>/, complete results each, trained by train_cell(cfg, dir));
    the one with the best mean validation Micro-F1 (then Macro-F1) becomes this cell's results.json, with every
    meta-path's scores.

    model.metapath_select_runs=k (k < runs) chooses on the first k seeds of every meta-path and then extends only
    the chosen one to all runs: for meta-path graphs too dense to train every one of them `runs` times (DBLP's
    APTPA and APVPA). The choice is still made on validation alone; the others keep their k runs.
    """
    names, k = list(cfg.model.metapaths), select_runs(cfg)
    t0 = time.perf_counter()
    per_path, selected_on = {}, {}
    for name in names:
        path_dir = store.dir / "metapaths" / name
        stored = _chosen_before(path_dir, k) if k < store.spec.runs else None
        if stored is not None:
            per_path[name] = stored
        else:
            per_path[name] = train_cell(OmegaConf.merge(cfg, {"model": {"metapath": name}, "runs": k}), path_dir)
        # the choice: mean validation scores of the first k runs, from the summary's per-run records
        recs = [rec for rec in finished(per_path[name]["per_run"]) if rec["run"] < k]
        selected_on[name] = tuple(
            float(np.mean([rec[m] for rec in recs])) if recs else -np.inf for m in SELECTED_ON
        )  # every run diverged: never chosen
    best = max(names, key=selected_on.__getitem__)
    if k < store.spec.runs:  # the chosen meta-path's k runs are kept and extended to all runs
        log.info(
            "%s on %s: %s chosen on %d runs per meta-path; training its other %d runs",
            cfg.model.name,
            cfg.dataset.name,
            best,
            k,
            store.spec.runs - k,
        )
        sub = OmegaConf.merge(cfg, {"model": {"metapath": best}, "resume": True})
        per_path[best] = train_cell(sub, store.dir / "metapaths" / best)
    summary = {**_summary(per_path, best, k < store.spec.runs, k), "wall_time_s": time.perf_counter() - t0}
    store.write_config()
    store.finish(summary)
    log.info(
        "%s on %s: best meta-path by validation %s (%s)",
        cfg.model.name,
        cfg.dataset.name,
        best,
        ", ".join(
            f"{n} val {selected_on[n][0]:.2f} test "
            f"{per_path[n]['metrics'].get('test_micro_f1', {'mean': float('nan')})['mean']:.2f}"
            for n in names
        ),
    )
    return summary


def _chosen_before(path_dir, k: int) -> dict | None:
    """The summary a meta-path chosen by an earlier, interrupted training brings to the choice: its extended
    results when the extension finished, or the k-run summary kept when the extension began (the extension is then
    resumed by the caller), or None when it was not chosen before."""
    stored = io_safe.read_json(path_dir / "results.json", io_safe.is_cell_summary)
    if stored is not None:
        return stored if stored.get("runs", 0) > k else None
    kept = io_safe.read_json(kept_summary(path_dir, k), io_safe.is_cell_summary)
    return kept if kept is not None and kept.get("runs") == k else None


def _summary(per_path: dict, best: str, extended: bool, k: int) -> dict:
    """The chosen meta-path's summary, with how it was chosen and every meta-path's scores."""
    return {
        **per_path[best],
        "metapath": best,
        "metapath_selected_by": "mean validation Micro-F1 (then Macro-F1)"
        + (f" over the first {k} runs of every meta-path" if extended else ""),
        "metapath_scores": {
            n: {
                "runs": per_path[n]["runs"],
                **{
                    m: per_path[n]["metrics"].get(m)
                    for m in ("val_micro_f1", "val_macro_f1", "test_micro_f1", "test_macro_f1")
                },
            }
            for n in per_path
        },
        "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
