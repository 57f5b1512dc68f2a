"""Figure 6: first-layer relation weights of RE-GCN on DBLP for each gradient scaling factor lambda.

python -m regnn.reporting.lambda_study [--cells DIR] [--out results] [--datasets dblp]
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from regnn.reporting.cells import as_pool, mean_weights, metric
from regnn.reporting.collect import fmt, write_table
from regnn.reporting.common import cli, signed
from regnn.reporting.figures import RE, save, subplots
from regnn.reporting.paper import paper_numbers

LAMBDAS = [0.001, 1.0, 100.0, 1000.0]


def render(source, out, datasets):
    pool = as_pool(source)
    d = datasets[0]
    # one panel per lambda and the best of them: a part of the study is not the study
    cells = pool.load([f"{d}_re_gcn_lambda{lam:g}" for lam in LAMBDAS], whole="the lambda study needs every lambda")
    paper = paper_numbers()["lambda"].get(d, {})
    rows, weights = [], {}
    for lam in LAMBDAS:
        c = cells[f"{d}_re_gcn_lambda{lam:g}"]
        mean, std = metric(c, "test_micro_f1")
        names, w, wstd = mean_weights(c, 0)
        weights[lam] = (names, w, wstd)
        p = paper.get(lam)  # YAML keys 1, 100, ... match the floats 1.0, 100.0
        rows.append(
            {
                "lambda": lam,
                "micro_f1_mean": mean,
                "micro_f1_std": std,
                "paper_micro_f1": p,
                "diff": None if p is None else mean - p,
                **{f"w1[{n}]": v for n, v in zip(names, w)},
            }
        )
    df = pd.DataFrame(rows)
    best = df.loc[df.micro_f1_mean.idxmax(), "lambda"]
    runs = next(iter(cells.values()))["runs"]
    md = pd.DataFrame(
        {
            "lambda": df["lambda"].map("{:g}".format),
            "Micro-F1 (ours)": [fmt(a, b) for a, b in zip(df.micro_f1_mean, df.micro_f1_std)],
            "Micro-F1 (paper)": [fmt(v) for v in df.paper_micro_f1],
            "Δ": [signed(v) for v in df["diff"]],
        }
    )
    write_table(
        df,
        md,
        out,
        "table_lambda",
        f"Gradient scaling factor (Figure 6): RE-GCN on {d.upper()}",
        [
            f"Best lambda here: {best:g}. The CSV also holds the mean first-layer weight of every relation.",
            f"{runs} runs per lambda; weights are means over the runs of the best-validation checkpoints.",
        ],
        missing=pool.missing,
        devices=pool.devices,
    )
    fig, axes = subplots(1, len(LAMBDAS), figsize=(4.2 * len(LAMBDAS), 3.8), sharey=False)
    for ax, (lam, row) in zip(axes, zip(LAMBDAS, rows)):
        names, w, wstd = weights[lam]
        y = np.arange(len(names))
        ax.barh(y, w, xerr=wstd, color=RE, capsize=2)
        ax.axvline(1.0, color="k", lw=0.6, ls=":")
        ax.set_yticks(y, names, fontsize=8)
        ax.invert_yaxis()
        ax.set_title(f"λ={lam:g} (Micro-F1 {row['micro_f1_mean']:.2f})", fontsize=10)
        ax.set_xlabel("layer-1 weight")
    save(fig, out / "fig_lambda.png")
    return [out / "table_lambda.csv", out / "table_lambda.md", out / "fig_lambda.png"]


if __name__ == "__main__":
    raise SystemExit(cli(__doc__, render, ["dblp"]))
