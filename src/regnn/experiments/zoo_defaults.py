"""`dataset=custom` defaults chosen on a zoo of generated graphs (regnn.data.zoo) and scored out of sample.

Each model's candidate settings (GRID: its defaults and one change at a time) are trained on every family with
seeds 0..SELECT_SEEDS-1. Leave one family out: for each family, the setting with the best mean validation Micro-F1
over the OTHER families is chosen, then scored on the family left out with 10 seeds (test scores never choose).
The setting chosen over every family is scored the same way on DBLP, ACM and IMDB written as custom graphs (their
files, no per-dataset settings). Every graph is trained as a user's is: `dataset=custom dataset.path=...`.

    python -m regnn.experiments.zoo_defaults [--families ...] [--models ...] [--builtin dblp acm imdb]

Cells live under outputs/zoo/ and are resumed; the report: results/zoo/zoo.md, every run in results/zoo/runs.csv
(--estimates: results/zoo/estimates.csv, compare's estimate of each first-setting cell beside its time).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from regnn.paths import REPO_ROOT
from regnn.reporting.zoo import markdown
from regnn.runs.io_safe import write_text

log = logging.getLogger("regnn")
SELECT_SEEDS = 3
SCORE_SEEDS = 10
# one change at a time around each model's defaults (the first setting)
GRID = {
    "re_gcn": {
        "defaults": [],
        "lr 2e-3": ["optimizer.lr=0.002"],
        "weight decay 5e-3": ["optimizer.weight_decay=0.005"],
    },
    "re_gat": {
        "defaults": [],
        "lr 5e-3": ["optimizer.lr=0.005"],
    },
    "rgcn": {  # its settings named by value: lr 1e-2, chosen here, is now its dataset=custom default
        "lr 1e-3": ["optimizer.lr=0.001"],
        "lr 1e-2": ["optimizer.lr=0.01"],
    },
}
REFERENCE = ("mlp",)  # scored with their defaults only: what the target's own features give
BUILTIN = ("dblp", "acm", "imdb")


def graph_path(name: str, work: Path) -> Path:
    """The graph written as a user's (npz + dataset.yaml), once."""
    from regnn.data.custom import save_npz

    folder = work / "graphs" / name
    if (folder / "dataset.yaml").exists():
        return folder / "dataset.yaml"
    if name in BUILTIN:
        from regnn.data import load_dataset

        data = load_dataset(name, dir=REPO_ROOT / "data" / name.upper())
    else:
        from regnn.data.zoo import FAMILIES

        data = FAMILIES[name].graph.build()
    return save_npz(data, folder)


def cell_dir(work: Path, graph: str, model: str, setting: str, seeds: range) -> Path:
    return work / "cells" / graph / model / setting.replace(" ", "_") / f"seeds_{seeds.start}-{seeds.stop - 1}"


def cell(graph: str, model: str, setting: str, seeds: range, work: Path, collect: bool = False) -> Path | None:
    """Trains (or resumes) one model x setting x graph over these seeds; returns the cell's folder (collect: train
    nothing, None where the cell is not finished)."""
    import regnn

    overrides = GRID.get(model, {}).get(setting, [])
    out = cell_dir(work, graph, model, setting, seeds)
    if collect:
        return out if (out / "results.json").exists() else None
    if not (out / "results.json").exists():
        log.info("zoo: %s %s (%s) seeds %d-%d", graph, model, setting, seeds.start, seeds.stop - 1)
    settings = ["progress=false", "threads=2", "workers=2", "resume=true", "logger=none"]
    data = ["dataset=custom", f"dataset.path={graph_path(graph, work)}"]
    regnn.run([f"model={model}", *data, f"seed={seeds.start}", f"runs={len(seeds)}", *settings, *overrides], out)
    return out


def rows_of(out: Path | None, graph: str, model: str, setting: str) -> list[dict]:
    from omegaconf import OmegaConf

    if out is None:  # --collect: a cell not trained yet
        return []
    res = json.loads((out / "results.json").read_text())
    cap = int(OmegaConf.load(out / "config.yaml").trainer.max_epochs)
    chance = res.get("chance_test_micro_f1")
    return [
        {"graph": graph, "model": model, "setting": setting, "seed": r["seed"], "val": r["val_micro_f1"],
         "test": r["test_micro_f1"], "best_epoch": r["best_epoch"], "epochs": r["epochs"], "cap": cap,
         "at_cap": r["epochs"] >= cap, "chance": chance, "epoch_time_s": r.get("epoch_time_s")}
        for r in res["per_run"] if "failed" not in r
    ]  # fmt: skip


def train_all(families, models, builtin, work: Path, builtin_models=None, collect=False) -> tuple[pd.DataFrame, dict]:
    """Every setting on every family (selection seeds), then each graph's chosen settings over the remaining
    scoring seeds. Returns every run and the picks {(graph, model): setting}."""
    rows = []
    for g in families:
        for m in models:
            for s in GRID.get(m, {"defaults": []}):
                rows += rows_of(cell(g, m, s, range(SELECT_SEEDS), work, collect), g, m, s)
    selection, picks = pd.DataFrame(rows), {}
    for g in [*families, *builtin]:
        for m in builtin_models if g in builtin and builtin_models else models:
            s = picks[(g, m)] = chosen(selection, m, [f for f in selecting(families) if f != g])
            if g in builtin:
                rows += rows_of(cell(g, m, s, range(SELECT_SEEDS), work, collect), g, m, s)
            rows += rows_of(cell(g, m, s, range(SELECT_SEEDS, SCORE_SEEDS), work, collect), g, m, s)
    return pd.DataFrame(rows), picks


def estimate_rows(families: list[str], models: list[str], work: Path) -> list[dict]:
    """compare's estimate (regnn.experiments.estimate: 3 timed epochs, runs in their workers, twice the patience)
    of each model's cell of its first setting on each family, beside the time that cell took (selection seeds)."""
    from regnn.experiments import estimate
    from regnn.pipeline.api import compose

    rows = []
    for g in families:
        for m in models:
            setting, overrides = next(iter(GRID.get(m, {"defaults": []}).items()))
            out = cell_dir(work, g, m, setting, range(SELECT_SEEDS))
            data = ["dataset=custom", f"dataset.path={graph_path(g, work)}", *overrides]
            cfg = compose(["experiment=compare", f"model={m}", *data, f"runs={SELECT_SEEDS}", "threads=2", "workers=2"])
            row = estimate.estimate(cfg, 3)
            res = json.loads((out / "results.json").read_text())
            took, exp, per = res["wall_time_s"], row["expected_s"], res["per_run"]
            rows.append({
                "graph": g, "model": m, "workers": row["workers"], "expected_s": exp, "took_s": took,
                "ratio": took / exp, "expected_epochs": row["expected_epochs"],
                "epochs": float(np.mean([r["epochs"] for r in per])), "timed_s_per_epoch": row["s_per_epoch"],
                "run_s_per_epoch": float(np.median([r["epoch_time_s"] for r in per])),
            })  # fmt: skip
            log.info("zoo: estimate %s %s: expected %.0f s, took %.0f s", g, m, row["expected_s"], took)
    return rows


def selecting(families: list[str]) -> list[str]:
    """The families that take part in choosing (regnn.data.zoo.Family.select)."""
    from regnn.data.zoo import FAMILIES

    return [f for f in families if FAMILIES[f].select]


def chosen(runs: pd.DataFrame, model: str, on: list[str]) -> str:
    """The setting with the best mean validation Micro-F1 over these families (selection seeds only)."""
    sel = runs[(runs.model == model) & runs.graph.isin(on) & (runs.seed < SELECT_SEEDS)]
    if sel.empty or model not in GRID:
        return "defaults"
    by_graph = sel.groupby(["setting", "graph"]).val.mean().unstack()
    score = by_graph.dropna().mean(axis=1)
    return str(score.idxmax())


def main(argv=None) -> int:
    from regnn.data.zoo import FAMILIES

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--families", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    ap.add_argument("--models", nargs="+", default=[*GRID, *REFERENCE])
    ap.add_argument("--builtin", nargs="*", default=list(BUILTIN), choices=BUILTIN)
    ap.add_argument("--builtin-models", nargs="+", help="the models scored on the built-in graphs (default: all)")
    ap.add_argument("--work", default=str(REPO_ROOT / "outputs" / "zoo"))
    ap.add_argument("--out", default=str(REPO_ROOT / "results" / "zoo"))
    ap.add_argument("--collect", action="store_true", help="train nothing: report the cells that are finished")
    ap.add_argument(
        "--estimates", action="store_true", help="only: compare's estimates beside the defaults cells' times"
    )
    a = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s] %(message)s", datefmt="%H:%M:%S", stream=sys.stderr)
    if a.estimates:
        rows = pd.DataFrame(estimate_rows(a.families, a.models, Path(a.work)))
        Path(a.out).mkdir(parents=True, exist_ok=True)
        write_text(Path(a.out) / "estimates.csv", rows.to_csv(index=False, float_format="%.2f"))
        print(rows.to_string(index=False))
        return 0
    runs, picks = train_all(a.families, a.models, a.builtin, Path(a.work), a.builtin_models, a.collect)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    meta = {"select_seeds": SELECT_SEEDS, "score_seeds": SCORE_SEEDS, "grid": GRID,
            "about": {f: FAMILIES[f].about for f in a.families}}  # fmt: skip
    text = markdown(runs, a.families, a.builtin, picks, meta)
    overall = {m: chosen(runs, m, selecting(a.families)) for m in a.models}
    text += "\n## Chosen over every family that chooses (the `dataset=custom` defaults)\n\n" + "".join(
        f"- {m}: {s}" + (f" (`{' '.join(GRID[m][s])}`)" if GRID.get(m, {}).get(s) else "") + "\n"
        for m, s in overall.items()
    )
    write_text(out / "runs.csv", runs.to_csv(index=False, float_format="%.4f"))
    write_text(out / "zoo.md", text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
