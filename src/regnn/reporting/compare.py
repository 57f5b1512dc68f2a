"""The table and figure of an experiment=compare sweep: per model, validation and test Micro-F1 and Macro-F1
(mean ± std over the runs), seconds per epoch, and the winner by mean validation Micro-F1 (test never picks).

    python -m regnn.reporting.compare <sweep> [--dataset NAME] [--models mlp gcn ...] [--out PREFIX] [--archive DIR]

Writes PREFIX.csv, PREFIX.md and PREFIX.png (default PREFIX: <sweep>/compare). The cells are <sweep>/<dataset>_<model>;
on DBLP, ACM and IMDB a cell the sweep lacks is read from results/cells/<cell>.json (the summary an earlier
rendering kept, regnn.reporting.cells), unless the sweep is a tuned one. The notes name where every row was read,
the models refused on this graph (with the reason) and those not trained yet.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from omegaconf import DictConfig, OmegaConf

from regnn.catalog import PAPER_DATASETS
from regnn.evaluation.metrics import AT_CHANCE
from regnn.paths import REPO_ROOT
from regnn.reporting.cells import CellPool
from regnn.reporting.collect import fmt, write_table
from regnn.reporting.common import label
from regnn.reporting.compare_notes import cap_notes, capped, lead, protocol_note, separation_note
from regnn.reporting.compare_honest import (
    PAIRED_NOTE,
    chance_level,
    chance_notes,
    collapse,
    cost_notes,
    paired_to_best,
    tie_note,
    tied_best,
)

MODELS = ("mlp", "gcn", "rgcn", "simple_hgn", "re_gcn", "re_gat")  # the default rows, in the table's order

ESTIMATES = "compare_estimates.json"  # <sweep>/: each model's estimated cost and status (regnn.experiments.estimate)
METRICS = ("val_micro_f1", "test_micro_f1", "val_macro_f1", "test_macro_f1")
# a row's columns that a model without scores (refused, skipped, missing) or an older summary lacks
OPTIONAL = ("epoch_time_s", "reason", "runs_at_chance", "runs_below_chance", "chance", "collapsed")
OPTIONAL += ("learnt_test_micro_f1", "capped_runs", "max_epochs", "wall_time_s")


def default_archive(dataset: str, sweep: Path, tuned: bool | None = None) -> Path | None:
    """results/cells for the built-in datasets' untuned cells (the Table 2 cells), else None: a tuned sweep must never
    be filled in with untuned cells."""
    if tuned is None:
        tuned = bool(_sweep_config(sweep).get("compare", {}).get("tune", False))
    return REPO_ROOT / "results" / "cells" if dataset in PAPER_DATASETS and not tuned else None


def read_estimates(sweep: Path) -> dict[str, dict]:
    """model -> its row of the estimates written at the start of the sweep ({} where there are none)."""
    try:
        doc = json.loads((Path(sweep) / ESTIMATES).read_text())
    except (OSError, ValueError):
        return {}
    models = doc.get("models") if isinstance(doc, dict) else None
    return models if isinstance(models, dict) else {}


def _sweep_config(sweep: Path) -> dict:
    path = Path(sweep) / "multirun.yaml"  # written by Hydra at the start of the sweep
    return OmegaConf.to_container(OmegaConf.load(path), resolve=False) if path.is_file() else {}


def sweep_models(config: DictConfig) -> list[str]:
    """The models of the sweep: model=a,b on the command line, else hydra.sweeper.params.model."""
    swept = str(config.hydra.sweeper.params.model)
    for o in config.hydra.overrides.task:
        if o.startswith("model="):  # the command line wins over the params, as in Hydra's sweeper
            swept = o.split("=", 1)[1]
    return [m.strip() for m in swept.split(",") if m.strip()]


def with_cells_found(sweep: Path, dataset: str, models: list[str]) -> list[str]:
    """The sweep's models, then every other model with a cell in the folder (a sweep resumed with another model list
    rewrites multirun.yaml, but the cells its earlier lists finished are still results: rendered, never dropped)."""
    prefix = f"{dataset}_"
    found = sorted(
        d.name[len(prefix) :]
        for d in Path(sweep).glob(f"{prefix}*")
        if d.is_dir() and ((d / "config.yaml").is_file() or (d / "results.json").is_file())
    )
    return [*models, *(m for m in found if m not in models)]


def _row(model: str, cell: dict | None, refused: Path, estimated: dict) -> dict:
    row = {"model": model, "label": label(model), "runs": None, "source": "missing"}
    row["estimate_s"], row["expected_s"] = estimated.get("estimate_s"), estimated.get("expected_s")
    if cell is not None:
        row |= {"runs": cell["runs"], "source": "archive" if cell.get("archived") else "sweep"}
        for k in METRICS:
            row |= {f"{k}_mean": cell["metrics"][k]["mean"], f"{k}_std": cell["metrics"][k]["std"]}
        row["epoch_time_s"] = cell["metrics"]["epoch_time_s"]["mean"]
        row["wall_time_s"] = cell.get("wall_time_s")
        row |= collapse(cell) | capped(cell)
    elif refused.is_file():
        row |= {"source": "refused", "reason": refused.read_text().strip()}
    elif estimated.get("status") == "skipped":
        row |= {"source": "skipped", "reason": estimated.get("reason")}
    return row


def compare_frame(pool: CellPool, dataset: str, models: list[str]) -> tuple[pd.DataFrame, list[str]]:
    """One row per model (in the given order; a model without scores keeps its row, empty), and the notes."""
    names = [f"{dataset}_{m}" for m in models]
    cells = pool.load(names)
    est = read_estimates(pool.dir)
    df = pd.DataFrame(
        [_row(m, cells.get(n), pool.dir / n / "refused.txt", est.get(m, {})) for m, n in zip(models, names)]
    )
    df["collapsed"] = df.get("collapsed", pd.Series(False, index=df.index)).fillna(False).astype(bool)
    for k in [f"{k}_{s}" for k in METRICS for s in ("mean", "std")] + list(OPTIONAL):
        if k not in df:
            df[k] = np.nan
    scored = df[df.val_micro_f1_mean.notna()]
    tied = tied_best(scored)
    winner = tied[0] if len(tied) == 1 else None  # a tie on validation has no winner: test never breaks it
    df["winner"] = df.model == winner
    df["tied"] = df.model.isin(tied) & (len(tied) > 1)
    notes = [tie_note(df)] if len(tied) > 1 else []
    if winner is not None:
        w = df[df.winner].iloc[0]
        notes.append(
            f"Winner: {w.label}, the highest mean validation Micro-F1 ({w.val_micro_f1_mean:.2f}); test "
            "scores are shown, never used to pick. F1 at the best validation epoch of each run, mean ± std "
            "(population) over the runs; every model with the same trainer, splits and seeds."
        )
    by_model = {m: cells[f"{dataset}_{m}"] for m in models if f"{dataset}_{m}" in cells}
    note, df["lead_beyond_noise"] = lead(df, by_model)
    df["val_vs_best"] = paired_to_best(df, by_model)
    notes += ([note] if note and winner is not None else []) + chance_notes(df) + cap_notes(df) + cost_notes(df)
    notes += [PAIRED_NOTE] if df.val_vs_best.astype(bool).any() else []
    for source, what in (
        ("sweep", f"from {pool.dir}"),
        ("archive", f"from {pool.archive} (summaries of cells trained earlier)"),
    ):
        read = [f"{dataset}_{m}" for m in df.model[df.source == source]]
        if read:
            notes.append(f"Cells read {what}: {', '.join(read)}.")
    for _, r in df[df.collapsed].iterrows():
        notes.append(
            f"Collapsed: {r.label}: {int(r.runs_at_chance)} of {int(r.runs)} runs at chance (test Micro-F1 "
            f"within {AT_CHANCE:g} of {r.chance:.2f}, what always predicting the largest class scores); the "
            f"runs that learned score {r.learnt_test_micro_f1:.2f} test Micro-F1 on average. Its mean mixes "
            "runs that learned nothing with runs that did: with these settings the model is unreliable on "
            "this graph, not merely weaker."
        )
    for _, r in df[df.source == "refused"].iterrows():
        notes.append(f"Refused on this graph: {r.label}: {r.reason}")
    for _, r in df[df.source == "skipped"].iterrows():
        notes.append(f"Skipped by compare.budget: {r.label}: {r.reason}; a larger budget (or none) trains it.")
    return df, notes


def _runs_cell(runs, source, at_chance, below, at_cap) -> str:
    if source in ("refused", "skipped") or pd.isna(runs):
        return source if source in ("refused", "skipped") else "–"
    marks = [
        f"{int(k)} {what}"
        for k, what in ((at_chance, "at chance"), (below, "below chance"), (at_cap, "at the epoch cap"))
        if k and k > 0
    ]
    return ", ".join([str(int(runs)), *marks])


def render_frame(df: pd.DataFrame) -> pd.DataFrame:
    def f1(k):
        return [fmt(a, b) for a, b in zip(df[f"{k}_mean"], df[f"{k}_std"])]

    return pd.DataFrame(
        {
            "model": [
                f"**{lab}** (winner)"
                if w
                else lab + (" (tied on validation)" if t else "") + (" (collapsed)" if c else "")
                for lab, w, t, c in zip(df.label, df.winner, df.tied, df.collapsed)
            ],
            "runs": [
                _runs_cell(r, s, k if c else 0, b, cap)
                for r, s, k, c, b, cap in zip(
                    df.runs, df.source, df.runs_at_chance, df.collapsed, df.runs_below_chance, df.capped_runs
                )
            ],
            "val Micro-F1": f1("val_micro_f1"),
            "val vs best, paired": list(df.val_vs_best),
            "test Micro-F1": f1("test_micro_f1"),
            "val Macro-F1": f1("val_macro_f1"),
            "test Macro-F1": f1("test_macro_f1"),
            "s/epoch": [fmt(t, digits=3) for t in df.epoch_time_s],
        }
    )


def figure(df: pd.DataFrame, path: Path, title: str) -> None:
    """Validation and test Micro-F1, mean ± std per model; the winner's label in bold."""
    from regnn.reporting.figures import save, subplots

    fig, ax = subplots(figsize=(8, 0.45 * len(df) + 1.4))
    y = np.arange(len(df))[::-1]
    for k, off, color, marker, name in (
        ("val_micro_f1", 0.12, "#1f77b4", "o", "validation"),
        ("test_micro_f1", -0.12, "#d62728", "s", "test"),
    ):
        ax.errorbar(df[f"{k}_mean"], y + off, xerr=df[f"{k}_std"], fmt=marker, color=color, capsize=3, label=name)
    marked = ("refused", "skipped", "missing")
    ax.set_yticks(y, [f"{lab} ({s})" if s in marked else lab for lab, s in zip(df.label, df.source)])
    for tick, w in zip(ax.get_yticklabels(), df.winner):
        tick.set_fontweight("bold" if w else "normal")
    chance = chance_level(df)
    if chance is not None:  # what always predicting the largest class scores on test
        ax.axvline(chance, color="0.4", ls="--", lw=1, label=f"chance (largest class) {chance:.2f}")
    ax.set_xlabel("Micro-F1 (mean ± std over runs)")
    ax.set_title(title)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)  # outside: never over a point
    save(fig, path)


def render(
    sweep: Path,
    dataset: str,
    models: list[str],
    out: Path | None = None,
    archive: Path | None = None,
    graph: str | None = None,
) -> list[Path]:
    """Reads the cells (<sweep>/<dataset>_<model>) and writes OUT.csv, OUT.md, OUT.png (OUT: <sweep>/compare by
    default), titled with the graph's own name (default: the dataset's)."""
    sweep = Path(sweep)
    out = Path(out) if out is not None else sweep / "compare"
    pool = CellPool(sweep, allow_missing=True, archive=archive)
    df, notes = compare_frame(pool, dataset, models)
    notes = protocol_note(_sweep_config(sweep)) + notes + separation_note(sweep)
    title = f"Every model on {graph or dataset}"
    write_table(
        df,
        render_frame(df),
        out.parent,
        out.name,
        f"{title}: validation and test F1",
        notes,
        missing=[f"{dataset}_{m}" for m in df.model[df.source == "missing"]],
        devices=pool.devices,
    )
    figure(df, out.with_suffix(".png"), title)
    return [out.with_suffix(s) for s in (".csv", ".md", ".png")]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sweep", help="the sweep folder of experiment=compare (or a cell pool)")
    ap.add_argument("--dataset", help="default: the sweep's (its multirun.yaml)")
    ap.add_argument("--models", nargs="+", help="default: the sweep's, else MODELS")
    ap.add_argument("--out", help="prefix of the files (default: <sweep>/compare)")
    ap.add_argument(
        "--archive",
        help="cell summaries for the cells the sweep lacks (default: results/cells on "
        "DBLP, ACM and IMDB, untuned sweeps only)",
    )
    a = ap.parse_args(argv)
    sweep = Path(a.sweep)
    conf = _sweep_config(sweep)
    dataset = a.dataset or conf.get("dataset", {}).get("name")
    if not dataset:
        print(f"error: {sweep} has no multirun.yaml naming its dataset; pass --dataset", file=sys.stderr)
        return 1
    models = a.models or with_cells_found(
        sweep, dataset, sweep_models(OmegaConf.create(conf)) if conf else list(MODELS)
    )
    archive = Path(a.archive) if a.archive else default_archive(dataset, sweep)
    graph = None
    if conf.get("dataset", {}).get("name") == dataset:  # the sweep's own graph: titled with its name
        from regnn.description import graph_name

        with contextlib.suppress(Exception):
            graph = graph_name(conf["dataset"])
    for w in render(sweep, dataset, models, Path(a.out) if a.out else None, archive, graph=graph):
        print(f"wrote {w}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
