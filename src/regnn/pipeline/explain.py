"""Which relations a cell's models rest on (explain.py, regnn.explain): three answers, each over the cell's runs.

- weights: every layer's learned weight of every relation and node-type self-loop (RE-GNN's own answer), its mean
  over the runs with a 95% interval;
- masked ablation: each relation (with its reverse, regnn.data.pruning) emptied at inference in the trained runs,
  the drop in validation and test Micro-F1 (cheap; the model never learnt to do without it);
- retrained ablation (ablation=retrain): the cell trained again without the relation (dataset.drop_relations), on
  the same seeds, each drop paired by seed (the honest one; every retrained cell is a cell of its own under
  retrain_dir, resumed like any: a killed explain trains only what is missing);
and how far each weight-derived quantity's ranking of the relations (regnn.pipeline.relation_signals: the mean
weight, the last layer's weights into the target, message shares, the validation loss's derivatives) agrees with
each ablation's (Spearman's rho with its interval).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from omegaconf import DictConfig, OmegaConf, open_dict

from regnn.data.pruning import relation_groups
from regnn.errors import ConfigError
from regnn.evaluation.importance import rank_agreement, summarise
from regnn.pipeline.node_reasons import group_name, logits, masked_inputs
from regnn.pipeline.predict import Predicted, predicted, scores, weight_frame
from regnn.pipeline.predict_guard import refuse_inside_a_cell, run_record
from regnn.pipeline.relation_signals import signal_rows
from regnn.runs import io_safe
from regnn.pipeline.trained_model import loaded_model
from regnn.training.progress import clock

log = logging.getLogger("regnn")
ABLATIONS = ("masked", "retrain")
SCORES = ("val_micro_f1", "test_micro_f1")


@dataclass
class Explained:
    groups: list  # the relation groups (each relation with its reverse)
    weights: pd.DataFrame  # layer, relation, source, destination, mean, low, high, runs
    ablation: pd.DataFrame  # kind, group, score, mean, low, high, runs (drops in points of Micro-F1)
    agreement: pd.DataFrame  # quantity, kind, score, rho, low, high, items, runs
    per_run: dict  # the per-run tables the summaries come from: weights, signals, masked, retrain
    cell: Path
    retrain_cells: list[Path]
    seeds: dict  # seed -> the cell's run folder name (the retrained drops pair with the runs by seed)


def weight_rows(p: Predicted) -> pd.DataFrame:
    """One row per run, layer and relation: the learned weight (the mean over heads where a layer has several)."""
    rel = (p.tcfg.model.get("relation") or {}) if "relation" in p.tcfg.model else {}
    if rel and not rel.get("edge_embeddings", True):
        raise ConfigError(
            f"{p.chosen.cell}: {p.tcfg.model.name} learns no relation weights (model.relation.edge_embeddings="
            "false: every edge weighs 1), so explain has none to show; explain an RE model's cell (re_gcn, re_gat, "
            "...), or compare the plain and RE cells' scores"
        )
    rows = weight_frame(p)
    rows["weight"] = [sum(w) / len(w) if isinstance(w, list) else w for w in rows.weight]
    if rows.empty:
        raise ConfigError(
            f"{p.chosen.cell}: {p.tcfg.model.name} learns no relation weights; explain needs a model that does"
        )
    return rows


def masked_rows(p: Predicted, groups: list[tuple[str, ...]], inference: str) -> pd.DataFrame:
    """One row per run and relation group: the drop of each score when the group's edges are emptied."""
    return run_rows(p, groups, inference)[0]


def run_rows(p: Predicted, groups: list[tuple[str, ...]], inference: str, weights=None):
    """Each run's model loaded once: (the masked drops, one row per run, group and score; with the runs' weight rows
    given, the weight-derived quantities, one row per run, group and quantity (regnn.pipeline.relation_signals),
    else None)."""
    job, rows, signals = p.job, [], []
    variants = masked_inputs(job, p.tcfg, groups)
    named = {group_name(g): tuple(g) for g in groups}
    for run_dir in p.chosen.runs:
        model, sg = loaded_model(job, p.tcfg, run_dir, inference)
        if sg is not None:
            raise ConfigError(
                f"{run_dir} computes layer by layer (a mini-batch run); explain masks full-batch only: pass "
                "inference=fullbatch (the same model on the whole graph at once)"
            )
        base = scores(job.data, logits(model, job.inputs, job, p.tcfg))
        for g, inputs in variants.items():
            masked = scores(job.data, logits(model, inputs, job, p.tcfg))
            rows += [
                {"run": run_dir.name, "group": group_name(g), "score": s, "drop": base[s] - masked[s]} for s in SCORES
            ]
        if weights is not None:
            signals += signal_rows(p, run_dir.name, model, named, weights)
    found = None if weights is None else pd.DataFrame(signals, columns=["run", "group", "quantity", "value"])
    return pd.DataFrame(rows), found


def retrain_rows(p: Predicted, groups, root: Path, train) -> tuple[pd.DataFrame, list[Path]]:
    """One row per seed and relation group: the drop of each score (the cell's run minus the run of the same seed
    trained without the group); `train(cfg, out_dir)` trains (and resumes) each group's cell."""
    base = io_safe.read_json(p.chosen.cell / "results.json", io_safe.is_cell_summary, set_aside=False)
    if base is None:
        raise ConfigError(
            f"{p.chosen.cell} has no results.json of a finished cell: the retrained drops are measured against "
            "its runs' recorded scores; let its training finish (resume=true), then explain it"
        )
    by_seed = {r["seed"]: r for r in base.get("per_run", []) if "failed" not in r}
    todo = [g for g in groups if not (root / _cell_name(g) / "results.json").is_file()]
    if todo and base.get("wall_time_s"):  # each retrained cell trains as long as the cell did, about
        log.info(
            "explain: retraining %d of %d groups, %d runs each: about %s (the cell trained in %s)",
            len(todo),
            len(groups),
            len(by_seed),
            clock(len(todo) * float(base["wall_time_s"])),
            clock(float(base["wall_time_s"])),
        )
    rows, cells = [], []
    for k, g in enumerate(groups, 1):
        cfg = p.tcfg.copy()
        with open_dict(cfg):
            cfg.dataset.drop_relations = list(g)
            cfg.resume, cfg.save_embeddings = True, False
        out = root / _cell_name(g)
        log.info("explain: retraining without %s (%d of %d) in %s", group_name(g), k, len(groups), out)
        try:
            summary = train(cfg, out)
        except ConfigError as e:
            if "holds results trained on another graph" not in str(e):
                raise
            raise ConfigError(
                f"{str(e).split('; choose another folder')[0]}; give explain another retrain_dir=<folder>, or "
                f"move {root} away"
            ) from None
        cells.append(out)
        for r in summary["per_run"]:
            if "failed" in r or r["seed"] not in by_seed:
                continue
            rows += [
                {"run": f"seed_{r['seed']}", "group": group_name(g), "score": s, "drop": by_seed[r["seed"]][s] - r[s]}
                for s in SCORES
            ]
    return pd.DataFrame(rows), cells


def _cell_name(group: tuple[str, ...]) -> str:
    return "drop_" + "_".join(n.replace("->", "-").replace("/", "-") for n in group)


def agreement(signals: pd.DataFrame, drops: pd.DataFrame, kind: str, seeds: dict, min_items: int = 3) -> list[dict]:
    """rho between each weight-derived quantity's ranking of the relation groups (regnn.pipeline.relation_signals)
    and the ablation's, per score, over the runs both have (the masked runs by name; the retrained by seed, which
    the quantities pair with through the cell's runs: seeds, seed -> run)."""
    out = []
    for q, rows in signals.groupby("quantity", sort=False):
        w = rows.pivot_table(index="run", columns="group", values="value", aggfunc="mean")
        for s in SCORES:
            d = drops[drops.score == s].pivot_table(index="run", columns="group", values="drop", aggfunc="mean")
            if kind == "retrain":  # the quantities of the cell's run of the same seed
                d.index = [seeds.get(int(r.removeprefix("seed_"))) for r in d.index]
            out.append({"quantity": q, "kind": kind, "score": s, **rank_agreement(w, d, min_items=min_items)})
    return out


def explain(cfg: DictConfig, train=None) -> Explained:
    """The weights, the masked ablation and (ablation=retrain) the retrained one of the cell cfg.run names."""
    if cfg.ablation not in ABLATIONS:
        raise ConfigError(f"ablation={cfg.ablation!r}: use masked (at inference) or retrain (also trained without)")
    p = predicted(
        OmegaConf.create(
            {"run": cfg.run, "ensemble": True, "allow_missing": bool(cfg.get("allow_missing", False))}
            | {k: cfg.get(k) for k in ("inference", "device", "threads", "check_scores")}
            | {"dataset_path": None, "embeddings": False}
        )
    )
    weights = weight_rows(p)
    groups = relation_groups(p.data.graph)
    log.info(
        "explain: %d runs, %d relation groups: %s", len(p.chosen.runs), len(groups), ", ".join(map(group_name, groups))
    )
    masked, signals = run_rows(p, groups, str(cfg.get("inference", "auto")), weights)
    per_run = {"weights": weights, "masked": masked, "signals": signals}
    cells: list[Path] = []
    if cfg.ablation == "retrain":
        refuse_inside_a_cell(cfg.retrain_dir, "retrain_dir", "explain")
        if len(groups) < 2:
            raise ConfigError(
                f"{p.chosen.cell}'s graph has one relation group ({group_name(groups[0])}): retrained without it, "
                "no relation would be left to learn from; the retrained ablation needs two groups or more"
            )
        if train is None:
            from regnn.pipeline import train
        per_run["retrain"], cells = retrain_rows(p, groups, Path(cfg.retrain_dir), train)
    w = summarise(weights, ["layer", "relation", "source", "destination"], "weight")
    ablation = pd.concat(
        [summarise(per_run[k], ["group", "score"], "drop").assign(kind=k) for k in ABLATIONS if k in per_run]
    )
    seeds = _seeds(p)
    agree = [row for k in ABLATIONS if k in per_run for row in agreement(per_run["signals"], per_run[k], k, seeds)]
    return Explained(groups, w, ablation, pd.DataFrame(agree), per_run, p.chosen.cell, cells, seeds)


def group_of(e: Explained) -> dict[str, tuple[str, ...]]:
    """Group name -> its relations."""
    return {group_name(g): tuple(g) for g in e.groups}


def _seeds(p: Predicted) -> dict[int, str]:
    return {int(run_record(d)["seed"]): d.name for d in p.chosen.runs}
