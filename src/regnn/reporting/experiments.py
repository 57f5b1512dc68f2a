"""The paper's tables and figures that this project reproduces, and `make tables`: render them all from the cells.

    python -m regnn.reporting.experiments [--cells DIR] [--out results] [--allow-missing] [--list]

Renders every table and figure of EXPERIMENTS from the trained cells (no training; seconds), names each one and
what happened to it, then regenerates the results sections of README.md and docs/ (regnn.reporting.readme).
A cell missing from the pool is read from results/cells/<cell>.json, the summary (results.json and relation
weights) that an earlier rendering kept of it; every rendering writes there the summaries of the pool's cells.
A table whose cells are not all trained is not rendered: its committed files in results/ stay as they are, and the
line names the make target that trains the missing cells (`make reproduce` trains every missing cell).
Figure 8 is a timing, not a set of cells: `make fig-efficiency` measures and renders it.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from dataclasses import dataclass, field
from pathlib import Path

from regnn import catalog
from regnn.paths import REPO_ROOT
from regnn.reporting.cells import CELLS, CellPool, MissingCells


@dataclass(frozen=True)
class Experiment:
    target: str             # make target that trains the missing cells, then renders
    item: str               # the paper's table or figure
    what: str
    outputs: tuple[str, ...]  # files in results/
    renderer: str | None = None  # module in regnn.reporting (None: measured, not rendered from cells)
    datasets: tuple[str, ...] = ("dblp",)
    kwargs: dict = field(default_factory=dict)


EXPERIMENTS = [
    Experiment("table-classification", "Table 2", "node classification: GCN, GAT, RE-GCN, RE-GAT on DBLP, ACM, IMDB",
               ("table_classification.csv", "table_classification.md"), "classification", catalog.PAPER_DATASETS),
    Experiment("table-baselines", "Table 2 (baselines)",
               "every heterogeneous baseline trained on this harness beside the Table 2 models",
               ("table_baselines.csv", "table_baselines.md"), "baselines", catalog.PAPER_DATASETS),
    Experiment("table-clustering", "Table 3", "K-Means NMI / ARI on the representations of the baselines, GCN and RE-GCN",
               ("table_clustering.csv", "table_clustering.md"), "clustering", catalog.PAPER_DATASETS),
    Experiment("table-ablation", "Table 5", "plain, -S, -E and RE versions of GCN and GAT on DBLP",
               ("table_ablation.csv", "table_ablation.md"), "ablation"),
    Experiment("fig-backbones", "Figure 3", f"{', '.join(map(catalog.label, catalog.FIGURE3_BACKBONES))}, plain vs RE, "
               f"{' and '.join(d.upper() for d in catalog.FIGURE3_DATASETS)}",
               ("table_backbones.csv", "table_backbones.md", "fig_backbones.png"), "backbones", catalog.FIGURE3_DATASETS),
    Experiment("fig-tsne", "Figure 5", "t-SNE of DBLP author representations, GCN vs RE-GCN",
               ("fig_tsne.png",), "tsne", kwargs={"models": ["gcn", "re_gcn"]}),
    Experiment("fig-lambda", "Figure 6", "RE-GCN on DBLP for lambda 0.001, 1, 100, 1000",
               ("table_lambda.csv", "table_lambda.md", "fig_lambda.png"), "lambda_study"),
    Experiment("fig-case-study", "Figure 7", "relation weights in every layer of a 4-layer RE-GCN on DBLP",
               ("case_study_weights.csv", "fig_case_study.png"), "case_study"),
    Experiment("fig-efficiency", "Figure 8", "parameters, time per epoch and per run, peak memory of every model on DBLP",
               ("table_efficiency.csv", "table_efficiency.md", "fig_efficiency.png")),
]


def render_one(e: Experiment, pool: CellPool, out: Path) -> str:
    """Renders one experiment; returns the line that says what happened to it."""
    files = ", ".join(f"results/{o}" for o in e.outputs)
    head = f"{e.item:<20} {e.what}\n{'':<20} "
    if e.renderer is None:
        return head + f"kept {files} (a measurement: `make {e.target}` measures and renders it)"
    mod = importlib.import_module(f"regnn.reporting.{e.renderer}")
    try:
        if e.renderer == "tsne":
            mod.render(pool, out, e.datasets[0], **e.kwargs)
        else:
            mod.render(pool, out, list(e.datasets), **e.kwargs)
    except MissingCells as err:
        return head + f"kept {files}: {err} (`make {e.target}` trains them)"
    except SystemExit as err:  # a renderer's one-line refusal, e.g. cells trained without what the table needs
        return head + f"kept {files}: {err} (`make {e.target}` trains what it needs)"
    finally:  # the cells that are trained are kept even when their table waits for others
        pool.save_archive()
    partial = f" (cells missing, named in the notes: {', '.join(pool.missing)})" if pool.missing else ""
    return head + f"rendered {files}{partial}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cells", default=str(CELLS), help="the experiment cell pool")
    ap.add_argument("--out", default=str(REPO_ROOT / "results"))
    ap.add_argument("--allow-missing", action="store_true",
                    help="render tables whose cells are partly trained (the missing cells are named in the notes)")
    ap.add_argument("--list", action="store_true", help="only list the tables and figures and their make targets")
    a = ap.parse_args(argv)
    if a.list:
        for e in EXPERIMENTS:
            print(f"{e.item:<20} make {e.target:<22} {e.what}")
        return 0
    for e in EXPERIMENTS:
        # t-SNE reads the runs' embeddings, which only the pool has; the tables can read archived summaries
        archive = None if e.renderer == "tsne" else Path(a.out) / "cells"
        pool = CellPool(a.cells, allow_missing=a.allow_missing, archive=archive)
        print(render_one(e, pool, Path(a.out)))
    if Path(a.out).resolve() != (REPO_ROOT / "results").resolve():
        return 0  # README.md and docs/ show the committed results only
    from regnn.reporting import readme
    changed = readme.update_all(REPO_ROOT)
    print(f"{'README, docs':<20} results sections regenerated from results/: "
          + (", ".join(changed) if changed else "every page already up to date"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
