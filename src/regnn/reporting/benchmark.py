"""The benchmark's report (scripts/bench/benchmark.py measures, this module writes): results/benchmark.{json,csv,md}
for the speed cells, plain/RE pairs and main job. Figure 8 (--efficiency) is rendered by
regnn.reporting.efficiency."""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path


def write(
    rows: list[dict],
    job: dict | None,
    out: Path,
    cells_when: str | None = None,
    pairs: list[dict] | None = None,
    command: str = "python scripts/bench/benchmark.py",
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    df = _cells(rows, previous_figures(out / "benchmark.json"))
    meta = {
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "when": time.strftime("%Y-%m-%d %H:%M"),
        "command": command,
    }
    if cells_when:  # --job-only: the cells are an earlier measurement, only the main job is new
        meta["cells_when"] = cells_when
    (out / "benchmark.json").write_text(
        json.dumps(
            {
                "meta": meta,
                "cells": df.astype(object).where(df.notna(), None).to_dict("records"),
                "main_job": job,
                "pairs": pairs or [],
            },
            indent=2,
        )
        + "\n"
    )
    df.drop(columns=["process_median_epoch_s"], errors="ignore").to_csv(
        out / "benchmark.csv", index=False, float_format="%.4f"
    )
    lines = _cells_section(df, meta, cells_when) + (_pairs_section(pairs) if pairs else []) + _job_lines(job)
    (out / "benchmark.md").write_text("\n".join(lines))


def _cells(rows: list[dict], previous: dict):
    """The cells with their ratio to the plain backbone and to the previous figure, each printed as it is."""
    import pandas as pd

    df = pd.DataFrame(rows)
    ratio = []
    for _, r in df.iterrows():  # RE model vs its plain backbone on the same dataset
        plain = df[(df.dataset == r.dataset) & (df.model == r.model.removeprefix("re_"))]
        ratio.append(
            r.median_epoch_s / plain.median_epoch_s.iloc[0] if r.model.startswith("re_") and len(plain) else None
        )
    df["epoch_ratio_to_plain"] = ratio
    df["ratio_to_previous"] = [
        r.median_epoch_s / previous[(r.dataset, r.model)] if (r.dataset, r.model) in previous else None
        for _, r in df.iterrows()
    ]
    for _, r in df.iterrows():  # a slower change shows itself where it is run, before anyone reads the tables
        was = previous.get((r.dataset, r.model))
        print(
            f"benchmark: {r.dataset} {r.model}: {r.median_epoch_s:.4f} s/epoch"
            + (f", {r.median_epoch_s / was:.2f}x the previous figure ({was:.4f})" if was else ", no previous figure")
        )
    return df


def _ratio(v) -> str:
    return "" if v != v or v is None else f"{v:.2f}"


def _cells_section(df, meta: dict, cells_when: str | None) -> list[str]:
    from regnn.reporting.collect import markdown

    md = df.assign(
        median_epoch_s=df.median_epoch_s.map("{:.4f}".format),
        epoch_ratio_to_plain=df.epoch_ratio_to_plain.map(_ratio),
        ratio_to_previous=df.ratio_to_previous.map(_ratio),
        peak_rss_mb=df.peak_rss_mb.map("{:.0f}".format),
        num_parameters=df.num_parameters.map("{:,}".format),
    )[
        [
            "dataset",
            "model",
            "median_epoch_s",
            "epoch_ratio_to_plain",
            "ratio_to_previous",
            "peak_rss_mb",
            "num_parameters",
            "threads",
        ]
    ]
    return [
        "# Benchmark",
        "",
        f"{meta['cpus']} CPUs ({meta['machine']}), Python {meta['python']}, {meta['when']}; "
        f"`{meta['command']}`. "
        + (
            f"Each cell timed in {int(df.processes.max())} processes, in rounds (every cell once per round, "
            "one process after another); its s/epoch is the median of the processes' medians, its memory the "
            "largest peak."
            if "processes" in df and df.processes.max() > 1
            else "One process per cell, run one after another."
        )
        + (
            f" Cells measured {cells_when}; the main job re-measured at the time above (`--job-only`)."
            if cells_when
            else ""
        ),
        "",
        markdown(md),
        "",
    ]


def _pairs_section(pairs: list[dict]) -> list[str]:
    import pandas as pd

    from regnn.reporting.collect import markdown

    pdf = pd.DataFrame(pairs)
    pmd = pd.DataFrame(
        {
            "dataset": pdf.dataset,
            "plain": pdf.plain,
            "RE": pdf.re,
            "plain s/epoch": pdf.plain_median_epoch_s.map("{:.4f}".format),
            "RE s/epoch": pdf.re_median_epoch_s.map("{:.4f}".format),
            (
                "ratio (median of the processes' ratios of medians)" if "processes" in pdf else "ratio (medians)"
            ): pdf.ratio_of_medians.map("{:.2f}".format),
            "ratio (median of epoch pairs)": pdf.median_pair_ratio.map("{:.2f}".format),
        }
    )
    return [
        "## Plain vs RE, epoch by epoch in one process",
        "",
        "Each plain model and its RE form built in one process and trained one epoch of each in turn "
        f"({pairs[0]['epochs_timed']} timed epochs each after {pairs[0]['warmup']} warm-up): both see "
        "the same machine state, so drift between the separate processes above does not enter the ratio."
        + (
            f" Every pair in {pairs[0]['processes']} such processes (in rounds); each figure is the median over them."
            if pairs[0].get("processes", 1) > 1
            else ""
        ),
        "",
        markdown(pmd),
        "",
    ]


def _job_lines(job: dict | None) -> list[str]:
    if not job:
        return []
    w, t = job.get("workers", 1), job.get("threads_per_run")
    how = (
        f"{w} worker processes side by side, {t} thread{'s' * (t != 1)} per run (`workers=auto`)"
        if w > 1
        else "one process"
    )
    return [
        f"Main job `{job['command']}` ({job['runs']} runs, {how}): {job['wall_s']:.1f} s wall, "
        f"peak memory {job['peak_rss_mb']:.0f} MB (the largest process), test Micro-F1 "
        f"{job['test_micro_f1']['mean']:.2f} ± {job['test_micro_f1']['std']:.2f}, "
        f"{job['epochs_per_run']:.0f} epochs per run on average.",
        "",
    ]


def previous_figures(path: Path) -> dict[tuple[str, str], float]:
    """{(dataset, model): median s/epoch} of the report at `path` before it is rewritten (none where absent)."""
    try:
        cells = json.loads(path.read_text())["cells"]
    except (OSError, ValueError, KeyError):
        return {}
    return {(c["dataset"], c["model"]): float(c["median_epoch_s"]) for c in cells if c.get("median_epoch_s")}
