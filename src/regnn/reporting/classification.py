"""Table 2 (node classification): ours beside the paper's, with differences.

python -m regnn.reporting.classification [--cells DIR] [--out results] [--datasets dblp acm imdb]
"""

from __future__ import annotations

import pandas as pd

from regnn.catalog import PAPER_DATASETS
from regnn.reporting.cells import as_pool
from regnn.reporting.collect import write_table
from regnn.reporting.common import beside_paper, cli, label
from regnn.reporting.paper import reported

MODELS = ["gcn", "gat", "re_gcn", "re_gat"]


def classification_frame(cells: dict[str, dict], table: str = "classification") -> pd.DataFrame:
    rows = []
    for r in cells.values():
        m = r["metrics"]
        row = {"dataset": r["dataset"], "model": r["model"], "runs": r["runs"]}
        for k in ("macro_f1", "micro_f1"):
            paper, paper_std = reported(table, r["dataset"], r["model"], k)
            row |= {
                f"{k}_mean": m[f"test_{k}"]["mean"],
                f"{k}_std": m[f"test_{k}"]["std"],
                f"paper_{k}": paper,
                f"paper_{k}_std": paper_std,
                f"diff_{k}": None if paper is None else m[f"test_{k}"]["mean"] - paper,
            }
        row |= {
            "epoch_time_s": m["epoch_time_s"]["mean"],
            "train_time_s": m["train_time_s"]["mean"],
            "num_parameters": r.get("num_parameters"),
            "metapath": r.get("metapath"),
        }  # GCN-M/GAT-M: the meta-path picked by validation score
        rows.append(row)
    return pd.DataFrame(rows)


def render_frame(df: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "dataset": df["dataset"].str.upper(),
            "model": [
                label(m) + (f" ({p})" if isinstance(p, str) else "") for m, p in zip(df["model"], df["metapath"])
            ],
            "runs": df["runs"],
            **beside_paper(df, "macro_f1", "Macro-F1 (ours)", "Macro-F1 (paper)", "Δ Macro", paper_std=True),
            **beside_paper(df, "micro_f1", "Micro-F1 (ours)", "Micro-F1 (paper)", "Δ Micro", paper_std=True),
        }
    )


def render(source, out, datasets, models=MODELS, name="table_classification", title="Node classification (Table 2)"):
    pool = as_pool(source)
    cells = pool.load([f"{d}_{m}" for d in datasets for m in models])
    df = classification_frame(cells)
    write_table(
        df,
        render_frame(df),
        out,
        name,
        f"{title}: test F1 at the best validation epoch, mean ± std over runs",
        [
            "Ours: CPU, seeds 0-9, settings in conf/backbone, conf/relation, conf/model, conf/protocol and "
            "conf/tuned (the authors' scripts).",
            "Paper: RE-GNN (IEEE Transactions on Big Data, 2023); Δ = ours − paper. "
            "std is the population std over runs.",
        ],
        missing=pool.missing,
        devices=pool.devices,
    )
    return [out / f"{name}.csv", out / f"{name}.md"]


if __name__ == "__main__":
    raise SystemExit(cli(__doc__, render, list(PAPER_DATASETS)))
