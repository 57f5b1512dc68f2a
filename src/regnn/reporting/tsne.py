"""t-SNE of test-node representations (the paper's Figure 5: DBLP authors, GCN vs RE-GCN), one panel per model.

    python -m regnn.reporting.tsne [--cells DIR] [--out results] [--datasets dblp] [--models gcn re_gcn] [--run 0]
                                   [--allow-missing]

Reads runs/run_XX/embeddings.npz of each cell (written with save_embeddings=true); seeded openTSNE.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from openTSNE import TSNE

from regnn.paths import REPO_ROOT
from regnn.reporting.cells import CELLS, CellPool, MissingCells, as_pool
from regnn.reporting.common import label
from regnn.reporting.figures import save, subplots
from regnn.runs import embeddings


def embed_2d(x: np.ndarray, seed: int = 0) -> np.ndarray:
    return np.asarray(TSNE(n_components=2, perplexity=30, random_state=seed, n_jobs=1, verbose=False).fit(x))


def render(source, out: Path, dataset: str, models: list[str], run: int = 0, seed: int = 0) -> list[Path]:
    """One panel per model; with a pool that allows missing cells, the models without a cell are left out."""
    names = [f"{dataset}_{m}" for m in models]
    cells = as_pool(source).load(names)
    models = [m for m in models if f"{dataset}_{m}" in cells]
    if not models:
        raise MissingCells(f"none of the cells {', '.join(names)} is trained yet")
    fig, axes = subplots(1, len(models), figsize=(4.5 * len(models), 4.4), squeeze=False)
    for ax, m in zip(axes[0], models):
        f = cells[f"{dataset}_{m}"]["dir"] / "runs" / f"run_{run:02d}" / "embeddings.npz"
        if not f.exists():
            raise MissingCells(f"{f} is missing: train the cell with save_embeddings=true")
        emb, labels = embeddings.read_test(f)
        xy = embed_2d(emb, seed)
        sc = ax.scatter(xy[:, 0], xy[:, 1], c=labels, cmap="tab10", s=3, alpha=0.8, linewidths=0)
        ax.set_title(f"{label(m)} ({dataset.upper()}, run {run})")
        ax.set_xticks([]), ax.set_yticks([])
    # beside the last panel, where tight_layout (in save) makes room for it
    axes[0][-1].legend(
        *sc.legend_elements(), title="class", loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False
    )
    save(fig, out / "fig_tsne.png")
    return [out / "fig_tsne.png"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cells", default=str(CELLS))
    ap.add_argument("--out", default=str(REPO_ROOT / "results"))
    ap.add_argument("--datasets", nargs=1, default=["dblp"])
    ap.add_argument("--models", nargs="+", default=["gcn", "re_gcn"])
    ap.add_argument("--run", type=int, default=0)
    ap.add_argument("--allow-missing", action="store_true", help="draw the models whose cells exist, skip the others")
    a = ap.parse_args()
    pool = CellPool(a.cells, allow_missing=a.allow_missing)
    try:
        for w in render(pool, Path(a.out), a.datasets[0], a.models, a.run):
            print(f"wrote {w}", file=sys.stderr)
    except MissingCells as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if pool.missing:
        print(f"not drawn (not trained yet): {', '.join(pool.missing)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
