"""Figure 8, the paper's efficiency figure: parameters, seconds per epoch and per run, and peak memory of every model
on one dataset, with ratios to RE-GCN. scripts/bench/benchmark.py --efficiency (`make fig-efficiency`) measures one full
training run per model and renders it here; the measured rows are kept in results/table_efficiency.csv, so

    python -m regnn.reporting.efficiency [--rows results/table_efficiency.csv] [--out results]

renders the table and figure again from them (no training; the stored rows carry 4 decimals, so a ratio's last
digit can move).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import pandas as pd

from regnn.paths import REPO_ROOT
from regnn.reporting.collect import write_table
from regnn.reporting.common import label
from regnn.reporting.figures import PLAIN, RE, save, subplots

# the measured columns of a row (one model's run); the ratios to RE-GCN are derived from them
MEASURED = (
    "dataset",
    "model",
    "metapath",
    "epochs_timed",
    "run_s",
    "run_epochs",
    "test_micro_f1",
    "median_epoch_s",
    "p10_epoch_s",
    "p90_epoch_s",
    "num_parameters",
    "peak_rss_mb",
    "threads",
)


def write_efficiency(rows: list[dict], out: Path, overrides=()) -> None:
    """table_efficiency.{csv,md} and fig_efficiency.png in `out` from the measured rows (one per model);
    overrides: the config overrides every run had (a capped run's s / run is noted as such)."""
    df = pd.DataFrame(rows)
    ref = df[df.model == "re_gcn"]
    cols = {"num_parameters": "parameters", "median_epoch_s": "s / epoch", "run_s": "s / run", "peak_rss_mb": "peak MB"}
    for c in cols:
        df[f"{c}_vs_re_gcn"] = df[c] / ref[c].iloc[0] if len(ref) else float("nan")
    mp = df["metapath"] if "metapath" in df else [None] * len(df)
    names = [label(m) + (f" ({p})" if isinstance(p, str) else "") for m, p in zip(df.model, mp)]
    md = pd.DataFrame(
        {
            "model": names,
            "parameters": df.num_parameters.map("{:,}".format),
            "params / RE-GCN": df.num_parameters_vs_re_gcn.map("{:.3f}".format),
            "s / epoch": df.median_epoch_s.map("{:.3f}".format),
            "epoch / RE-GCN": df.median_epoch_s_vs_re_gcn.map("{:.2f}".format),
            "s / run": df.run_s.map("{:.1f}".format),
            "epochs": df.run_epochs,
            "run / RE-GCN": df.run_s_vs_re_gcn.map("{:.2f}".format),
            "peak MB": df.peak_rss_mb.map("{:.0f}".format),
        }
    )
    write_table(
        df,
        md,
        out,
        "table_efficiency",
        f"Efficiency on {df.dataset.iloc[0].upper()} (Figure 8)",
        [
            f"One full training run per model (seed 0, its configured early stopping), each in its own process, "
            f"one after another on {os.cpu_count()} CPU cores (`make fig-efficiency`); s / epoch is the median "
            "of one training step plus the validation pass; peak MB is the process's resident high-water mark.",
            "Ratios are to RE-GCN, as the paper reports them.",
        ]
        + (
            [
                "Metapath2vec has no training epochs: its epoch is one pass of meta-path walks from every target "
                "node with its skip-gram steps (`model.walks_per_node` passes), its run those passes plus the "
                "logistic regression."
            ]
            if (df.model == "metapath2vec").any()
            else []
        )
        + (
            [
                f"Every run under `{' '.join(overrides)}`: s / run is the time of that (capped) run, not of a "
                "full one; s / epoch is unaffected."
            ]
            if overrides
            else []
        ),
    )
    _plot(df, out)


def _plot(df, out: Path) -> None:
    """Figure 8: parameters, seconds per epoch and per run of every model (log scale), with the ratios to RE-GCN."""
    fig, axes = subplots(1, 3, figsize=(18, 4.2))
    colours = [RE if m.startswith("re_") else PLAIN for m in df.model]
    for ax, (c, title) in zip(
        axes,
        [
            ("num_parameters", "parameters"),
            ("median_epoch_s", "seconds per epoch"),
            ("run_s", "seconds per training run"),
        ],
    ):
        ax.bar(range(len(df)), df[c], color=colours)
        ax.set_yscale("log")  # the models span three orders of magnitude
        for i, r in enumerate(df[f"{c}_vs_re_gcn"]):
            ax.text(i, df[c].iloc[i] * 1.1, f"{r:.2f}×", ha="center", va="bottom", fontsize=6, rotation=90)
        ax.margins(y=0.25)
        ax.set_xticks(range(len(df)), [label(m) for m in df.model], rotation=45, ha="right", fontsize=8)
        ax.set_title(f"{title} ({df.dataset.iloc[0].upper()}; × RE-GCN)", fontsize=10)
    save(fig, out / "fig_efficiency.png")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Figure 8 again from its measured rows (no training)")
    ap.add_argument("--rows", type=Path, default=REPO_ROOT / "results" / "table_efficiency.csv")
    ap.add_argument("--out", type=Path, default=REPO_ROOT / "results")
    a = ap.parse_args(argv)
    if not a.rows.is_file():
        print(
            f"error: {a.rows} does not exist; `make fig-efficiency` measures the models and writes it", file=sys.stderr
        )
        return 2
    rows = pd.read_csv(a.rows)
    missing = [
        c
        for c in ("dataset", "model", "num_parameters", "median_epoch_s", "run_s", "run_epochs", "peak_rss_mb")
        if c not in rows
    ]
    if missing:
        print(f"error: {a.rows} lacks the columns {missing}; it is not a table_efficiency.csv", file=sys.stderr)
        return 2
    a.out.mkdir(parents=True, exist_ok=True)
    write_efficiency(rows[[c for c in MEASURED if c in rows]].to_dict("records"), a.out)
    print(f"wrote {a.out}/table_efficiency.csv, .md, fig_efficiency.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
