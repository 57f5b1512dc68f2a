"""Figure 7: the learned weight of every relation type in every layer of a 4-layer RE-GCN on DBLP; and the same
figure for any cell with relation weights (one's own graph, any RE-model).

    python -m regnn.reporting.case_study [--cells DIR] [--out results] [--datasets dblp]
    python -m regnn.reporting.case_study --cell outputs/compare/shops/custom_re_gcn --out outputs/shops_weights

A heatmap (layers x relations, mean over the runs), with its numbers in relation_weights.csv; weights under 0.4,
which the paper removes from its drawing, are hatched and greyed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.patches import Rectangle

from regnn.description import relation_label
from regnn.reporting.cells import MissingCells, as_pool, mean_weights
from regnn.runs.io_safe import is_cell_summary, read_json
from regnn.reporting.common import cli
from regnn.reporting.figures import save, subplots

HIDE_BELOW = 0.4


def render(source, out, datasets):
    pool = as_pool(source)
    d = datasets[0]
    cell = pool.load([f"{d}_re_gcn"], whole="the case study draws this one cell")[f"{d}_re_gcn"]
    return draw(cell, out, "case_study_weights.csv", "fig_case_study.png", f"RE-GCN on {d.upper()}")


def draw(cell: dict, out: Path, table: str, figure: str, what: str) -> list[Path]:
    """The layers x relations heatmap of a cell summary's relation weights (mean over its runs) and its CSV."""
    if not cell.get("relation_weights") or not cell["relation_weights"][0].get("layers"):
        raise MissingCells(
            f"{cell.get('model', 'the cell')} has no relation weights to draw (a model without "
            "them, or a cell trained before they were kept)"
        )
    layers = len(cell["relation_weights"][0]["layers"])
    rows = [mean_weights(cell, i) for i in range(layers)]
    names = rows[0][0]
    w = np.array([r[1] for r in rows])
    out.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(w, columns=names, index=[f"layer {i + 1}" for i in range(layers)]).to_csv(
        out / table, float_format="%.4f"
    )
    fig, ax = subplots(figsize=(1.0 * len(names) + 2, 0.7 * layers + 2))
    im = ax.imshow(w, cmap="viridis", aspect="auto")
    for i in range(layers):
        for j in range(len(names)):
            faint = w[i, j] < HIDE_BELOW
            ax.text(
                j,
                i,
                f"{w[i, j]:.2f}",
                ha="center",
                va="center",
                fontsize=8,
                color="0.6" if faint else ("k" if w[i, j] > w.max() * 0.6 else "w"),
            )
            if faint:
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor="0.92", hatch="//", edgecolor="0.75", lw=0))
    ends = cell.get("relations") or {}
    labels = [relation_label(n, ends.get(n)) for n in names]
    ax.set_xticks(range(len(names)), labels, rotation=35, ha="right", fontsize=8)
    ax.set_yticks(range(layers), [f"layer {i + 1}" for i in range(layers)])
    ax.set_title(
        f"{what}: learned relation weights (mean of {len(cell['relation_weights'])} runs; < {HIDE_BELOW} hatched)",
        fontsize=10,
    )
    fig.colorbar(im, ax=ax, fraction=0.03)
    save(fig, out / figure)
    return [out / table, out / figure]


def draw_cell(cell_dir: Path, out: Path) -> list[Path]:
    """relation_weights.csv and relation_weights.png of a cell folder that train.py wrote."""
    cell = read_json(Path(cell_dir) / "results.json", is_cell_summary)
    if cell is None:
        raise MissingCells(f"{cell_dir} holds no finished results.json: give a cell folder train.py finished")
    cell["relation_weights"] = read_json(Path(cell_dir) / "relation_weights.json") or []
    return draw(
        cell,
        out,
        "relation_weights.csv",
        "relation_weights.png",
        f"{cell.get('model', '?')} on {cell.get('graph') or cell.get('dataset', '?')}",
    )


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--cell" not in argv:
        return cli(__doc__, render, ["dblp"])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cell", required=True, help="a cell folder of a model with relation weights")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    try:
        written = draw_cell(Path(a.cell), Path(a.out))
    except MissingCells as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    for w in written:
        print(f"wrote {w}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
