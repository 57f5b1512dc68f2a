"""Speed and size per dataset x model: median seconds per training epoch, peak memory, parameter count.

    python scripts/benchmark.py                      # every dataset x {gcn, re_gcn, gat, re_gat} + the main job
    python scripts/benchmark.py --datasets dblp --models gcn re_gcn --epochs 30 --no-job

Each cell runs in its own process (clean peak memory), one after another, with the configuration the
experiments use (conf/ with its protocol and tuned settings). An epoch is what the trainer times: one training
step plus the evaluation pass on the validation nodes. `--job` also times the README's main job
(`python train.py dataset=dblp model=re_gcn`, 10 runs) end to end. Writes results/benchmark.{json,csv,md}.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))


def one_cell(dataset: str, model: str, epochs: int, warmup: int) -> dict:
    """Runs in the child process: times `epochs` trainer epochs after `warmup` ones."""
    import numpy as np
    import torch
    from hydra import compose, initialize_config_dir

    import regnn.config  # noqa: F401
    from regnn.pipeline import arch_of, build_model, load_data, model_kwargs
    from regnn.training.perf import keep_freed_memory
    from regnn.training.seed import seed_everything
    from regnn.training.trainer import train_run

    keep_freed_memory()
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=[f"dataset={dataset}", f"model={model}"])
    data = load_data(cfg.dataset)
    inputs = arch_of(cfg.model).prepare(data, "cpu", **model_kwargs(cfg.model))
    seed_everything(0)
    net = build_model(cfg.model, data, inputs)
    n = warmup + epochs
    r = train_run(net, inputs, data.features, data.labels, data.splits, seed=0, max_epochs=n, patience=n + 1,
                  optimizer=dict(cfg.optimizer))
    times = [h["epoch_time_s"] for h in r.history[warmup:]]
    return {"dataset": dataset, "model": model, "epochs_timed": len(times),
            "median_epoch_s": float(np.median(times)), "p10_epoch_s": float(np.percentile(times, 10)),
            "p90_epoch_s": float(np.percentile(times, 90)),
            "num_parameters": int(sum(p.numel() for p in net.parameters())),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "threads": torch.get_num_threads()}


def main_job() -> dict:
    t = time.perf_counter()
    out = REPO / "outputs" / "benchmark" / time.strftime("main_job_%Y-%m-%d_%H-%M-%S")
    p = subprocess.run([sys.executable, str(REPO / "train.py"), "dataset=dblp", "model=re_gcn",
                        f"hydra.run.dir={out}"], capture_output=True, text=True)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"main job failed:\n{p.stderr[-2000:]}")
    r = json.loads((out / "results.json").read_text())
    return {"command": "python train.py dataset=dblp model=re_gcn", "runs": r["runs"], "wall_s": wall,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
            "test_micro_f1": r["metrics"]["test_micro_f1"], "epochs_per_run": r["metrics"]["epochs"]["mean"],
            "run_dir": str(out.relative_to(REPO))}


def write(rows: list[dict], job: dict | None, out: Path) -> None:
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
            "when": time.strftime("%Y-%m-%d %H:%M")}
    (out / "benchmark.json").write_text(json.dumps({"meta": meta, "cells": df.to_dict("records"), "main_job": job},
                                                   indent=2) + "\n")
    df.to_csv(out / "benchmark.csv", index=False, float_format="%.4f")
    md = df.assign(median_epoch_s=df.median_epoch_s.map("{:.4f}".format),
                   epoch_ratio_to_plain=df.epoch_ratio_to_plain.map(lambda v: "" if v != v or v is None else f"{v:.2f}"),
                   peak_rss_mb=df.peak_rss_mb.map("{:.0f}".format),
                   num_parameters=df.num_parameters.map("{:,}".format))[
        ["dataset", "model", "median_epoch_s", "epoch_ratio_to_plain", "peak_rss_mb", "num_parameters", "threads"]]
    lines = ["# Benchmark", "", f"{meta['cpus']} CPUs ({meta['machine']}), Python {meta['python']}, {meta['when']}; "
             "`python scripts/benchmark.py`. One process per cell, run one after another.", "", markdown(md), ""]
    if job:
        lines += [f"Main job `{job['command']}` ({job['runs']} runs): {job['wall_s']:.1f} s wall, "
                  f"peak memory {job['peak_rss_mb']:.0f} MB, test Micro-F1 {job['test_micro_f1']['mean']:.2f} ± "
                  f"{job['test_micro_f1']['std']:.2f}, {job['epochs_per_run']:.0f} epochs per run on average.", ""]
    (out / "benchmark.md").write_text("\n".join(lines))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", nargs="+", default=["dblp", "acm", "imdb"])
    ap.add_argument("--models", nargs="+", default=["gcn", "re_gcn", "gat", "re_gat"])
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--job", action=argparse.BooleanOptionalAction, default=True, help="also time the main job")
    ap.add_argument("--out", default=str(REPO / "results"))
    ap.add_argument("--one", nargs=2, metavar=("DATASET", "MODEL"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.one:
        print(json.dumps(one_cell(*a.one, a.epochs, a.warmup)))
        return 0
    rows = []
    for d in a.datasets:
        for m in a.models:
            p = subprocess.run([sys.executable, __file__, "--one", d, m, "--epochs", str(a.epochs),
                                "--warmup", str(a.warmup)], capture_output=True, text=True)
            if p.returncode != 0:
                print(p.stderr[-3000:], file=sys.stderr)
                return 1
            rows.append(json.loads(p.stdout.strip().splitlines()[-1]))
            r = rows[-1]
            print(f"{d:5s} {m:8s} {r['median_epoch_s']:.4f} s/epoch  {r['peak_rss_mb']:.0f} MB  "
                  f"{r['num_parameters']:,} params", file=sys.stderr)
    job = main_job() if a.job else None
    if job:
        print(f"main job: {job['wall_s']:.1f} s, {job['peak_rss_mb']:.0f} MB", file=sys.stderr)
    write(rows, job, Path(a.out))
    print(f"wrote {a.out}/benchmark.json, .csv, .md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
