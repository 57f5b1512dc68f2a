"""Figure 7: the learned weight of every relation type in every layer of a 4-layer RE-GCN on DBLP.

    python -m regnn.reporting.case_study [--cells DIR] [--out results] [--datasets dblp]

A heatmap (layers x relations, mean over the 10 runs); weights under 0.4, which the paper removes from its
drawing, are hatched and greyed.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.patches import Rectangle

from regnn.reporting.cells import as_pool, mean_weights
from regnn.reporting.common import cli
from regnn.reporting.figures import save, subplots

HIDE_BELOW = 0.4


def render(source, out, datasets):
    pool = as_pool(source)
    d = datasets[0]
    cell = pool.load([f"{d}_re_gcn"], whole="the case study draws this one cell")[f"{d}_re_gcn"]
    layers = len(cell["relation_weights"][0]["layers"])
    rows = [mean_weights(cell, i) for i in range(layers)]
    names = rows[0][0]
    w = np.array([r[1] for r in rows])
    out.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(w, columns=names, index=[f"layer {i + 1}" for i in range(layers)]).to_csv(
        out / "case_study_weights.csv", float_format="%.4f")
    fig, ax = subplots(figsize=(1.0 * len(names) + 2, 0.7 * layers + 2))
    im = ax.imshow(w, cmap="viridis", aspect="auto")
    for i in range(layers):
        for j in range(len(names)):
            faint = w[i, j] < HIDE_BELOW
            ax.text(j, i, f"{w[i, j]:.2f}", ha="center", va="center", fontsize=8,
                    color="0.6" if faint else ("k" if w[i, j] > w.max() * 0.6 else "w"))
            if faint:
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor="0.92", hatch="//", edgecolor="0.75", lw=0))
    ax.set_xticks(range(len(names)), names, rotation=35, ha="right", fontsize=8)
    ax.set_yticks(range(layers), [f"layer {i + 1}" for i in range(layers)])
    ax.set_title(f"RE-GCN on {d.upper()}: learned relation weights (mean of {len(cell['relation_weights'])} runs; "
                 f"< {HIDE_BELOW} hatched)", fontsize=10)
    fig.colorbar(im, ax=ax, fraction=0.03)
    save(fig, out / "fig_case_study.png")
    return [out / "case_study_weights.csv", out / "fig_case_study.png"]


if __name__ == "__main__":
    raise SystemExit(cli(__doc__, render, ["dblp"]))
