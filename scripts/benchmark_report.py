"""The benchmark's reports (scripts/benchmark.py measures, this module writes): results/benchmark.{json,csv,md}
for the speed cells, plain/RE pairs and main job, and results/table_efficiency.{csv,md} with
results/fig_efficiency.png for --efficiency (the paper's efficiency figure)."""
from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path


def write(rows: list[dict], job: dict | None, out: Path, cells_when: str | None = None,
          pairs: list[dict] | None = None, command: str = "python scripts/benchmark.py") -> None:
    import pandas as pd

    from regnn.reporting.collect import markdown
    out.mkdir(parents=True, exist_ok=True)
    df = pd.DataFrame(rows)
    ratio = []
    for _, r in df.iterrows():  # RE model vs its plain backbone on the same dataset
        plain = df[(df.dataset == r.dataset) & (df.model == r.model.removeprefix("re_"))]
        ratio.append(r.median_epoch_s / plain.median_epoch_s.iloc[0] if r.model.startswith("re_") and len(plain)
                     else None)
    df["epoch_ratio_to_plain"] = ratio
    meta = {"machine": platform.machine(), "cpus": os.cpu_count(), "python": platform.python_version(),
            "when": time.strftime("%Y-%m-%d %H:%M"), "command": command}
    if cells_when:  # --job-only: the cells are an earlier measurement, only the main job is new
        meta["cells_when"] = cells_when
    (out / "benchmark.json").write_text(json.dumps({"meta": meta, "cells": df.to_dict("records"), "main_job": job,
                                                    "pairs": pairs or []}, indent=2) + "\n")
    df.drop(columns=["process_median_epoch_s"], errors="ignore").to_csv(out / "benchmark.csv", index=False,
                                                                        float_format="%.4f")
    md = df.assign(median_epoch_s=df.median_epoch_s.map("{:.4f}".format),
                   epoch_ratio_to_plain=df.epoch_ratio_to_plain.map(lambda v: "" if v != v or v is None else f"{v:.2f}"),
                   peak_rss_mb=df.peak_rss_mb.map("{:.0f}".format),
                   num_parameters=df.num_parameters.map("{:,}".format))[
        ["dataset", "model", "median_epoch_s", "epoch_ratio_to_plain", "peak_rss_mb", "num_parameters", "threads"]]
    lines = ["# Benchmark", "", f"{meta['cpus']} CPUs ({meta['machine']}), Python {meta['python']}, {meta['when']}; "
             f"`{command}`. "
             + (f"Each cell timed in {int(df.processes.max())} processes, in rounds (every cell once per round, "
                "one process after another); its s/epoch is the median of the processes' medians, its memory the "
                "largest peak." if "processes" in df and df.processes.max() > 1
                else "One process per cell, run one after another.")
             + (f" Cells measured {cells_when}; the main job re-measured at the time above "
                "(`--job-only`)." if cells_when else ""), "", markdown(md), ""]
    if pairs:
        pdf = pd.DataFrame(pairs)
        pmd = pd.DataFrame({"dataset": pdf.dataset, "plain": pdf.plain, "RE": pdf.re,
                            "plain s/epoch": pdf.plain_median_epoch_s.map("{:.4f}".format),
                            "RE s/epoch": pdf.re_median_epoch_s.map("{:.4f}".format),
                            ("ratio (median of the processes' ratios of medians)" if "processes" in pdf
                             else "ratio (medians)"): pdf.ratio_of_medians.map("{:.2f}".format),
                            "ratio (median of epoch pairs)": pdf.median_pair_ratio.map("{:.2f}".format)})
        lines += ["## Plain vs RE, epoch by epoch in one process", "",
                  "Each plain model and its RE form built in one process and trained one epoch of each in turn "
                  f"({pairs[0]['epochs_timed']} timed epochs each after {pairs[0]['warmup']} warm-up): both see the same "
                  "machine state, so drift between the separate processes above does not enter the ratio."
                  + (f" Every pair in {pairs[0]['processes']} such processes (in rounds); each figure is the median "
                     "over them." if pairs[0].get("processes", 1) > 1 else ""), "",
                  markdown(pmd), ""]
    if job:
        w, t = job.get("workers", 1), job.get("threads_per_run")
        how = (f"{w} worker processes side by side, {t} thread{'s' * (t != 1)} per run (`workers=auto`)" if w > 1
               else "one process")
        lines += [f"Main job `{job['command']}` ({job['runs']} runs, {how}): {job['wall_s']:.1f} s wall, "
                  f"peak memory {job['peak_rss_mb']:.0f} MB (the largest process), test Micro-F1 "
                  f"{job['test_micro_f1']['mean']:.2f} ± {job['test_micro_f1']['std']:.2f}, "
                  f"{job['epochs_per_run']:.0f} epochs per run on average.", ""]
    (out / "benchmark.md").write_text("\n".join(lines))


def write_efficiency(rows: list[dict], out: Path, overrides=()) -> None:
    import pandas as pd

    from regnn.reporting.collect import write_table
    from regnn.reporting.common import label
    from regnn.reporting.figures import PLAIN, RE, save, subplots
    df = pd.DataFrame(rows)
    ref = df[df.model == "re_gcn"]
    cols = {"num_parameters": "parameters", "median_epoch_s": "s / epoch", "run_s": "s / run", "peak_rss_mb": "peak MB"}
    for c in cols:
        df[f"{c}_vs_re_gcn"] = df[c] / ref[c].iloc[0] if len(ref) else float("nan")
    mp = df["metapath"] if "metapath" in df else [None] * len(df)
    names = [label(m) + (f" ({p})" if isinstance(p, str) else "") for m, p in zip(df.model, mp)]
    md = pd.DataFrame({"model": names, "parameters": df.num_parameters.map("{:,}".format),
                       "params / RE-GCN": df.num_parameters_vs_re_gcn.map("{:.3f}".format),
                       "s / epoch": df.median_epoch_s.map("{:.3f}".format),
                       "epoch / RE-GCN": df.median_epoch_s_vs_re_gcn.map("{:.2f}".format),
                       "s / run": df.run_s.map("{:.1f}".format), "epochs": df.run_epochs,
                       "run / RE-GCN": df.run_s_vs_re_gcn.map("{:.2f}".format),
                       "peak MB": df.peak_rss_mb.map("{:.0f}".format)})
    write_table(df, md, out, "table_efficiency", f"Efficiency on {df.dataset.iloc[0].upper()} (Figure 8)",
                [f"One full training run per model (seed 0, its configured early stopping), each in its own process, "
                 f"one after another on {os.cpu_count()} CPU cores (`make fig-efficiency`); s / epoch is the median "
                 "of one training step plus the validation pass; peak MB is the process's resident high-water mark.",
                 "Ratios are to RE-GCN, as the paper reports them."]
                + (["Metapath2vec has no training epochs: its epoch is one pass of meta-path walks from every target "
                    "node with its skip-gram steps (`model.walks_per_node` passes), its run those passes plus the "
                    "logistic regression."] if (df.model == "metapath2vec").any() else [])
                + ([f"Every run under `{' '.join(overrides)}`: s / run is the time of that (capped) run, not of a "
                    "full one; s / epoch is unaffected."] if overrides else []))
    fig, axes = subplots(1, 3, figsize=(18, 4.2))
    colours = [RE if m.startswith("re_") else PLAIN for m in df.model]
    for ax, (c, title) in zip(axes, [("num_parameters", "parameters"), ("median_epoch_s", "seconds per epoch"),
                                      ("run_s", "seconds per training run")]):
        ax.bar(range(len(df)), df[c], color=colours)
        ax.set_yscale("log")  # the models span three orders of magnitude
        for i, r in enumerate(df[f"{c}_vs_re_gcn"]):
            ax.text(i, df[c].iloc[i] * 1.1, f"{r:.2f}×", ha="center", va="bottom", fontsize=6, rotation=90)
        ax.margins(y=0.25)
        ax.set_xticks(range(len(df)), [label(m) for m in df.model], rotation=45, ha="right", fontsize=8)
        ax.set_title(f"{title} ({df.dataset.iloc[0].upper()}; × RE-GCN)", fontsize=10)
    save(fig, out / "fig_efficiency.png")
