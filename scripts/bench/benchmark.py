"""Speed and size per dataset x model: median seconds per training epoch, peak memory, parameter count.

    python scripts/bench/benchmark.py                      # every dataset x {gcn, re_gcn, gat, re_gat} + the main job
    python scripts/bench/benchmark.py --datasets dblp --models gcn re_gcn --epochs 30 --no-job
    python scripts/bench/benchmark.py --efficiency --datasets dblp --models gcn re_gcn gat re_gat ...   # Figure 8

Each cell runs in its own process (clean peak memory), one after another, with the configuration the
experiments use (conf/ with its protocol and tuned settings); --repeats (5) rounds of every cell, each cell's
s/epoch the median of its processes' (one process of a cell has measured 10-20% off another). An epoch is what
the trainer times: one training step plus the evaluation pass on the validation nodes. `--job` also times the
README's main job (`python train.py dataset=dblp model=re_gcn`, 10 runs) end to end. Then (--paired, the
default) every plain model and its RE form are timed once more in one process (--repeats of them), one epoch of
each in turn: their ratio from that measurement does not carry the drift between separate processes (the same
plain model has measured 27% apart in two processes an hour apart). Writes results/benchmark.{json,csv,md}.
--efficiency instead trains every model once to early stopping (the configured trainer) and reports seconds per
epoch (median) and per full run, peak memory and parameters, with ratios to RE-GCN, as
results/table_efficiency.{csv,md} and results/fig_efficiency.png (the paper's efficiency figure).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import resource
import shlex
import subprocess
import sys
import time
from pathlib import Path

from regnn.reporting.benchmark import write

REPO = Path(__file__).resolve().parents[2]


def _build(dataset: str, model: str, overrides=(), data=None):
    """In a child process: (cfg, job, net) for one dataset x model as the experiments configure it: the
    pipeline's full-batch job on the CPU (regnn.pipeline.fullbatch.DeviceGraph: data, the model's inputs, its trainer)
    and its model of seed 0; `data` reuses an already loaded dataset. GCN-M/GAT-M (metapath=best: one job per
    meta-path) get their first meta-path."""
    import torch
    from hydra import compose, initialize_config_dir

    import regnn.config  # noqa: F401
    from regnn.pipeline.fullbatch import DeviceGraph

    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=[f"dataset={dataset}", f"model={model}", *overrides])
    if cfg.model.get("metapath") == "best":
        from omegaconf import open_dict

        with open_dict(cfg):
            cfg.model.metapath = next(iter(cfg.model.metapaths))
    job = DeviceGraph(cfg, torch.device("cpu"), data=data)
    return cfg, job, job.build(0)


def one_cell(dataset: str, model: str, epochs: int, warmup: int, full: bool = False, overrides=()) -> dict:
    """Runs in the child process: times `epochs` trainer epochs after `warmup` ones, or (full) one whole run
    with the configured early stopping."""
    import numpy as np
    import torch

    from regnn.runtime.perf import keep_freed_memory
    from regnn.spec import training_of

    keep_freed_memory(every_size=True)
    cfg, job, net = _build(dataset, model, overrides)
    n = warmup + epochs
    options = training_of(cfg)  # the configured trainer; timed runs: exactly n epochs, no early stop
    options = options if full else dataclasses.replace(options, max_epochs=n, patience=n + 1)
    fit = job.trainer()  # as the pipeline trains it (Metapath2vec: walks, then its classifier)
    r = fit(net, job.inputs, job.feats, job.labels, job.splits, seed=0, options=options)
    times = [h["epoch_time_s"] for h in r.history[warmup:]] or [h["epoch_time_s"] for h in r.history]
    return {
        "dataset": dataset,
        "model": model,
        "metapath": cfg.model.get("metapath"),
        "epochs_timed": len(times),
        "run_s": r.train_time_s,
        "run_epochs": r.epochs,
        "test_micro_f1": r.metrics["test_micro_f1"],
        "median_epoch_s": float(np.median(times)),
        "p10_epoch_s": float(np.percentile(times, 10)),
        "p90_epoch_s": float(np.percentile(times, 90)),
        "num_parameters": int(sum(p.numel() for p in net.parameters())),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "threads": torch.get_num_threads(),
    }


def paired_cell(dataset: str, plain: str, re_model: str, epochs: int, warmup: int) -> dict:
    """Runs in the child process: the plain model and its RE form trained in one process, one epoch of each in
    turn (each with its own optimizer and seed), so that both see the same machine state; drift in the
    machine's speed (other load, frequency, memory) moves both alike and cancels in their ratio."""
    import numpy as np
    import torch

    from regnn.runtime.perf import keep_freed_memory
    from regnn.spec import training_of
    from regnn.training.trainer import epochs as epoch_steps

    keep_freed_memory(every_size=True)
    steps, data = [], None
    for model in (plain, re_model):
        cfg, job, net = _build(dataset, model, data=data)
        data = job.data
        steps.append(epoch_steps(net, job.inputs, job.feats, job.labels, job.splits, training_of(cfg)))
    times = [[], []]
    for i in range(warmup + epochs):
        for k in (0, 1) if i % 2 == 0 else (1, 0):  # alternate who goes first
            t = next(steps[k])["epoch_time_s"]
            if i >= warmup:
                times[k].append(t)
    p, r = np.array(times[0]), np.array(times[1])
    return {
        "dataset": dataset,
        "plain": plain,
        "re": re_model,
        "epochs_timed": epochs,
        "warmup": warmup,
        "plain_median_epoch_s": float(np.median(p)),
        "re_median_epoch_s": float(np.median(r)),
        "ratio_of_medians": float(np.median(r) / np.median(p)),
        "median_pair_ratio": float(np.median(r / p)),
        "threads": torch.get_num_threads(),
    }


def main_job() -> dict:
    t = time.perf_counter()
    out = REPO / "outputs" / "benchmark" / time.strftime("main_job_%Y-%m-%d_%H-%M-%S")
    p = subprocess.run(
        [sys.executable, str(REPO / "train.py"), "dataset=dblp", "model=re_gcn", f"hydra.run.dir={out}"],
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"main job failed:\n{p.stderr[-2000:]}")
    r = json.loads((out / "results.json").read_text())
    return {
        "command": "python train.py dataset=dblp model=re_gcn",
        "runs": r["runs"],
        "wall_s": wall,
        # the job's own peak: RUSAGE_CHILDREN would give the largest of every earlier child (the GAT cells)
        "peak_rss_mb": r["peak_rss_gb"] * 1024,
        "test_micro_f1": r["metrics"]["test_micro_f1"],
        "epochs_per_run": r["metrics"]["epochs"]["mean"],
        "workers": r["environment"].get("workers", 1),
        "threads_per_run": r["environment"]["threads"],
        "run_dir": str(out.relative_to(REPO)),
    }


def combine(rs: list[dict], medians: tuple[str, ...], kept: str, largest: tuple[str, ...] = ()) -> dict:
    """One cell or plain/RE pair measured in several processes: the first process's row with the median over
    the processes of each of `medians` (a pair's ratios are so the median of ratios each taken within one
    process) and the largest of `largest`; the processes' values of `kept` stay listed (JSON only). Scores and
    epoch counts are the same in every process (same seed)."""
    import numpy as np

    row = dict(rs[0])
    if len(rs) > 1:
        for k in medians:
            row[k] = float(np.median([r[k] for r in rs]))
        for k in largest:
            row[k] = max(r[k] for r in rs)
        row["processes"] = len(rs)
        row[f"process_{kept}"] = [r[kept] for r in rs]
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", nargs="+", default=["dblp", "acm", "imdb"])
    ap.add_argument("--models", nargs="+", default=["gcn", "re_gcn", "gat", "re_gat"])
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument(
        "--repeats",
        type=int,
        default=5,
        help="processes per cell and per plain/RE pair (in rounds); each figure is the median of theirs "
        "(--efficiency: one full run per model, no repeats)",
    )
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--job", action=argparse.BooleanOptionalAction, default=True, help="also time the main job")
    ap.add_argument(
        "--job-only",
        action="store_true",
        help="re-time only the main job; the cells come from the existing <out>/benchmark.json",
    )
    ap.add_argument("--efficiency", action="store_true", help="one full run per model; the efficiency figure")
    ap.add_argument(
        "--overrides", nargs="*", default=[], help="config overrides for every cell, e.g. trainer.max_epochs=5"
    )
    ap.add_argument("--out", default=str(REPO / "results"))
    ap.add_argument(
        "--paired",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also time every plain/RE pair epoch by epoch in one process (the ratio's measurement)",
    )
    ap.add_argument("--one", nargs=2, metavar=("DATASET", "MODEL"), help=argparse.SUPPRESS)
    ap.add_argument("--pair", nargs=3, metavar=("DATASET", "PLAIN", "RE"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    command = shlex.join(["python", "scripts/bench/benchmark.py", *(sys.argv[1:] if argv is None else argv)])
    if a.repeats < 1:
        ap.error(f"--repeats must be at least 1, got {a.repeats}")
    if a.one:
        print(json.dumps(one_cell(*a.one, a.epochs, a.warmup, a.efficiency, a.overrides)))
        return 0
    if a.pair:
        print(json.dumps(paired_cell(*a.pair, a.epochs, a.warmup)))
        return 0
    if a.job_only:
        old = json.loads((Path(a.out) / "benchmark.json").read_text())
        rows = [{k: v for k, v in c.items() if k != "epoch_ratio_to_plain"} for c in old["cells"]]
        job = main_job()
        print(f"main job: {job['wall_s']:.1f} s, {job['peak_rss_mb']:.0f} MB", file=sys.stderr)
        write(
            rows,
            job,
            Path(a.out),
            command=command,
            cells_when=old["meta"].get("cells_when", old["meta"]["when"]),
            pairs=old.get("pairs"),
        )
        return 0

    def child(*args: str) -> dict:
        """One measurement in a fresh process (its own peak memory); its JSON line."""
        p = subprocess.run(
            [sys.executable, __file__, *args, "--epochs", str(a.epochs), "--warmup", str(a.warmup)],
            capture_output=True,
            text=True,
        )
        if p.returncode != 0:
            raise SystemExit(f"benchmark {' '.join(args)} failed:\n{p.stderr[-3000:]}")
        return json.loads(p.stdout.strip().splitlines()[-1])

    rounds = 1 if a.efficiency else a.repeats
    measured: dict[tuple, list[dict]] = {}
    for k in range(rounds):  # every cell once per round: a slow spell of the machine hits all cells alike
        for d in a.datasets:
            for m in a.models:
                r = child(
                    "--one",
                    d,
                    m,
                    *(["--efficiency"] if a.efficiency else []),
                    *(["--overrides", *a.overrides] if a.overrides else []),
                )
                measured.setdefault((d, m), []).append(r)
                print(
                    f"{d:5s} {m:8s} {r['median_epoch_s']:.4f} s/epoch  {r['peak_rss_mb']:.0f} MB  "
                    f"{r['num_parameters']:,} params" + (f"  (round {k + 1}/{rounds})" if rounds > 1 else ""),
                    file=sys.stderr,
                )
    rows = [
        combine(
            rs, ("median_epoch_s", "p10_epoch_s", "p90_epoch_s", "run_s"), "median_epoch_s", largest=("peak_rss_mb",)
        )
        for rs in measured.values()
    ]
    if a.efficiency:
        from regnn.reporting.efficiency import write_efficiency

        write_efficiency(rows, Path(a.out), a.overrides)
        print(f"wrote {a.out}/table_efficiency.csv, .md, fig_efficiency.png", file=sys.stderr)
        return 0
    paired: dict[tuple, list[dict]] = {}
    for k in range(rounds if a.paired else 0):
        for d in a.datasets:
            for m in a.models:
                if m.startswith("re_") and m.removeprefix("re_") in a.models:
                    r = child("--pair", d, m.removeprefix("re_"), m)
                    paired.setdefault((d, m), []).append(r)
                    print(
                        f"{d:5s} {r['plain']}/{m} in turn: {r['plain_median_epoch_s']:.4f} / "
                        f"{r['re_median_epoch_s']:.4f} s/epoch, ratio {r['ratio_of_medians']:.2f}"
                        + (f"  (round {k + 1}/{rounds})" if rounds > 1 else ""),
                        file=sys.stderr,
                    )
    pairs = [
        combine(
            rs,
            ("plain_median_epoch_s", "re_median_epoch_s", "ratio_of_medians", "median_pair_ratio"),
            "ratio_of_medians",
        )
        for rs in paired.values()
    ]
    job = main_job() if a.job else None
    if job:
        print(f"main job: {job['wall_s']:.1f} s, {job['peak_rss_mb']:.0f} MB", file=sys.stderr)
    write(rows, job, Path(a.out), pairs=pairs, command=command)
    print(f"wrote {a.out}/benchmark.json, .csv, .md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
