"""Command-line plumbing shared by the table and figure renderers."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from regnn import catalog
from regnn.paths import REPO_ROOT
from regnn.reporting.cells import CELLS, CellPool, MissingCells
from regnn.reporting.collect import fmt
from regnn.reporting.paper import reported

# the models outside the relation group; regnn.catalog names the others (RE-GCN, GCN-S, ...)
LABELS = {
    "rgcn": "R-GCN",
    "hgt": "HGT",
    "simple_hgn": "Simple-HGN",
    "han": "HAN",
    "gtn": "GTN",
    "gcn_m": "GCN-M",
    "gat_m": "GAT-M",
    "mlp": "MLP",
    "metapath2vec": "Metapath2vec",
    "magnn": "MAGNN",
    "magnn_ac": "MAGNN-AC",
    "rhgnn": "R-HGNN",
}


def label(model: str) -> str:
    return LABELS.get(model) or catalog.model_label(model) or model


def signed(d) -> str:
    return "–" if d is None or d != d else f"{d:+.2f}"


def with_paper(table: str, dataset: str, model: str, key: str, mean: float, std: float) -> dict:
    """A row's <key>_mean and _std, the paper's number (paper_<key>, from its `table`) and ours minus it (diff_<key>,
    None where the paper gives none)."""
    paper, _ = reported(table, dataset, model, key)
    diff = None if paper is None else mean - paper
    return {f"{key}_mean": mean, f"{key}_std": std, f"paper_{key}": paper, f"diff_{key}": diff}


def beside_paper(df, metric: str, ours: str, paper: str, delta: str, paper_std: bool = False) -> dict:
    """Three columns of a table: ours (<metric>_mean ± <metric>_std), the paper's (paper_<metric>, ± its std where
    the paper gives one) and the difference (diff_<metric>), under the names given."""
    stds = df[f"paper_{metric}_std"] if paper_std else [None] * len(df)
    return {
        ours: [fmt(a, b) for a, b in zip(df[f"{metric}_mean"], df[f"{metric}_std"])],
        paper: [fmt(a, b) for a, b in zip(df[f"paper_{metric}"], stds)],
        delta: [signed(d) for d in df[f"diff_{metric}"]],
    }


def cli(doc: str, render, datasets: list[str]) -> int:
    """Parses --cells/--out/--datasets/--allow-missing and runs render(pool, out_dir, datasets); missing cells
    -> exit 1 (unless --allow-missing). Cells absent from the pool are read from <out>/cells (the summaries of
    earlier renderings), and the summaries of the pool's cells are written there."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cells", default=str(CELLS), help="the experiment cell pool")
    ap.add_argument("--out", default=str(REPO_ROOT / "results"))
    ap.add_argument("--datasets", nargs="+", default=datasets)
    ap.add_argument(
        "--allow-missing",
        action="store_true",
        help="render the cells that exist and list the missing ones (default: missing cells are an error)",
    )
    a = ap.parse_args()
    pool = CellPool(a.cells, allow_missing=a.allow_missing, archive=Path(a.out) / "cells")
    try:
        written = render(pool, Path(a.out), a.datasets)
    except MissingCells as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:  # the cells that are trained are kept even when their table waits for others
        saved = pool.save_archive()
    written += [pool.archive / f"{n}.json" for n in saved]
    for w in written:
        print(f"wrote {w}", file=sys.stderr)
    return 0


def write_study(out, rows: list[dict], markdown: str) -> None:
    """A study's committed output: <out>.csv (one row per dict) and <out>.md (its report), each written whole; the
    report is printed too."""
    from pathlib import Path

    import pandas as pd

    from regnn.runs.io_safe import write_text

    out = Path(out)
    write_text(out.with_suffix(".csv"), pd.DataFrame(rows).to_csv(index=False))
    write_text(out.with_suffix(".md"), markdown)
    print(markdown)
