"""Table 5 (ablation on DBLP): plain, -S (self-loop embeddings), -E (relation embeddings), RE (both).

python -m regnn.reporting.ablation [--cells DIR] [--out results] [--datasets dblp]
"""

from __future__ import annotations

import pandas as pd

from regnn.reporting.cells import as_pool, metric
from regnn.reporting.collect import write_table
from regnn.reporting.common import beside_paper, cli, label, with_paper

ORDERS = [["gcn", "gcn_s", "gcn_e", "re_gcn"], ["gat", "gat_s", "gat_e", "re_gat"]]


def _switches(model: str) -> tuple[bool, bool]:
    """(relation embeddings, self-loop embeddings) of a model name: re_x both, x_e edges, x_s self-loops."""
    return model.startswith("re_") or model.endswith("_e"), model.startswith("re_") or model.endswith("_s")


def render(source, out, datasets):
    pool = as_pool(source)
    rows, checks = [], []
    for d in datasets:
        cells = pool.load([f"{d}_{m}" for order in ORDERS for m in order])
        for order in ORDERS:
            claim = f"{d.upper()}: {' < '.join(label(m) for m in order[:3])} <= {label(order[3])}"
            present = [m for m in order if f"{d}_{m}" in cells]
            if present != order:  # --allow-missing
                checks.append(f"{claim}: not checked (cells missing)")
            else:
                micro = [metric(cells[f"{d}_{m}"], "test_micro_f1")[0] for m in order]
                holds = micro[0] < micro[1] < micro[2] <= micro[3]
                checks.append(
                    f"{claim}: {'holds' if holds else 'does not hold'} ({', '.join(f'{v:.2f}' for v in micro)})"
                )
            for m in present:
                c = cells[f"{d}_{m}"]
                et, sl = _switches(m)
                row = {"dataset": d, "model": m, "runs": c["runs"], "edge_emb": et, "self_loop_emb": sl}
                for k in ("macro_f1", "micro_f1"):
                    row |= with_paper("ablation", d, m, k, *metric(c, f"test_{k}"))
                rows.append(row)
    df = pd.DataFrame(rows)
    md = pd.DataFrame(
        {
            "dataset": df.dataset.str.upper(),
            "model": df.model.map(label),
            "runs": df.runs,
            "ET emb": df.edge_emb.map({True: "✓", False: ""}),
            "SL emb": df.self_loop_emb.map({True: "✓", False: ""}),
            **beside_paper(df, "macro_f1", "Macro-F1 (ours)", "Macro (paper)", "Δ Macro"),
            **beside_paper(df, "micro_f1", "Micro-F1 (ours)", "Micro (paper)", "Δ Micro"),
        }
    )
    write_table(
        df,
        md,
        out,
        "table_ablation",
        "Ablation (Table 5): relation (ET) and self-loop (SL) embeddings",
        ["Δ = ours − paper. Ordering of the Micro-F1 means over the runs of each cell:"] + checks,
        missing=pool.missing,
        devices=pool.devices,
    )
    return [out / "table_ablation.csv", out / "table_ablation.md"]


if __name__ == "__main__":
    raise SystemExit(cli(__doc__, render, ["dblp"]))
